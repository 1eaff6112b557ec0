use std::sync::Arc;

use cohort_core::Cohort;
use serde_json::{Value, json};

use super::*;
use crate::cohorts::{CohortSpec, Cohorts};

pub(crate) const MEMBER: &str = "0190a000-0000-7000-8000-00000000000a";

/// A context with cohorts 1 (static "Hand picked", one member), 2 (dynamic "Pro plan", a person
/// property) and 3 (deleted).
pub(crate) fn cohort_context() -> Context {
    let mut ctx = crate::testing::context(chrono_tz::UTC, "2024-01-10T12:00:00Z", 0);
    let cohort = |id: i64, name: &str, extra: Value| {
        let mut fields = json!({"id": id, "team_id": 1, "name": name,
            "created_at": "2024-01-01T00:00:00Z"});
        if let (Value::Object(fields), Value::Object(extra)) = (&mut fields, extra) {
            fields.extend(extra);
        }
        let cohort: Cohort = serde_json::from_value(fields).expect("cohort");
        let members = cohort
            .is_static
            .then(|| vec![MEMBER.parse().expect("uuid")]);
        (id, CohortSpec { cohort, members })
    };
    let filters = cohort_core::Filters::parse(
        &json!({"properties": {"type": "AND", "values": [
            {"type": "person", "key": "plan", "value": "pro", "operator": "exact"}]}}),
        "filters",
    )
    .expect("definition");
    let cohorts: Cohorts = [
        cohort(1, "Hand picked", json!({"is_static": true})),
        cohort(2, "Pro plan", json!({"filters": filters})),
        cohort(3, "Gone", json!({"is_static": true, "deleted": true})),
    ]
    .into_iter()
    .collect();
    ctx.cohorts = Arc::new(cohorts);
    ctx
}

fn read(filter: Value, insight: Insight) -> Result<Option<Breakdown>, Invalid> {
    parse(
        &json!({"breakdownFilter": filter}),
        insight,
        &cohort_context(),
    )
}

fn error(filter: Value, insight: Insight) -> Invalid {
    match read(filter.clone(), insight) {
        Ok(read) => panic!("{filter} was read as {read:?}"),
        Err(invalid) => invalid,
    }
}

fn properties(filter: Value, insight: Insight) -> Properties {
    match read(filter.clone(), insight) {
        Ok(Some(Breakdown {
            by: By::Properties(properties),
            ..
        })) => properties,
        other => panic!("{filter}: {other:?}"),
    }
}

#[test]
fn a_single_property_is_one_value_with_null_handling() {
    let single = properties(json!({"breakdown": "$browser"}), Insight::Trends);
    assert!(!single.listed);
    assert_eq!(
        single.trends_values(),
        ["ifNull(nullIf(properties['$browser'], ''), '$$_posthog_breakdown_null_$$')"]
    );
    assert_eq!(
        single.funnel_values(),
        ["ifNull(properties['$browser'], '')"]
    );
    assert_eq!(
        single.key_sql(&single.trends_values()),
        single.trends_values()[0]
    );
    assert_eq!(single.shown(vec!["Chrome".into()]), json!("Chrome"));
    let person = properties(
        json!({"breakdown": "plan", "breakdown_type": "person", "breakdown_limit": 3}),
        Insight::Trends,
    );
    assert_eq!(person.items[0].kind, PropertyKind::Person);
    assert!(person.trends_values()[0].contains("person.properties['plan']"));
    let hogql = properties(
        json!({"breakdown": "lower(event)", "breakdown_type": "hogql"}),
        Insight::Trends,
    );
    assert!(hogql.trends_values()[0].starts_with("ifNull(nullIf(toString((lower(event))), '')"));
    assert_eq!(read(json!({}), Insight::Trends), Ok(None));
    assert_eq!(read(json!({"breakdown": null}), Insight::Funnels), Ok(None));
    assert_eq!(read(json!({"breakdowns": []}), Insight::Trends), Ok(None));
}

#[test]
fn several_breakdowns_are_one_key_and_a_list() {
    let multi = properties(
        json!({"breakdowns": [
            {"property": "$browser"},
            {"property": "plan", "type": "person"},
            {"property": "toString(length(event))", "type": "hogql"}]}),
        Insight::Trends,
    );
    assert!(multi.listed);
    let values = multi.trends_values();
    let key = multi.key_sql(&values);
    assert!(key.starts_with("concat(toString(length(ifNull(nullIf(properties['$browser']"));
    assert_eq!(key.matches("':'").count(), 3);
    // Values holding the separator, several bytes per character, and nothing.
    let combination = ["a:b".to_string(), "ünï".to_string(), String::new()];
    let encoded = multi.encode(&combination);
    assert_eq!(encoded, "3:a:b5:ünï0:");
    assert_eq!(multi.decode(&encoded), combination);
    assert_eq!(multi.decode("garbage")[0], "garbage");
    assert_eq!(multi.shown(combination.to_vec()), json!(["a:b", "ünï", ""]));
    // A single entry of `breakdowns` is still a list, as PostHog shows it.
    let one = properties(
        json!({"breakdowns": [{"property": "$os"}]}),
        Insight::Trends,
    );
    assert!(one.listed);
    assert_eq!(one.shown(vec!["Mac".into()]), json!(["Mac"]));
}

