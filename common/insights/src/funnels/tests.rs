use serde_json::{Value, json};

use super::compile;
use super::trends::{EARLIEST_QUERY, round_2};
use crate::{Context, Invalid, Table};

fn ctx() -> Context {
    crate::testing::context(chrono_tz::UTC, "2024-01-10T12:00:00Z", 0)
}

fn node(extra: Value) -> Value {
    let mut node = json!({
        "kind": "FunnelsQuery",
        "series": [
            {"kind": "EventsNode", "event": "signup"},
            {"kind": "EventsNode", "event": "pay", "custom_name": "Paid"},
        ],
        "dateRange": {"date_from": "2024-01-01", "date_to": "2024-01-09"},
    });
    if let (Some(target), Value::Object(extra)) = (node.as_object_mut(), extra) {
        target.extend(extra);
    }
    node
}

fn error(node: &Value) -> Invalid {
    match compile(node, &ctx()) {
        Ok(_) => panic!("expected an error for {node}"),
        Err(error) => error,
    }
}

#[test]
fn invalid_nodes_name_the_field() {
    let one_step =
        json!({"kind": "FunnelsQuery", "series": [{"kind": "EventsNode", "event": "a"}]});
    assert_eq!(error(&one_step).attr, "series");
    assert_eq!(
        error(&node(
            json!({"funnelsFilter": {"funnelWindowIntervalUnit": "fortnight"}})
        ))
        .attr,
        "funnelsFilter.funnelWindowIntervalUnit"
    );
    assert_eq!(
        error(&node(
            json!({"funnelsFilter": {"funnelOrderType": "random"}})
        ))
        .attr,
        "funnelsFilter.funnelOrderType"
    );
    assert_eq!(
        error(&node(json!({"funnelsFilter": {"funnelWindowInterval": 0}}))).attr,
        "funnelsFilter.funnelWindowInterval"
    );
    assert_eq!(
        error(&node(json!({"funnelsFilter": {"exclusions": [
            {"kind": "EventsNode", "event": "x", "funnelFromStep": 1, "funnelToStep": 1}
        ]}})))
        .attr,
        "funnelsFilter.exclusions[0].funnelFromStep"
    );
    assert_eq!(
        error(&node(json!({"funnelsFilter": {"exclusions": [
            {"kind": "EventsNode", "event": "x", "funnelFromStep": 0, "funnelToStep": 0}
        ]}})))
        .attr,
        "funnelsFilter.exclusions[0].funnelToStep"
    );
    assert_eq!(
        error(&node(json!({"dateRange": {"date_from": "yesterday-ish"}}))).attr,
        "dateRange.date_from"
    );
    assert_eq!(
        error(&node(
            json!({"breakdownFilter": {"breakdown": "$browser", "breakdown_type": "group"}})
        ))
        .attr,
        "breakdownFilter.breakdown_type"
    );
    assert_eq!(
        error(&node(
            json!({"breakdownFilter": {"breakdown": "$browser", "breakdown_type": "cohort"}})
        ))
        .attr,
        "breakdownFilter.breakdown"
    );
    assert_eq!(
        error(&node(json!({"breakdownFilter": {"breakdowns": [
            {"property": "a"}, {"property": "b"}, {"property": "c"}, {"property": "d"}]}})))
        .attr,
        "breakdownFilter.breakdowns"
    );
    assert_eq!(
        error(&node(
            json!({"breakdownFilter": {"breakdown_type": "cohort", "breakdown": 4}})
        ))
        .attr,
        "breakdownFilter.breakdown"
    );
    assert_eq!(
        error(&node(json!({
            "breakdownFilter": {"breakdown_type": "cohort", "breakdown": "all"},
            "funnelsFilter": {"funnelAggregateByHogQL": "properties.$session_id"}
        })))
        .attr,
        "breakdownFilter.breakdown_type"
    );
    assert_eq!(
        error(&node(json!({
            "breakdownFilter": {"breakdown": "$browser"},
            "funnelsFilter": {"breakdownAttributionType": "all_events"}
        })))
        .attr,
        "funnelsFilter.breakdownAttributionType"
    );
    assert_eq!(
        error(&node(
            json!({"funnelsFilter": {"funnelAggregateByHogQL": "1); select 1"}})
        ))
        .attr,
        "funnelsFilter.funnelAggregateByHogQL"
    );
    assert_eq!(
        error(&node(json!({"series": [
            {"kind": "EventsNode", "event": "a"},
            {"kind": "ActionsNode", "id": 3}
        ]})))
        .attr,
        "series[1].id"
    );
}

