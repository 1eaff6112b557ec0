//! Unit tests of `events_query.rs`.

use super::*;

fn context() -> Context {
    crate::testing::context(chrono_tz::UTC, "2026-11-10T12:00:00Z", 0)
}

fn query(node: Value) -> String {
    match compile(&node, &context()) {
        Ok(compiled) => compiled.queries.join(";"),
        Err(error) => panic!("unexpected error: {error:?}"),
    }
}

fn error(node: Value) -> Invalid {
    match compile(&node, &context()) {
        Ok(compiled) => panic!("expected an error, got {:?}", compiled.queries),
        Err(error) => error,
    }
}

const WINDOW: &str = "(timestamp < toDateTime('2026-11-10 12:00:05.000000Z')) AND (timestamp > toDateTime('2026-11-09 12:00:00.000000Z'))";

#[test]
fn aggregations_are_found_outside_strings() {
    assert!(has_aggregation("count()"));
    assert!(has_aggregation("COUNT(*)"));
    assert!(has_aggregation("sum(toFloat(properties.amount)) / 2"));
    assert!(has_aggregation("quantile(0.5)(toFloat(properties.x))"));
    assert!(has_aggregation("uniq (distinct_id)"));
    assert!(has_aggregation("toString(countIf(event = 'a'))"));
    assert!(!has_aggregation("event"));
    assert!(!has_aggregation("'count()'"));
    assert!(!has_aggregation("concat('sum(', event)"));
    assert!(!has_aggregation("properties.count"));
    assert!(!has_aggregation("properties.count(1)"));
    assert!(!has_aggregation("account(1)"));
    assert!(!has_aggregation("count_of_things"));
    assert!(!has_aggregation("`sum(x)`"));
    assert!(!has_aggregation("maxValue(x)"));
    assert!(!has_aggregation("'it\\'s count()'"));
}

#[test]
fn comments_and_aliases() {
    assert_eq!(strip_comment("count() -- Total"), "count()");
    assert_eq!(strip_comment("'a--b' -- c"), "'a--b'");
    assert_eq!(split_alias("count() as total"), ("count()", Some("total")));
    assert_eq!(
        split_alias("count() AS `my total`"),
        ("count()", Some("`my total`"))
    );
    assert_eq!(
        split_alias("cast(x as String)"),
        ("cast(x as String)", None)
    );
    assert_eq!(split_alias("'a as b'"), ("'a as b'", None));
}

#[test]
fn plain_select_with_defaults() {
    assert_eq!(
        query(
            json!({"kind": "EventsQuery", "select": ["event", "timestamp", "properties.$browser -- Browser"]})
        ),
        format!(
            "SELECT (event) AS column_0, (timestamp) AS column_1, (properties.$browser) AS column_2 FROM events \
             WHERE {WINDOW} ORDER BY timestamp DESC LIMIT 101"
        )
    );
}

#[test]
fn aggregates_group_by_the_rest_and_go_to_having() {
    assert_eq!(
        query(json!({
            "kind": "EventsQuery",
            "select": ["event", "count()", "uniq(distinct_id) as users"],
            "where": ["properties.plan = 'pro'", "count() > 5"],
            "event": "$pageview",
            "after": "all",
            "limit": 10,
            "offset": 20,
        })),
        "SELECT (event) AS column_0, (count()) AS column_1, (uniq(distinct_id)) AS \"users\" FROM events \
         WHERE ((properties.plan = 'pro')) AND (event = '$pageview') \
         AND (timestamp < toDateTime('2026-11-10 12:00:05.000000Z')) \
         GROUP BY (event) HAVING ((count() > 5)) ORDER BY count() DESC LIMIT 11 OFFSET 20"
    );
}

#[test]
fn filters_window_and_order() {
    let text = query(json!({
        "kind": "EventsQuery",
        "select": ["*"],
        "properties": [{"key": "$browser", "value": "Chrome"}],
        "fixedProperties": [{"key": "email", "type": "person", "operator": "is_set"}],
        "events": ["a", "b"],
        "after": "2026-11-01",
        "before": "2026-11-05T00:00:00Z",
        "orderBy": ["timestamp ASC", "person_display_name -- Person DESC", "event"],
    }));
    assert!(
        text.starts_with("SELECT uuid AS column_0, event AS column_1, properties AS column_2"),
        "{text}"
    );
    assert!(text.contains(
        "WHERE ((properties['$browser'] = 'Chrome')) AND ((person.properties['email'] IS NOT NULL)) \
         AND (event IN ('a', 'b')) AND (timestamp < toDateTime('2026-11-05 00:00:00.000000Z')) \
         AND (timestamp > toDateTime('2026-11-01 00:00:00.000000Z')) ORDER BY (timestamp) ASC, \
         coalesce(person.properties['email'], "
    ), "{text}");
    assert!(
        text.ends_with("distinct_id) DESC, (event) LIMIT 101"),
        "{text}"
    );
}

#[test]
fn default_orders() {
    let order = |select: Value| {
        let text = query(json!({"kind": "EventsQuery", "select": select}));
        text.split(" ORDER BY ")
            .nth(1)
            .unwrap_or("")
            .replace(" LIMIT 101", "")
    };
    assert_eq!(order(json!(["event", "sum(1)"])), "(sum(1)) DESC");
    assert_eq!(order(json!(["event", "distinct_id"])), "(event) ASC");
    assert_eq!(order(json!([])), "uuid ASC");
}

