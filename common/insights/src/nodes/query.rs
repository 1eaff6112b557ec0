//! A query request's node, typed: one variant per kind this service runs, read once from an
//! upgraded node (see [`super::upgrade`]) and passed along from there.
//!
//! A SQL node (`SqlDialectQuery`, alias `HogQLQuery`) is read field by field. A structured node
//! keeps its JSON object, which its compiler reads into its own plan (`trends::Plan`, ...): its
//! relative dates resolve against the request's "now", so its fields are checked when it
//! compiles, each error naming its field.

use std::collections::BTreeMap;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value, json};

use crate::KINDS;

/// An upgraded query node of a kind this service runs.
#[derive(Debug, Clone, PartialEq)]
pub enum QueryNode {
    /// `SqlDialectQuery` / `HogQLQuery`: SQL text with its values, variables and filters.
    Sql(SqlQuery),
    Events(Structured),
    Trends(Structured),
    Funnels(Structured),
    Retention(Structured),
    Stickiness(Structured),
    Lifecycle(Structured),
    Experiment(Structured),
    Paths(Structured),
    Actors(Structured),
}

/// A `SqlDialectQuery` (or `HogQLQuery`) node.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SqlQuery {
    /// The kind as sent (`HogQLQuery` or `SqlDialectQuery`).
    pub kind: String,
    /// The SQL text (not blank).
    pub query: String,
    /// Placeholder values (`{name}`).
    pub values: Map<String, Value>,
    /// Variable id -> variable.
    pub variables: BTreeMap<String, Variable>,
    /// HogQLFilters for `{filters}`, as sent (checked when merged with `filters_override`).
    pub filters: Option<Value>,
    pub name: Option<String>,
    /// `modifiers.engine`: where the query runs (see [`engine_modifier`]).
    pub engine: Option<String>,
}

/// Where a node asks to run (`modifiers.engine`): `auto` (the cluster when its scan is large
/// and one is configured), `local` (this process) or `cluster`. Ours, not PostHog's.
pub const ENGINES: &[&str] = &["auto", "local", "cluster"];

/// A node's `modifiers.engine`, checked.
pub fn engine_modifier(node: &Map<String, Value>) -> Result<Option<String>, NodeError> {
    let engine = node
        .get("modifiers")
        .and_then(|modifiers| modifiers.get("engine"));
    match engine {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(engine)) if ENGINES.contains(&engine.as_str()) => {
            Ok(Some(engine.clone()))
        }
        Some(other) => Err(NodeError::new(
            "modifiers.engine",
            "invalid",
            format!(
                "query.modifiers.engine must be one of {}, not {other}.",
                ENGINES.join(", ")
            ),
        )),
    }
}

/// One of a SQL node's `variables`: `{"code_name", "value", "isNull"?}`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Variable {
    pub code_name: String,
    /// The value, `null` when `isNull` is set.
    pub value: Value,
}

/// A structured node (EventsQuery, TrendsQuery, FunnelsQuery, RetentionQuery, StickinessQuery,
/// LifecycleQuery, ExperimentQuery, PathsQuery, ActorsQuery):
/// a JSON object whose `kind` is one of [`KINDS`], read by its compiler.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(transparent)]
pub struct Structured(Value);

/// A node that is not one this service runs: the field (under the node; `None` for the node
/// itself), PostHog's code and the message.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{detail}")]
pub struct NodeError {
    pub attr: Option<String>,
    pub code: &'static str,
    pub detail: String,
}

impl NodeError {
    fn new(attr: impl Into<String>, code: &'static str, detail: impl Into<String>) -> Self {
        Self {
            attr: Some(attr.into()),
            code,
            detail: detail.into(),
        }
    }

    /// The request attribute to blame, the node being at `at` (`query`).
    pub fn attr_under(&self, at: &str) -> String {
        match &self.attr {
            Some(attr) => format!("{at}.{attr}"),
            None => at.to_owned(),
        }
    }
}

/// Field names a SQL node may carry.
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

