use std::sync::Arc;

use serde_json::json;

use super::*;

const A: &str = "0190a000-0000-7000-8000-00000000000a";
const B: &str = "0190a000-0000-7000-8000-00000000000b";

fn stored(id: i64, body: Value) -> CohortSpec {
    let mut fields = json!({"id": id, "team_id": 1, "name": format!("c{id}"),
        "created_at": "2026-01-01T00:00:00Z"});
    if let (Value::Object(fields), Value::Object(extra)) = (&mut fields, body) {
        fields.extend(extra);
    }
    let cohort: Cohort = serde_json::from_value(fields).expect("cohort");
    let members = cohort.is_static.then(Vec::new);
    CohortSpec { cohort, members }
}

fn dynamic(id: i64, properties: Value) -> CohortSpec {
    let filters = cohort_core::Filters::parse(&json!({"properties": properties}), "filters")
        .expect("definition");
    stored(id, json!({"filters": filters}))
}

/// 1: static {A, B}; 2: email icontains example; 3: paid within 7 days, at least twice, with
/// an event filter; 4: in 2 and not in 1; 5: static, empty; 6: deleted; 7: since an instant.
fn context() -> Context {
    let mut ctx = crate::testing::context(chrono_tz::UTC, "2026-03-15T12:00:00Z", 0);
    let mut one = stored(1, json!({"is_static": true}));
    one.members = Some(vec![A.parse().expect("uuid"), B.parse().expect("uuid")]);
    let cohorts: Cohorts = [
        one,
        dynamic(
            2,
            json!({"type": "AND", "values": [
                {"type": "person", "key": "email", "value": "example", "operator": "icontains"}]}),
        ),
        dynamic(
            3,
            json!({"type": "OR", "values": [{"type": "behavioral", "key": "paid",
                "value": "performed_event_multiple", "event_type": "events", "time_value": 7,
                "time_interval": "day", "operator": "gte", "operator_value": 2,
                "event_filters": [{"key": "plan", "value": "pro", "type": "event"}]}]}),
        ),
        dynamic(
            4,
            json!({"type": "AND", "values": [
                {"type": "cohort", "key": "id", "value": 2},
                {"type": "cohort", "key": "id", "value": 1, "negation": true}]}),
        ),
        stored(5, json!({"is_static": true})),
        stored(6, json!({"is_static": true, "deleted": true})),
        dynamic(
            7,
            json!({"type": "AND", "values": [{"type": "behavioral", "key": "$pageview",
                "value": "performed_event", "event_type": "events",
                "explicit_datetime": "2026-03-01T00:00:00Z", "negation": true}]}),
        ),
    ]
    .into_iter()
    .map(|spec| (spec.cohort.id, spec))
    .collect();
    ctx.cohorts = Arc::new(cohorts);
    ctx
}

fn events_filter(filter: Value) -> Result<String, Invalid> {
    crate::filters::expression(Some(&json!([filter])), &context(), "properties")
}

#[test]
fn static_cohorts_are_their_members() {
    assert_eq!(
        membership(1, "person_id", &context(), "x"),
        Ok(format!("person_id IN ('{A}', '{B}')"))
    );
    assert_eq!(membership(5, "id", &context(), "x"), Ok("false".into()));
}

#[test]
fn person_filters_read_the_persons_table() {
    assert_eq!(
        membership(2, "id", &context(), "x"),
        Ok("(id IN (SELECT id FROM persons WHERE toString(properties['email']) ILIKE '%example%'))".into())
    );
}

#[test]
fn behavioral_filters_read_events_in_their_window() {
    assert_eq!(
        membership(3, "person_id", &context(), "x"),
        Ok(
            "(person_id IN (SELECT person_id FROM events WHERE event = 'paid' \
            AND timestamp >= toDateTime('2026-03-08 12:00:00.000000Z') \
            AND timestamp <= toDateTime('2026-03-15 12:00:00.000000Z') \
            AND (properties['plan'] = 'pro') GROUP BY person_id HAVING count() >= 2))"
                .into()
        )
    );
    assert_eq!(
        membership(7, "person_id", &context(), "x"),
        Ok(
            "(NOT (person_id IN (SELECT person_id FROM events WHERE event = '$pageview' \
            AND timestamp >= toDateTime('2026-03-01 00:00:00.000000Z') \
            AND timestamp <= toDateTime('2026-03-15 12:00:00.000000Z'))))"
                .into()
        )
    );
}

