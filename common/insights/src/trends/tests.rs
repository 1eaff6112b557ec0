use serde_json::{Value, json};

use super::compile;
use crate::{Context, Table};

fn context() -> Context {
    crate::testing::context(chrono_tz::America::New_York, "2024-06-01T12:00:00Z", 0)
}

fn node(extra: Value) -> Value {
    let mut node = json!({
        "kind": "TrendsQuery",
        "series": [{"kind": "EventsNode", "event": "$pageview"}],
        "dateRange": {"date_from": "2024-03-09", "date_to": "2024-03-11"},
    });
    if let (Value::Object(node), Value::Object(extra)) = (&mut node, extra) {
        node.extend(extra);
    }
    node
}

fn table(columns: &[&str], rows: Vec<Vec<Value>>) -> Table {
    Table {
        columns: columns.iter().map(|c| c.to_string()).collect(),
        types: Vec::new(),
        rows,
    }
}

fn error_attr(node: Value) -> String {
    match compile(&node, &context()) {
        Ok(_) => panic!("compiled {node}"),
        Err(invalid) => invalid.attr,
    }
}

#[test]
fn invalid_nodes_name_the_field() {
    assert_eq!(error_attr(node(json!({"series": []}))), "series");
    assert_eq!(
        error_attr(node(json!({"series": [{"kind": "ActionsNode", "id": 3}]}))),
        "series[0].id"
    );
    assert_eq!(
        error_attr(node(
            json!({"series": [{"event": "a"}, {"event": "b", "math": "sum"}]})
        )),
        "series[1].math_property"
    );
    assert_eq!(
        error_attr(node(json!({"series": [{"event": "a", "math": "wat"}]}))),
        "series[0].math"
    );
    assert_eq!(
        error_attr(node(json!({"interval": "fortnight"}))),
        "interval"
    );
    assert_eq!(
        error_attr(node(json!({"dateRange": {"date_from": "last tuesday"}}))),
        "dateRange.date_from"
    );
    assert_eq!(
        error_attr(node(json!({"trendsFilter": {"formula": "A + C"}}))),
        "trendsFilter.formula"
    );
    assert_eq!(
        error_attr(node(
            json!({"trendsFilter": {"formulaNodes": [{"formula": "A +"}]}})
        )),
        "trendsFilter.formulaNodes[0].formula"
    );
    assert_eq!(
        error_attr(node(
            json!({"breakdownFilter": {"breakdown": "$browser", "breakdown_limit": 0}})
        )),
        "breakdownFilter.breakdown_limit"
    );
    assert_eq!(
        error_attr(node(
            json!({"breakdownFilter": {"breakdown": "x", "breakdown_type": "group"}})
        )),
        "breakdownFilter.breakdown_type"
    );
    assert_eq!(
        error_attr(node(
            json!({"breakdownFilter": {"breakdown": "x", "breakdown_type": "cohort"}})
        )),
        "breakdownFilter.breakdown"
    );
    assert_eq!(
        error_attr(node(json!({"breakdownFilter": {"breakdowns": [
            {"property": "a"}, {"property": "b"}, {"property": "c"}, {"property": "d"}]}}))),
        "breakdownFilter.breakdowns"
    );
    assert_eq!(
        error_attr(node(
            json!({"breakdownFilter": {"breakdown_type": "cohort", "breakdown": [12]}})
        )),
        "breakdownFilter.breakdown[0]"
    );
    assert_eq!(
        error_attr(node(
            json!({"compareFilter": {"compare": true, "compare_to": "later"}})
        )),
        "compareFilter.compare_to"
    );
}

