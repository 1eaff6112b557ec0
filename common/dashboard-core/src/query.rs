//! An insight's query node: brought to the latest schema by the node migrations, read as the
//! query API reads a node (errors name the field under `query`), and, for PostHog's wrapper
//! nodes (`InsightVizNode`, `DataTableNode`, `DataVisualizationNode`), its runnable `source`.
//! Also PostHog's `apply_dashboard_filters`: a dashboard's date range and properties laid over a
//! tile's node before it runs.

use common::ApiError;
use insights::nodes::{NodeError, QueryNode};
use serde_json::{Map, Value, json};

use crate::model::DashboardFilters;

/// Kinds PostHog stores around a runnable node, under `source`.
pub const WRAPPERS: &[&str] = &["InsightVizNode", "DataTableNode", "DataVisualizationNode"];

/// A saved query as it runs: the node (the wrapper's `source`, or the query itself) and where
/// it sits in the stored query, for errors.
#[derive(Debug, Clone, PartialEq)]
pub struct Runnable {
    pub node: QueryNode,
    /// `query` or `query.source`.
    pub attr: &'static str,
}

fn kind(value: &Value) -> Option<&str> {
    value.get("kind").and_then(Value::as_str)
}

/// The stored query's runnable node (its `source` for a wrapper) and that node's path.
pub fn source(query: &Value) -> (&Value, &'static str) {
    match kind(query) {
        Some(wrapper) if WRAPPERS.contains(&wrapper) => (&query["source"], "query.source"),
        _ => (query, "query"),
    }
}

fn node_error(error: NodeError, at: &str) -> ApiError {
    ApiError::field(error.attr_under(at), error.code, error.detail)
}

/// A body's `query`, upgraded (old nodes are accepted) and read as the query API reads it: the
/// upgraded query to store, and its runnable node. Its fields are checked further when it
/// compiles (see the dashboards family).
pub fn prepare(query: Value) -> Result<(Value, Runnable), ApiError> {
    if !query.is_object() {
        return Err(ApiError::field(
            "query",
            "invalid",
            "query must be an object.",
        ));
    }
    let upgraded = insights::nodes::upgrade(query).map_err(|error| {
        let attr = error
            .attr()
            .map_or("query".into(), |attr| format!("query.{attr}"));
        ApiError::field(attr, "invalid", error.to_string())
    })?;
    let runnable = runnable(&upgraded)?;
    Ok((upgraded, runnable))
}

/// The runnable node of a stored (already upgraded) query.
pub fn runnable(query: &Value) -> Result<Runnable, ApiError> {
    let (node, attr) = source(query);
    if attr != "query" && !node.is_object() {
        return Err(ApiError::field(
            attr,
            "required",
            format!("{attr} is required: the node the wrapper shows."),
        ));
    }
    let node = QueryNode::from_value(node.clone()).map_err(|error| node_error(error, attr))?;
    Ok(Runnable { node, attr })
}

/// Rewrites an error's field from the runnable node's path (`query....`, as the query service
/// names it) to where the node sits in the stored query.
pub fn relocate(mut error: ApiError, attr: &str) -> ApiError {
    if attr != "query"
        && let Some(at) = &error.body.attr
        && let Some(rest) = at.strip_prefix("query")
        && (rest.is_empty() || rest.starts_with('.'))
    {
        error.body.attr = Some(format!("{attr}{rest}"));
    }
    error
}

/// PostHog's `apply_dashboard_filters` on a runnable node (a wrapper's source): a date bound
/// replaces the node's date range (both ends: an unset `date_to` means "now"), and property
/// filters are ANDed with the node's own. A SQL node takes them in its `filters`, an
/// EventsQuery as `after` / `before`; kinds without a date range or properties (an
/// ExperimentQuery) are left as they are.
pub fn apply_dashboard_filters(node: &Value, filters: &DashboardFilters) -> Value {
    let mut node = node.clone();
    if filters.is_empty() {
        return node;
    }
    let Some(fields) = node.as_object_mut() else {
        return node;
    };
    let properties = filters.property_filters();
    match fields.get("kind").and_then(Value::as_str).unwrap_or("") {
        "HogQLQuery" | "SqlDialectQuery" => {
            let hogql = object_at(fields, "filters");
            if filters.has_dates() {
                let range = object_at(hogql, "dateRange");
                set_or_remove(range, "date_from", filters.date_from.as_deref());
                set_or_remove(range, "date_to", filters.date_to.as_deref());
                // One unit: the dashboard's bounds never pair with the insight's explicitDate.
                range.insert(
                    "explicitDate".into(),
                    Value::Bool(filters.explicit_date.unwrap_or(false)),
                );
            }
            if let Some(extra) = properties {
                let mut list = match hogql.remove("properties") {
                    Some(Value::Array(list)) => list,
                    _ => Vec::new(),
                };
                list.extend(extra.iter().cloned().map(Value::Object));
                hogql.insert("properties".into(), Value::Array(list));
            }
        }
        "EventsQuery" => {
            if filters.has_dates() {
                set_or_remove(fields, "after", filters.date_from.as_deref());
                set_or_remove(fields, "before", filters.date_to.as_deref());
            }
            if let Some(extra) = properties {
                let mut list = match fields.remove("properties") {
                    Some(Value::Array(list)) => list,
                    _ => Vec::new(),
                };
                list.extend(extra.iter().cloned().map(Value::Object));
                fields.insert("properties".into(), Value::Array(list));
            }
        }
        "ExperimentQuery" => {}
        _ => {
            if let Some(extra) = properties {
                let extra: Vec<Value> = extra.iter().cloned().map(Value::Object).collect();
                let combined = match fields.remove("properties") {
                    None | Some(Value::Null) => Value::Array(extra),
                    Some(Value::Array(own)) if own.is_empty() => Value::Array(extra),
                    Some(Value::Array(own)) => and_of(json!({"type": "AND", "values": own}), extra),
                    Some(group) => and_of(group, extra),
                };
                fields.insert("properties".into(), combined);
            }
            if filters.has_dates() {
                let range = object_at(fields, "dateRange");
                set_or_remove(range, "date_from", filters.date_from.as_deref());
                set_or_remove(range, "date_to", filters.date_to.as_deref());
                if let Some(explicit) = filters.explicit_date {
                    range.insert("explicitDate".into(), Value::Bool(explicit));
                }
            }
        }
    }
    node
}