#[test]
fn invalid_views_name_the_field() {
    let three = json!({"series": [
        {"kind": "EventsNode", "event": "a"},
        {"kind": "EventsNode", "event": "b"},
        {"kind": "EventsNode", "event": "c"}
    ]});
    let with = |extra: Value| {
        let mut node = node(three.clone());
        if let (Some(target), Value::Object(extra)) = (node.as_object_mut(), extra) {
            target.extend(extra);
        }
        node
    };
    let cases = [
        (
            json!({"funnelsFilter": {"funnelVizType": "sideways"}}),
            "funnelsFilter.funnelVizType",
        ),
        (
            json!({"funnelsFilter": {"funnelVizType": "trends", "funnelToStep": 0}}),
            "funnelsFilter.funnelToStep",
        ),
        (
            json!({"funnelsFilter": {"funnelVizType": "trends", "funnelToStep": 3}}),
            "funnelsFilter.funnelToStep",
        ),
        (
            json!({"funnelsFilter": {"funnelFromStep": 2}}),
            "funnelsFilter.funnelFromStep",
        ),
        (
            json!({"funnelsFilter": {"funnelFromStep": 1, "funnelToStep": 1}}),
            "funnelsFilter.funnelToStep",
        ),
        (
            json!({"funnelsFilter": {"funnelVizType": "time_to_convert", "binCount": "many"}}),
            "funnelsFilter.binCount",
        ),
        (
            json!({"funnelsFilter": {"funnelVizType": "trends"}, "breakdownFilter": {"breakdown": "$browser"}}),
            "breakdownFilter.breakdown",
        ),
        (
            json!({"funnelsFilter": {"funnelVizType": "trends"}, "interval": "fortnight"}),
            "interval",
        ),
    ];
    for (extra, attr) in cases {
        assert_eq!(error(&with(extra.clone())).attr, attr, "{extra}");
    }
}

#[test]
fn trends_cut_the_funnel_and_bucket_entries() {
    let compiled = compile(
        &node(json!({
            "series": [
                {"kind": "EventsNode", "event": "a"},
                {"kind": "EventsNode", "event": "b"},
                {"kind": "EventsNode", "event": "c"}
            ],
            "funnelsFilter": {"funnelVizType": "trends", "funnelToStep": 1},
        })),
        &ctx(),
    )
    .unwrap_or_else(|error| panic!("{error:?}"));
    assert_eq!(compiled.queries.len(), 1);
    let query = &compiled.queries[0];
    assert!(
        query.contains("aggregateFunnel(2, 1209600, 'ordered'"),
        "{query}"
    );
    assert!(!query.contains("'c'"), "{query}");
    assert!(
        query.contains("toStartOfDay(toTimeZone(timestamp, 'UTC')) AS period"),
        "{query}"
    );
    assert!(query.contains("if(funnel_events.period = entries.period, 0, 4611686018427387904)"));
    assert!(
        query
            .contains("countIf(reached >= 0) AS reached_from, countIf(reached >= 1) AS reached_to")
    );
    assert!(query.ends_with("LIMIT 10"), "{query}");

    let table = Table {
        rows: vec![
            vec![json!("2024-01-02T00:00:00Z"), json!(3), json!(1)],
            vec![json!("2024-01-05 00:00:00"), json!(8), json!(8)],
            vec![json!("2024-01-06 00:00:00"), json!(0), json!(0)],
        ],
        ..Default::default()
    };
    let response = compiled
        .assemble(vec![table])
        .unwrap_or_else(|error| panic!("{error:?}"));
    assert_eq!(
        response["results"],
        json!([{
            "count": 9,
            "data": [0.0, 33.33, 0.0, 0.0, 100.0, 0.0, 0.0, 0.0, 0.0],
            "days": ["2024-01-01", "2024-01-02", "2024-01-03", "2024-01-04", "2024-01-05",
                     "2024-01-06", "2024-01-07", "2024-01-08", "2024-01-09"],
            "labels": ["1-Jan-2024", "2-Jan-2024", "3-Jan-2024", "4-Jan-2024", "5-Jan-2024",
                       "6-Jan-2024", "7-Jan-2024", "8-Jan-2024", "9-Jan-2024"],
        }])
    );
    assert_eq!(round_2(2.0 / 3.0 * 100.0), 66.67);
    assert_eq!(round_2(0.125), 0.12);
}

