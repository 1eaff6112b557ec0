//! `endpoints/:name/versions/` (newest first) and `versions/:n/`.

use axum::extract::{Path, State};
use axum::response::{IntoResponse, Response};
use common::error::{ApiError, ApiResult};
use common::{AppState, Authenticated};
use endpoint_core::{render, repository};
use serde_json::Value;

use crate::shared::{READ, creator, load, project};

/// `GET endpoints/:name/versions/`: a JSON array, newest first.
pub async fn list(
    State(state): State<AppState>,
    auth: Authenticated,
    Path((project_id, name)): Path<(String, String)>,
) -> ApiResult<Response> {
    let project = project(&state, &auth, &project_id, READ).await?;
    let store = state.store.as_ref();
    let endpoint = load(store, project.id, &name).await?;
    let versions = repository::versions(store, project.id, endpoint.id).await?;
    let mut out: Vec<Value> = Vec::with_capacity(versions.len());
    for version in &versions {
        out.push(render::version(
            version,
            creator(store, version.created_by).await?,
        ));
    }
    Ok(axum::Json(out).into_response())
}

/// `GET endpoints/:name/versions/:n/`.
pub async fn retrieve(
    State(state): State<AppState>,
    auth: Authenticated,
    Path((project_id, name, raw)): Path<(String, String, String)>,
) -> ApiResult<Response> {
    let project = project(&state, &auth, &project_id, READ).await?;
    let store = state.store.as_ref();
    let endpoint = load(store, project.id, &name).await?;
    let missing = || ApiError::not_found_detail(format!("Version {raw} not found"));
    let number: u32 = raw.parse().map_err(|_| missing())?;
    let version = repository::version(store, project.id, endpoint.id, number)
        .await?
        .ok_or_else(missing)?;
    let creator = creator(store, version.created_by).await?;
    Ok(axum::Json(render::version(&version, creator)).into_response())
}
