//! Unit tests of `filters.rs`.

use super::*;
use chrono::{TimeZone, Utc};
use serde_json::json;

fn context() -> Context {
    crate::testing::context(chrono_tz::America::New_York, "2026-03-15T12:30:00Z", 0)
}

fn compile(filters: Value) -> Result<String, Invalid> {
    expression(Some(&filters), &context(), "properties")
}

/// The expression without the outer parentheses every non-trivial answer has.
fn ok(filters: Value) -> String {
    match compile(filters) {
        Ok(text) if text == "true" => text,
        Ok(text) => match text.strip_prefix('(').and_then(|t| t.strip_suffix(')')) {
            Some(inner) => inner.to_string(),
            None => panic!("not parenthesized: {text}"),
        },
        Err(error) => panic!("unexpected error: {error:?}"),
    }
}

fn err(filters: Value) -> Invalid {
    match compile(filters) {
        Ok(text) => panic!("expected an error, got {text}"),
        Err(error) => error,
    }
}

#[test]
fn nothing_is_true() {
    assert_eq!(
        expression(None, &context(), "properties"),
        Ok("true".into())
    );
    assert_eq!(ok(json!(null)), "true");
    assert_eq!(ok(json!([])), "true");
    assert_eq!(ok(json!([{}])), "true");
    assert_eq!(ok(json!({"type": "AND", "values": []})), "true");
    assert_eq!(
        ok(json!({"type": "OR", "values": [{"type": "AND", "values": []}]})),
        "true"
    );
}

#[test]
fn the_answer_is_parenthesized() {
    assert_eq!(
        compile(
            json!({"type": "OR", "values": [{"key": "a", "value": "1"}, {"key": "b", "value": "2"}]})
        ),
        Ok("((properties['a'] = '1') OR (properties['b'] = '2'))".into())
    );
}

#[test]
fn exact_is_the_default_operator() {
    assert_eq!(
        ok(json!([{"key": "$browser", "value": "Chrome"}])),
        "properties['$browser'] = 'Chrome'"
    );
    assert_eq!(
        ok(json!([{"key": "$browser", "value": "Chrome", "type": "event", "operator": "exact"}])),
        "properties['$browser'] = 'Chrome'"
    );
}

#[test]
fn lists_are_and_groups_nest() {
    assert_eq!(
        ok(json!([
            {"key": "a", "value": "1"},
            {"key": "email", "value": "x@y", "type": "person", "operator": "icontains"}
        ])),
        "(properties['a'] = '1') AND (toString(person.properties['email']) ILIKE '%x@y%')"
    );
    assert_eq!(
        ok(json!({"type": "OR", "values": [
            {"type": "AND", "values": [{"key": "a", "value": "x"}, {"key": "b", "operator": "is_set"}]},
            {"type": "AND", "values": [{"key": "c", "operator": "is_not_set"}]}
        ]})),
        "((properties['a'] = 'x') AND (properties['b'] IS NOT NULL)) OR (properties['c'] IS NULL)"
    );
}

#[test]
fn every_operator() {
    let cases = [
        (
            json!({"key": "k", "value": "v", "operator": "is_not"}),
            "properties['k'] != 'v'",
        ),
        (
            json!({"key": "k", "value": "v", "operator": "not_icontains"}),
            "toString(properties['k']) NOT ILIKE '%v%'",
        ),
        (
            json!({"key": "k", "value": "^a.c$", "operator": "regex"}),
            "coalesce(match(toString(properties['k']), '^a.c$'), false)",
        ),
        (
            json!({"key": "k", "value": "\\d+", "operator": "not_regex"}),
            "NOT coalesce(match(toString(properties['k']), '\\\\d+'), false)",
        ),
        (
            json!({"key": "k", "value": 10, "operator": "gt"}),
            "toFloat(properties['k']) > 10",
        ),
        (
            json!({"key": "k", "value": 1.5, "operator": "gte"}),
            "toFloat(properties['k']) >= 1.5",
        ),
        (
            json!({"key": "k", "value": "m", "operator": "lt"}),
            "properties['k'] < 'm'",
        ),
        (
            json!({"key": "k", "value": -2, "operator": "lte"}),
            "toFloat(properties['k']) <= -2",
        ),
        (
            json!({"key": "k", "value": 3, "operator": "min"}),
            "toFloat(properties['k']) >= 3",
        ),
        (
            json!({"key": "k", "value": 3, "operator": "max"}),
            "toFloat(properties['k']) <= 3",
        ),
        (
            json!({"key": "k", "operator": "is_set", "value": "is_set"}),
            "properties['k'] IS NOT NULL",
        ),
        (
            json!({"key": "k", "operator": "is_not_set"}),
            "properties['k'] IS NULL",
        ),
        (
            json!({"key": "k", "value": [1, "5"], "operator": "between"}),
            "toFloat(properties['k']) >= 1.0 AND toFloat(properties['k']) <= 5.0",
        ),
        (
            json!({"key": "k", "value": [1, 5], "operator": "not_between"}),
            "toFloat(properties['k']) < 1.0 OR toFloat(properties['k']) > 5.0",
        ),
        (
            json!({"key": "k", "value": ["a", "b"], "operator": "in"}),
            "properties['k'] IN ('a', 'b')",
        ),
        (
            json!({"key": "k", "value": ["a", "b"], "operator": "not_in"}),
            "coalesce(properties['k'] NOT IN ('a', 'b'), true)",
        ),
        (
            json!({"key": "k", "value": [1, 2], "operator": "in"}),
            "toFloat(properties['k']) IN (1, 2)",
        ),
        (
            json!({"key": "k", "value": "2026-01-01", "operator": "is_date_after"}),
            "toDateTime(toString(properties['k'])) > toDateTime('2026-01-01 05:00:00.000000Z')",
        ),
        (
            json!({"key": "k", "value": "2026-01-01T00:00:00Z", "operator": "is_date_before"}),
            "toDateTime(toString(properties['k'])) < toDateTime('2026-01-01 00:00:00.000000Z')",
        ),
        (
            json!({"key": "k", "value": "-1d", "operator": "is_date_exact"}),
            "toDateTime(toString(properties['k'])) = toDateTime('2026-03-14 12:30:00.000000Z')",
        ),
    ];
    for (filter, expected) in cases {
        assert_eq!(ok(json!([filter])), expected, "{filter}");
    }
}

