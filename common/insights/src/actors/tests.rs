use serde_json::{Value, json};

use crate::{Context, Table};

fn context() -> Context {
    crate::testing::context(chrono_tz::UTC, "2024-06-01T12:00:00Z", 0)
}

fn trends() -> Value {
    json!({
        "kind": "TrendsQuery",
        "series": [{"kind": "EventsNode", "event": "$pageview"}, {"kind": "EventsNode", "event": "signed_up"}],
        "dateRange": {"date_from": "2024-05-01", "date_to": "2024-05-31"},
        "breakdownFilter": {"breakdown": "$browser", "breakdown_type": "event"},
    })
}

fn actors(source: Value, extra: Value) -> Value {
    let mut node = json!({
        "kind": "ActorsQuery",
        "source": {"kind": "InsightActorsQuery", "source": source},
    });
    if let (Value::Object(node), Value::Object(extra)) = (&mut node, extra) {
        for (key, value) in extra {
            match key.strip_prefix("source.") {
                Some(inner) => {
                    node["source"][inner] = value;
                }
                None => {
                    node.insert(key, value);
                }
            }
        }
    }
    node
}

fn query(node: Value) -> String {
    match crate::compile(&node, &context()) {
        Ok(compiled) => compiled.queries.join("\n"),
        Err(invalid) => panic!("{node}: {invalid:?}"),
    }
}

fn error_attr(node: Value) -> String {
    match crate::compile(&node, &context()) {
        Ok(_) => panic!("compiled {node}"),
        Err(invalid) => invalid.attr,
    }
}

#[test]
fn invalid_nodes_name_the_field() {
    let funnel = json!({"kind": "FunnelsQuery", "series": [
        {"kind": "EventsNode", "event": "a"}, {"kind": "EventsNode", "event": "b"}]});
    for (node, attr) in [
        (
            actors(trends(), json!({"select": ["nonsense()"]})),
            "select[0]",
        ),
        (actors(trends(), json!({"orderBy": [3]})), "orderBy[0]"),
        (actors(trends(), json!({"limit": 0})), "limit"),
        (
            actors(trends(), json!({"source.dey": "2024-05-02"})),
            "source.dey",
        ),
        (
            actors(trends(), json!({"source.day": "someday"})),
            "source.day",
        ),
        (
            actors(trends(), json!({"source.series": 2})),
            "source.series",
        ),
        (
            actors(
                json!({"kind": "TrendsQuery", "series": [], "dateRage": {}}),
                json!({}),
            ),
            "source.source.dateRage",
        ),
        (
            actors(
                json!({"kind": "TrendsQuery", "series": [{"kind": "EventsNode", "event": 3}]}),
                json!({}),
            ),
            "source.source.series[0].event",
        ),
        (actors(funnel.clone(), json!({})), "source.funnelStep"),
        (
            actors(funnel.clone(), json!({"source.funnelStep": -1})),
            "source.funnelStep",
        ),
        (
            actors(funnel, json!({"source.funnelStep": 3})),
            "source.funnelStep",
        ),
        (
            actors(
                json!({"kind": "LifecycleQuery", "series": [{"kind": "EventsNode"}],
                "dateRange": {"date_from": "2024-05-01", "date_to": "2024-05-07"}}),
                json!({"source.day": "2024-05-03", "source.status": "gone"}),
            ),
            "source.status",
        ),
        (
            actors(json!({"kind": "WebOverviewQuery"}), json!({})),
            "source.source.kind",
        ),
        (
            json!({"kind": "ActorsQuery", "select": ["event_count"]}),
            "select[0]",
        ),
        (
            json!({"kind": "ActorsQuery", "source": {"kind": "HogQLQuery", "query": "select 1"}}),
            "source.kind",
        ),
        (
            json!({"kind": "ActorsQuery", "properties": [{"key": "$browser", "type": "event", "value": "x"}]}),
            "properties[0].type",
        ),
    ] {
        assert_eq!(error_attr(node.clone()), attr, "{node}");
    }
}

