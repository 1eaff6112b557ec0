//! A query is checked as a run would check it before an endpoint stores it, so a stored version
//! always runs (a 400 on `query` otherwise).

use common::models::Project;
use common::{ApiError, AppState};
use endpoint_core::Column;
use engine::QueryError;
use serde_json::Value;

use crate::{Overrides, SqlNode, api_error, runner};

/// A query as an endpoint stores it.
#[derive(Debug, Clone)]
pub struct Checked {
    /// Upgraded by the node migrations.
    pub query: Value,
    /// What a SQL query answers, from its plan (empty for structured nodes, whose shape is the
    /// node's own).
    pub columns: Vec<Column>,
}

/// Upgrades `query`, then parses, checks and plans it for `project`.
pub async fn check(state: &AppState, project: &Project, query: Value) -> Result<Checked, ApiError> {
    if !query.is_object() {
        return Err(ApiError::field(
            "query",
            "invalid_input",
            "query must be an object.",
        ));
    }
    let upgraded = insights::nodes::upgrade(query).map_err(|error| {
        ApiError::field("query", "invalid_input", format!("Invalid query: {error}"))
    })?;
    if upgraded.get("connectionId").is_some_and(|c| !c.is_null()) {
        return Err(ApiError::field(
            "query",
            "invalid_input",
            "Queries against a warehouse connection cannot be saved as endpoints.",
        ));
    }
    let node = SqlNode::from_query(&upgraded, Overrides::default())?;
    runner::check(state, project, &node)
        .await
        .map_err(|error| invalid(&error))?;
    let columns = match node.structured {
        Some(_) => Vec::new(),
        None => runner::columns(state, project, &node)
            .await
            .map_err(|error| invalid(&error))?
            .into_iter()
            .map(|(name, kind)| Column { name, kind })
            .collect(),
    };
    Ok(Checked {
        query: upgraded,
        columns,
    })
}

fn invalid(error: &QueryError) -> ApiError {
    match error {
        QueryError::Internal(_) => api_error(error),
        QueryError::Invalid { attr, detail } => {
            ApiError::field(format!("query.{attr}"), "invalid_input", detail.clone())
        }
        other => ApiError::field(
            "query",
            "invalid_input",
            format!("Invalid HogQL query: {other}"),
        ),
    }
}

/// Whether a version's query can be materialized here: `Ok` with the variable its result is
/// stored by (at most one), else why not.
pub async fn can_materialize(
    state: &AppState,
    project: &Project,
    query: &Value,
) -> Result<Option<String>, String> {
    let kind = query["kind"].as_str().unwrap_or_default();
    if kind != "HogQLQuery" && kind != "SqlDialectQuery" {
        return Err(format!(
            "Only SQL queries can be materialized; this endpoint's query is a {kind}."
        ));
    }
    let node = SqlNode::from_query(query, Overrides::default()).map_err(|e| e.body.detail)?;
    let mut used = engine::materialize::variables(&node.text).map_err(|e| e.to_string())?;
    if used.len() > 1 {
        return Err("A query with more than one variable cannot be materialized.".into());
    }
    let variable = used.pop();
    match runner::materialization_plan(state, project, &node, variable.as_deref()).await {
        Ok(_) => Ok(variable),
        Err(error) => Err(error.to_string()),
    }
}