#[test]
fn day_buckets_in_the_project_zone_are_zero_filled() {
    let compiled = compile(&node(json!({})), &context()).expect("compiles");
    assert_eq!(compiled.queries.len(), 1);
    let query = &compiled.queries[0];
    assert!(
        query.contains("toStartOfDay(toTimeZone(timestamp, 'America/New_York')) AS bucket"),
        "{query}"
    );
    assert!(
        query.contains("timestamp >= toDateTime('2024-03-09 05:00:00.000000Z')"),
        "{query}"
    );
    assert!(
        query.contains("timestamp <= toDateTime('2024-03-12 03:59:59.999999Z')"),
        "{query}"
    );
    assert!(query.contains("event = '$pageview'"), "{query}");
    assert!(query.ends_with("LIMIT 50000"), "{query}");
    let response = compiled
        .assemble(vec![table(
            &["bucket", "value"],
            vec![vec![json!("2024-03-11T04:00:00+00:00"), json!(3)]],
        )])
        .expect("assembles");
    let result = &response["results"][0];
    assert_eq!(result["data"], json!([0, 0, 3]));
    assert_eq!(
        result["days"],
        json!(["2024-03-09", "2024-03-10", "2024-03-11"])
    );
    assert_eq!(
        result["labels"],
        json!(["9-Mar-2024", "10-Mar-2024", "11-Mar-2024"])
    );
    assert_eq!(result["count"], json!(3.0));
    assert_eq!(result["label"], json!("$pageview"));
    assert_eq!(
        result["action"]["days"][2],
        json!("2024-03-11T00:00:00-04:00")
    );
    assert_eq!(response["hasMore"], json!(false));
    assert_eq!(
        response["resolved_date_range"],
        json!({"date_from": "2024-03-09T00:00:00-05:00", "date_to": "2024-03-11T23:59:59.999999-04:00"})
    );
}

#[test]
fn breakdown_keeps_top_values_and_computes_other_in_sql() {
    let compiled = compile(
        &node(json!({"series": [{"event": "$pageview", "math": "dau"}], "breakdownFilter": {"breakdown": "$browser", "breakdown_limit": 2}})),
        &context(),
    )
    .expect("compiles");
    let query = &compiled.queries[0];
    assert!(
        query.contains("NOT IN (SELECT breakdown_value FROM"),
        "{query}"
    );
    assert!(
        query.contains("'$$_posthog_breakdown_other_$$' AS breakdown_value"),
        "{query}"
    );
    assert!(query.contains("LIMIT 2)"), "{query}");
    let day = |d: &str| json!(format!("2024-03-{d}T05:00:00+00:00"));
    let rows = vec![
        vec![day("09"), json!("Safari"), json!(1)],
        vec![day("09"), json!("Chrome"), json!(2)],
        vec![day("10"), json!("$$_posthog_breakdown_other_$$"), json!(4)],
        vec![day("10"), json!("$$_posthog_breakdown_null_$$"), json!(1)],
    ];
    let response = compiled
        .assemble(vec![table(&["bucket", "breakdown_value", "value"], rows)])
        .expect("assembles");
    let values: Vec<&Value> = response["results"]
        .as_array()
        .expect("results")
        .iter()
        .map(|result| &result["breakdown_value"])
        .collect();
    assert_eq!(
        values,
        [
            &json!("Chrome"),
            &json!("Safari"),
            &json!("none"),
            &json!("$$_posthog_breakdown_other_$$")
        ]
    );
    assert_eq!(response["results"][0]["label"], json!("Chrome"));
    assert_eq!(response["results"][3]["data"], json!([0, 4, 0]));
    assert_eq!(response["hasMore"], json!(true));
}

#[test]
fn total_value_and_cumulative_displays() {
    let compiled = compile(
        &node(json!({"trendsFilter": {"display": "BoldNumber"}})),
        &context(),
    )
    .expect("compiles");
    assert!(!compiled.queries[0].contains("bucket"));
    let response = compiled
        .assemble(vec![table(&["value"], vec![vec![json!(7)]])])
        .expect("assembles");
    assert_eq!(response["results"][0]["aggregated_value"], json!(7));
    assert_eq!(response["results"][0]["data"], json!([]));

    let compiled = compile(
        &node(json!({"trendsFilter": {"display": "ActionsLineGraphCumulative"}, "series": [{"event": "a", "math_multiplier": 2}]})),
        &context(),
    )
    .expect("compiles");
    let day = |d: &str| json!(format!("2024-03-{d}T05:00:00+00:00"));
    let rows = vec![vec![day("09"), json!(1)], vec![day("10"), json!(2)]];
    let response = compiled
        .assemble(vec![table(&["bucket", "value"], rows)])
        .expect("assembles");
    assert_eq!(response["results"][0]["data"], json!([2, 6, 6]));
    assert_eq!(response["results"][0]["count"], json!(6.0));
}