#[test]
fn a_trends_point_is_its_bucket_series_and_breakdown_value() {
    let sql = query(actors(
        trends(),
        json!({"source.day": "2024-05-03", "source.series": 1, "source.breakdown": "Chrome"}),
    ));
    assert!(
        sql.contains(
            "matched AS (SELECT person_id AS actor_id, count() AS event_count FROM events WHERE"
        ),
        "{sql}"
    );
    assert!(sql.contains("event = 'signed_up'"), "{sql}");
    assert!(sql.contains("timestamp >= toDateTime('2024-05-03 00:00:00.000000Z') AND timestamp < toDateTime('2024-05-04 00:00:00.000000Z')"), "{sql}");
    assert!(
        sql.contains(
            "ifNull(nullIf(properties['$browser'], ''), '$$_posthog_breakdown_null_$$') = 'Chrome'"
        ),
        "{sql}"
    );
    assert!(
        sql.contains("INNER JOIN persons ON persons.id = matched.actor_id"),
        "{sql}"
    );
    // PostHog's default columns, ordered by the first (the person, i.e. its id); one row more
    // than the page tells whether more follow.
    assert!(
        sql.contains("SELECT id AS column_0, id AS column_1, 1 AS column_2,"),
        "{sql}"
    );
    assert!(sql.contains("ORDER BY id ASC LIMIT 101 OFFSET 0"), "{sql}");
}

#[test]
fn funnel_steps_reached_and_dropped_off() {
    let funnel = json!({"kind": "FunnelsQuery", "series": [
        {"kind": "EventsNode", "event": "a"}, {"kind": "EventsNode", "event": "b"},
        {"kind": "EventsNode", "event": "c"}],
        "funnelsFilter": {"funnelWindowInterval": 2, "funnelWindowIntervalUnit": "hour"}});
    let reached = query(actors(funnel.clone(), json!({"source.funnelStep": 2})));
    // The funnel's own per-actor query.
    assert!(reached.contains("aggregateFunnel(3, 7200, 'ordered', timestamp, if((event = 'a'), 1, 0) + if((event = 'b'), 2, 0) + if((event = 'c'), 4, 0), 0)"), "{reached}");
    assert!(
        reached.contains("countIf((event = 'a') OR (event = 'b') OR (event = 'c')) AS event_count"),
        "{reached}"
    );
    assert!(reached.contains("WHERE reached >= 1"), "{reached}");
    let dropped = query(actors(funnel, json!({"source.funnelStep": -3})));
    assert!(dropped.contains("WHERE reached = 1"), "{dropped}");
}

#[test]
fn lifecycle_stickiness_and_paths_points() {
    let lifecycle = json!({"kind": "LifecycleQuery", "series": [{"kind": "EventsNode", "event": "$pageview"}],
        "dateRange": {"date_from": "2024-05-01", "date_to": "2024-05-07"}});
    let sql = query(actors(
        lifecycle,
        json!({"source.day": "2024-05-03", "source.status": "new"}),
    ));
    // 1 May is interval 1, so 3 May is interval 3; activity is read from 30 April.
    assert!(
        sql.contains("now_active = 1 AND earlier_active = 0 AND created_period = 3"),
        "{sql}"
    );
    assert!(sql.contains("timestamp >= toDateTime('2024-04-30 00:00:00.000000Z') AND timestamp < toDateTime('2024-05-04 00:00:00.000000Z')"), "{sql}");

    let stickiness = json!({"kind": "StickinessQuery", "series": [{"kind": "EventsNode", "event": "$pageview"}],
        "dateRange": {"date_from": "2024-05-01", "date_to": "2024-05-07"}});
    let sql = query(actors(stickiness, json!({"source.day": 3})));
    assert!(
        sql.contains("GROUP BY actor_id HAVING count() = 3"),
        "{sql}"
    );

    let paths = json!({"kind": "PathsQuery", "dateRange": {"date_from": "2024-05-01", "date_to": "2024-05-07"},
        "pathsFilter": {"pathStartKey": "1_/a", "pathEndKey": "2_/b"}});
    let sql = query(actors(paths, json!({})));
    assert!(sql.contains("WITH items AS ("), "{sql}");
    assert!(sql.contains("step > 1 AND concat(toString(step - 1), '_', previous_item) = '1_/a' AND concat(toString(step), '_', item) = '2_/b'"), "{sql}");
}

