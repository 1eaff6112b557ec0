//! Evaluation order, reasons, bucketing distributions and dependencies.

use std::collections::{BTreeMap, HashMap};

use serde_json::{Map, Value, json};

use super::*;
use crate::hash::{flag_prefix, holdout_hash, rollout_hash, variant_hash};

fn flag(id: i64, key: &str, filters: Value) -> FeatureFlag {
    serde_json::from_value(json!({
        "id": id,
        "team_id": 1,
        "key": key,
        "filters": filters,
        "active": true,
        "version": 1,
        "created_at": "2024-01-01T00:00:00Z",
    }))
    .unwrap_or_else(|error| panic!("flag {key}: {error}"))
}

fn object(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map,
        other => panic!("not an object: {other}"),
    }
}

/// Owns what a [`Subject`] borrows.
#[derive(Default)]
struct Who {
    distinct_id: String,
    groups: Map<String, Value>,
    person: Map<String, Value>,
    group_properties: Map<String, Value>,
    group_types: BTreeMap<i64, String>,
    overrides: Option<HashMap<String, String>>,
}

impl Who {
    fn new(distinct_id: &str) -> Self {
        Self {
            distinct_id: distinct_id.to_owned(),
            group_types: BTreeMap::from([(0, "company".to_owned()), (1, "project".to_owned())]),
            ..Self::default()
        }
    }

    fn person(mut self, properties: Value) -> Self {
        self.person = object(properties);
        self
    }

    fn groups(mut self, groups: Value, properties: Value) -> Self {
        self.groups = object(groups);
        self.group_properties = object(properties);
        self
    }

    fn subject(&self) -> Subject<'_> {
        Subject {
            distinct_id: &self.distinct_id,
            device_id: None,
            groups: &self.groups,
            person_properties: &self.person,
            group_properties: &self.group_properties,
            group_types: &self.group_types,
            hash_key_overrides: self.overrides.as_ref(),
            cohort_memberships: None,
            now: chrono::DateTime::UNIX_EPOCH,
        }
    }
}

fn one(prepared: &PreparedFlags, who: &Who, key: &str) -> Evaluation {
    let mut results = prepared.evaluate(&who.subject(), None);
    match results.remove(key) {
        Some(Ok(evaluation)) => evaluation,
        other => panic!("{key}: {other:?}"),
    }
}

fn reason(code: ReasonCode, index: Option<usize>, description: &str) -> Reason {
    Reason {
        code,
        condition_index: index,
        description: description.to_owned(),
    }
}

#[test]
fn rollout_at_0_37_and_100_percent() {
    let prepared = PreparedFlags::new(vec![
        flag(
            1,
            "none",
            json!({"groups": [{"properties": [], "rollout_percentage": 0}]}),
        ),
        flag(
            2,
            "some",
            json!({"groups": [{"properties": [], "rollout_percentage": 37}]}),
        ),
        flag(
            3,
            "all",
            json!({"groups": [{"properties": [], "rollout_percentage": 100}]}),
        ),
        flag(4, "unset", json!({"groups": [{"properties": []}]})),
    ]);
    let prefix = flag_prefix("some");
    let mut enabled = 0;
    for i in 0..10_000 {
        let who = Who::new(&format!("user-{i}"));
        let results = prepared.evaluate(&who.subject(), None);
        let get = |key: &str| results[key].clone().unwrap_or_else(|e| panic!("{e}"));
        assert!(!get("none").enabled);
        assert_eq!(
            get("none").reason,
            reason(
                ReasonCode::OutOfRolloutBound,
                Some(0),
                "Out of rollout bound"
            )
        );
        assert!(get("all").enabled);
        assert!(get("unset").enabled);
        let some = get("some");
        assert_eq!(
            some.enabled,
            rollout_hash(&prefix, &who.distinct_id) <= 0.37
        );
        if some.enabled {
            enabled += 1;
            assert_eq!(
                some.reason,
                reason(
                    ReasonCode::ConditionMatch,
                    Some(0),
                    "Matched condition set 1"
                )
            );
            assert_eq!(some.variant, None);
        }
    }
    assert!(
        (3500..=3900).contains(&enabled),
        "{enabled} of 10000 at 37%"
    );
}