#[test]
fn formulas_combine_series_and_compare_adds_the_previous_period() {
    let compiled = compile(
        &node(json!({
            "series": [{"event": "a"}, {"event": "b", "math": "sum", "math_property": "price"}],
            "trendsFilter": {"formulaNodes": [{"formula": "(A + B) / A"}, {"formula": "B * 2", "custom_name": "double"}]},
            "compareFilter": {"compare": true},
        })),
        &context(),
    )
    .expect("compiles");
    assert_eq!(compiled.queries.len(), 4);
    // The previous period of 9-11 March is 6-8 March.
    assert!(
        compiled.queries[2].contains("toDateTime('2024-03-06 05:00:00.000000Z')"),
        "{}",
        compiled.queries[2]
    );
    let day = |d: &str| json!(format!("2024-03-{d}T05:00:00+00:00"));
    let tables = vec![
        table(
            &["bucket", "value"],
            vec![vec![day("09"), json!(2)], vec![day("10"), json!(4)]],
        ),
        table(&["bucket", "value"], vec![vec![day("09"), json!(3.5)]]),
        table(&["bucket", "value"], vec![]),
        table(&["bucket", "value"], vec![vec![day("07"), json!(1.0)]]),
    ];
    let response = compiled.assemble(tables).expect("assembles");
    let results = response["results"].as_array().expect("results");
    assert_eq!(results.len(), 4);
    assert_eq!(results[0]["label"], json!("Formula ((A + B) / A)"));
    assert_eq!(results[0]["compare_label"], json!("current"));
    assert_eq!(results[0]["data"], json!([2.75, 1.0, 0.0]));
    assert_eq!(results[1]["compare_label"], json!("previous"));
    assert_eq!(results[1]["data"], json!([0.0, 0.0, 0.0]));
    assert_eq!(results[1]["labels"], json!(["day 0", "day 1", "day 2"]));
    assert_eq!(
        results[1]["days"],
        json!(["2024-03-06", "2024-03-07", "2024-03-08"])
    );
    assert_eq!(results[3]["label"], json!("double"));
    assert_eq!(results[3]["data"], json!([0.0, 2.0, 0.0]));
}

#[test]
fn weekly_active_counts_trailing_windows() {
    let compiled = compile(
        &node(json!({"series": [{"event": "a", "math": "weekly_active"}]})),
        &context(),
    )
    .expect("compiles");
    let query = &compiled.queries[0];
    // The window of 9 March ends at local midnight of the 10th and starts 7 days before.
    assert!(
        query.contains("timestamp > toDateTime('2024-03-03 05:00:00.000000Z') AND timestamp <= toDateTime('2024-03-10 05:00:00.000000Z'), person_id, NULL)) AS value_0"),
        "{query}"
    );
    let response = compiled
        .assemble(vec![table(
            &["value_0", "value_1", "value_2"],
            vec![vec![json!(1), json!(2), json!(2)]],
        )])
        .expect("assembles");
    assert_eq!(response["results"][0]["data"], json!([1, 2, 2]));
}

#[test]
fn several_breakdowns_rank_combinations_and_show_lists() {
    let compiled = compile(
        &node(json!({
            "series": [{"event": "$pageview", "math": "dau"}],
            "breakdownFilter": {"breakdown_limit": 2, "breakdowns": [
                {"property": "$browser"}, {"property": "plan", "type": "person"}]}
        })),
        &context(),
    )
    .expect("compiles");
    let query = &compiled.queries[0];
    assert!(
        query.contains("concat(toString(length(ifNull(nullIf(properties['$browser'], ''), '$$_posthog_breakdown_null_$$'))), ':', "),
        "{query}"
    );
    // Combinations with a missing value rank after the others, then by total, then by values.
    assert!(
        query.contains("if(breakdown_1 = '$$_posthog_breakdown_null_$$' OR breakdown_2 = '$$_posthog_breakdown_null_$$', 1, 0) AS has_null"),
        "{query}"
    );
    assert!(
        query.contains(
            "ORDER BY has_null ASC, total DESC, breakdown_1 ASC, breakdown_2 ASC LIMIT 2"
        ),
        "{query}"
    );
    let other = "29:$$_posthog_breakdown_other_$$29:$$_posthog_breakdown_other_$$";
    assert!(
        query.contains(&format!("'{other}' AS breakdown_value")),
        "{query}"
    );

    let day = |d: &str| json!(format!("2024-03-{d}T05:00:00+00:00"));
    let missing = "$$_posthog_breakdown_null_$$";
    let rows = vec![
        vec![
            day("09"),
            json!(format!("6:Chrome{}:{missing}", missing.len())),
            json!(9),
        ],
        vec![day("09"), json!("6:Chrome3:pro"), json!(2)],
        vec![day("10"), json!("6:Safari4:free"), json!(3)],
        vec![day("10"), json!(other), json!(4)],
    ];
    let response = compiled
        .assemble(vec![table(&["bucket", "breakdown_value", "value"], rows)])
        .expect("assembles");
    let results = response["results"].as_array().expect("results");
    let values: Vec<&Value> = results.iter().map(|r| &r["breakdown_value"]).collect();
    assert_eq!(
        values,
        [
            &json!(["Safari", "free"]),
            &json!(["Chrome", "pro"]),
            &json!(["Chrome", missing]),
            &json!([
                "$$_posthog_breakdown_other_$$",
                "$$_posthog_breakdown_other_$$"
            ]),
        ]
    );
    assert_eq!(results[0]["label"], json!("Safari::free"));
    assert_eq!(results[2]["label"], json!(format!("Chrome::{missing}")));
    assert_eq!(results[2]["data"], json!([9, 0, 0]));
    assert_eq!(response["hasMore"], json!(true));

    // hide_other drops the other combination but still says there are more.
    let hidden = compile(
        &node(
            json!({"breakdownFilter": {"breakdown_hide_other_aggregation": true, "breakdowns": [
            {"property": "$browser"}, {"property": "$os"}]}}),
        ),
        &context(),
    )
    .expect("compiles")
    .assemble(vec![table(
        &["bucket", "breakdown_value", "value"],
        vec![
            vec![day("09"), json!("6:Chrome3:Mac"), json!(1)],
            vec![day("09"), json!(other), json!(1)],
        ],
    )])
    .expect("assembles");
    assert_eq!(hidden["results"].as_array().map(Vec::len), Some(1));
    assert_eq!(hidden["hasMore"], json!(true));
}