#[test]
fn values_are_quoted_and_booleans_are_text() {
    assert_eq!(
        ok(json!([{"key": "it's", "value": "a'b\\c"}])),
        "properties['it\\'s'] = 'a\\'b\\\\c'"
    );
    assert_eq!(
        ok(json!([{"key": "k", "value": true}])),
        "properties['k'] = 'true'"
    );
    assert_eq!(
        ok(json!([{"key": "k", "value": false, "operator": "is_not"}])),
        "properties['k'] != 'false'"
    );
    assert_eq!(
        ok(json!([{"key": "k", "value": 42}])),
        "toFloat(properties['k']) = 42"
    );
    assert_eq!(
        ok(json!([{"key": "k", "value": null}])),
        "properties['k'] IS NULL"
    );
}

#[test]
fn list_values() {
    // Empty: no-op; one: a scalar; several: IN, NOT IN, OR, AND.
    assert_eq!(
        ok(json!([{"key": "k", "value": [], "operator": "regex"}])),
        "true"
    );
    assert_eq!(
        ok(json!([{"key": "k", "value": ["x"]}])),
        "properties['k'] = 'x'"
    );
    assert_eq!(
        ok(json!([{"key": "k", "value": ["x", "y"]}])),
        "properties['k'] IN ('x', 'y')"
    );
    assert_eq!(
        ok(json!([{"key": "k", "value": ["x", "y"], "operator": "is_not"}])),
        "coalesce(properties['k'] NOT IN ('x', 'y'), true)"
    );
    assert_eq!(
        ok(json!([{"key": "k", "value": ["x", "y"], "operator": "icontains"}])),
        "(toString(properties['k']) ILIKE '%x%') OR (toString(properties['k']) ILIKE '%y%')"
    );
    assert_eq!(
        ok(json!([{"key": "k", "value": ["x", "y"], "operator": "not_regex"}])),
        "(NOT coalesce(match(toString(properties['k']), 'x'), false)) AND (NOT coalesce(match(toString(properties['k']), 'y'), false))"
    );
    assert_eq!(
        ok(json!([{"key": "k", "value": [1, 2], "operator": "gt"}])),
        "(toFloat(properties['k']) > 1) OR (toFloat(properties['k']) > 2)"
    );
    assert_eq!(
        ok(json!([{"key": "k", "value": "x", "operator": "in"}])),
        "properties['k'] = 'x'"
    );
}

#[test]
fn event_metadata_hogql_and_elements_chain() {
    assert_eq!(
        ok(json!([{"key": "event", "value": "$pageview", "type": "event_metadata"}])),
        "event = '$pageview'"
    );
    assert_eq!(
        ok(json!([{"key": "$session_id", "operator": "is_set", "type": "event_metadata"}])),
        "$session_id IS NOT NULL"
    );
    assert_eq!(
        ok(
            json!([{"key": "timestamp", "value": "2026-01-01", "operator": "gt", "type": "event_metadata"}])
        ),
        "timestamp > toDateTime('2026-01-01 05:00:00.000000Z')"
    );
    assert_eq!(
        ok(json!([{"key": "properties.a = 1", "type": "hogql"}])),
        "(properties.a = 1)"
    );
    assert_eq!(
        ok(json!([{"key": "$elements_chain", "value": "a", "operator": "icontains"}])),
        "toString(elements_chain) ILIKE '%a%'"
    );
}