#[test]
fn which_field_wins_and_funnels_list_properties() {
    let both =
        json!({"breakdown": "$os", "breakdowns": [{"property": "$browser"}, {"property": "$os"}]});
    assert_eq!(properties(both.clone(), Insight::Trends).items.len(), 2);
    assert_eq!(properties(both, Insight::Funnels).items.len(), 1);
    let listed = properties(
        json!({"breakdown": ["$browser", "$os"], "breakdown_type": "event"}),
        Insight::Funnels,
    );
    assert!(listed.listed);
    assert_eq!(listed.items.len(), 2);
}

#[test]
fn normalize_url_cuts_trailing_characters() {
    let single = properties(
        json!({"breakdown": "$current_url", "breakdown_normalize_url": true}),
        Insight::Trends,
    );
    assert_eq!(
        single.trends_values()[0],
        "ifNull(nullIf(if(empty(replaceRegexpOne(properties['$current_url'], '[/?#]+$', '')), '/', replaceRegexpOne(properties['$current_url'], '[/?#]+$', '')), ''), '$$_posthog_breakdown_null_$$')"
    );
    let entry = properties(
        json!({"breakdowns": [{"property": "$current_url", "normalize_url": true}, {"property": "$os"}]}),
        Insight::Funnels,
    );
    assert!(entry.funnel_values()[0].starts_with("if(empty(replaceRegexpOne(ifNull("));
    assert_eq!(entry.funnel_values()[1], "ifNull(properties['$os'], '')");
}

#[test]
fn cohorts_are_named_and_unknown_ones_refused() {
    let breakdown = read(
        json!({"breakdown_type": "cohort", "breakdown": [2, "all", "1"]}),
        Insight::Trends,
    )
    .expect("read")
    .expect("a breakdown");
    let cohorts = breakdown.cohorts().expect("cohorts");
    let names: Vec<&str> = cohorts.iter().map(CohortChoice::name).collect();
    assert_eq!(names, ["Pro plan", "all users", "Hand picked"]);
    let ids: Vec<i64> = cohorts.iter().map(CohortChoice::id).collect();
    assert_eq!(ids, [2, 0, 1]);
    let ctx = cohort_context();
    assert_eq!(
        cohorts[2].events_condition(&ctx).expect("static"),
        format!("person_id IN ('{MEMBER}')")
    );
    assert!(
        cohorts[0]
            .condition("actor", &ctx)
            .expect("dynamic")
            .starts_with("(actor IN (SELECT id FROM persons WHERE")
    );
    assert_eq!(cohorts[1].events_condition(&ctx).expect("all"), "true");
    assert_eq!(CohortChoice::find(cohorts, &json!("2")), Some(&cohorts[0]));
    assert_eq!(
        CohortChoice::find(cohorts, &json!(0)),
        Some(&CohortChoice::All)
    );
    assert_eq!(CohortChoice::find(cohorts, &json!(9)), None);
    let one = read(
        json!({"breakdown_type": "cohort", "breakdown": 1}),
        Insight::Funnels,
    )
    .expect("read")
    .expect("a breakdown");
    assert_eq!(one.cohorts().map(<[CohortChoice]>::len), Some(1));

    assert_eq!(
        error(
            json!({"breakdown_type": "cohort", "breakdown": [1, 99]}),
            Insight::Trends
        )
        .attr,
        "breakdownFilter.breakdown[1]"
    );
    assert_eq!(
        error(
            json!({"breakdown_type": "cohort", "breakdown": 3}),
            Insight::Funnels
        )
        .attr,
        "breakdownFilter.breakdown"
    );
    assert_eq!(
        error(
            json!({"breakdown_type": "cohort", "breakdown": "$browser"}),
            Insight::Trends
        )
        .attr,
        "breakdownFilter.breakdown"
    );
}

