//! Cohort conditions: save validation (PostHog's messages and codes), evaluation of
//! person-property cohorts (nested, negated, AND/OR), stored membership, `not_in`, and the
//! local-evaluation definitions.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Map, Value, json};

use crate::model::FlagFilters;
use crate::validate::{self, Context};
use crate::{Evaluation, EvaluationError, FeatureFlag, PreparedFlags, Subject};
use cohort_core::Cohort;

fn cohort(id: i64, name: &str, filters: Option<Value>) -> Cohort {
    serde_json::from_value(json!({
        "id": id, "team_id": 1, "name": name, "filters": filters,
        "created_at": "2025-01-01T00:00:00Z",
    }))
    .unwrap_or_else(|error| panic!("cohort {name}: {error}"))
}

fn group(kind: &str, values: Value) -> Value {
    json!({"properties": {"type": kind, "values": values}})
}

/// The project used throughout:
/// 1 `pro`: plan = pro; 2 `eu`: country in [de, fr] OR in cohort 1;
/// 3 `not pro`: AND of NOT cohort 1 and email is set; 4 static; 5 behavioural, calculated;
/// 6 behavioural, not calculated; 7 `via static`: OR of cohort 4; 8 deleted;
/// 9 `via uncalculated`: AND of cohort 6.
fn project() -> Vec<Cohort> {
    let behavioural = json!({"type": "behavioral", "key": "$pageview", "value": "performed_event",
        "event_type": "events", "time_value": 30, "time_interval": "day"});
    let mut static_cohort = cohort(4, "static", None);
    static_cohort.is_static = true;
    let mut calculated = cohort(
        5,
        "calculated",
        Some(group("OR", json!([behavioural.clone()]))),
    );
    calculated.last_calculation = Some(chrono::Utc::now());
    let mut deleted = cohort(8, "deleted", Some(group("OR", json!([]))));
    deleted.deleted = true;
    vec![
        cohort(
            1,
            "pro",
            Some(group(
                "AND",
                json!([{"type": "person", "key": "plan", "value": "pro"}]),
            )),
        ),
        cohort(
            2,
            "eu",
            Some(group(
                "OR",
                json!([
                    {"type": "AND", "values": [
                        {"type": "person", "key": "country", "value": ["de", "fr"], "operator": "exact"}]},
                    {"type": "cohort", "key": "id", "value": 1}]),
            )),
        ),
        cohort(
            3,
            "not pro",
            Some(group(
                "AND",
                json!([
                    {"type": "cohort", "key": "id", "value": 1, "negation": true},
                    {"type": "person", "key": "email", "operator": "is_set", "value": "is_set"}]),
            )),
        ),
        static_cohort,
        calculated,
        cohort(6, "uncalculated", Some(group("OR", json!([behavioural])))),
        cohort(
            7,
            "via static",
            Some(group(
                "OR",
                json!([{"type": "cohort", "key": "id", "value": 4}]),
            )),
        ),
        deleted,
        cohort(
            9,
            "via uncalculated",
            Some(group(
                "AND",
                json!([{"type": "cohort", "key": "id", "value": 6}]),
            )),
        ),
    ]
}

fn on_cohort(value: Value, operator: &str) -> Value {
    json!({"groups": [{"properties": [
        {"key": "id", "type": "cohort", "value": value, "operator": operator}]}]})
}

fn flag(id: i64, key: &str, filters: Value) -> FeatureFlag {
    serde_json::from_value(json!({
        "id": id, "team_id": 1, "key": key, "filters": filters, "active": true,
        "version": 1, "created_at": "2024-01-01T00:00:00Z",
    }))
    .unwrap_or_else(|error| panic!("flag {key}: {error}"))
}

fn check(filters: Value, cohorts: &[Cohort]) -> Result<(), (String, String, Option<String>)> {
    let mut parsed: FlagFilters = serde_json::from_value(filters).unwrap();
    let context = Context {
        flags: &[],
        id: None,
        key: "this",
        creating: true,
        cohorts,
    };
    validate::filters(&mut parsed, &context)
        .map_err(|error| (error.body.code, error.body.detail, error.body.attr))
}

