//! `GET /api/projects/:id/experiments/requires_flag_implementation`: the HTTP side of
//! `query_service::experiments::flag_implementation`. The route is served here, not by the
//! experiments function, because answering it reads the event lake (the experiments function
//! links no engine).

use axum::extract::{Path, Query, State};
use common::models::Scope;
use common::{ApiResult, AppState, Authenticated};
use query_service::Caller;
use query_service::experiments::flag_implementation::{self, Params};
use serde_json::{Value, json};

const EXPERIMENT_READ: Scope = Scope::read("experiment");

/// `GET /api/projects/:id/experiments/requires_flag_implementation/`: `{"result": bool}`.
pub async fn requires_flag_implementation(
    State(state): State<AppState>,
    auth: Authenticated,
    Path(project_id): Path<String>,
    Query(params): Query<Params>,
) -> ApiResult<axum::Json<Value>> {
    let project = auth
        .project(state.store.as_ref(), &project_id, EXPERIMENT_READ)
        .await?;
    let result = flag_implementation::requires_flag_implementation(
        &state,
        &project,
        &Caller::of(&auth),
        &params,
    )
    .await?;
    Ok(axum::Json(json!({"result": result})))
}