#[test]
fn trends_of_all_time_start_at_the_earliest_event() {
    let compiled = compile(
        &node(json!({
            "funnelsFilter": {"funnelVizType": "trends"},
            "interval": "hour",
            "dateRange": {"date_from": "all", "date_to": "2024-01-01T02:30:00", "explicitDate": true},
        })),
        &ctx(),
    )
    .unwrap_or_else(|error| panic!("{error:?}"));
    assert_eq!(compiled.queries[0], EARLIEST_QUERY);
    let earliest = Table {
        rows: vec![vec![json!("2024-01-01T00:10:00Z")]],
        ..Default::default()
    };
    let response = compiled
        .assemble(vec![earliest, Table::default()])
        .unwrap_or_else(|error| panic!("{error:?}"));
    assert_eq!(response["results"][0]["count"], json!(3));
    assert_eq!(
        response["results"][0]["days"][2],
        json!("2024-01-01 02:00:00")
    );
    assert_eq!(response["results"][0]["labels"][2], json!("1-Jan-2024"));
}

#[test]
fn time_to_convert_bins_as_posthog() {
    // PostHog's test_auto_bin_count_single_step: times 3600, 2220 and 82800 s, 2 bins.
    let compiled = compile(
        &node(json!({"funnelsFilter": {"funnelVizType": "time_to_convert"}})),
        &ctx(),
    )
    .unwrap_or_else(|error| panic!("{error:?}"));
    let query = &compiled.queries[0];
    assert!(query.contains("SELECT time_1 AS timing FROM"), "{query}");
    assert!(query.contains("WHERE reached >= 1"), "{query}");
    assert!(query.contains("if(samples > 205379, 1, 0)"), "{query}");
    let table = Table {
        rows: vec![
            vec![
                json!(0.0),
                json!(2),
                json!(2220.0),
                json!(40290.0),
                json!(2),
                json!(29540.0),
            ],
            vec![
                json!(2.0),
                json!(1),
                json!(2220.0),
                json!(40290.0),
                json!(2),
                json!(29540.0),
            ],
        ],
        ..Default::default()
    };
    let response = compiled
        .assemble(vec![table])
        .unwrap_or_else(|error| panic!("{error:?}"));
    assert_eq!(
        response["results"],
        json!({"average_conversion_time": 29540.0, "bins": [[2220, 2], [42510, 0], [82800, 1]]})
    );
    let custom = compile(
        &node(json!({"funnelsFilter": {"funnelVizType": "time_to_convert", "binCount": 500}})),
        &ctx(),
    )
    .unwrap_or_else(|error| panic!("{error:?}"));
    assert!(
        custom.queries[0].contains("90 AS bins"),
        "{}",
        custom.queries[0]
    );
    assert_eq!(
        custom
            .assemble(vec![Table::default()])
            .unwrap_or_else(|error| panic!("{error:?}"))["results"],
        json!({"average_conversion_time": null, "bins": [[0, 0], [60, 0]]})
    );
}

#[test]
fn window_and_masks_in_the_query() {
    let compiled = compile(
        &node(json!({
            "funnelsFilter": {
                "funnelWindowInterval": 2,
                "funnelWindowIntervalUnit": "hour",
                "exclusions": [{"kind": "EventsNode", "event": "quit", "funnelFromStep": 0, "funnelToStep": 1}]
            }
        })),
        &ctx(),
    )
    .unwrap_or_else(|error| panic!("{error:?}"));
    let query = &compiled.queries[0];
    assert!(query.contains("aggregateFunnel(2, 7200, 'ordered', timestamp, if((event = 'signup'), 1, 0) + if((event = 'pay'), 2, 0), if((event = 'quit'), 1, 0))"), "{query}");
    assert!(
        query.contains("(event = 'quit')) GROUP BY actor"),
        "{query}"
    );
    assert!(query.ends_with("LIMIT 1"), "{query}");
}