#[test]
fn save_validation_names_live_evaluable_cohorts() {
    let cohorts = project();
    assert!(validate::names_cohorts(
        &serde_json::from_value(on_cohort(json!(1), "in")).unwrap()
    ));
    for id in [json!(1), json!("2"), json!(3), json!(4), json!(5), json!(7)] {
        assert_eq!(check(on_cohort(id.clone(), "in"), &cohorts), Ok(()), "{id}");
    }
    assert_eq!(check(on_cohort(json!(4), "not_in"), &cohorts), Ok(()));
    for (id, shown) in [
        (json!(42), "42"),
        (json!(8), "8"),
        (json!("abc"), "abc"),
        (Value::Null, "None"),
    ] {
        assert_eq!(
            check(on_cohort(id, "in"), &cohorts),
            Err((
                "cohort_does_not_exist".to_owned(),
                format!("Cohort with id {shown} does not exist"),
                Some("filters".to_owned()),
            ))
        );
    }
    let backfilling = |name: &str| {
        Err((
            "behavioral_cohort_found".to_owned(),
            format!(
                "Cohort '{name}' is still being backfilled and cannot be used in feature flags yet. It will become available once its initial backfill completes."
            ),
            Some("filters".to_owned()),
        ))
    };
    assert_eq!(
        check(on_cohort(json!(6), "in"), &cohorts),
        backfilling("uncalculated")
    );
    // Through a cohort that names it.
    assert_eq!(
        check(on_cohort(json!(9), "not_in"), &cohorts),
        backfilling("uncalculated")
    );
    // Super groups are checked too.
    assert_eq!(
        check(
            json!({"groups": [{}], "super_groups": [{"properties": [
                {"key": "id", "type": "cohort", "value": 42, "operator": "in"}]}]}),
            &cohorts
        )
        .map_err(|error| error.0),
        Err("cohort_does_not_exist".to_owned())
    );
    // `in` stays a cohort operator.
    assert_eq!(
        check(
            json!({"groups": [{"properties": [{"key": "e", "value": [1], "operator": "in"}]}]}),
            &cohorts
        )
        .map_err(|error| error.0),
        Err("invalid_operator".to_owned())
    );
}

/// One flag per cohort id, `in` and `not_in`: `in-<id>`, `out-<id>`.
fn prepared() -> PreparedFlags {
    let mut flags = Vec::new();
    for id in [1, 2, 3, 4, 5, 7, 42] {
        flags.push(flag(
            id * 2,
            &format!("in-{id}"),
            on_cohort(json!(id), "in"),
        ));
        flags.push(flag(
            id * 2 + 1,
            &format!("out-{id}"),
            on_cohort(json!(id.to_string()), "not_in"),
        ));
    }
    PreparedFlags::with_cohorts(flags, &project())
}

fn evaluate(
    flags: &PreparedFlags,
    person: Value,
    memberships: Option<&BTreeSet<i64>>,
) -> BTreeMap<String, Result<Evaluation, EvaluationError>> {
    let Value::Object(person) = person else {
        panic!("not an object")
    };
    let empty = Map::new();
    let group_types = BTreeMap::new();
    let subject = Subject {
        distinct_id: "someone",
        device_id: None,
        groups: &empty,
        person_properties: &person,
        group_properties: &empty,
        group_types: &group_types,
        hash_key_overrides: None,
        cohort_memberships: memberships,
        now: chrono::DateTime::UNIX_EPOCH,
    };
    flags.evaluate(&subject, None)
}

/// `key` -> enabled, or None when inconclusive.
fn answers(
    results: &BTreeMap<String, Result<Evaluation, EvaluationError>>,
) -> BTreeMap<&str, Option<bool>> {
    results
        .iter()
        .map(|(key, result)| {
            (
                key.as_str(),
                result.as_ref().ok().map(|evaluation| evaluation.enabled),
            )
        })
        .collect()
}

#[test]
fn person_property_cohorts_nested_and_negated() {
    let flags = prepared();
    let none = BTreeSet::new();
    let pro = evaluate(&flags, json!({"plan": "PRO", "email": "a@b"}), Some(&none));
    let pro = answers(&pro);
    assert_eq!(pro["in-1"], Some(true));
    assert_eq!(pro["out-1"], Some(false));
    // Not in de/fr, but in cohort 1 through the OR.
    assert_eq!(pro["in-2"], Some(true));
    // AND of NOT cohort 1 ...
    assert_eq!(pro["in-3"], Some(false));
    assert_eq!(pro["out-3"], Some(true));

    let french = evaluate(
        &flags,
        json!({"plan": "free", "country": "FR", "email": "x"}),
        Some(&none),
    );
    let french = answers(&french);
    assert_eq!(french["in-1"], Some(false));
    assert_eq!(french["in-2"], Some(true));
    assert_eq!(french["in-3"], Some(true));
    assert_eq!(french["out-2"], Some(false));

    // No properties: a missing property does not match (the flags service's answer).
    let nobody = evaluate(&flags, json!({}), Some(&none));
    let nobody = answers(&nobody);
    assert_eq!(nobody["in-1"], Some(false));
    assert_eq!(nobody["in-2"], Some(false));
    assert_eq!(nobody["in-3"], Some(false));
    assert_eq!(nobody["out-3"], Some(true));
    // An unknown cohort cannot be answered.
    assert_eq!(nobody["in-42"], None);
    assert_eq!(nobody["out-42"], None);
}

