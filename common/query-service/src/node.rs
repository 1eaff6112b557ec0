//! A query node as the engine runs it: SQL text with its bindings, or a structured node compiled
//! at run time. Every family turns its stored or posted node into a [`SqlNode`] here, so
//! `variables_override` and `filters_override` mean the same thing on `/query/` and on an
//! endpoint run.

use common::ApiError;
use engine::Bindings;
use serde_json::{Map, Value};

/// A validated node ready for the engine: SQL text, or a structured node compiled at run time.
#[derive(Debug, Clone, Default)]
pub struct SqlNode {
    /// The SQL text (for a structured node: the node as JSON, for the query log).
    pub text: String,
    pub name: Option<String>,
    pub bindings: Bindings,
    /// An EventsQuery, TrendsQuery, FunnelsQuery or RetentionQuery (see `insights`).
    pub structured: Option<Value>,
    /// HogQLFilters for `{filters}` (the node's, with `filters_override` laid over them).
    pub filters: Option<Value>,
    /// The experiment an `ExperimentQuery` is about, when the caller built it (a timeseries
    /// day's run with its `as_of`); else it is loaded from the Store by `experiment_id`.
    pub experiment: Option<std::sync::Arc<insights::experiments::ExperimentSpec>>,
    /// The rows asked for: the query's own LIMIT, or a caller's page (an endpoint run's
    /// `limit` / `offset`).
    pub window: engine::Window,
}

/// What a caller lays over a node: PostHog's `name`, `variables_override` and `filters_override`.
#[derive(Debug, Clone, Copy, Default)]
pub struct Overrides<'a> {
    /// The run's name (wins over the node's own `name`).
    pub name: Option<&'a str>,
    /// Variable id -> variable (`{"code_name", "value", "isNull"?}`), over the node's `variables`.
    pub variables: Option<&'a Map<String, Value>>,
    /// HogQLFilters over the node's `filters`.
    pub filters: Option<&'a Value>,
}

/// Field names a `SqlDialectQuery` / `HogQLQuery` node may carry.
const SQL_NODE_FIELDS: &[&str] = &[
    "kind",
    "query",
    "values",
    "variables",
    "filters",
    "modifiers",
    "name",
    "explain",
    "tags",
    "version",
    "response",
    "connectionId",
    "sendRawQuery",
];

impl SqlNode {
    /// SQL text with its bindings, as the service's own reads (schema, query log) run it.
    pub fn sql(text: impl Into<String>, bindings: Bindings) -> Self {
        Self {
            text: text.into(),
            bindings,
            ..Default::default()
        }
    }

    /// A `SqlDialectQuery` (alias `HogQLQuery`) or one of the structured kinds of `insights`,
    /// already upgraded (see `insights::nodes::upgrade`), with the overrides applied. Errors name
    /// the field under `query.`.
    pub fn from_query(query: &Value, overrides: Overrides<'_>) -> Result<Self, ApiError> {
        let Value::Object(node) = query else {
            return Err(ApiError::field(
                "query",
                "invalid",
                "query must be an object.",
            ));
        };
        let kind = match node.get("kind") {
            Some(Value::String(kind)) => kind.as_str(),
            _ => {
                return Err(ApiError::field(
                    "query.kind",
                    "required",
                    "query.kind is required.",
                ));
            }
        };
        check_version(node)?;
        if insights::KINDS.contains(&kind) {
            return Ok(SqlNode {
                text: query.to_string(),
                name: overrides.name.map(str::to_owned),
                bindings: Bindings::default(),
                structured: Some(query.clone()),
                filters: None,
                experiment: None,
                window: Default::default(),
            });
        }
        if kind != "HogQLQuery" && kind != "SqlDialectQuery" {
            return Err(ApiError::field(
                "query.kind",
                "invalid",
                format!(
                    "Query kind {kind} is not supported; use SqlDialectQuery (or HogQLQuery), {}.",
                    insights::KINDS.join(", ")
                ),
            ));
        }
        if let Some(unknown) = node
            .keys()
            .find(|key| !SQL_NODE_FIELDS.contains(&key.as_str()))
        {
            return Err(ApiError::field(
                format!("query.{unknown}"),
                "invalid",
                format!("Unknown field: {unknown}."),
            ));
        }
        let text = match node.get("query") {
            Some(Value::String(text)) if !text.trim().is_empty() => text.clone(),
            Some(Value::String(_)) | None | Some(Value::Null) => {
                return Err(ApiError::field(
                    "query.query",
                    "required",
                    "query.query is required.",
                ));
            }
            Some(_) => {
                return Err(ApiError::field(
                    "query.query",
                    "invalid",
                    "query.query must be a string.",
                ));
            }
        };
        let values = match node.get("values") {
            None | Some(Value::Null) => Map::new(),
            Some(Value::Object(values)) => values.clone(),
            Some(_) => {
                return Err(ApiError::field(
                    "query.values",
                    "invalid",
                    "query.values must be an object.",
                ));
            }
        };
        let name = match (overrides.name, node.get("name")) {
            (Some(name), _) => Some(name.to_owned()),
            (None, Some(Value::String(name))) => Some(name.clone()),
            (None, _) => None,
        };
        Ok(SqlNode {
            text,
            name,
            bindings: Bindings {
                values,
                variables: variables(node, overrides.variables)?,
                ..Default::default()
            },
            structured: None,
            filters: Some(hogql_filters(node, overrides.filters)?),
            experiment: None,
            window: Default::default(),
        })
    }
}

