use serde_json::{Value, json};

use crate::{Context, Table};

fn context() -> Context {
    crate::testing::context(chrono_tz::UTC, "2024-06-01T12:00:00Z", 0)
}

fn node(paths_filter: Value) -> Value {
    json!({
        "kind": "PathsQuery",
        "dateRange": {"date_from": "2024-05-01", "date_to": "2024-05-31"},
        "pathsFilter": paths_filter,
    })
}

fn query(node: Value) -> String {
    match crate::compile(&node, &context()) {
        Ok(compiled) => compiled.queries.join("\n"),
        Err(invalid) => panic!("{node}: {invalid:?}"),
    }
}

#[test]
fn invalid_nodes_name_the_field() {
    for (node, attr) in [
        (node(json!({"stepLimt": 3})), "pathsFilter.stepLimt"),
        (
            node(json!({"includeEventTypes": ["$pageview", "$click"]})),
            "pathsFilter.includeEventTypes[1]",
        ),
        (node(json!({"stepLimit": "five"})), "pathsFilter.stepLimit"),
        (node(json!({"stepLimit": 1001})), "pathsFilter.stepLimit"),
        (
            node(json!({"localPathCleaningFilters": [{"regex": "\\d+"}]})),
            "pathsFilter.localPathCleaningFilters[0]",
        ),
        (node(json!({"edgeLimit": -1})), "pathsFilter.edgeLimit"),
        (
            json!({"kind": "PathsQuery", "funnelPathsFilter": {"funnelStep": 1}}),
            "funnelPathsFilter",
        ),
        (
            json!({"kind": "PathsQuery", "pathFilter": {}}),
            "pathFilter",
        ),
        (
            json!({"kind": "PathsQuery", "dateRange": {"date_from": "yesterday"}}),
            "dateRange.date_from",
        ),
        (
            node(json!({"includeEventTypes": ["hogql"], "pathsHogQLExpression": "1; select 2"})),
            "pathsFilter.pathsHogQLExpression",
        ),
    ] {
        match crate::compile(&node, &context()) {
            Ok(_) => panic!("compiled {node}"),
            Err(invalid) => assert_eq!(invalid.attr, attr, "{node}"),
        }
    }
}

#[test]
fn event_types_cleaning_and_groupings_shape_the_item() {
    let sql = query(node(json!({
        "includeEventTypes": ["$pageview", "custom_event"],
        "localPathCleaningFilters": [{"alias": "<id>", "regex": "/\\d+"}],
        "pathGroupings": ["/docs/*"],
        "excludeEvents": ["/pricing"],
    })));
    assert!(
        sql.contains("(event = '$pageview' OR NOT startsWith(event, '$'))"),
        "{sql}"
    );
    // A pageview's URL without its trailing slash; no $screen branch when screens are not read.
    assert!(
        sql.contains("replaceRegexpAll(ifNull(properties.$current_url, ''), '(.)/$', '\\\\1')"),
        "{sql}"
    );
    assert!(!sql.contains("$screen_name"), "{sql}");
    assert!(sql.contains("replaceRegexpAll(ifNull("), "{sql}");
    assert!(sql.contains(", '/\\\\d+', '<id>')"), "{sql}");
    assert!(
        sql.contains("multiIf(match(cleaned, '/docs/.*'), '/docs/*', cleaned)"),
        "{sql}"
    );
    assert!(sql.contains("WHERE path_item NOT IN ('/pricing')"), "{sql}");
    assert!(
        sql.contains("timestamp >= toDateTime('2024-05-01 00:00:00.000000Z')"),
        "{sql}"
    );
    assert!(
        sql.contains("timestamp <= toDateTime('2024-05-31 23:59:59.999999Z')"),
        "{sql}"
    );
}

#[test]
fn path_replacements_apply_the_project_rules_before_the_nodes() {
    let mut ctx = context();
    ctx.path_cleaning_rules = std::sync::Arc::new(vec![crate::paths::CleaningRule {
        regex: "/users/\\d+".into(),
        alias: "/users/<id>".into(),
    }]);
    let compile = |filter: Value| match crate::compile(&node(filter), &ctx) {
        Ok(compiled) => compiled.queries.join("\n"),
        Err(invalid) => panic!("{invalid:?}"),
    };
    let local = json!([{"alias": "<n>", "regex": "\\d+"}]);
    let replaced = compile(json!({"pathReplacements": true, "localPathCleaningFilters": local}));
    let project = replaced.find("'/users/<id>'").expect("the project's rule");
    let node_rule = replaced.find("'<n>'").expect("the node's rule");
    // Nested calls: the project's rule is applied first, so it sits inside the node's.
    assert!(project < node_rule, "{replaced}");
    let plain = compile(json!({"localPathCleaningFilters": local}));
    assert!(!plain.contains("/users/<id>"), "{plain}");
    assert!(plain.contains("'<n>'"), "{plain}");
}

#[test]
fn targets_and_limits_pick_the_kept_steps() {
    // The engine's aggregatePaths keeps the steps (its own tests hold the semantics).
    let plain = query(node(json!({})));
    assert!(
        plain.contains("aggregatePaths(5, 1800, NULL, NULL, timestamp, path_item)"),
        "{plain}"
    );
    assert!(plain.contains("LIMIT 50"), "{plain}");

    // A lone start point loses its trailing slash; PostHog's default edge limit is replaced.
    let start = query(node(
        json!({"startPoint": "/a/", "stepLimit": 3, "edgeLimit": 7}),
    ));
    assert!(
        start.contains("aggregatePaths(3, 1800, '/a', NULL,"),
        "{start}"
    );
    assert!(start.contains("LIMIT 7"), "{start}");

    let end = query(node(json!({"endPoint": "/z"})));
    assert!(end.contains("aggregatePaths(5, 1800, NULL, '/z',"), "{end}");

    let both = query(node(
        json!({"startPoint": "/a", "endPoint": "/z", "stepLimit": 4}),
    ));
    assert!(
        both.contains("aggregatePaths(4, 1800, '/a', '/z',"),
        "{both}"
    );

    let weights = query(node(json!({"minEdgeWeight": 2, "maxEdgeWeight": 9})));
    assert!(
        weights.contains("HAVING count() >= 2 AND count() <= 9"),
        "{weights}"
    );
}

#[test]
fn only_edges_reachable_from_a_first_step_are_returned() {
    let compiled = crate::compile(&node(json!({})), &context()).unwrap();
    let row = |s: &str, t: &str, v: i64, c: f64| vec![json!(s), json!(t), json!(v), json!(c)];
    let table = Table {
        rows: vec![
            row("1_/a", "2_/b", 3, 10.0),
            row("2_/b", "3_/c", 2, 1.5),
            // Its way in (2_/x) was cut by the edge limit.
            row("3_/x", "4_/y", 5, 2.0),
        ],
        ..Default::default()
    };
    let answer = compiled.assemble(vec![table]).unwrap();
    assert_eq!(
        answer["results"],
        json!([
            {"source": "1_/a", "target": "2_/b", "value": 3, "average_conversion_time": 10000.0},
            {"source": "2_/b", "target": "3_/c", "value": 2, "average_conversion_time": 1500.0},
        ])
    );
}