#[test]
fn total_values_rank_by_total_alone() {
    let compiled = compile(
        &node(json!({"trendsFilter": {"display": "ActionsPie"},
            "breakdownFilter": {"breakdowns": [{"property": "$browser"}, {"property": "$os"}]}})),
        &context(),
    )
    .expect("compiles");
    let query = &compiled.queries[0];
    assert!(
        query.contains("ORDER BY total DESC, breakdown_1 ASC, breakdown_2 ASC LIMIT 25"),
        "{query}"
    );
    assert!(!query.contains("has_null"), "{query}");
}

fn cohort_node(extra: Value) -> Value {
    let mut node = node(json!({"series": [
        {"kind": "EventsNode", "event": "$pageview"},
        {"kind": "EventsNode", "event": "signed_up", "math": "dau"}]}));
    if let (Value::Object(node), Value::Object(extra)) = (&mut node, extra) {
        node.extend(extra);
    }
    node
}

#[test]
fn cohort_breakdowns_run_each_series_per_cohort() {
    let ctx = crate::breakdown::tests::cohort_context();
    let compiled = compile(
        &cohort_node(
            json!({"breakdownFilter": {"breakdown_type": "cohort", "breakdown": [1, "all", 2]}}),
        ),
        &ctx,
    )
    .expect("compiles");
    assert_eq!(compiled.queries.len(), 6);
    let member = crate::breakdown::tests::MEMBER;
    assert!(
        compiled.queries[0].contains(&format!("AND person_id IN ('{member}')")),
        "{}",
        compiled.queries[0]
    );
    assert!(compiled.queries[0].contains("'0' AS breakdown_value"));
    assert!(!compiled.queries[2].contains("person_id IN"));
    assert!(
        compiled.queries[4].contains("person_id IN (SELECT id FROM persons WHERE"),
        "{}",
        compiled.queries[4]
    );
    assert!(compiled.queries[5].contains("'2' AS breakdown_value"));
    assert!(
        !compiled
            .queries
            .iter()
            .any(|q| q.contains("$$_posthog_breakdown_other_$$"))
    );

    let day = |d: &str| json!(format!("2024-03-{d}T05:00:00+00:00"));
    let one = |index: &str, n: i64| {
        table(
            &["bucket", "breakdown_value", "value"],
            vec![vec![day("10"), json!(index), json!(n)]],
        )
    };
    let none = table(&["bucket", "breakdown_value", "value"], vec![]);
    let response = compiled
        .assemble(vec![
            one("0", 1),
            none.clone(),
            one("1", 5),
            one("1", 3),
            one("2", 2),
            none,
        ])
        .expect("assembles");
    let results = response["results"].as_array().expect("results");
    let shown: Vec<(Value, Value)> = results
        .iter()
        .map(|r| (r["breakdown_value"].clone(), r["label"].clone()))
        .collect();
    assert_eq!(
        shown,
        [
            (json!(1), json!("$pageview - Hand picked")),
            (json!("all"), json!("$pageview - all users")),
            (json!("all"), json!("signed_up - all users")),
            (json!(2), json!("$pageview - Pro plan")),
        ]
    );
    assert_eq!(results[1]["data"], json!([0, 5, 0]));
    assert_eq!(response["hasMore"], json!(false));

    // Two cohorts and no "all": per series, by total, as PostHog's conjoined query orders them.
    let compiled = compile(
        &node(json!({"breakdownFilter": {"breakdown_type": "cohort", "breakdown": [1, 2]}})),
        &ctx,
    )
    .expect("compiles");
    let response = compiled
        .assemble(vec![one("0", 1), one("1", 4)])
        .expect("assembles");
    let values: Vec<&Value> = response["results"]
        .as_array()
        .expect("results")
        .iter()
        .map(|r| &r["breakdown_value"])
        .collect();
    assert_eq!(values, [&json!(2), &json!(1)]);
    assert_eq!(response["results"][0]["label"], json!("Pro plan"));

    // A single id, and an unknown or deleted one.
    assert_eq!(
        compile(
            &node(json!({"breakdownFilter": {"breakdown_type": "cohort", "breakdown": 2}})),
            &ctx
        )
        .expect("compiles")
        .queries
        .len(),
        1
    );
    for breakdown in [json!(3), json!(77)] {
        match compile(
            &node(json!({"breakdownFilter": {"breakdown_type": "cohort", "breakdown": breakdown}})),
            &ctx,
        ) {
            Ok(_) => panic!("compiled cohort {breakdown}"),
            Err(invalid) => assert_eq!(invalid.attr, "breakdownFilter.breakdown"),
        }
    }
}

