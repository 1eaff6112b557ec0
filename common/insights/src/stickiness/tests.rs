use serde_json::{Value, json};

use crate::Table;
use crate::testing::{error_attr, new_york, pageview_node};

fn node(extra: Value) -> Value {
    pageview_node("StickinessQuery", "2024-03-12", extra)
}

fn rows(rows: &[(i64, i64)]) -> Table {
    Table {
        columns: vec!["num_intervals".into(), "actors".into()],
        types: Vec::new(),
        rows: rows
            .iter()
            .map(|(intervals, actors)| vec![json!(intervals), json!(actors)])
            .collect(),
    }
}

#[test]
fn invalid_nodes_name_the_field() {
    for (extra, attr) in [
        (json!({"series": []}), "series"),
        (
            json!({"series": [{"kind": "ActionsNode", "id": 3}]}),
            "series[0].id",
        ),
        (
            json!({"series": [{"kind": "EventsNode", "event": 3}]}),
            "series[0].event",
        ),
        (
            json!({"series": [{"event": "a", "math": "unique_group", "math_group_type_index": 0}]}),
            "series[0].math",
        ),
        (
            json!({"series": [{"event": "a", "math": "hogql", "math_hogql": "(select 1)"}]}),
            "series[0].math_hogql",
        ),
        (json!({"interval": "fortnight"}), "interval"),
        (json!({"intervalCount": 2}), "intervalCount"),
        (
            json!({"dateRange": {"date_from": "all"}}),
            "dateRange.date_from",
        ),
        (
            json!({"stickinessFilter": {"computedAs": "sometimes"}}),
            "stickinessFilter.computedAs",
        ),
        (
            json!({"stickinessFilter": {"computedAS": "cumulative"}}),
            "stickinessFilter.computedAS",
        ),
        (
            json!({"stickinessFilter": {"stickinessCriteria": {"operator": "gt", "value": 2}}}),
            "stickinessFilter.stickinessCriteria.operator",
        ),
        (
            json!({"stickinessFilter": {"stickinessCriteria": {"operator": "gte", "value": 0}}}),
            "stickinessFilter.stickinessCriteria.value",
        ),
        (json!({"stickinessFilter": 3}), "stickinessFilter"),
        (
            json!({"compareFilter": {"compare": "yes"}}),
            "compareFilter.compare",
        ),
        (
            json!({"compareFilter": {"compare": true, "compare_to": "last week"}}),
            "compareFilter.compare_to",
        ),
        (
            json!({"properties": [{"key": "a", "operator": "nope", "type": "event", "value": 1}]}),
            "properties[0].operator",
        ),
        (json!({"stickinesFilter": {}}), "stickinesFilter"),
    ] {
        assert_eq!(
            error_attr(&node(extra.clone()), &new_york()),
            attr,
            "{extra}"
        );
    }
}

#[test]
fn one_query_per_series_counts_actors_per_number_of_intervals() {
    let node = node(json!({
        "series": [
            {"kind": "EventsNode", "event": "$pageview", "properties": [{"key": "$browser", "value": "Chrome", "operator": "exact", "type": "event"}]},
            {"kind": "EventsNode", "event": null, "math": "hogql", "math_hogql": "distinct_id"},
        ],
        "stickinessFilter": {"stickinessCriteria": {"operator": "gte", "value": 2}},
    }));
    let compiled = crate::compile(&node, &new_york()).unwrap();
    assert_eq!(compiled.queries.len(), 2);
    let first = &compiled.queries[0];
    // 9 March 00:00 in New York is 05:00 UTC; 12 March ends at 03:59:59 UTC the next day (DST).
    assert!(
        first.contains("timestamp >= toDateTime('2024-03-09 05:00:00.000000Z')"),
        "{first}"
    );
    assert!(
        first.contains("timestamp <= toDateTime('2024-03-13 03:59:59.999999Z')"),
        "{first}"
    );
    assert!(first.contains("event = '$pageview'"), "{first}");
    assert!(first.contains("SELECT person_id AS actor_id"), "{first}");
    assert!(
        first.contains("GROUP BY actor_id, interval_index HAVING count() >= 2"),
        "{first}"
    );
    assert!(
        first.contains("toTimeZone(timestamp, 'America/New_York')"),
        "{first}"
    );
    assert!(first.ends_with("LIMIT 50000"), "{first}");
    let second = &compiled.queries[1];
    assert!(
        second.contains("SELECT (distinct_id) AS actor_id"),
        "{second}"
    );
    assert!(!second.contains("event ="), "{second}");
}

#[test]
fn results_are_zero_filled_and_labelled() {
    let compiled = crate::compile(&node(json!({})), &new_york()).unwrap();
    let body = compiled.assemble(vec![rows(&[(1, 5), (3, 2)])]).unwrap();
    let result = &body["results"][0];
    assert_eq!(result["data"], json!([5, 0, 2, 0]));
    assert_eq!(result["days"], json!([1, 2, 3, 4]));
    assert_eq!(
        result["labels"],
        json!(["1 day", "2 days", "3 days", "4 days"])
    );
    assert_eq!(result["count"], json!(7));
    assert_eq!(result["label"], json!("$pageview"));
    assert_eq!(
        result["action"],
        json!({"order": 0, "type": "events", "name": "$pageview", "id": "$pageview"})
    );
    assert!(result.get("compare").is_none());
}

#[test]
fn cumulative_counts_actors_active_at_least_so_often() {
    let node = node(
        json!({"interval": "week", "stickinessFilter": {"computedAs": "cumulative"},
        "dateRange": {"date_from": "2024-03-01", "date_to": "2024-03-20"}}),
    );
    let compiled = crate::compile(&node, &new_york()).unwrap();
    assert!(
        compiled.queries[0].contains("intDiv(intDiv("),
        "{}",
        compiled.queries[0]
    );
    let body = compiled
        .assemble(vec![rows(&[(1, 4), (2, 3), (4, 1)])])
        .unwrap();
    let result = &body["results"][0];
    // Weeks from Sunday 25 February: four of them reach 20 March.
    assert_eq!(result["data"], json!([8, 4, 1, 1]));
    assert_eq!(result["count"], json!(8));
    assert_eq!(result["labels"][0], json!("1 week or more"));
    assert_eq!(result["labels"][1], json!("2 weeks or more"));
}

#[test]
fn compare_adds_the_previous_period_after_each_series() {
    let node = node(json!({"compareFilter": {"compare": true},
        "series": [{"event": "a"}, {"event": "b"}]}));
    let compiled = crate::compile(&node, &new_york()).unwrap();
    assert_eq!(compiled.queries.len(), 4);
    assert!(
        compiled.queries[1].contains("toDateTime('2024-03-05 05:00:00.000000Z')"),
        "{}",
        compiled.queries[1]
    );
    let body = compiled
        .assemble(vec![rows(&[(1, 1)]), rows(&[]), rows(&[(2, 1)]), rows(&[])])
        .unwrap();
    let labels: Vec<(Value, Value)> = body["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["label"].clone(), r["compare_label"].clone()))
        .collect();
    assert_eq!(
        labels,
        vec![
            (json!("a"), json!("current")),
            (json!("a"), json!("previous")),
            (json!("b"), json!("current")),
            (json!("b"), json!("previous")),
        ]
    );
}
