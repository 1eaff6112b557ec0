use serde_json::{Value, json};

use crate::Table;
use crate::testing::{error_attr, new_york, pageview_node};

fn node(extra: Value) -> Value {
    pageview_node("LifecycleQuery", "2024-03-11", extra)
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
            json!({"series": [{"kind": "EventsNode", "event": ["a"]}]}),
            "series[0].event",
        ),
        (json!({"interval": "fortnight"}), "interval"),
        (
            json!({"dateRange": {"date_from": "all"}}),
            "dateRange.date_from",
        ),
        (
            json!({"lifecycleFilter": {"toggledLifecycles": ["new", "lost"]}}),
            "lifecycleFilter.toggledLifecycles[1]",
        ),
        (
            json!({"lifecycleFilter": {"toggled": ["new"]}}),
            "lifecycleFilter.toggled",
        ),
        (
            json!({"aggregation_group_type_index": 0}),
            "aggregation_group_type_index",
        ),
        (
            json!({"customAggregationTarget": true}),
            "customAggregationTarget",
        ),
        (json!({"stickinessFilter": {}}), "stickinessFilter"),
    ] {
        assert_eq!(
            error_attr(&node(extra.clone()), &new_york()),
            attr,
            "{extra}"
        );
    }
}

#[test]
fn the_query_reads_one_interval_either_side_and_the_persons_creation() {
    let node = node(json!({
        "properties": [{"key": "$browser", "value": "Chrome", "operator": "exact", "type": "event"}],
        "lifecycleFilter": {"toggledLifecycles": ["new", "dormant"], "showValuesOnSeries": true},
    }));
    let compiled = crate::compile(&node, &new_york()).unwrap();
    assert_eq!(compiled.queries.len(), 1);
    let query = &compiled.queries[0];
    // From 8 March (the day before) through 11 March, New York days.
    assert!(
        query.contains("timestamp >= toDateTime('2024-03-08 05:00:00.000000Z')"),
        "{query}"
    );
    assert!(
        query.contains("timestamp < toDateTime('2024-03-12 04:00:00.000000Z')"),
        "{query}"
    );
    assert!(query.contains("event = '$pageview'"), "{query}");
    assert!(query.contains("FROM persons"), "{query}");
    assert!(
        query.contains("WHERE status_period >= 1 AND status_period <= 3"),
        "{query}"
    );
    assert!(query.ends_with("LIMIT 50000"), "{query}");
}

#[test]
fn results_come_in_posthogs_order_with_dormant_negative() {
    let compiled = crate::compile(&node(json!({})), &new_york()).unwrap();
    let rows = [
        (1, "new", 3),
        (2, "returning", 2),
        (2, "dormant", 1),
        (3, "resurrecting", 1),
        (3, "dormant", 2),
    ];
    let table = Table {
        columns: vec!["period".into(), "status".into(), "persons".into()],
        types: Vec::new(),
        rows: rows
            .iter()
            .map(|(p, s, n)| vec![json!(p), json!(s), json!(n)])
            .collect(),
    };
    let body = compiled.assemble(vec![table]).unwrap();
    let results = body["results"].as_array().unwrap();
    let statuses: Vec<&str> = results
        .iter()
        .map(|r| r["status"].as_str().unwrap())
        .collect();
    assert_eq!(statuses, ["new", "returning", "resurrecting", "dormant"]);
    assert_eq!(results[0]["data"], json!([3.0, 0.0, 0.0]));
    assert_eq!(results[3]["data"], json!([0.0, -1.0, -2.0]));
    assert_eq!(results[3]["count"], json!(-3.0));
    assert_eq!(
        results[0]["days"],
        json!(["2024-03-09", "2024-03-10", "2024-03-11"])
    );
    assert_eq!(
        results[0]["labels"],
        json!(["9-Mar-2024", "10-Mar-2024", "11-Mar-2024"])
    );
    assert_eq!(results[1]["label"], json!("$pageview - returning"));
    assert_eq!(results[0]["action"]["name"], json!("$pageview"));
}