#[test]
fn multivariate_split_follows_the_variant_hash() {
    let prepared = PreparedFlags::new(vec![flag(
        1,
        "split",
        json!({
            "groups": [{"properties": [], "rollout_percentage": 100}],
            "multivariate": {"variants": [
                {"key": "control", "rollout_percentage": 20},
                {"key": "test", "rollout_percentage": 30},
                {"key": "other", "rollout_percentage": 50},
            ]},
            "payloads": {"test": "{\"color\": \"blue\"}", "true": "unused"},
        }),
    )]);
    let prefix = flag_prefix("split");
    let mut counts: HashMap<String, usize> = HashMap::new();
    for i in 0..10_000 {
        let who = Who::new(&format!("id-{i}"));
        let evaluation = one(&prepared, &who, "split");
        let variant = evaluation.variant.clone().unwrap_or_default();
        let hash = variant_hash(&prefix, &who.distinct_id);
        let expected = if hash < 0.2 {
            "control"
        } else if hash < 0.5 {
            "test"
        } else {
            "other"
        };
        assert_eq!(variant, expected);
        let payload = (variant == "test").then(|| json!("{\"color\": \"blue\"}"));
        assert_eq!(evaluation.payload, payload);
        *counts.entry(variant).or_default() += 1;
    }
    for (variant, share) in [("control", 2000), ("test", 3000), ("other", 5000)] {
        let count = counts.get(variant).copied().unwrap_or_default();
        assert!(count.abs_diff(share) < 250, "{variant}: {count}");
    }
}

#[test]
fn reference_vectors_pick_their_variants() {
    let fifty_fifty = json!({"variants": [
        {"key": "control", "rollout_percentage": 50},
        {"key": "test", "rollout_percentage": 50},
    ]});
    let prepared = PreparedFlags::new(vec![
        flag(
            1,
            "my-experiment",
            json!({"groups": [{"properties": []}], "multivariate": fifty_fifty}),
        ),
        flag(
            2,
            "beta-feature",
            json!({"groups": [{"properties": [], "rollout_percentage": 99.5}], "multivariate": fifty_fifty}),
        ),
    ]);
    for (id, variant) in [("user-1", "control"), ("user-2", "control")] {
        assert_eq!(
            one(&prepared, &Who::new(id), "my-experiment")
                .variant
                .as_deref(),
            Some(variant)
        );
    }
    // 0.99333 is inside 99.5% and picks `test`; at 99% it would be out of bounds.
    let beta = one(&prepared, &Who::new("distinct_id_1"), "beta-feature");
    assert_eq!(beta.variant.as_deref(), Some("test"));
    let at_99 = PreparedFlags::new(vec![flag(
        3,
        "beta-feature",
        json!({"groups": [{"properties": [], "rollout_percentage": 99}]}),
    )]);
    let out = one(&at_99, &Who::new("distinct_id_1"), "beta-feature");
    assert!(!out.enabled);
    assert_eq!(out.reason.code, ReasonCode::OutOfRolloutBound);
}