#[test]
fn strict_funnels_read_every_event() {
    let compiled = compile(
        &node(json!({"funnelsFilter": {"funnelOrderType": "strict"}})),
        &ctx(),
    )
    .unwrap_or_else(|error| panic!("{error:?}"));
    assert!(
        !compiled.queries[0].contains("OR (event"),
        "{}",
        compiled.queries[0]
    );
}

#[test]
fn steps_are_assembled_with_cumulative_counts() {
    let compiled = compile(&node(json!({})), &ctx()).unwrap_or_else(|error| panic!("{error:?}"));
    let table = Table {
        rows: vec![vec![json!(10), json!(4), json!(12.5), json!(10.0)]],
        ..Default::default()
    };
    let response = compiled
        .assemble(vec![table])
        .unwrap_or_else(|error| panic!("{error:?}"));
    assert_eq!(
        response["results"],
        json!([
            {"action_id": "signup", "name": "signup", "custom_name": null, "order": 0, "people": [], "count": 10,
             "type": "events", "average_conversion_time": null, "median_conversion_time": null},
            {"action_id": "pay", "name": "pay", "custom_name": "Paid", "order": 1, "people": [], "count": 4,
             "type": "events", "average_conversion_time": 12.5, "median_conversion_time": 10.0},
        ])
    );
    let empty = compile(&node(json!({})), &ctx()).unwrap_or_else(|error| panic!("{error:?}"));
    let zero = Table {
        rows: vec![vec![json!(0), json!(0), Value::Null, Value::Null]],
        ..Default::default()
    };
    assert_eq!(
        empty
            .assemble(vec![zero])
            .unwrap_or_else(|error| panic!("{error:?}"))["results"],
        json!([])
    );
}

#[test]
fn breakdown_buckets_past_the_limit_are_other() {
    let compiled = compile(
        &node(json!({
            "funnelsFilter": {"funnelOrderType": "unordered"},
            "breakdownFilter": {"breakdown": ["$browser"], "breakdown_limit": 1}
        })),
        &ctx(),
    )
    .unwrap_or_else(|error| panic!("{error:?}"));
    assert!(
        compiled.queries[0].contains(
            "ifNull(argMinIf(ifNull(properties['$browser'], ''), timestamp, ifNull(properties['$browser'], '') != ''), '') AS breakdown"
        ),
        "{}",
        compiled.queries[0]
    );
    let table = Table {
        rows: vec![
            vec![
                json!(1),
                json!("Chrome"),
                json!(3),
                json!(2),
                json!(5.0),
                json!(5.0),
            ],
            vec![
                json!(2),
                json!(""),
                json!(2),
                json!(0),
                Value::Null,
                Value::Null,
            ],
        ],
        ..Default::default()
    };
    let response = compiled
        .assemble(vec![table])
        .unwrap_or_else(|error| panic!("{error:?}"));
    let results = &response["results"];
    assert_eq!(results[0][0]["breakdown_value"], json!(["Chrome"]));
    assert_eq!(results[0][1]["name"], json!("Completed 2 steps"));
    assert_eq!(results[0][1]["count"], json!(2));
    assert_eq!(results[1][0]["breakdown"], json!(["Other"]));
    assert_eq!(results[1][1]["average_conversion_time"], Value::Null);
}