impl QueryNode {
    /// Reads an upgraded node. The checks run in a fixed order (object, `kind`, `version`, then
    /// the kind's fields), so a node with several faults is always answered the same 400.
    pub fn from_value(query: Value) -> Result<Self, NodeError> {
        let Value::Object(node) = &query else {
            return Err(NodeError {
                attr: None,
                code: "invalid",
                detail: "query must be an object.".into(),
            });
        };
        let kind = match node.get("kind") {
            Some(Value::String(kind)) => kind.clone(),
            _ => {
                return Err(NodeError::new(
                    "kind",
                    "required",
                    "query.kind is required.",
                ));
            }
        };
        check_version(node)?;
        engine_modifier(node)?;
        Ok(match kind.as_str() {
            "HogQLQuery" | "SqlDialectQuery" => QueryNode::Sql(SqlQuery::read(kind, node)?),
            "EventsQuery" => QueryNode::Events(Structured(query)),
            "TrendsQuery" => QueryNode::Trends(Structured(query)),
            "FunnelsQuery" => QueryNode::Funnels(Structured(query)),
            "RetentionQuery" => QueryNode::Retention(Structured(query)),
            "StickinessQuery" => QueryNode::Stickiness(Structured(query)),
            "LifecycleQuery" => QueryNode::Lifecycle(Structured(query)),
            "ExperimentQuery" => QueryNode::Experiment(Structured(query)),
            "PathsQuery" => QueryNode::Paths(Structured(query)),
            "ActorsQuery" => QueryNode::Actors(Structured(query)),
            other => {
                return Err(NodeError::new(
                    "kind",
                    "invalid",
                    format!(
                        "Query kind {other} is not supported; use SqlDialectQuery (or HogQLQuery), {}.",
                        KINDS.join(", ")
                    ),
                ));
            }
        })
    }

    pub fn kind(&self) -> &str {
        match self {
            QueryNode::Sql(sql) => &sql.kind,
            QueryNode::Events(node)
            | QueryNode::Trends(node)
            | QueryNode::Funnels(node)
            | QueryNode::Retention(node)
            | QueryNode::Stickiness(node)
            | QueryNode::Lifecycle(node)
            | QueryNode::Experiment(node)
            | QueryNode::Paths(node)
            | QueryNode::Actors(node) => node.kind(),
        }
    }

    /// The node as JSON, as it is echoed in a response.
    pub fn to_value(&self) -> Value {
        match self {
            QueryNode::Sql(sql) => sql.to_value(),
            QueryNode::Events(node)
            | QueryNode::Trends(node)
            | QueryNode::Funnels(node)
            | QueryNode::Retention(node)
            | QueryNode::Stickiness(node)
            | QueryNode::Lifecycle(node)
            | QueryNode::Experiment(node)
            | QueryNode::Paths(node)
            | QueryNode::Actors(node) => node.0.clone(),
        }
    }
}

impl Serialize for QueryNode {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.to_value().serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for QueryNode {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        QueryNode::from_value(Value::deserialize(deserializer)?).map_err(serde::de::Error::custom)
    }
}

impl SqlQuery {
    fn read(kind: String, node: &Map<String, Value>) -> Result<Self, NodeError> {
        if let Some(unknown) = node
            .keys()
            .find(|key| !SQL_NODE_FIELDS.contains(&key.as_str()))
        {
            return Err(NodeError::new(
                unknown.clone(),
                "invalid",
                format!("Unknown field: {unknown}."),
            ));
        }
        let query = match node.get("query") {
            Some(Value::String(text)) if !text.trim().is_empty() => text.clone(),
            Some(Value::String(_)) | None | Some(Value::Null) => {
                return Err(NodeError::new(
                    "query",
                    "required",
                    "query.query is required.",
                ));
            }
            Some(_) => {
                return Err(NodeError::new(
                    "query",
                    "invalid",
                    "query.query must be a string.",
                ));
            }
        };
        let values = match node.get("values") {
            None | Some(Value::Null) => Map::new(),
            Some(Value::Object(values)) => values.clone(),
            Some(_) => {
                return Err(NodeError::new(
                    "values",
                    "invalid",
                    "query.values must be an object.",
                ));
            }
        };
        let variables = match node.get("variables") {
            None | Some(Value::Null) => BTreeMap::new(),
            Some(Value::Object(variables)) => variables
                .iter()
                .map(|(id, variable)| Ok((id.clone(), Variable::read(id, variable)?)))
                .collect::<Result<_, NodeError>>()?,
            Some(_) => {
                return Err(NodeError::new(
                    "variables",
                    "invalid",
                    "query.variables must be an object.",
                ));
            }
        };
        Ok(SqlQuery {
            kind,
            query,
            values,
            variables,
            filters: node.get("filters").filter(|f| !f.is_null()).cloned(),
            name: node.get("name").and_then(Value::as_str).map(str::to_owned),
            engine: engine_modifier(node)?,
        })
    }

    fn to_value(&self) -> Value {
        let mut node = json!({"kind": self.kind, "query": self.query});
        if !self.values.is_empty() {
            node["values"] = Value::Object(self.values.clone());
        }
        if !self.variables.is_empty() {
            node["variables"] = json!(self.variables);
        }
        if let Some(filters) = &self.filters {
            node["filters"] = filters.clone();
        }
        if let Some(name) = &self.name {
            node["name"] = Value::String(name.clone());
        }
        if let Some(engine) = &self.engine {
            node["modifiers"] = json!({"engine": engine});
        }
        node
    }
}