#[test]
fn variant_override_and_stored_condition_order() {
    let variants = json!({"variants": [
        {"key": "control", "rollout_percentage": 50},
        {"key": "test", "rollout_percentage": 50},
    ]});
    let prepared = PreparedFlags::new(vec![
        flag(
            1,
            "forced",
            json!({
                "groups": [
                    {"properties": [{"key": "email", "value": "@corp.com", "operator": "icontains"}], "variant": "test"},
                    {"properties": [], "rollout_percentage": 100},
                ],
                "multivariate": variants,
            }),
        ),
        flag(
            2,
            "bogus-override",
            json!({
                "groups": [{"properties": [], "variant": "nope"}],
                "multivariate": variants,
            }),
        ),
        flag(
            3,
            "order",
            json!({
                "groups": [
                    {"properties": [], "rollout_percentage": 100},
                    {"properties": [], "variant": "test"},
                ],
                "multivariate": variants,
            }),
        ),
    ]);
    for i in 0..200 {
        let insider = Who::new(&format!("u{i}")).person(json!({"email": "A@CORP.com"}));
        let evaluation = one(&prepared, &insider, "forced");
        assert_eq!(evaluation.variant.as_deref(), Some("test"));
        assert_eq!(evaluation.reason.condition_index, Some(0));
        let outsider = Who::new(&format!("u{i}")).person(json!({"email": "a@b.com"}));
        let evaluation = one(&prepared, &outsider, "forced");
        assert_eq!(evaluation.reason.condition_index, Some(1));
        let lookup = if variant_hash(&flag_prefix("forced"), &outsider.distinct_id) < 0.5 {
            "control"
        } else {
            "test"
        };
        assert_eq!(evaluation.variant.as_deref(), Some(lookup));
        // An override that names no variant falls back to the lookup table.
        let bogus = one(&prepared, &outsider, "bogus-override");
        let lookup = if variant_hash(&flag_prefix("bogus-override"), &outsider.distinct_id) < 0.5 {
            "control"
        } else {
            "test"
        };
        assert_eq!(bogus.variant.as_deref(), Some(lookup));
        // posthog-python 7.91.1 walks conditions as stored: the first one wins here.
        assert_eq!(
            one(&prepared, &outsider, "order").reason.condition_index,
            Some(0)
        );
    }
}

#[test]
fn holdout_comes_before_conditions() {
    let prepared = PreparedFlags::new(vec![
        flag(
            1,
            "exp",
            json!({
                "groups": [{"properties": [], "rollout_percentage": 100}],
                "multivariate": {"variants": [
                    {"key": "control", "rollout_percentage": 50},
                    {"key": "test", "rollout_percentage": 50},
                ]},
                "holdout": {"id": 7, "exclusion_percentage": 10},
                "payloads": {"holdout-7": "held"},
            }),
        ),
        flag(
            2,
            "everyone-out",
            json!({
                "groups": [{"properties": []}],
                "holdout": {"id": 8, "exclusion_percentage": 100},
            }),
        ),
    ]);
    let mut held = 0;
    for i in 0..10_000 {
        let who = Who::new(&format!("h-{i}"));
        let evaluation = one(&prepared, &who, "exp");
        if holdout_hash(&who.distinct_id) <= 0.1 {
            held += 1;
            assert_eq!(
                evaluation,
                Evaluation {
                    enabled: true,
                    variant: Some("holdout-7".to_owned()),
                    reason: reason(
                        ReasonCode::HoldoutConditionValue,
                        None,
                        "Holdout condition value"
                    ),
                    payload: Some(json!("held")),
                }
            );
        } else {
            assert_ne!(evaluation.variant.as_deref(), Some("holdout-7"));
            assert_eq!(evaluation.reason.code, ReasonCode::ConditionMatch);
        }
        assert_eq!(
            one(&prepared, &who, "everyone-out").variant.as_deref(),
            Some("holdout-8")
        );
    }
    assert!(
        (850..=1150).contains(&held),
        "{held} held out of 10000 at 10%"
    );
}

#[test]
fn super_condition_decides_when_its_property_is_known() {
    let prepared = PreparedFlags::new(vec![flag(
        1,
        "early",
        json!({
            "groups": [{"properties": [], "rollout_percentage": 0}],
            "super_groups": [{"properties": [
                {"key": "$feature_enrollment/early", "value": ["true"], "operator": "exact", "type": "person"},
            ], "rollout_percentage": 100}],
            "payloads": {"true": "{\"a\": 1}"},
        }),
    )]);
    let enrolled = Who::new("a").person(json!({"$feature_enrollment/early": true}));
    let expected_reason = reason(
        ReasonCode::SuperConditionValue,
        Some(0),
        "Super condition value",
    );
    let evaluation = one(&prepared, &enrolled, "early");
    assert!(evaluation.enabled);
    assert_eq!(evaluation.reason, expected_reason);
    assert_eq!(evaluation.payload, Some(json!("{\"a\": 1}")));
    let declined = Who::new("a").person(json!({"$feature_enrollment/early": false}));
    let evaluation = one(&prepared, &declined, "early");
    assert!(!evaluation.enabled);
    assert_eq!(evaluation.reason, expected_reason);
    // Without the property, the normal conditions (0% here) decide.
    let evaluation = one(&prepared, &Who::new("a"), "early");
    assert_eq!(evaluation.reason.code, ReasonCode::OutOfRolloutBound);
}

