//! `POST endpoints/last_execution_times/`: when each named endpoint last ran, over the last six
//! months, from the per-endpoint record runs keep in the Store (the query log expires sooner).

use axum::extract::{Path, State};
use axum::response::{IntoResponse, Response};
use chrono::Months;
use common::error::{ApiError, ApiResult};
use common::http::Json;
use common::{AppState, Authenticated};
use endpoint_core::{render, repository, validate};
use query_service::status::StatusAnswer;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::shared::{READ, project};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Body {
    #[serde(default)]
    names: Vec<String>,
}

/// `{"query_status": {..., "results": [[name, last_executed_at], ...]}}`, as PostHog answers
/// its query over the log: the whole status object, rendered as the async status route renders
/// one.
pub async fn last(
    State(state): State<AppState>,
    auth: Authenticated,
    Path(project_id): Path<String>,
    Json(body): Json<Body>,
) -> ApiResult<Response> {
    let project = project(&state, &auth, &project_id, READ).await?;
    for name in &body.names {
        validate::check_name(name)
            .map_err(|_| ApiError::validation("names", format!("Invalid endpoint name: {name}")))?;
    }
    let since = state
        .clock
        .now()
        .checked_sub_months(Months::new(6))
        .unwrap_or_default();
    let results: Vec<Value> = match body.names.is_empty() {
        true => Vec::new(),
        false => repository::last_executions(state.store.as_ref(), project.id, &body.names)
            .await?
            .into_iter()
            .filter(|run| run.last_executed_at >= since)
            .map(|run| json!([run.name, render::iso(run.last_executed_at)]))
            .collect(),
    };
    let status = StatusAnswer::complete(project.id, Value::Array(results));
    Ok(axum::Json(json!({"query_status": status.to_json()})).into_response())
}
