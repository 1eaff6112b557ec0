use serde_json::json;

use super::*;

fn exposure() -> Value {
    json!({"properties": {"type": "OR", "values": [{"type": "OR", "values": [{
        "type": "behavioral", "value": "performed_event", "key": "$feature_flag_called",
        "event_type": "events", "negation": false,
        "event_filters": [{"key": "$feature_flag", "value": ["flag"], "operator": "exact", "type": "event"}],
        "explicit_datetime": "2025-01-01T00:00:00+00:00"}]}]}})
}

#[test]
fn the_exposure_definition_round_trips() {
    let filters = Filters::parse(&exposure(), "filters").unwrap();
    assert!(filters.has_behavioral());
    let mut expected = exposure();
    // `negation: false` is the default and is not written back.
    expected["properties"]["values"][0]["values"][0]
        .as_object_mut()
        .unwrap()
        .remove("negation");
    assert_eq!(serde_json::to_value(&filters).unwrap(), expected);
}

#[test]
fn person_and_cohort_filters() {
    let filters = Filters::parse(
        &json!({"properties": {"type": "AND", "values": [
            {"type": "person", "key": "email", "value": "@x.com", "operator": "icontains"},
            {"type": "cohort", "key": "id", "value": 3, "negation": true},
            {"type": "cohort", "key": "id", "value": 3}]}}),
        "filters",
    )
    .unwrap();
    assert!(!filters.has_behavioral());
    assert_eq!(filters.cohort_ids(), [3]);
}

#[test]
fn bad_definitions_name_the_field() {
    let cases = [
        (json!({}), "filters", "missing field `properties`"),
        (
            json!({"properties": {"type": "person", "key": "a"}}),
            "filters.properties.type",
            "AND or OR",
        ),
        (
            json!({"properties": {"type": "OR", "values": []}}),
            "filters.properties.values",
            "at least one",
        ),
        (
            json!({"properties": {"type": "OR", "values": [{"type": "element", "key": "a"}]}}),
            "filters.properties.values[0].type",
            "type 'element' are not supported",
        ),
        (
            json!({"properties": {"type": "OR", "values": [{"type": "behavioral", "key": "a",
                "value": "performed_event", "event_type": "events"}]}}),
            "filters.properties.values[0].time_value",
            "needs a window",
        ),
        (
            json!({"properties": {"type": "OR", "values": [{"type": "behavioral", "key": 4,
                "value": "performed_event", "event_type": "actions", "time_value": 3,
                "time_interval": "day"}]}}),
            "filters.properties.values[0].key",
            "invalid type",
        ),
        (
            json!({"properties": {"type": "OR", "values": [{"type": "behavioral", "key": "a",
                "value": "performed_event_multiple", "event_type": "events", "time_value": 3,
                "time_interval": "day"}]}}),
            "filters.properties.values[0].operator_value",
            "operator",
        ),
        (
            json!({"properties": {"type": "OR", "values": [{"type": "cohort", "key": "id",
                "value": 1, "extra": 1}]}}),
            "filters.properties.values[0]",
            "unknown field `extra`",
        ),
    ];
    for (value, attr, detail) in cases {
        let error = Filters::parse(&value, "filters").unwrap_err();
        assert!(
            error.attr.starts_with(attr) && error.detail.contains(detail),
            "{value}: {error:?}"
        );
    }
}
