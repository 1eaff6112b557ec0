//! A run's `variables`, checked against the version's query (reference 2.5): a SQL query takes
//! the code names of its `variables` that its text uses; an insight takes its breakdown
//! property (Trends, Funnels, Retention) and `date_from` / `date_to`.

use common::error::{ApiError, ApiResult};
use serde_json::{Map, Value, json};

const SQL_KINDS: [&str; 2] = ["HogQLQuery", "SqlDialectQuery"];
const BREAKDOWN_KINDS: [&str; 3] = ["TrendsQuery", "FunnelsQuery", "RetentionQuery"];

pub fn is_sql(query: &Value) -> bool {
    SQL_KINDS.contains(&query["kind"].as_str().unwrap_or_default())
}

/// The code names a SQL query's text uses.
pub fn used(query: &Value) -> Vec<String> {
    let text = query["query"].as_str().unwrap_or_default();
    engine::materialize::variables(text).unwrap_or_default()
}

/// A SQL query's variables as `variables_override` takes them (id → `{code_name, value}`), for
/// the run's values by code name.
pub fn sql_overrides(query: &Value, given: &Map<String, Value>) -> ApiResult<Map<String, Value>> {
    let defined: Vec<(String, String)> = query["variables"]
        .as_object()
        .map(|variables| {
            variables
                .iter()
                .filter_map(|(id, v)| Some((id.clone(), v["code_name"].as_str()?.to_owned())))
                .collect()
        })
        .unwrap_or_default();
    let mut unknown: Vec<&str> = given
        .keys()
        .filter(|key| !defined.iter().any(|(_, code)| code == *key))
        .map(String::as_str)
        .collect();
    if !unknown.is_empty() {
        unknown.sort();
        return Err(ApiError::validation(
            "variables",
            format!("Unknown variable(s): {}", unknown.join(", ")),
        ));
    }
    let used = used(query);
    let mut overrides = Map::new();
    for (key, value) in given {
        if !used.iter().any(|name| name == key) {
            return Err(ApiError::validation(
                "variables",
                format!("Variable '{key}' not found in query"),
            ));
        }
        for (id, code_name) in defined.iter().filter(|(_, code)| code == key) {
            overrides.insert(id.clone(), json!({"code_name": code_name, "value": value}));
        }
    }
    Ok(overrides)
}

/// An insight node with the run's variables applied: its date range, and its breakdown property
/// narrowed to the given value.
pub fn insight(query: &Value, given: &Map<String, Value>) -> ApiResult<Value> {
    let kind = query["kind"].as_str().unwrap_or_default();
    let breakdown = BREAKDOWN_KINDS
        .contains(&kind)
        .then(|| query["breakdownFilter"]["breakdown"].as_str())
        .flatten();
    let mut unknown: Vec<&str> = given
        .keys()
        .map(String::as_str)
        .filter(|key| !matches!(*key, "date_from" | "date_to") && Some(*key) != breakdown)
        .collect();
    if !unknown.is_empty() {
        unknown.sort();
        return Err(ApiError::validation(
            "variables",
            format!("Unknown variable(s): {}", unknown.join(", ")),
        ));
    }
    let mut node = query.clone();
    for key in ["date_from", "date_to"] {
        if let Some(value) = given.get(key) {
            if !value.is_string() && !value.is_null() {
                return Err(ApiError::validation(
                    "variables",
                    format!("Variable '{key}' must be a date string."),
                ));
            }
            if !node["dateRange"].is_object() {
                node["dateRange"] = json!({});
            }
            node["dateRange"][key] = value.clone();
        }
    }
    if let Some(property) = breakdown
        && let Some(value) = given.get(property)
    {
        let kind = match query["breakdownFilter"]["breakdown_type"].as_str() {
            Some("person") => "person",
            _ => "event",
        };
        let filter = json!({"key": property, "value": value, "operator": "exact", "type": kind});
        match &mut node["properties"] {
            Value::Array(filters) => filters.push(filter),
            slot @ Value::Null => *slot = json!([filter]),
            _ => {
                return Err(ApiError::validation(
                    "variables",
                    "This insight's property filters are grouped; its breakdown cannot be narrowed by a variable.",
                ));
            }
        }
    }
    Ok(node)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(value: Value) -> Map<String, Value> {
        value.as_object().cloned().unwrap_or_default()
    }

    #[test]
    fn sql_variables_must_be_defined_and_used() {
        let query = json!({"kind": "HogQLQuery", "query": "select {variables.a}",
            "variables": {"id1": {"code_name": "a", "value": 1}, "id2": {"code_name": "b", "value": 2}}});
        let overrides = sql_overrides(&query, &map(json!({"a": 5}))).unwrap();
        assert_eq!(overrides["id1"], json!({"code_name": "a", "value": 5}));
        let error = sql_overrides(&query, &map(json!({"z": 1, "c": 2}))).unwrap_err();
        assert_eq!(error.body.detail, "Unknown variable(s): c, z");
        let error = sql_overrides(&query, &map(json!({"b": 1}))).unwrap_err();
        assert_eq!(error.body.detail, "Variable 'b' not found in query");
    }

    #[test]
    fn insights_take_dates_and_their_breakdown() {
        let query = json!({"kind": "TrendsQuery", "series": [],
            "breakdownFilter": {"breakdown": "$browser", "breakdown_type": "event"}});
        let node = insight(
            &query,
            &map(json!({"$browser": "Chrome", "date_from": "-7d"})),
        )
        .unwrap();
        assert_eq!(node["dateRange"]["date_from"], "-7d");
        assert_eq!(node["properties"][0]["value"], "Chrome");
        let error = insight(&query, &map(json!({"os": "x"}))).unwrap_err();
        assert_eq!(error.body.detail, "Unknown variable(s): os");
    }
}