#[test]
fn group_flags_hash_the_group_key() {
    let prepared = PreparedFlags::new(vec![flag(
        1,
        "org",
        json!({
            "aggregation_group_type_index": 0,
            "groups": [
                {"properties": [{"key": "plan", "value": "enterprise", "type": "group", "group_type_index": 0}]},
                {"properties": [], "rollout_percentage": 50},
            ],
        }),
    )]);
    let missing = one(&prepared, &Who::new("u"), "org");
    assert_eq!(
        missing,
        Evaluation {
            enabled: false,
            variant: None,
            reason: reason(ReasonCode::NoGroupType, Some(1), "No group type"),
            payload: None,
        }
    );
    let enterprise = Who::new("u").groups(
        json!({"company": "acme"}),
        json!({"company": {"plan": "Enterprise"}}),
    );
    assert_eq!(
        one(&prepared, &enterprise, "org").reason.condition_index,
        Some(0)
    );
    for i in 0..300 {
        let company = format!("c{i}");
        let who = Who::new("same-user").groups(json!({"company": company}), json!({}));
        let in_rollout = rollout_hash(&flag_prefix("org"), &company) <= 0.5;
        assert_eq!(one(&prepared, &who, "org").enabled, in_rollout, "{company}");
    }
    // A numeric group key hashes as its digits; an empty one is no key.
    let numeric = Who::new("u").groups(json!({"company": 42}), json!({}));
    let in_rollout = rollout_hash(&flag_prefix("org"), "42") <= 0.5;
    assert_eq!(one(&prepared, &numeric, "org").enabled, in_rollout);
    let empty = Who::new("u").groups(json!({"company": ""}), json!({}));
    assert_eq!(
        one(&prepared, &empty, "org").reason.code,
        ReasonCode::NoGroupType
    );
}

#[test]
fn mixed_targeting_reports_skipped_group_conditions() {
    let prepared = PreparedFlags::new(vec![flag(
        1,
        "mixed",
        json!({
            "groups": [
                {"properties": [{"key": "email", "value": "x@y.z"}]},
                {"properties": [], "aggregation_group_type_index": 1},
            ],
        }),
    )]);
    let evaluation = one(
        &prepared,
        &Who::new("u").person(json!({"email": "other"})),
        "mixed",
    );
    assert_eq!(evaluation.reason.code, ReasonCode::NoConditionMatch);
    assert_eq!(evaluation.reason.condition_index, Some(0));
    assert_eq!(
        evaluation.reason.description,
        "No matching condition set (group conditions were not evaluated because no group type was provided)"
    );
    let with_group = Who::new("u").groups(json!({"project": "p1"}), json!({}));
    let evaluation = one(&prepared, &with_group, "mixed");
    assert!(evaluation.enabled);
    assert_eq!(evaluation.reason.condition_index, Some(1));
}

#[test]
fn non_match_reason_is_the_highest_scoring() {
    let prepared = PreparedFlags::new(vec![
        flag(
            1,
            "a",
            json!({"groups": [
                {"properties": [], "rollout_percentage": 0},
                {"properties": [{"key": "plan", "value": "pro"}]},
            ]}),
        ),
        flag(
            2,
            "b",
            json!({"groups": [
                {"properties": [{"key": "plan", "value": "pro"}]},
                {"properties": [{"key": "plan", "value": "team"}]},
            ]}),
        ),
        flag(3, "empty", json!({"groups": []})),
    ]);
    let who = Who::new("u");
    assert_eq!(
        one(&prepared, &who, "a").reason,
        reason(
            ReasonCode::OutOfRolloutBound,
            Some(0),
            "Out of rollout bound"
        )
    );
    assert_eq!(
        one(&prepared, &who, "b").reason,
        reason(
            ReasonCode::NoConditionMatch,
            Some(1),
            "No matching condition set"
        )
    );
    assert_eq!(
        one(&prepared, &who, "empty").reason,
        reason(
            ReasonCode::NoConditionMatch,
            None,
            "No matching condition set"
        )
    );
}