#[test]
fn persons_alone_are_filtered_searched_and_ordered() {
    let sql = query(json!({
        "kind": "ActorsQuery", "select": ["person", "created_at", "properties.email"],
        "properties": [{"key": "plan", "value": "pro", "operator": "exact", "type": "person"}],
        "search": "ann", "limit": 10, "offset": 20,
    }));
    assert!(sql.contains("FROM (SELECT * FROM persons WHERE "), "{sql}");
    assert!(sql.contains("ILIKE '%ann%'"), "{sql}");
    assert!(
        sql.contains("ORDER BY created_at DESC, id ASC LIMIT 11 OFFSET 20"),
        "{sql}"
    );
    let sql =
        query(json!({"kind": "ActorsQuery", "select": ["person"], "orderBy": ["person DESC"]}));
    assert!(
        sql.contains("ORDER BY properties['email'] DESC, id ASC"),
        "{sql}"
    );
}

#[test]
fn rows_become_person_objects_and_a_page() {
    let node =
        json!({"kind": "ActorsQuery", "select": ["person", "properties.email", "id"], "limit": 1});
    let compiled = crate::compile(&node, &context()).unwrap();
    let person = "0190b8f4-0000-7000-8000-000000000001";
    let row = |id: &str| {
        vec![
            json!(id),
            Value::Null,
            json!(id),
            json!("{\"email\":\"a@b.c\"}"),
            json!("2024-05-01T00:00:00Z"),
            json!(1),
            json!(["0190b8f4-0000-7000-8000-00000000000f", "user-1"]),
        ]
    };
    let table = Table {
        columns: vec![],
        types: vec![
            ("column_0".into(), "String".into()),
            ("column_1".into(), "String".into()),
            ("column_2".into(), "String".into()),
        ],
        rows: vec![row(person), row("another")],
    };
    let answer = compiled.assemble(vec![table]).unwrap();
    assert_eq!(
        answer["columns"],
        json!(["person", "properties.email", "id"])
    );
    assert_eq!(answer["hasMore"], json!(true));
    assert_eq!(answer["limit"], json!(1));
    assert_eq!(
        answer["results"],
        json!([[{"id": person, "distinct_ids": ["user-1", "0190b8f4-0000-7000-8000-00000000000f"],
            "properties": {"email": "a@b.c"}, "created_at": "2024-05-01T00:00:00Z", "is_identified": true},
            "a@b.c", person]])
    );
}

#[test]
fn a_retention_row_reads_the_retention_pairs() {
    let retention = json!({"kind": "RetentionQuery",
        "dateRange": {"date_from": "2024-05-01", "date_to": "2024-05-07"},
        "retentionFilter": {"period": "Day", "totalIntervals": 7}});
    let sql = query(actors(
        retention.clone(),
        json!({"source.interval": 2, "select": ["actor", "event_count"]}),
    ));
    assert!(sql.contains("pairs AS ("), "{sql}");
    assert!(
        sql.contains("FROM pairs WHERE start_interval_index = 2 GROUP BY actor_id"),
        "{sql}"
    );
    assert_eq!(
        error_attr(actors(retention.clone(), json!({"source.interval": 7}))),
        "source.interval"
    );
    assert_eq!(
        error_attr(actors(retention, json!({"source.interval": "x"}))),
        "source.interval"
    );
}

