//! A query node as the engine runs it: SQL text with its bindings, or a structured node compiled
//! at run time. Every family turns its stored or posted node into a [`SqlNode`] here, so
//! `variables_override` and `filters_override` mean the same thing on `/query/` and on an
//! endpoint run.

use common::ApiError;
use engine::Bindings;
use insights::nodes::{NodeError, QueryNode, SqlQuery, Structured, Variable};
use serde_json::{Map, Value, json};

/// A validated node ready for the engine: SQL text, or a structured node compiled at run time.
#[derive(Debug, Clone, Default)]
pub struct SqlNode {
    /// The SQL text (for a structured node: the node as JSON, for the query log).
    pub text: String,
    pub name: Option<String>,
    pub bindings: Bindings,
    /// An EventsQuery, TrendsQuery, FunnelsQuery, RetentionQuery, StickinessQuery, LifecycleQuery,
    /// ExperimentQuery, PathsQuery or ActorsQuery (see `insights`).
    pub structured: Option<Structured>,
    /// HogQLFilters for `{filters}` (the node's, with `filters_override` laid over them).
    pub filters: Option<Value>,
    /// The experiment an `ExperimentQuery` is about, when the caller built it (a timeseries
    /// day's run with its `as_of`); else it is loaded from the Store by `experiment_id`.
    pub experiment: Option<std::sync::Arc<insights::experiments::ExperimentSpec>>,
    /// The rows asked for: the query's own LIMIT, or a caller's page (an endpoint run's
    /// `limit` / `offset`).
    pub window: engine::Window,
    /// Where it runs (`modifiers.engine`).
    pub placement: engine::remote::Placement,
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

/// A node that is not one this service runs, as the 400 on `query...` that answers it.
pub fn node_error(error: NodeError) -> ApiError {
    ApiError::field(error.attr_under("query"), error.code, error.detail)
}

impl SqlNode {
    /// SQL text with its bindings, as the service's own reads (schema, query log) run it.
    pub fn sql(text: impl Into<String>, bindings: Bindings) -> Self {
        Self {
            text: text.into(),
            bindings,
            ..Default::default()
        }
    }

    /// A structured node as the service runs it (its JSON is the log's text).
    pub fn structured(node: Structured, name: Option<String>) -> Self {
        let engine = node
            .as_value()
            .pointer("/modifiers/engine")
            .and_then(Value::as_str);
        Self {
            text: node.as_value().to_string(),
            name,
            placement: engine::remote::Placement::from_modifier(engine),
            structured: Some(node),
            ..Default::default()
        }
    }

    /// A node stored as JSON (an endpoint's version), already upgraded (see
    /// `insights::nodes::upgrade`): read as a [`QueryNode`], then [`SqlNode::from_node`].
    pub fn from_query(query: &Value, overrides: Overrides<'_>) -> Result<Self, ApiError> {
        let node = QueryNode::from_value(query.clone()).map_err(node_error)?;
        Self::from_node(node, overrides)
    }

    /// A request's node with the overrides applied. Errors name the field under `query.` (or
    /// `filters_override`).
    pub fn from_node(node: QueryNode, overrides: Overrides<'_>) -> Result<Self, ApiError> {
        let sql = match node {
            QueryNode::Sql(sql) => sql,
            QueryNode::Events(node)
            | QueryNode::Trends(node)
            | QueryNode::Funnels(node)
            | QueryNode::Retention(node)
            | QueryNode::Stickiness(node)
            | QueryNode::Lifecycle(node)
            | QueryNode::Experiment(node)
            | QueryNode::Paths(node)
            | QueryNode::Actors(node) => {
                return Ok(Self::structured(node, overrides.name.map(str::to_owned)));
            }
        };
        let SqlQuery {
            query,
            values,
            mut variables,
            filters,
            name,
            engine,
            ..
        } = sql;
        if let Some(given) = overrides.variables {
            for (id, variable) in given {
                variables.insert(
                    id.clone(),
                    Variable::read(id, variable).map_err(node_error)?,
                );
            }
        }
        Ok(SqlNode {
            text: query,
            name: overrides.name.map(str::to_owned).or(name),
            bindings: Bindings {
                values,
                variables: variables
                    .into_values()
                    .map(|variable| (variable.code_name, variable.value))
                    .collect(),
                ..Default::default()
            },
            structured: None,
            filters: Some(hogql_filters(filters.as_ref(), overrides.filters)?),
            experiment: None,
            window: Default::default(),
            placement: engine::remote::Placement::from_modifier(engine.as_deref()),
        })
    }

    /// The node's kind as the query log names it.
    pub fn kind(&self) -> &str {
        self.structured
            .as_ref()
            .map_or("HogQLQuery", Structured::kind)
    }

    /// What the node asks, in one canonical text (maps serialise with sorted keys): the
    /// structured node, or the SQL text with its values, variables, filters and window. Part of
    /// the cache key.
    pub fn canonical(&self) -> String {
        match &self.structured {
            Some(structured) => structured.as_value().to_string(),
            None => json!({
                "query": self.text,
                "values": self.bindings.values,
                "variables": self.bindings.variables,
                "filters": self.filters,
                "window": format!("{:?}", self.window),
            })
            .to_string(),
        }
    }
}

fn hogql_filters(node: Option<&Value>, overrides: Option<&Value>) -> Result<Value, ApiError> {
    insights::hogql_filters::merge(node, overrides).map_err(|invalid| {
        let attr = match invalid.attr.starts_with("filters_override") {
            true => invalid.attr,
            false => format!("query.{}", invalid.attr),
        };
        ApiError::field(attr, "invalid_input", invalid.detail)
    })
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
        assert_eq!(node.structured.map(|s| s.as_value().clone()), Some(trends));
        for (query, attr) in [
            (json!("select 1"), "query"),
            (json!({"query": "select 1"}), "query.kind"),
            (json!({"kind": "WebOverviewQuery"}), "query.kind"),
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