#[test]
fn limits() {
    let tail = |node: Value| {
        let text = query(node);
        text.split(" LIMIT ").nth(1).unwrap_or("").to_string()
    };
    assert_eq!(
        tail(json!({"kind": "EventsQuery", "select": ["event"], "limit": 0})),
        "101"
    );
    assert_eq!(
        tail(json!({"kind": "EventsQuery", "select": ["event"], "limit": 1_000_000})),
        "50000"
    );
    assert_eq!(
        error(json!({"kind": "EventsQuery", "select": ["event"], "limit": -1})).attr,
        "limit"
    );
    assert_eq!(
        error(json!({"kind": "EventsQuery", "select": ["event"], "offset": "x"})).attr,
        "offset"
    );
}

#[test]
fn invalid_nodes_name_the_field() {
    let base = |extra: Value| {
        let mut node = json!({"kind": "EventsQuery", "select": ["event"]});
        if let (Some(node), Value::Object(extra)) = (node.as_object_mut(), extra) {
            node.extend(extra);
        }
        node
    };
    assert_eq!(
        error(json!({"kind": "EventsQuery", "select": ["event", 3]})).attr,
        "select[1]"
    );
    assert_eq!(
        error(json!({"kind": "EventsQuery", "select": ["event", "1; drop"]})).attr,
        "select[1]"
    );
    assert_eq!(
        error(json!({"kind": "EventsQuery", "select": ["count() as 'x y'"]})).attr,
        "select[0]"
    );
    assert_eq!(
        error(base(json!({"where": ["x", "select 1 from events"]}))).attr,
        "where[1]"
    );
    assert_eq!(error(base(json!({"after": "yesterday-ish"}))).attr, "after");
    assert_eq!(error(base(json!({"before": 5}))).attr, "before");
    assert_eq!(
        error(base(json!({"orderBy": ["event; DESC"]}))).attr,
        "orderBy[0]"
    );
    assert_eq!(error(base(json!({"actionId": 3}))).attr, "actionId");
    assert_eq!(
        error(base(
            json!({"properties": [{"key": "a", "value": 1, "operator": "zzz"}]})
        ))
        .attr,
        "properties[0].operator"
    );
    assert_eq!(
        error(base(
            json!({"fixedProperties": [{"key": "a", "type": "cohort", "value": 1}]})
        ))
        .attr,
        "fixedProperties[0].value"
    );
}

#[test]
fn assembly_pages_and_shapes() {
    let compiled = match compile(
        &json!({"kind": "EventsQuery", "select": ["event", "*", "person", "count() as n"], "limit": 2, "offset": 4}),
        &context(),
    ) {
        Ok(compiled) => compiled,
        Err(error) => panic!("{error:?}"),
    };
    let row = |event: &str| {
        let mut cells = vec![json!(event)];
        cells.extend([
            json!("u-1"),
            json!(event),
            json!("{\"$browser\":\"Chrome\"}"),
            json!("2026-11-09T10:00:00+00:00"),
            json!(1),
            json!("d-1"),
            Value::Null,
            json!("2026-11-09T10:00:01+00:00"),
        ]);
        cells.extend([json!("d-1"), json!("p-1"), json!("{\"email\":\"a@b\"}")]);
        cells.push(json!(7));
        cells
    };
    let mut types: Vec<(String, String)> = vec![("column_0".into(), "String".into())];
    types.extend((0..8).map(|i| (format!("s{i}"), "String".to_string())));
    types.extend((0..3).map(|i| (format!("p{i}"), "String".to_string())));
    types.push(("n".into(), "UInt64".into()));
    let table = Table {
        columns: types.iter().map(|(name, _)| name.clone()).collect(),
        types,
        rows: vec![row("a"), row("b"), row("c")],
    };
    let response = match compiled.assemble(vec![table]) {
        Ok(response) => response,
        Err(error) => panic!("{error:?}"),
    };
    assert_eq!(response["hasMore"], json!(true));
    assert_eq!(response["limit"], json!(2));
    assert_eq!(response["offset"], json!(4));
    assert_eq!(response["columns"], json!(["event", "*", "person", "n"]));
    assert_eq!(response["types"][0], json!("String"));
    assert_eq!(response["types"][3], json!("UInt64"));
    assert!(
        response["types"][1]
            .as_str()
            .is_some_and(|t| t.starts_with("Tuple(String"))
    );
    let results = response["results"].as_array().cloned().unwrap_or_default();
    assert_eq!(results.len(), 2);
    assert_eq!(results[1][0], json!("b"));
    assert_eq!(results[0][1]["properties"], json!({"$browser": "Chrome"}));
    assert_eq!(results[0][1]["elements_chain"], json!(""));
    assert_eq!(results[0][1]["team_id"], json!(1));
    assert_eq!(
        results[0][2],
        json!({"uuid": "p-1", "properties": {"email": "a@b"}, "distinct_id": "d-1"})
    );
    assert_eq!(results[0][3], json!(7));
}