#[test]
fn flag_dependencies() {
    let variants = json!({"variants": [{"key": "only", "rollout_percentage": 100}]});
    let mut inactive = flag(5, "off", json!({"groups": [{"properties": []}]}));
    inactive.active = false;
    let prepared = PreparedFlags::new(vec![
        flag(
            1,
            "base",
            json!({"groups": [{"properties": [{"key": "plan", "value": "pro"}]}]}),
        ),
        flag(
            2,
            "multi",
            json!({"groups": [{"properties": []}], "multivariate": variants}),
        ),
        flag(
            3,
            "needs-base",
            json!({"groups": [{"properties": [
                {"key": "base", "type": "flag", "value": true, "operator": "flag_evaluates_to", "dependency_chain": ["base"]},
            ]}]}),
        ),
        flag(
            4,
            "needs-variant",
            json!({"groups": [{"properties": [
                {"key": "multi", "type": "flag", "value": "only", "operator": "flag_evaluates_to"},
            ]}]}),
        ),
        inactive,
        flag(
            6,
            "needs-off-false",
            json!({"groups": [{"properties": [
                {"key": "off", "type": "flag", "value": false, "operator": "flag_evaluates_to"},
            ]}]}),
        ),
        flag(
            7,
            "by-id",
            json!({"groups": [{"properties": [
                {"key": "1", "type": "flag", "value": false, "operator": "flag_evaluates_to"},
            ]}]}),
        ),
        flag(
            8,
            "needs-gone",
            json!({"groups": [{"properties": [
                {"key": "gone", "type": "flag", "value": true, "operator": "flag_evaluates_to"},
            ]}]}),
        ),
        flag(
            9,
            "malformed",
            json!({"groups": [{"properties": [
                {"key": "base", "type": "flag", "value": true, "operator": "exact"},
            ]}]}),
        ),
        flag(
            10,
            "loop-a",
            json!({"groups": [{"properties": [
                {"key": "loop-b", "type": "flag", "value": true, "operator": "flag_evaluates_to"},
            ]}]}),
        ),
        flag(
            11,
            "loop-b",
            json!({"groups": [{"properties": [
                {"key": "loop-a", "type": "flag", "value": true, "operator": "flag_evaluates_to"},
            ]}]}),
        ),
    ]);
    let pro = Who::new("u").person(json!({"plan": "pro"}));
    let free = Who::new("u").person(json!({"plan": "free"}));
    let pro_results = prepared.evaluate(&pro.subject(), None);
    let free_results = prepared.evaluate(&free.subject(), None);
    let enabled = |results: &BTreeMap<String, Result<Evaluation, EvaluationError>>, key: &str| {
        results[key]
            .as_ref()
            .map(|evaluation| evaluation.enabled)
            .unwrap_or_else(|e| panic!("{key}: {e}"))
    };
    assert!(enabled(&pro_results, "needs-base"));
    assert!(!enabled(&free_results, "needs-base"));
    assert!(enabled(&pro_results, "needs-variant"));
    assert!(enabled(&pro_results, "needs-off-false"));
    assert!(!pro_results.contains_key("off"));
    assert!(!enabled(&pro_results, "by-id"));
    assert!(enabled(&free_results, "by-id"));
    assert!(!enabled(&pro_results, "malformed"));
    let gone = pro_results["needs-gone"]
        .as_ref()
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        gone.reason,
        reason(
            ReasonCode::MissingDependency,
            None,
            "Flag cannot be evaluated due to missing dependency"
        )
    );
    assert!(matches!(
        pro_results["loop-a"],
        Err(EvaluationError::Inconclusive(_))
    ));
    assert!(matches!(
        pro_results["loop-b"],
        Err(EvaluationError::Inconclusive(_))
    ));
    // Asking for one flag still evaluates what it depends on, and answers only that flag.
    let only = ["needs-base".to_owned()];
    let results = prepared.evaluate(&pro.subject(), Some(&only));
    assert_eq!(results.keys().collect::<Vec<_>>(), ["needs-base"]);
    assert!(enabled(&results, "needs-base"));
}

