//! Property matching where the SDK defers to the server (a missing property, filter values it
//! cannot read), and edge cases; the SDK's own answers are checked in `tests/python_vectors.rs`.

use serde_json::{Map, Value, json};

use super::*;

fn filter(operator: &str, value: Value) -> PropertyFilter {
    serde_json::from_value(json!({"key": "k", "operator": operator, "value": value}))
        .unwrap_or_else(|error| panic!("{operator}: {error}"))
}

/// The instant relative date filters are read at (a fixed one, so the cases never drift).
fn now() -> DateTime<Utc> {
    DateTime::from_timestamp(1_795_000_000, 0).unwrap()
}

fn with(value: Value) -> Map<String, Value> {
    let mut properties = Map::new();
    properties.insert("k".to_owned(), value);
    properties
}

fn check(operator: &str, filter_value: Value, property: Option<Value>) -> bool {
    let properties = property.map(with).unwrap_or_default();
    match_property(&filter(operator, filter_value), &properties, now())
}

/// PostHog's flags service (`match_property`, `partial_props = false`): only the negative
/// operators match a property the subject does not have.
#[test]
fn missing_properties_match_only_negative_operators() {
    let cases = [
        ("exact", json!("x"), false),
        ("is_not", json!("x"), true),
        ("icontains", json!("x"), false),
        ("not_icontains", json!("x"), true),
        ("regex", json!("x"), false),
        ("not_regex", json!("x"), true),
        ("not_regex", json!("[broken"), true),
        ("gt", json!(1), false),
        ("lte", json!(1), false),
        ("is_set", json!(null), false),
        ("is_not_set", json!(null), true),
        ("is_date_before", json!("-1d"), false),
        ("is_date_after", json!("2000-01-01"), false),
        ("is_date_exact", json!("2000-01-01"), false),
        ("semver_gt", json!("1.0.0"), false),
        ("semver_neq", json!("1.0.0"), false),
        ("semver_caret", json!("1.0.0"), false),
        ("in", json!(1), false),
        ("not_in", json!(1), false),
        ("flag_evaluates_to", json!(true), false),
    ];
    for (operator, value, expected) in cases {
        assert_eq!(
            check(operator, value.clone(), None),
            expected,
            "{operator} {value}"
        );
    }
}

#[test]
fn unreadable_filter_values_never_match() {
    for operator in ["gt", "gte", "lt", "lte"] {
        assert!(!check(operator, json!("abc"), Some(json!(5))));
        assert!(!check(operator, json!(true), Some(json!(5))));
    }
    assert!(!check("regex", json!("(?<=a)b"), Some(json!("ab"))));
    assert!(!check("not_regex", json!("(?<=a)b"), Some(json!("zz"))));
    assert!(!check("regex", json!("(a)\\1"), Some(json!("aa"))));
    assert!(!check(
        "is_date_before",
        json!("not a date"),
        Some(json!("2020-01-01"))
    ));
    assert!(!check(
        "is_date_after",
        json!("-10000d"),
        Some(json!("2020-01-01"))
    ));
    assert!(!check("semver_gt", json!("x.y"), Some(json!("1.0.0"))));
    assert!(!check("semver_wildcard", json!("*"), Some(json!("1.0.0"))));
}

#[test]
fn huge_regexes_are_refused_not_run() {
    // Compiles to far more than the 1 MiB cap.
    let pattern = "(\\w{100}){100}";
    assert!(!check("regex", json!(pattern), Some(json!("a"))));
    assert!(!check("not_regex", json!(pattern), Some(json!("a"))));
    assert!(check("regex", json!("^\\w{3}$"), Some(json!("abc"))));
}

#[test]
fn inline_flags_the_regex_crate_supports_are_used() {
    // The SDK defers `(?i)` to the server, whose engine honours it, as ours does.
    assert!(check("regex", json!("(?i)^PRO$"), Some(json!("pro"))));
}

#[test]
fn null_and_odd_property_values() {
    assert!(check("exact", json!(null), Some(json!(null))));
    assert!(check("is_not", json!("x"), Some(json!(null))));
    assert!(check("icontains", json!("nul"), Some(json!(null))));
    assert!(check("regex", json!("^null$"), Some(json!(null))));
    assert!(!check("gt", json!(-1), Some(json!(null))));
    assert!(!check(
        "is_date_before",
        json!("2100-01-01"),
        Some(json!(null))
    ));
    assert!(!check("semver_lt", json!("9.0.0"), Some(json!(null))));
    assert!(check("is_set", json!(null), Some(json!(null))));
    assert!(!check("is_not_set", json!(null), Some(json!(null))));
    assert!(check("exact", json!("{\"a\":1}"), Some(json!({"a": 1}))));
    assert!(check("icontains", json!("\"b\""), Some(json!(["a", "b"]))));
}

#[test]
fn numbers_compare_as_numbers() {
    assert!(check("gt", json!("10"), Some(json!("11"))));
    assert!(!check("gt", json!("10"), Some(json!("9"))));
    assert!(check("lt", json!(10), Some(json!("9.99"))));
    assert!(check("gte", json!(1e3), Some(json!("1e3"))));
    assert!(!check("gt", json!(0), Some(json!(true))));
    assert!(!check("lt", json!(0), Some(json!("-inf"))));
}

/// Version 1: boolean-like filters compare truthiness, so `"TRUE"`, `true` and `["true"]` agree.
#[test]
fn exact_uses_matching_version_one() {
    assert_eq!(PROPERTY_MATCHING_VERSION, 1);
    assert!(check("exact", json!(true), Some(json!("TRUE"))));
    assert!(check("exact", json!("false"), Some(json!(false))));
    assert!(check("exact", json!(["true"]), Some(json!(true))));
    assert!(check("exact", json!("False"), Some(json!("banana"))));
    assert!(!check("is_not", json!("False"), Some(json!("banana"))));
    assert!(check("exact", json!(["Pro", 5]), Some(json!(5))));
    assert!(check("exact", json!("ΟΔΟΣ"), Some(json!("οδος"))));
}

#[test]
fn dates_exact_and_timestamps() {
    assert!(check(
        "is_date_exact",
        json!("2024-01-15T10:00:00Z"),
        Some(json!("2024-01-15T12:00:00+02:00"))
    ));
    assert!(!check(
        "is_date_exact",
        json!("2024-01-15"),
        Some(json!("2024-01-15T00:00:01Z"))
    ));
    // A number is a unix timestamp (the service's reading; the SDK defers).
    assert!(check(
        "is_date_before",
        json!("2024-01-01"),
        Some(json!(1_700_000_000))
    ));
    assert!(check(
        "is_date_after",
        json!("-30d"),
        Some(json!(now().timestamp()))
    ));
    assert!(!check(
        "is_date_after",
        json!("2024-01-01"),
        Some(json!(true))
    ));
}

#[test]
fn matcher_is_reusable_and_keyed() {
    let matcher = PropertyMatcher::new(&filter("icontains", json!("Corp")));
    assert_eq!(matcher.key(), "k");
    let now = now();
    assert!(matcher.matches(Some(&json!("ACME CORP")), now));
    assert!(!matcher.matches(Some(&json!("ACME")), now));
    assert!(!matcher.matches(None, now));
    assert!(matcher.matches_in(&with(json!("corporate")), now));
}