#[test]
fn malformed_filters_name_the_field() {
    let e = err(
        json!([{"key": "a", "value": "1"}, {"key": "b"}, {"key": "c", "value": 1, "operator": "nope"}]),
    );
    assert_eq!(e.attr, "properties[2].operator");
    assert!(e.detail.contains("nope"), "{}", e.detail);

    assert_eq!(err(json!([{"value": "x"}])).attr, "properties[0].key");
    assert_eq!(
        err(json!([{"key": "k", "value": [1], "operator": "between"}])).attr,
        "properties[0].value"
    );
    assert_eq!(
        err(json!([{"key": "k", "value": [5, 1], "operator": "between"}])).attr,
        "properties[0].value"
    );
    assert_eq!(
        err(json!([{"key": "k", "value": ["a", 1], "operator": "not_between"}])).attr,
        "properties[0].value"
    );
    assert_eq!(
        err(json!([{"key": "k", "operator": "gt"}])).attr,
        "properties[0].value"
    );
    assert_eq!(
        err(json!([{"key": "k", "value": "not a date", "operator": "is_date_after"}])).attr,
        "properties[0].value"
    );
    assert_eq!(
        err(json!([{"key": "k", "value": {"a": 1}}])).attr,
        "properties[0].value"
    );
    assert_eq!(
        err(
            json!({"type": "OR", "values": [{"key": "a"}, {"type": "AND", "values": [{"key": 3}]}]})
        )
        .attr,
        "properties.values[1].values[0].key"
    );
    assert_eq!(
        err(json!({"type": "XOR", "values": []})).attr,
        "properties.type"
    );
    assert_eq!(err(json!("a")).attr, "properties");
    assert_eq!(err(json!([1])).attr, "properties[0]");
    let bad_column = err(json!([{"key": "properties", "type": "event_metadata", "value": "x"}]));
    assert_eq!(bad_column.attr, "properties[0].key");
    let bad_date = err(
        json!([{"key": "timestamp", "type": "event_metadata", "value": ["2026-01-01", "soon"], "operator": "in"}]),
    );
    assert_eq!(bad_date.attr, "properties[0].value[1]");
    let bad_hogql = err(json!([{"key": "1; drop", "type": "hogql"}]));
    assert_eq!(bad_hogql.attr, "properties[0].key");
}

#[test]
fn unsupported_types_are_a_clear_400() {
    for kind in ["element", "session", "group"] {
        let e = err(json!([{"key": "k", "value": "v", "type": kind}]));
        assert_eq!(e.attr, "properties[0].type");
        assert!(
            e.detail.contains(kind) && e.detail.contains("not supported"),
            "{}",
            e.detail
        );
    }
    assert_eq!(
        err(json!([{"key": "k", "type": "weird"}])).attr,
        "properties[0].type"
    );
}

#[test]
fn dates_absolute_and_relative() {
    let ctx = context();
    let at = |y, mo, d, h, mi, s| Utc.with_ymd_and_hms(y, mo, d, h, mi, s).single();
    // Naive in New York (EST in January, EDT in March after the 8th).
    assert_eq!(
        crate::date_range::parse_instant("2026-01-01", &ctx),
        at(2026, 1, 1, 5, 0, 0)
    );
    assert_eq!(
        crate::date_range::parse_instant("2026-01-01 10:00:00", &ctx),
        at(2026, 1, 1, 15, 0, 0)
    );
    assert_eq!(
        crate::date_range::parse_instant("2026-01-01T10:00:00Z", &ctx),
        at(2026, 1, 1, 10, 0, 0)
    );
    assert_eq!(
        crate::date_range::parse_instant("2026-01-01T10:00:00+02:00", &ctx),
        at(2026, 1, 1, 8, 0, 0)
    );
    // now = 2026-03-15 12:30 UTC = 08:30 EDT.
    assert_eq!(
        crate::date_range::parse_instant("-24h", &ctx),
        at(2026, 3, 14, 12, 30, 0)
    );
    assert_eq!(
        crate::date_range::parse_instant("-7d", &ctx),
        at(2026, 3, 8, 12, 30, 0)
    );
    assert_eq!(
        crate::date_range::parse_instant("-1w", &ctx),
        at(2026, 3, 8, 12, 30, 0)
    );
    assert_eq!(
        crate::date_range::parse_instant("-30M", &ctx),
        at(2026, 3, 15, 12, 0, 0)
    );
    assert_eq!(
        crate::date_range::parse_instant("-1m", &ctx),
        at(2026, 2, 15, 13, 30, 0)
    );
    assert_eq!(
        crate::date_range::parse_instant("dStart", &ctx),
        at(2026, 3, 15, 4, 0, 0)
    );
    assert_eq!(
        crate::date_range::parse_instant("-1dStart", &ctx),
        at(2026, 3, 14, 4, 0, 0)
    );
    assert_eq!(
        crate::date_range::parse_instant("mStart", &ctx),
        at(2026, 3, 1, 5, 0, 0)
    );
    assert_eq!(
        crate::date_range::parse_instant("yStart", &ctx),
        at(2026, 1, 1, 5, 0, 0)
    );
    assert_eq!(crate::date_range::parse_instant("all", &ctx), None);
    assert_eq!(crate::date_range::parse_instant("-7x", &ctx), None);
    assert_eq!(crate::date_range::parse_instant("", &ctx), None);
}