#[test]
fn inactive_deleted_and_only() {
    let mut inactive = flag(1, "inactive", json!({"groups": [{"properties": []}]}));
    inactive.active = false;
    let mut deleted = flag(2, "deleted", json!({"groups": [{"properties": []}]}));
    deleted.deleted = true;
    let prepared = PreparedFlags::new(vec![
        inactive,
        deleted,
        flag(
            3,
            "a",
            json!({"groups": [{"properties": []}], "payloads": {"true": "{\"x\":1}"}}),
        ),
        flag(4, "b", json!({"groups": [{"properties": []}]})),
    ]);
    assert_eq!(prepared.flags().len(), 3);
    let who = Who::new("u");
    let all = prepared.evaluate(&who.subject(), None);
    assert_eq!(all.keys().collect::<Vec<_>>(), ["a", "b"]);
    let a = all["a"].as_ref().unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(a.payload, Some(json!("{\"x\":1}")));
    let only = [
        "b".to_owned(),
        "inactive".to_owned(),
        "unknown".to_owned(),
        "b".to_owned(),
    ];
    let some = prepared.evaluate(&who.subject(), Some(&only));
    assert_eq!(some.keys().collect::<Vec<_>>(), ["b"]);
    assert!(prepared.evaluate(&who.subject(), Some(&[])).is_empty());
}

#[test]
fn cohorts_are_inconclusive_unless_another_filter_fails() {
    let prepared = PreparedFlags::new(vec![flag(
        1,
        "cohort",
        json!({"groups": [{"properties": [
            {"key": "id", "type": "cohort", "value": 3, "operator": "in"},
            {"key": "plan", "value": "pro"},
        ]}]}),
    )]);
    let pro = Who::new("u").person(json!({"plan": "pro"}));
    assert!(matches!(
        prepared.evaluate(&pro.subject(), None)["cohort"],
        Err(EvaluationError::Inconclusive(_))
    ));
    let free = Who::new("u").person(json!({"plan": "free"}));
    assert_eq!(
        one(&prepared, &free, "cohort").reason.code,
        ReasonCode::NoConditionMatch
    );
    assert!(prepared.needs_person_properties());
}

#[test]
fn experience_continuity_hashes_the_override() {
    let mut continuous = flag(
        1,
        "sticky",
        json!({"groups": [{"properties": [], "rollout_percentage": 50}]}),
    );
    continuous.ensure_experience_continuity = true;
    let plain = flag(
        2,
        "plain",
        json!({"groups": [{"properties": [], "rollout_percentage": 50}]}),
    );
    let prepared = PreparedFlags::new(vec![continuous, plain]);
    for i in 0..200 {
        let anonymous = format!("anon-{i}");
        let mut who = Who::new(&format!("user-{i}"));
        who.overrides = Some(HashMap::from([
            ("sticky".to_owned(), anonymous.clone()),
            ("plain".to_owned(), anonymous.clone()),
        ]));
        let sticky = rollout_hash(&flag_prefix("sticky"), &anonymous) <= 0.5;
        assert_eq!(one(&prepared, &who, "sticky").enabled, sticky);
        let plain = rollout_hash(&flag_prefix("plain"), &who.distinct_id) <= 0.5;
        assert_eq!(one(&prepared, &who, "plain").enabled, plain);
    }
}

#[test]
fn person_properties_needed_only_for_person_conditions() {
    let group_only = PreparedFlags::new(vec![flag(
        1,
        "g",
        json!({
            "aggregation_group_type_index": 0,
            "groups": [{"properties": [{"key": "plan", "value": "x", "type": "group", "group_type_index": 0}]}],
        }),
    )]);
    assert!(!group_only.needs_person_properties());
    let mut inactive = flag(
        2,
        "p",
        json!({"groups": [{"properties": [{"key": "plan", "value": "x"}]}]}),
    );
    assert!(PreparedFlags::new(vec![inactive.clone()]).needs_person_properties());
    inactive.active = false;
    assert!(!PreparedFlags::new(vec![inactive]).needs_person_properties());
}

