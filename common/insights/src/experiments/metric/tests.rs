use super::*;
use serde_json::json;

fn errors(metric: Value) -> Vec<MetricError> {
    parse(&metric).expect_err("invalid metric")
}

fn locs(metric: Value) -> Vec<(Value, String)> {
    errors(metric)
        .into_iter()
        .map(|e| (Value::Array(e.loc), e.kind))
        .collect()
}

#[test]
fn a_mean_metric_reads_typed() {
    let metric = parse(&json!({
        "kind": "ExperimentMetric", "uuid": "u1", "name": "Revenue", "metric_type": "mean",
        "conversion_window": 2, "conversion_window_unit": "week", "goal": "increase",
        "source": {"kind": "EventsNode", "event": "purchase", "math": "sum",
                   "math_property": "amount", "response": {"ignored": true}, "version": 1,
                   "properties": [{"key": "plan", "value": "pro", "type": "event"}]},
        "upper_bound_percentile": 0.99, "ignore_zeros": true, "response": null,
    }))
    .expect("valid");
    assert_eq!(metric.window_seconds(), Some(2 * 7 * 86_400));
    let MetricType::Mean(mean) = &metric.metric_type else {
        panic!("mean expected");
    };
    assert_eq!(mean.upper_bound_percentile, Some(0.99));
    assert!(mean.ignore_zeros);
    assert_eq!(mean.source.math(), MathType::Sum);
    let MetricSource::Events(events) = &mean.source else {
        panic!("events expected");
    };
    assert_eq!(events.event.as_deref(), Some("purchase"));
}

#[test]
fn funnel_and_ratio_metrics_read_typed() {
    let funnel = parse(&json!({
        "kind": "ExperimentMetric", "metric_type": "funnel", "funnel_order_type": "unordered",
        "series": [{"kind": "EventsNode", "event": "a"}, {"kind": "ActionsNode", "id": 4}],
    }))
    .expect("funnel");
    let MetricType::Funnel(funnel) = funnel.metric_type else {
        panic!("funnel expected");
    };
    assert_eq!(funnel.series.len(), 2);
    assert_eq!(funnel.funnel_order_type, FunnelOrder::Unordered);
    let ratio = parse(&json!({
        "kind": "ExperimentMetric", "metric_type": "ratio",
        "numerator": {"kind": "EventsNode", "event": "purchase", "math": "sum", "math_property": "x"},
        "denominator": {"kind": "EventsNode", "event": "$pageview"},
    }))
    .expect("ratio");
    assert!(matches!(ratio.metric_type, MetricType::Ratio(_)));
}

#[test]
fn legacy_kinds_and_missing_fields_are_refused() {
    let found = errors(json!({"kind": "ExperimentTrendsQuery", "count_query": {}}));
    assert_eq!(found[0].loc, vec![json!("kind")]);
    assert_eq!(found[0].kind, "literal_error");
    assert!(found[0].msg.contains("legacy"));
    assert_eq!(
        locs(json!({"kind": "ExperimentMetric", "metric_type": "mean"})),
        vec![(json!(["source"]), "missing".to_owned())]
    );
    assert_eq!(
        locs(json!({"metric_type": "mean", "source": {"kind": "EventsNode"}})),
        vec![(json!(["kind"]), "missing".to_owned())]
    );
    assert_eq!(
        locs(json!({"kind": "ExperimentMetric"})),
        vec![(json!(["metric_type"]), "missing".to_owned())]
    );
    assert_eq!(
        locs(json!({"kind": "ExperimentMetric", "metric_type": "median"}))[0].1,
        "union_tag_invalid"
    );
}

#[test]
fn every_extra_field_is_reported_with_its_path() {
    let found = locs(json!({
        "kind": "ExperimentMetric", "metric_type": "funnel", "colour": "red",
        "series": [{"kind": "EventsNode", "event": "a", "evnt": "b", "foo": 1}],
        "conversion_window_unit": "fortnight",
    }));
    assert!(found.contains(&(json!(["colour"]), "extra_forbidden".to_owned())));
    assert!(found.contains(&(json!(["series", 0, "evnt"]), "extra_forbidden".to_owned())));
    assert!(found.contains(&(json!(["series", 0, "foo"]), "extra_forbidden".to_owned())));
    assert!(found.contains(&(json!(["conversion_window_unit"]), "enum".to_owned())));
}

#[test]
fn an_events_node_with_an_id_gets_a_hint() {
    let found = errors(json!({
        "kind": "ExperimentMetric", "metric_type": "mean",
        "source": {"kind": "EventsNode", "id": 3},
    }));
    assert_eq!(found[0].loc, vec![json!("source"), json!("id")]);
    assert!(found[0].msg.contains("ActionsNode"));
}

#[test]
fn funnels_need_a_step_and_percentiles_a_range() {
    assert_eq!(
        locs(json!({"kind": "ExperimentMetric", "metric_type": "funnel", "series": []})),
        vec![(json!(["series"]), "too_short".to_owned())]
    );
    let found = locs(json!({
        "kind": "ExperimentMetric", "metric_type": "mean",
        "source": {"kind": "EventsNode", "event": "a"},
        "lower_bound_percentile": -0.1, "upper_bound_percentile": 95,
    }));
    assert_eq!(found.len(), 2);
    assert_eq!(found[0].0, json!(["lower_bound_percentile"]));
    assert_eq!(found[1].0, json!(["upper_bound_percentile"]));
    assert_eq!(
        locs(json!({"kind": "ExperimentMetric", "metric_type": "mean",
                    "source": {"kind": "DataWarehouseNode"}}))[0]
            .1,
        "union_tag_invalid"
    );
}

#[test]
fn errors_are_capped_at_fifteen() {
    let mut metric = json!({
        "kind": "ExperimentMetric", "metric_type": "mean",
        "source": {"kind": "EventsNode", "event": "a"},
    });
    for i in 0..30 {
        metric[format!("extra_{i:02}")] = json!(i);
    }
    assert_eq!(errors(metric).len(), MAX_ERRORS);
}