impl Variable {
    /// Variable `id` of a node or of a request's `variables_override` (errors name
    /// `variables.<id>`).
    pub fn read(id: &str, variable: &Value) -> Result<Self, NodeError> {
        let Value::Object(variable) = variable else {
            return Err(NodeError::new(
                format!("variables.{id}"),
                "invalid",
                "A variable is an object with code_name and value.",
            ));
        };
        let Some(Value::String(code_name)) = variable.get("code_name") else {
            return Err(NodeError::new(
                format!("variables.{id}.code_name"),
                "required",
                "code_name is required.",
            ));
        };
        let value = match variable.get("isNull") == Some(&Value::Bool(true)) {
            true => Value::Null,
            false => variable.get("value").cloned().unwrap_or(Value::Null),
        };
        Ok(Variable {
            code_name: code_name.clone(),
            value,
        })
    }
}

impl Structured {
    /// One of [`KINDS`].
    pub fn kind(&self) -> &str {
        self.0["kind"].as_str().unwrap_or_default()
    }

    /// The node as sent (upgraded), for its compiler.
    pub fn as_value(&self) -> &Value {
        &self.0
    }

    pub fn get(&self, field: &str) -> Option<&Value> {
        self.0.get(field)
    }

    /// Compiles the node in `ctx` (see [`crate::compile`]).
    pub fn compile(&self, ctx: &crate::Context) -> Result<crate::Compiled, crate::Invalid> {
        crate::compile(&self.0, ctx)
    }
}

impl TryFrom<Value> for Structured {
    type Error = NodeError;

    /// A structured node built by the service itself, or read back from a stored job.
    fn try_from(node: Value) -> Result<Self, NodeError> {
        match QueryNode::from_value(node)? {
            QueryNode::Sql(_) => Err(NodeError::new(
                "kind",
                "invalid",
                "A SQL node is not a structured node.",
            )),
            QueryNode::Events(node)
            | QueryNode::Trends(node)
            | QueryNode::Funnels(node)
            | QueryNode::Retention(node)
            | QueryNode::Stickiness(node)
            | QueryNode::Lifecycle(node)
            | QueryNode::Experiment(node)
            | QueryNode::Paths(node)
            | QueryNode::Actors(node) => Ok(node),
        }
    }
}

impl<'de> Deserialize<'de> for Structured {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Structured::try_from(Value::deserialize(deserializer)?).map_err(serde::de::Error::custom)
    }
}

fn check_version(node: &Map<String, Value>) -> Result<(), NodeError> {
    match node.get("version") {
        None | Some(Value::Null) => Ok(()),
        Some(Value::Number(n)) if n.as_u64().is_some_and(|v| v >= 1) => Ok(()),
        Some(_) => Err(NodeError::new(
            "version",
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
    fn each_kind_reads_into_its_variant() {
        let trends = json!({"kind": "TrendsQuery", "series": []});
        let node = QueryNode::from_value(trends.clone()).unwrap();
        assert!(matches!(&node, QueryNode::Trends(s) if s.as_value() == &trends));
        assert_eq!(node.kind(), "TrendsQuery");
        let sql = json!({"kind": "HogQLQuery", "query": "select {variables.n}", "name": "mine",
            "variables": {"v1": {"code_name": "n", "isNull": true, "value": 5}}});
        let QueryNode::Sql(read) = QueryNode::from_value(sql).unwrap() else {
            panic!("a SQL node");
        };
        assert_eq!(read.name.as_deref(), Some("mine"));
        assert_eq!(read.variables["v1"].value, Value::Null);
        // Stored and read back (an async job's status) it is the same node.
        let node = QueryNode::Sql(read);
        let again: QueryNode = serde_json::from_value(json!(node)).unwrap();
        assert_eq!(again, node);
    }

    #[test]
    fn bad_nodes_name_their_field() {
        for (query, attr, code) in [
            (json!("select 1"), "query", "invalid"),
            (json!({"query": "select 1"}), "query.kind", "required"),
            (json!({"kind": "WebOverviewQuery"}), "query.kind", "invalid"),
            (
                json!({"kind": "HogQLQuery", "query": " "}),
                "query.query",
                "required",
            ),
            (
                json!({"kind": "HogQLQuery", "query": 1}),
                "query.query",
                "invalid",
            ),
            (
                json!({"kind": "HogQLQuery", "query": "select 1", "limit": 3}),
                "query.limit",
                "invalid",
            ),
            (
                json!({"kind": "TrendsQuery", "version": 0}),
                "query.version",
                "invalid",
            ),
            (
                json!({"kind": "HogQLQuery", "query": "select 1", "values": []}),
                "query.values",
                "invalid",
            ),
            (
                json!({"kind": "HogQLQuery", "query": "select 1", "variables": {"v": {}}}),
                "query.variables.v.code_name",
                "required",
            ),
        ] {
            let error = QueryNode::from_value(query.clone()).unwrap_err();
            assert_eq!(error.attr_under("query"), attr, "{query}");
            assert_eq!(error.code, code, "{query}");
        }
    }
}