#[test]
fn nested_and_negated_cohorts() {
    let nested = membership(4, "id", &context(), "x").expect("compiles");
    assert!(
        nested.starts_with("((id IN (SELECT id FROM persons WHERE"),
        "{nested}"
    );
    assert!(
        nested.ends_with(&format!(") AND (NOT (id IN ('{A}', '{B}')))")),
        "{nested}"
    );
}

#[test]
fn resolved_dynamic_cohorts_are_their_members() {
    let mut ctx = context();
    if let Some(spec) = Arc::make_mut(&mut ctx.cohorts).get_mut(&3) {
        spec.members = Some(vec![B.parse().expect("uuid")]);
    }
    assert_eq!(
        membership(3, "person_id", &ctx, "x"),
        Ok(format!("person_id IN ('{B}')"))
    );
    // A cohort naming it reads the resolved members too.
    let mut spec = dynamic(
        9,
        json!({"type": "AND", "values": [{"type": "cohort", "key": "id", "value": 3}]}),
    );
    spec.members = None;
    Arc::make_mut(&mut ctx.cohorts).insert(9, spec);
    assert_eq!(
        membership(9, "id", &ctx, "x"),
        Ok(format!("(id IN ('{B}'))"))
    );
}

#[test]
fn node_filters_test_the_events_person() {
    assert_eq!(
        events_filter(json!({"type": "cohort", "key": "id", "value": 1})),
        Ok(format!("(person_id IN ('{A}', '{B}'))"))
    );
    let negated = format!("(NOT (person_id IN ('{A}', '{B}')))");
    for filter in [
        json!({"type": "cohort", "key": "id", "value": 1, "operator": "not_in"}),
        json!({"type": "static-cohort", "key": "id", "value": "1", "negation": true}),
    ] {
        assert_eq!(events_filter(filter), Ok(negated.clone()));
    }
    // Both negations cancel out.
    assert_eq!(
        events_filter(
            json!({"type": "precalculated-cohort", "key": "id", "value": 1,
            "operator": "not_in", "negation": true, "cohort_name": "c1"})
        ),
        Ok(format!("(person_id IN ('{A}', '{B}'))"))
    );
}

#[test]
fn unknown_deleted_and_malformed_cohort_filters_are_400s() {
    for id in [6, 99] {
        let error = events_filter(json!({"type": "cohort", "key": "id", "value": id}))
            .expect_err("refused");
        assert_eq!(error.attr, "properties[0].value");
        assert_eq!(error.detail, format!("Cohort with id {id} does not exist"));
    }
    let error = events_filter(json!({"type": "cohort", "key": "id", "value": 1, "operator": "gt"}))
        .expect_err("refused");
    assert_eq!(error.attr, "properties[0].operator");
    let error =
        events_filter(json!({"type": "cohort", "key": "id", "value": "x"})).expect_err("refused");
    assert_eq!(error.attr, "properties[0].value");
    let error = events_filter(json!({"type": "cohort", "key": "id"})).expect_err("refused");
    assert!(error.attr.starts_with("properties[0]"), "{}", error.attr);
}

#[test]
fn too_many_static_members_is_a_400() {
    let mut ctx = context();
    let mut big = stored(8, json!({"is_static": true}));
    big.members = Some((0..=MAX_INLINE_MEMBERS).map(|_| Uuid::new_v4()).collect());
    Arc::make_mut(&mut ctx.cohorts).insert(8, big);
    let error = membership(8, "person_id", &ctx, "properties[0].value").expect_err("refused");
    assert!(error.detail.contains("cannot be used"), "{}", error.detail);
}

#[test]
fn referenced_cohorts_are_found_anywhere_in_a_node() {
    let node = json!({"kind": "TrendsQuery",
        "series": [{"kind": "EventsNode", "event": "a",
                    "properties": [{"type": "cohort", "key": "id", "value": 3}]}],
        "properties": {"type": "AND", "values": [{"type": "OR", "values": [
            {"type": "cohort", "key": "id", "value": "4"},
            {"type": "static-cohort", "key": "id", "value": 3},
            {"type": "person", "key": "id", "value": 9}]}]}});
    assert_eq!(referenced(&node), vec![3, 4]);
}

#[test]
fn a_trend_filtered_by_a_cohort() {
    let node = json!({"kind": "TrendsQuery",
        "series": [{"kind": "EventsNode", "event": "$pageview"}],
        "dateRange": {"date_from": "-7d"},
        "properties": [{"type": "cohort", "key": "id", "value": 1}]});
    let compiled = crate::compile(&node, &context()).expect("compiles");
    let sql = compiled.queries.join(";");
    assert!(
        sql.contains(&format!("person_id IN ('{A}', '{B}')")),
        "{sql}"
    );
}