#[test]
fn a_multiple_breakdown_point_matches_every_value() {
    let insight = json!({
        "kind": "TrendsQuery",
        "series": [{"kind": "EventsNode", "event": "$pageview"}],
        "dateRange": {"date_from": "2024-05-01", "date_to": "2024-05-31"},
        "breakdownFilter": {"breakdowns": [{"property": "$browser"}, {"property": "plan", "type": "person"}]},
    });
    let sql = query(actors(
        insight.clone(),
        json!({"source.breakdown": ["Chrome", "$$_posthog_breakdown_null_$$"]}),
    ));
    assert!(
        sql.contains("ifNull(nullIf(properties['$browser'], ''), '$$_posthog_breakdown_null_$$') = 'Chrome' AND ifNull(nullIf(person.properties['plan'], ''), '$$_posthog_breakdown_null_$$') = '$$_posthog_breakdown_null_$$'"),
        "{sql}"
    );
    for breakdown in [
        json!("Chrome"),
        json!(["Chrome"]),
        json!([
            "$$_posthog_breakdown_other_$$",
            "$$_posthog_breakdown_other_$$"
        ]),
    ] {
        assert_eq!(
            error_attr(actors(
                insight.clone(),
                json!({"source.breakdown": breakdown})
            )),
            "source.breakdown"
        );
    }
}

#[test]
fn a_cohort_point_is_its_members() {
    let ctx = crate::breakdown::tests::cohort_context();
    let insight = json!({
        "kind": "TrendsQuery",
        "series": [{"kind": "EventsNode", "event": "$pageview"}],
        "dateRange": {"date_from": "2024-05-01", "date_to": "2024-05-31"},
        "breakdownFilter": {"breakdown_type": "cohort", "breakdown": [1, 2, "all"]},
    });
    let compile = |extra: Value| crate::compile(&actors(insight.clone(), extra), &ctx);
    let sql = compile(json!({"source.breakdown": 1}))
        .expect("compiles")
        .queries
        .join("");
    assert!(
        sql.contains(&format!(
            "person_id IN ('{}')",
            crate::breakdown::tests::MEMBER
        )),
        "{sql}"
    );
    let sql = compile(json!({"source.breakdown": "2"}))
        .expect("compiles")
        .queries
        .join("");
    assert!(
        sql.contains("person_id IN (SELECT id FROM persons WHERE"),
        "{sql}"
    );
    let sql = compile(json!({"source.breakdown": "all"}))
        .expect("compiles")
        .queries
        .join("");
    assert!(
        !sql.contains("person_id IN ('") && !sql.contains("SELECT id FROM persons WHERE"),
        "{sql}"
    );
    match compile(json!({"source.breakdown": 5})) {
        Ok(_) => panic!("a cohort the breakdown does not name"),
        Err(invalid) => assert_eq!(invalid.attr, "source.breakdown"),
    }
}