#[test]
fn stored_membership_of_static_and_behavioural_cohorts() {
    let flags = prepared();
    // What the SDK path reads: 4 (directly and through 7) and 5; never 6 (no active flag).
    assert_eq!(*flags.stored_cohorts(), BTreeSet::from([4, 5]));
    let member = BTreeSet::from([4]);
    let results = evaluate(&flags, json!({}), Some(&member));
    let answers_member = answers(&results);
    assert_eq!(answers_member["in-4"], Some(true));
    assert_eq!(answers_member["out-4"], Some(false));
    assert_eq!(answers_member["in-7"], Some(true));
    assert_eq!(answers_member["in-5"], Some(false));
    assert_eq!(answers_member["out-5"], Some(true));
    let results = evaluate(&flags, json!({}), Some(&BTreeSet::from([5])));
    let calculated = answers(&results);
    assert_eq!(calculated["in-5"], Some(true));
    assert_eq!(calculated["in-4"], Some(false));
    assert_eq!(calculated["out-7"], Some(true));
    // Memberships not read: those flags are inconclusive, the others still answer.
    let results = evaluate(&flags, json!({"plan": "pro"}), None);
    let unread = answers(&results);
    assert_eq!(unread["in-4"], None);
    assert_eq!(unread["in-7"], None);
    assert_eq!(unread["in-1"], Some(true));
    // A matched cohort condition reports the condition, and the rollout still applies.
    let Ok(evaluation) = &results["in-1"] else {
        panic!("in-1 inconclusive")
    };
    assert_eq!(evaluation.reason.description, "Matched condition set 1");
}

#[test]
fn a_failing_filter_settles_a_condition_with_an_undecidable_cohort() {
    let flags = PreparedFlags::with_cohorts(
        vec![flag(
            1,
            "both",
            json!({"groups": [{"properties": [
                {"key": "id", "type": "cohort", "value": 4, "operator": "in"},
                {"key": "plan", "value": "pro"}]}]}),
        )],
        &project(),
    );
    let results = evaluate(&flags, json!({"plan": "free"}), None);
    assert_eq!(answers(&results)["both"], Some(false));
    let results = evaluate(&flags, json!({"plan": "pro"}), None);
    assert_eq!(answers(&results)["both"], None);
}

#[test]
fn local_definitions_leave_out_what_sdks_cannot_evaluate() {
    let flags = prepared();
    let local = serde_json::to_value(flags.local_cohorts()).unwrap();
    // 1, 2, 3 and 7 are named; 1 is reached through 2 and 3 too; 4 and 5 are stored.
    let keys: Vec<&String> = local.as_object().unwrap().keys().collect();
    assert_eq!(keys, ["1", "2", "3", "7"]);
    assert_eq!(
        local["3"],
        json!({"type": "AND", "values": [
            {"type": "cohort", "key": "id", "value": 1, "negation": true},
            {"type": "person", "key": "email", "operator": "is_set", "value": "is_set"}]})
    );
    assert_eq!(
        local["1"],
        json!({"type": "AND", "values": [{"type": "person", "key": "plan", "value": "pro"}]})
    );
    // The stored person is read unless the request carries every key the cohorts read.
    let request = |value: Value| value.as_object().unwrap().clone();
    assert!(flags.needs_stored_person(&request(json!({"plan": "pro", "country": "de"}))));
    assert!(!flags.needs_stored_person(&request(
        json!({"plan": "pro", "country": "de", "email": "a@b"})
    )));
    // No cohorts named: none sent, and nothing to read per request.
    let plain =
        PreparedFlags::with_cohorts(vec![flag(1, "plain", json!({"groups": [{}]}))], &project());
    assert!(plain.local_cohorts().is_empty());
    assert!(plain.stored_cohorts().is_empty());
}