/// PostHog's PropertyGroupFilter: the node's own filters AND the dashboard's.
fn and_of(own: Value, extra: Vec<Value>) -> Value {
    json!({"type": "AND", "values": [own, {"type": "AND", "values": extra}]})
}

/// The object at `key` of `fields`, made one (from absent or null) when it is not.
fn object_at<'a>(fields: &'a mut Map<String, Value>, key: &str) -> &'a mut Map<String, Value> {
    let slot = fields
        .entry(key.to_owned())
        .or_insert_with(|| Value::Object(Map::new()));
    if !slot.is_object() {
        *slot = Value::Object(Map::new());
    }
    match slot {
        Value::Object(object) => object,
        _ => unreachable!("made an object above"),
    }
}

fn set_or_remove(fields: &mut Map<String, Value>, key: &str, value: Option<&str>) {
    match value {
        Some(value) => {
            fields.insert(key.to_owned(), Value::String(value.to_owned()));
        }
        None => {
            fields.remove(key);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn filters(value: Value) -> DashboardFilters {
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn wrappers_run_their_source_and_errors_name_it() {
        let trends = json!({"kind": "TrendsQuery", "series": []});
        let (stored, runnable) =
            prepare(json!({"kind": "InsightVizNode", "source": trends})).unwrap();
        assert_eq!(runnable.attr, "query.source");
        assert_eq!(runnable.node.kind(), "TrendsQuery");
        assert_eq!(stored["kind"], "InsightVizNode");
        let (_, bare) = prepare(trends).unwrap();
        assert_eq!(bare.attr, "query");
        for (query, attr) in [
            (json!("x"), "query"),
            (json!({"series": []}), "query.kind"),
            (json!({"kind": "DataTableNode"}), "query.source"),
            (
                json!({"kind": "DataVisualizationNode", "source": {"kind": "HogQLQuery"}}),
                "query.source.query",
            ),
            (json!({"kind": "NoSuchQuery"}), "query.kind"),
        ] {
            let error = prepare(query.clone()).unwrap_err();
            assert_eq!(error.body.attr.as_deref(), Some(attr), "{query}");
        }
        let moved = relocate(
            ApiError::field("query.series[0].math", "invalid_input", "no"),
            "query.source",
        );
        assert_eq!(
            moved.body.attr.as_deref(),
            Some("query.source.series[0].math")
        );
    }

    #[test]
    fn dashboard_filters_replace_dates_and_and_properties() {
        let node = json!({"kind": "TrendsQuery", "series": [],
            "dateRange": {"date_from": "-30d", "date_to": "-1d", "explicitDate": true},
            "properties": [{"key": "plan", "value": "pro", "type": "event"}]});
        let over = filters(json!({"date_from": "2026-11-02",
            "properties": [{"key": "os", "value": "mac", "type": "event"}]}));
        let applied = apply_dashboard_filters(&node, &over);
        assert_eq!(
            applied["dateRange"],
            json!({"date_from": "2026-11-02", "explicitDate": true})
        );
        assert_eq!(applied["properties"]["type"], "AND");
        assert_eq!(
            applied["properties"]["values"][0]["values"][0]["key"],
            "plan"
        );
        assert_eq!(applied["properties"]["values"][1]["values"][0]["key"], "os");

        let bare = json!({"kind": "TrendsQuery", "series": []});
        let applied = apply_dashboard_filters(&bare, &over);
        assert_eq!(applied["properties"][0]["key"], "os");
        assert_eq!(
            apply_dashboard_filters(&bare, &DashboardFilters::default()),
            bare
        );
    }

    #[test]
    fn sql_and_events_nodes_take_them_in_their_own_fields() {
        let over = filters(json!({"date_from": "-7d", "date_to": "-1d",
            "properties": [{"key": "os", "value": "mac"}]}));
        let sql = json!({"kind": "HogQLQuery", "query": "select 1",
            "filters": {"properties": [{"key": "a", "value": 1}]}});
        let applied = apply_dashboard_filters(&sql, &over);
        assert_eq!(
            applied["filters"]["dateRange"],
            json!({"date_from": "-7d", "date_to": "-1d", "explicitDate": false})
        );
        assert_eq!(
            applied["filters"]["properties"].as_array().unwrap().len(),
            2
        );
        let events = json!({"kind": "EventsQuery", "select": ["*"], "after": "-24h"});
        let applied = apply_dashboard_filters(&events, &over);
        assert_eq!(
            (applied["after"].as_str(), applied["before"].as_str()),
            (Some("-7d"), Some("-1d"))
        );
        assert_eq!(applied["properties"][0]["key"], "os");
    }
}