#[test]
fn funnel_step_breakdowns_share_the_funnels_per_actor_query() {
    let ctx = crate::breakdown::tests::cohort_context();
    let funnel = |breakdown: Value| {
        json!({"kind": "FunnelsQuery", "series": [
            {"kind": "EventsNode", "event": "a"}, {"kind": "EventsNode", "event": "b"}],
            "dateRange": {"date_from": "2024-05-01", "date_to": "2024-05-31"},
            "funnelsFilter": {"exclusions": [{"kind": "EventsNode", "event": "x", "funnelFromStep": 0, "funnelToStep": 1}]},
            "breakdownFilter": breakdown})
    };
    let compile = |node: Value| crate::compile(&node, &ctx);
    let single = funnel(json!({"breakdown": "$browser"}));
    let sql = compile(actors(
        single.clone(),
        json!({"source.funnelStep": 2, "source.funnelStepBreakdown": "Chrome"}),
    ))
    .expect("compiles")
    .queries
    .join("");
    assert!(
        sql.contains("WHERE reached >= 1 AND breakdown = 'Chrome'"),
        "{sql}"
    );
    // The exclusion is the funnel's own mask.
    assert!(sql.contains("if((event = 'x'), 1, 0)) AS funnel"), "{sql}");
    let sql = compile(actors(
        single.clone(),
        json!({"source.funnelStep": -2, "source.funnelStepBreakdown": [""]}),
    ))
    .expect("compiles")
    .queries
    .join("");
    assert!(
        sql.contains("WHERE reached = 0 AND breakdown = ''"),
        "{sql}"
    );

    let multi = funnel(json!({"breakdowns": [{"property": "$browser"}, {"property": "$os"}]}));
    let sql = compile(actors(
        multi.clone(),
        json!({"source.funnelStep": 1, "source.funnelStepBreakdown": ["Chrome", "Mac"]}),
    ))
    .expect("compiles")
    .queries
    .join("");
    assert!(sql.contains("AND breakdown = '6:Chrome3:Mac'"), "{sql}");

    let cohorts = funnel(json!({"breakdown_type": "cohort", "breakdown": [1, "all"]}));
    let sql = compile(actors(
        cohorts.clone(),
        json!({"source.funnelStep": 1, "source.funnelStepBreakdown": 1}),
    ))
    .expect("compiles")
    .queries
    .join("");
    assert!(
        sql.contains(&format!(
            "WHERE reached >= 0 AND actor IN ('{}')",
            crate::breakdown::tests::MEMBER
        )),
        "{sql}"
    );
    let sql = compile(actors(
        cohorts.clone(),
        json!({"source.funnelStep": 1, "source.funnelStepBreakdown": 0}),
    ))
    .expect("compiles")
    .queries
    .join("");
    assert!(sql.contains("WHERE reached >= 0)"), "{sql}");

    for (node, extra, attr) in [
        (
            multi.clone(),
            json!({"source.funnelStep": 1, "source.funnelStepBreakdown": "Chrome"}),
            "source.funnelStepBreakdown",
        ),
        (
            single.clone(),
            json!({"source.funnelStep": 1, "source.funnelStepBreakdown": "Other"}),
            "source.funnelStepBreakdown",
        ),
        (
            cohorts,
            json!({"source.funnelStep": 1, "source.funnelStepBreakdown": 2}),
            "source.funnelStepBreakdown",
        ),
        (
            funnel(json!({"breakdown": "$browser", "breakdown_type": "group"})),
            json!({"source.funnelStep": 1}),
            "source.source.breakdownFilter.breakdown_type",
        ),
        (
            json!({"kind": "FunnelsQuery", "series": [{"kind": "EventsNode", "event": "a"}, {"kind": "EventsNode", "event": "b"}],
                "funnelsFilter": {"funnelAggregateByHogQL": "properties.$session_id"}}),
            json!({"source.funnelStep": 1}),
            "source.source.funnelsFilter.funnelAggregateByHogQL",
        ),
    ] {
        match compile(actors(node, extra.clone())) {
            Ok(_) => panic!("compiled {extra}"),
            Err(invalid) => assert_eq!(invalid.attr, attr, "{extra}"),
        }
    }
}

#[test]
fn a_histogram_point_is_its_bin() {
    let mut insight = trends();
    insight["breakdownFilter"] = json!({"breakdown": "price", "breakdown_histogram_bin_count": 4});
    let sql = query(actors(
        insight.clone(),
        json!({"source.breakdown": "[17.5,25]"}),
    ));
    assert!(
        sql.contains("toFloat(properties['price']) >= toFloat('17.5') AND toFloat(properties['price']) < toFloat('25')"),
        "{sql}"
    );
    assert!(!sql.contains("breakdown_bins"), "{sql}");
    assert_eq!(
        error_attr(actors(insight, json!({"source.breakdown": "17.5 - 25"}))),
        "source.breakdown"
    );
}