/// The node's variables with the overrides laid over them, by code name.
fn variables(
    node: &Map<String, Value>,
    overrides: Option<&Map<String, Value>>,
) -> Result<Map<String, Value>, ApiError> {
    let mut variables = match node.get("variables") {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(variables)) => variables.clone(),
        Some(_) => {
            return Err(ApiError::field(
                "query.variables",
                "invalid",
                "query.variables must be an object.",
            ));
        }
    };
    if let Some(overrides) = overrides {
        for (id, value) in overrides {
            variables.insert(id.clone(), value.clone());
        }
    }
    let mut by_code_name = Map::new();
    for (id, variable) in &variables {
        let Value::Object(variable) = variable else {
            return Err(ApiError::field(
                format!("query.variables.{id}"),
                "invalid",
                "A variable is an object with code_name and value.",
            ));
        };
        let Some(Value::String(code_name)) = variable.get("code_name") else {
            return Err(ApiError::field(
                format!("query.variables.{id}.code_name"),
                "required",
                "code_name is required.",
            ));
        };
        let value = if variable.get("isNull") == Some(&Value::Bool(true)) {
            Value::Null
        } else {
            variable.get("value").cloned().unwrap_or(Value::Null)
        };
        by_code_name.insert(code_name.clone(), value);
    }
    Ok(by_code_name)
}

fn hogql_filters(node: &Map<String, Value>, overrides: Option<&Value>) -> Result<Value, ApiError> {
    insights::hogql_filters::merge(node.get("filters"), overrides).map_err(|invalid| {
        let attr = match invalid.attr.starts_with("filters_override") {
            true => invalid.attr,
            false => format!("query.{}", invalid.attr),
        };
        ApiError::field(attr, "invalid_input", invalid.detail)
    })
}

fn check_version(node: &Map<String, Value>) -> Result<(), ApiError> {
    match node.get("version") {
        None | Some(Value::Null) => Ok(()),
        Some(Value::Number(n)) if n.as_u64().is_some_and(|v| v >= 1) => Ok(()),
        Some(_) => Err(ApiError::field(
            "query.version",
            "invalid",
            "version must be a positive integer.",
        )),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn overrides_lay_over_the_nodes_variables_and_name() {
        let query = json!({"kind": "HogQLQuery", "query": "select {variables.n}", "name": "mine",
            "variables": {"v1": {"code_name": "n", "value": 1}, "v2": {"code_name": "m", "value": 2}}});
        let plain = SqlNode::from_query(&query, Overrides::default()).unwrap();
        assert_eq!(plain.name.as_deref(), Some("mine"));
        assert_eq!(plain.bindings.variables["n"], json!(1));
        let overrides = json!({"v1": {"code_name": "n", "isNull": true, "value": 5}});
        let node = SqlNode::from_query(
            &query,
            Overrides {
                name: Some("run"),
                variables: overrides.as_object(),
                filters: None,
            },
        )
        .unwrap();
        assert_eq!(node.name.as_deref(), Some("run"));
        assert_eq!(node.bindings.variables["n"], Value::Null);
        assert_eq!(node.bindings.variables["m"], json!(2));
        assert!(node.structured.is_none());
    }

    #[test]
    fn structured_kinds_are_kept_whole_and_bad_nodes_name_their_field() {
        let trends = json!({"kind": "TrendsQuery", "series": []});
        let node = SqlNode::from_query(&trends, Overrides::default()).unwrap();
        assert_eq!(node.structured, Some(trends));
        for (query, attr) in [
            (json!("select 1"), "query"),
            (json!({"query": "select 1"}), "query.kind"),
            (json!({"kind": "PathsQuery"}), "query.kind"),
            (json!({"kind": "HogQLQuery", "query": " "}), "query.query"),
            (
                json!({"kind": "HogQLQuery", "query": "select 1", "limit": 3}),
                "query.limit",
            ),
            (
                json!({"kind": "HogQLQuery", "query": "select 1", "version": 0}),
                "query.version",
            ),
            (
                json!({"kind": "HogQLQuery", "query": "select 1", "variables": {"v": {}}}),
                "query.variables.v.code_name",
            ),
        ] {
            let error = SqlNode::from_query(&query, Overrides::default()).unwrap_err();
            assert_eq!(error.body.attr.as_deref(), Some(attr), "{query}");
        }
    }
}