#[test]
fn bad_filters_name_the_field() {
    let cases = [
        (
            json!({"breakdowns": [{"property": "a"}, {"property": "b"}, {"property": "c"}, {"property": "d"}]}),
            "breakdownFilter.breakdowns",
        ),
        (
            json!({"breakdowns": [{"property": "a"}, {"property": "b", "type": "group"}]}),
            "breakdownFilter.breakdowns[1].type",
        ),
        (
            json!({"breakdowns": [{"property": "a", "type": "cohort"}]}),
            "breakdownFilter.breakdowns[0].type",
        ),
        (
            json!({"breakdowns": [{"property": "a", "histogram_bin_count": 5}]}),
            "breakdownFilter.breakdowns[0].histogram_bin_count",
        ),
        (
            json!({"breakdowns": [{"property": "1); select 1", "type": "hogql"}]}),
            "breakdownFilter.breakdowns[0].property",
        ),
        (
            json!({"breakdowns": [{"property": "a", "colour": "red"}]}),
            "breakdownFilter.breakdowns[0].colour",
        ),
        (
            json!({"breakdowns": [{"type": "event"}]}),
            "breakdownFilter.breakdowns[0]",
        ),
        (
            json!({"breakdowns": [{"property": 3}]}),
            "breakdownFilter.breakdowns[0].property",
        ),
        (
            json!({"breakdown": "$browser", "breakdown_limit": 0}),
            "breakdownFilter.breakdown_limit",
        ),
        (
            json!({"breakdown": "$browser", "breakdown_limit": -4}),
            "breakdownFilter.breakdown_limit",
        ),
        (
            json!({"breakdown": "$browser", "breakdown_type": "session"}),
            "breakdownFilter.breakdown_type",
        ),
        (
            json!({"breakdown": "$browser", "breakdown_histogram_bin_count": 4}),
            "breakdownFilter.breakdown_histogram_bin_count",
        ),
        (
            json!({"breakdown": "$browser", "breakdown_path_cleaning": true}),
            "breakdownFilter.breakdown_path_cleaning",
        ),
        (
            json!({"breakdown": ["$browser", "$os"]}),
            "breakdownFilter.breakdown",
        ),
        (json!({"breakdown": 12}), "breakdownFilter.breakdown"),
        (json!({"breakdown": {"a": 1}}), "breakdownFilter.breakdown"),
        (json!({"breakdown": ""}), "breakdownFilter.breakdown"),
        (
            json!({"breakdown": "$browser", "breakdwon_limit": 3}),
            "breakdownFilter.breakdwon_limit",
        ),
    ];
    for (filter, attr) in cases {
        assert_eq!(
            error(filter.clone(), Insight::Trends).attr,
            attr,
            "{filter}"
        );
    }
    assert_eq!(
        error(json!({"breakdown": ["a", "b", "c", "d"]}), Insight::Funnels).attr,
        "breakdownFilter.breakdown"
    );
    assert_eq!(
        parse(
            &json!({"breakdownFilter": 3}),
            Insight::Trends,
            &cohort_context()
        )
        .expect_err("not an object")
        .attr,
        "breakdownFilter"
    );
}

#[test]
fn points_name_one_value_per_breakdown() {
    let single = properties(json!({"breakdown": "$browser"}), Insight::Trends);
    assert_eq!(
        single.point_values(&json!("Chrome"), "b"),
        Ok(vec!["Chrome".to_string()])
    );
    assert_eq!(
        single.point_values(&json!(["Chrome"]), "b"),
        Ok(vec!["Chrome".to_string()])
    );
    assert_eq!(
        single.point_values(&json!(5), "b"),
        Ok(vec!["5".to_string()])
    );
    let multi = properties(
        json!({"breakdowns": [{"property": "$browser"}, {"property": "$os"}]}),
        Insight::Trends,
    );
    assert_eq!(
        multi.point_values(&json!("Chrome"), "b").unwrap_err().attr,
        "b"
    );
    assert_eq!(
        multi
            .point_values(&json!(["Chrome"]), "b")
            .unwrap_err()
            .attr,
        "b"
    );
    assert_eq!(
        multi.point_values(&json!([{}, "x"]), "b").unwrap_err().attr,
        "b"
    );
    let values = multi
        .point_values(&json!(["Chrome", NULL]), "b")
        .expect("two values");
    assert_eq!(
        multi.trends_condition(&values, "b").expect("condition"),
        "ifNull(nullIf(properties['$browser'], ''), '$$_posthog_breakdown_null_$$') = 'Chrome' \
         AND ifNull(nullIf(properties['$os'], ''), '$$_posthog_breakdown_null_$$') = '$$_posthog_breakdown_null_$$'"
    );
    assert_eq!(
        multi
            .trends_condition(&[OTHER.to_string(), OTHER.to_string()], "b")
            .unwrap_err()
            .attr,
        "b"
    );
}

#[test]
fn referenced_cohorts_include_breakdown_cohorts() {
    let node = json!({"kind": "ActorsQuery", "source": {"kind": "InsightActorsQuery", "breakdown": 9,
        "source": {"kind": "TrendsQuery", "series": [],
            "properties": [{"type": "cohort", "key": "id", "value": 4}],
            "breakdownFilter": {"breakdown_type": "cohort", "breakdown": [2, "all", "7"]}}}});
    assert_eq!(crate::cohorts::referenced(&node), vec![2, 4, 7]);
    let single = json!({"breakdownFilter": {"breakdown_type": "cohort", "breakdown": 5}});
    assert_eq!(crate::cohorts::referenced(&single), vec![5]);
    let property = json!({"breakdownFilter": {"breakdown_type": "event", "breakdown": "5"}});
    assert!(crate::cohorts::referenced(&property).is_empty());
}
