//! `{filters}` in SQL: PostHog's HogQLFilters (`properties`, `dateRange`, `filterTestAccounts`)
//! from the node's `filters` and the request's `filters_override`, as one boolean expression.

use serde_json::{Map, Value};

use crate::date_range::{self, Interval};
use crate::{Context, Invalid, filters};

const FIELDS: &[&str] = &["properties", "dateRange", "filterTestAccounts"];

/// The node's `filters` with `filters_override` laid over them, key by key.
pub fn merge(filters: Option<&Value>, overrides: Option<&Value>) -> Result<Value, Invalid> {
    let mut merged = Map::new();
    for (attr, value) in [("filters", filters), ("filters_override", overrides)] {
        match value {
            None | Some(Value::Null) => {}
            Some(Value::Object(fields)) => {
                if let Some(unknown) = fields.keys().find(|k| !FIELDS.contains(&k.as_str())) {
                    return Err(Invalid::new(
                        format!("{attr}.{unknown}"),
                        format!("Unknown field: {unknown}."),
                    ));
                }
                merged.extend(fields.clone());
            }
            Some(_) => return Err(Invalid::new(attr, format!("{attr} must be an object."))),
        }
    }
    Ok(Value::Object(merged))
}

/// The AND of the property filters, the project's test-account filters (with
/// `filterTestAccounts: true`) and the date bounds that are given; `true` with none.
pub fn expression(filters: &Value, ctx: &Context) -> Result<String, Invalid> {
    let mut parts = Vec::new();
    let properties = filters::expression(filters.get("properties"), ctx, "filters.properties")?;
    if properties != "true" {
        parts.push(properties);
    }
    match filters.get("filterTestAccounts") {
        None | Some(Value::Null) | Some(Value::Bool(false)) => {}
        Some(Value::Bool(true)) => {
            let test_accounts = filters::test_accounts(ctx)?;
            if test_accounts != "true" {
                parts.push(test_accounts);
            }
        }
        Some(_) => {
            return Err(Invalid::new(
                "filters.filterTestAccounts",
                "filterTestAccounts must be true or false.",
            ));
        }
    }
    if let Some(date_range) = filters.get("dateRange").filter(|v| !v.is_null()) {
        let given = |field: &str| date_range.get(field).is_some_and(|v| !v.is_null());
        // Without a date_from there is no lower bound (not the insights' default of -7d).
        let mut bounds = date_range.clone();
        if !given("date_from")
            && let Value::Object(fields) = &mut bounds
        {
            fields.insert("date_from".into(), "all".into());
        }
        let range = date_range::resolve(Some(&bounds), Interval::Day, ctx, "filters.dateRange")?;
        if given("date_from") && !range.from_all() {
            parts.push(format!(
                "timestamp >= {}",
                date_range::sql_datetime(range.from)
            ));
        }
        if given("date_to") {
            parts.push(format!(
                "timestamp <= {}",
                date_range::sql_datetime(range.to)
            ));
        }
    }
    Ok(match parts.is_empty() {
        true => "true".into(),
        false => parts.join(" AND "),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn context() -> Context {
        crate::testing::context(chrono_tz::UTC, "2026-11-10T12:00:00Z", 0)
    }

    #[test]
    fn overrides_replace_fields_and_unknown_fields_are_refused() {
        let merged = merge(
            Some(&json!({"dateRange": {"date_from": "-7d"}, "properties": []})),
            Some(&json!({"dateRange": {"date_from": "-1d"}})),
        )
        .unwrap();
        assert_eq!(merged["dateRange"]["date_from"], "-1d");
        let error = merge(Some(&json!({"bogus": 1})), None).unwrap_err();
        assert_eq!(error.attr, "filters.bogus");
    }

    #[test]
    fn no_filters_is_true_and_bounds_appear_only_when_given() {
        assert_eq!(expression(&json!({}), &context()).unwrap(), "true");
        let text = expression(&json!({"dateRange": {"date_from": "-1d"}}), &context()).unwrap();
        assert!(text.starts_with("timestamp >= "), "{text}");
        assert!(!text.contains("<="), "{text}");
        let error =
            expression(&json!({"dateRange": {"date_from": "soon"}}), &context()).unwrap_err();
        assert_eq!(error.attr, "filters.dateRange.date_from");
    }
}