#[test]
fn histogram_bins_come_from_each_series_own_events() {
    let compiled = compile(
        &node(json!({
            "series": [{"event": "$pageview"}, {"event": "purchase", "math": "sum", "math_property": "price"}],
            "breakdownFilter": {"breakdown": "price", "breakdown_histogram_bin_count": 4}})),
        &context(),
    )
    .expect("compiles");
    for (query, event) in compiled.queries.iter().zip(["$pageview", "purchase"]) {
        // The ranking, the kept bins and "other" each join the bins of the series' events.
        assert_eq!(query.matches(" CROSS JOIN (SELECT ").count(), 4, "{query}");
        assert!(
            query.contains(&format!(
                "FROM events WHERE timestamp >= toDateTime('2024-03-09 05:00:00.000000Z') AND timestamp <= toDateTime('2024-03-12 03:59:59.999999Z') AND event = '{event}'))) AS breakdown_bins"
            )),
            "{query}"
        );
        assert_eq!(
            query
                .matches("AS value FROM events CROSS JOIN (SELECT ")
                .count(),
            4,
            "{query}"
        );
    }
    // A bin's label is its breakdown value.
    let day = |d: &str| json!(format!("2024-03-{d}T05:00:00+00:00"));
    let rows = vec![
        vec![day("09"), json!("[10,17.5]"), json!(3)],
        vec![day("10"), json!("[32.5,40.01]"), json!(1)],
        vec![day("10"), json!("$$_posthog_breakdown_null_$$"), json!(2)],
    ];
    let response = compiled
        .assemble(vec![
            table(&["bucket", "breakdown_value", "value"], rows),
            table(&["bucket", "breakdown_value", "value"], Vec::new()),
        ])
        .expect("assembles");
    let labels: Vec<&Value> = response["results"]
        .as_array()
        .expect("results")
        .iter()
        .map(|result| &result["breakdown_value"])
        .collect();
    assert_eq!(
        labels,
        [&json!("[10,17.5]"), &json!("[32.5,40.01]"), &json!("none")]
    );
}

#[test]
fn binned_medians_are_refused_as_posthog_does() {
    let binned = |math: &str| {
        node(json!({
            "series": [{"event": "a"}, {"event": "b", "math": math, "math_property": "price"}],
            "breakdownFilter": {"breakdowns": [{"property": "$browser"}, {"property": "price", "histogram_bin_count": 3}]}}))
    };
    for math in ["median", "p75", "p90", "p95", "p99"] {
        assert_eq!(error_attr(binned(math)), "series[1].math", "{math}");
    }
    for math in ["sum", "avg", "min", "max"] {
        assert!(compile(&binned(math), &context()).is_ok(), "{math}");
    }
    // Without bins a median is fine.
    assert!(
        compile(
            &node(
                json!({"series": [{"event": "b", "math": "median", "math_property": "price"}],
                "breakdownFilter": {"breakdown": "price"}})
            ),
            &context()
        )
        .is_ok()
    );
}