#[test]
fn the_stored_person_is_needed_only_for_keys_the_request_lacks() {
    let prepared = PreparedFlags::new(vec![
        flag(
            1,
            "plan",
            json!({"groups": [{"properties": [{"key": "plan", "value": "pro"}]}]}),
        ),
        flag(
            2,
            "early",
            json!({
                "groups": [{"properties": [{"key": "email", "value": "@x", "operator": "icontains"}]}],
                "super_groups": [{"properties": [{"key": "$feature_enrollment/early", "value": ["true"]}]}],
            }),
        ),
    ]);
    let request = |value: serde_json::Value| value.as_object().unwrap().clone();
    assert!(prepared.needs_stored_person(&request(json!({}))));
    assert!(prepared.needs_stored_person(&request(json!({"plan": "pro", "email": "a@x"}))));
    assert!(!prepared.needs_stored_person(&request(
        json!({"plan": "pro", "email": "a@x", "$feature_enrollment/early": null})
    )));
    // A cohort unknown here reads no property (its cohorts' keys: `cohort_conditions` tests).
    let cohort = PreparedFlags::new(vec![flag(
        3,
        "cohort",
        json!({"groups": [{"properties": [{"key": "id", "type": "cohort", "value": 3, "operator": "in"}]}]}),
    )]);
    assert!(!cohort.needs_stored_person(&request(json!({}))));
    // Group conditions never need it.
    let group_only = PreparedFlags::new(vec![flag(
        4,
        "g",
        json!({
            "aggregation_group_type_index": 0,
            "groups": [{"properties": [{"key": "plan", "value": "x", "type": "group", "group_type_index": 0}]}],
        }),
    )]);
    assert!(!group_only.needs_stored_person(&request(json!({}))));
}

#[test]
fn evaluate_all_is_prepared_evaluate() {
    let flags = vec![flag(
        1,
        "a",
        json!({"groups": [{"properties": [], "rollout_percentage": 30}]}),
    )];
    let who = Who::new("someone");
    assert_eq!(
        evaluate_all(&flags, &who.subject(), None),
        PreparedFlags::new(flags.clone()).evaluate(&who.subject(), None)
    );
}

/// 50 flags of the usual shapes: one evaluation pass stays in the microseconds (printed; a
/// debug build is far slower than release, so the bound here is loose).
#[test]
fn fifty_flags_evaluate_quickly() {
    let flags: Vec<FeatureFlag> = (0..50)
        .map(|i| {
            let filters = match i % 3 {
                0 => json!({"groups": [{"properties": [], "rollout_percentage": 37}]}),
                1 => json!({"groups": [{"properties": [], "rollout_percentage": 100}], "multivariate": {"variants": [
                    {"key": "a", "rollout_percentage": 20}, {"key": "b", "rollout_percentage": 30}, {"key": "c", "rollout_percentage": 50},
                ]}}),
                _ => json!({"groups": [{"properties": [
                    {"key": "email", "value": "@corp", "operator": "icontains"},
                    {"key": "plan", "value": ["pro", "team"], "operator": "exact"},
                ], "rollout_percentage": 80}]}),
            };
            flag(i, &format!("flag-{i}"), filters)
        })
        .collect();
    let prepared = PreparedFlags::new(flags);
    let who = Who::new("user-123").person(json!({"email": "a@corp.com", "plan": "Pro"}));
    let rounds = 2_000;
    let started = std::time::Instant::now();
    for _ in 0..rounds {
        assert_eq!(prepared.evaluate(&who.subject(), None).len(), 50);
    }
    let each = started.elapsed() / rounds;
    println!("50 flags: {each:?} per evaluation");
    assert!(each < std::time::Duration::from_millis(2), "{each:?}");
}