#[test]
fn several_breakdowns_attribute_one_combination_per_actor() {
    let compiled = compile(
        &node(json!({
            "funnelsFilter": {"breakdownAttributionType": "last_touch"},
            "breakdownFilter": {"breakdown_limit": 1, "breakdowns": [
                {"property": "$browser"}, {"property": "plan", "type": "person"}]}
        })),
        &ctx(),
    )
    .unwrap_or_else(|error| panic!("{error:?}"));
    let query = &compiled.queries[0];
    let browser = "ifNull(properties['$browser'], '')";
    let plan = "ifNull(person.properties['plan'], '')";
    assert!(
        query.contains(&format!(
            "ifNull(argMaxIf(concat(toString(length({browser})), ':', {browser}, toString(length({plan})), ':', {plan}), timestamp, {browser} != '' OR {plan} != ''), '0:0:') AS breakdown"
        )),
        "{query}"
    );
    let row = |bucket: i64, key: &str, first: i64, second: i64| {
        vec![
            json!(bucket),
            json!(key),
            json!(first),
            json!(second),
            json!(60.0),
            json!(60.0),
        ]
    };
    let table = Table {
        rows: vec![row(1, "6:Chrome0:", 4, 2), row(2, "6:Safari3:pro", 3, 1)],
        ..Default::default()
    };
    let results = compiled
        .assemble(vec![table])
        .unwrap_or_else(|error| panic!("{error:?}"))["results"]
        .clone();
    assert_eq!(results[0][0]["breakdown_value"], json!(["Chrome", ""]));
    assert_eq!(results[0][1]["breakdown"], json!(["Chrome", ""]));
    assert_eq!(results[0][1]["count"], json!(2));
    // PostHog's other bucket of list values is one element.
    assert_eq!(results[1][0]["breakdown_value"], json!(["Other"]));

    // A list of properties in `breakdown` is the same thing, of one type.
    let listed = compile(
        &node(json!({"breakdownFilter": {"breakdown": ["$browser", "$os"]}})),
        &ctx(),
    )
    .unwrap_or_else(|error| panic!("{error:?}"));
    assert!(
        listed.queries[0]
            .contains("argMinIf(concat(toString(length(ifNull(properties['$browser'], '')))")
    );
}

#[test]
fn cohort_breakdowns_are_the_funnel_of_each_cohort() {
    let ctx = crate::breakdown::tests::cohort_context();
    let compiled = compile(
        &node(json!({"breakdownFilter": {"breakdown_type": "cohort", "breakdown": ["all", 1, 2]}})),
        &ctx,
    )
    .unwrap_or_else(|error| panic!("{error:?}"));
    let query = &compiled.queries[0];
    let member = crate::breakdown::tests::MEMBER;
    assert!(
        query.starts_with("WITH actors AS (SELECT actor, arrayElement(funnel, 1) AS reached"),
        "{query}"
    );
    assert!(
        query.contains(&format!(
            "SELECT 0 AS bucket, reached, time_1 FROM actors UNION ALL SELECT 1 AS bucket, reached, time_1 FROM actors WHERE actor IN ('{member}') UNION ALL SELECT 2 AS bucket, reached, time_1 FROM actors WHERE (actor IN (SELECT id FROM persons WHERE"
        )),
        "{query}"
    );
    assert!(!query.contains("Other"), "{query}");
    let row = |bucket: i64, first: i64, second: i64| {
        vec![
            json!(bucket),
            json!(""),
            json!(first),
            json!(second),
            json!(5.0),
            json!(5.0),
        ]
    };
    let table = Table {
        rows: vec![row(0, 9, 3), row(1, 0, 0), row(2, 4, 3)],
        ..Default::default()
    };
    let results = compiled
        .assemble(vec![table])
        .unwrap_or_else(|error| panic!("{error:?}"))["results"]
        .clone();
    // By conversions from the last step back (a tie at step 2, then step 1); an empty cohort
    // has no result.
    assert_eq!(results.as_array().map(Vec::len), Some(2));
    assert_eq!(results[0][0]["breakdown"], json!("all users"));
    assert_eq!(results[0][0]["breakdown_value"], json!(0));
    assert_eq!(results[1][1]["breakdown"], json!("Pro plan"));
    assert_eq!(results[1][1]["breakdown_value"], json!(2));
    assert_eq!(results[1][1]["count"], json!(3));
}

#[test]
fn breakdown_values_are_path_cleaned_and_never_binned() {
    let mut context = ctx();
    context.path_cleaning_rules = std::sync::Arc::new(vec![crate::paths::CleaningRule {
        regex: "/item/\\d+".into(),
        alias: "/item/<id>".into(),
    }]);
    let cleaned = node(
        json!({"breakdownFilter": {"breakdown": "$pathname", "breakdown_path_cleaning": true}}),
    );
    let query = compile(&cleaned, &context)
        .expect("compiles")
        .queries
        .join("\n");
    assert!(
        query.contains(
            "ifNull(replaceRegexpAll(properties['$pathname'], '/item/\\\\d+', '/item/<id>'), '')"
        ),
        "{query}"
    );
    let binned = node(
        json!({"breakdownFilter": {"breakdown": "price", "breakdown_histogram_bin_count": 4}}),
    );
    assert_eq!(
        error(&binned).attr,
        "breakdownFilter.breakdown_histogram_bin_count"
    );
}
