//! `/api/projects/:project_id/experiment_saved_metrics/`: PostHog's
//! ExperimentSavedMetricViewSet (list with `search`, create, retrieve, update, hard delete)
//! under the experiment scopes. A delete also drops the experiments' links to the metric.

use axum::extract::rejection::QueryRejection;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use common::activity::Actor;
use common::error::{ApiError, ApiResult};
use common::http::{Json, item_id};
use common::pagination::Pagination;
use common::{AppState, Authenticated};
use experiment_core::saved_metrics::repository::{self, WriteError};
use experiment_core::saved_metrics::{self, SavedMetric, SavedMetricBody};
use serde::Deserialize;

use crate::shared::{READ, WRITE, creator};

/// Tries of a change before it answers 409 (each try is one read and one transaction).
const ATTEMPTS: u32 = 8;

fn write_error(error: WriteError) -> ApiError {
    match error {
        WriteError::Raced => {
            ApiError::conflict("The saved metric kept changing under this request; retry.")
        }
        WriteError::Store(error) => error.into(),
    }
}

async fn render(state: &AppState, saved: &SavedMetric) -> ApiResult<serde_json::Value> {
    let creator = creator(state.store.as_ref(), saved.created_by).await?;
    Ok(saved_metrics::render(saved, creator.as_ref()))
}

#[derive(Debug, Deserialize)]
pub struct ListParams {
    search: Option<String>,
}

/// `GET /experiment_saved_metrics/`: by name, case-insensitively; `search` looks in the name,
/// the description and the tags (DRF's SearchFilter).
pub async fn list(
    State(state): State<AppState>,
    auth: Authenticated,
    Path(project): Path<String>,
    pagination: Pagination,
    params: Result<Query<ListParams>, QueryRejection>,
) -> ApiResult<Response> {
    let store = state.store.as_ref();
    let project = auth.project(store, &project, READ).await?;
    let Query(params) = params
        .map_err(|rejection| ApiError::bad_request("invalid_input", rejection.body_text()))?;
    let terms: Vec<String> = params
        .search
        .unwrap_or_default()
        .split_whitespace()
        .map(str::to_lowercase)
        .collect();
    let mut rows: Vec<SavedMetric> = repository::list_all(store, project.id)
        .await?
        .into_iter()
        .filter(|saved| {
            terms.iter().all(|term| {
                saved.name.to_lowercase().contains(term)
                    || saved
                        .description
                        .as_deref()
                        .is_some_and(|text| text.to_lowercase().contains(term))
                    || saved.tags.iter().any(|tag| tag.contains(term))
            })
        })
        .collect();
    rows.sort_by(|a, b| {
        a.name
            .to_lowercase()
            .cmp(&b.name.to_lowercase())
            .then(a.id.cmp(&b.id))
    });
    let mut rendered = Vec::new();
    for saved in pagination.window(&rows) {
        rendered.push(render(&state, saved).await?);
    }
    Ok(axum::Json(pagination.page_of(rows.len(), &rendered)).into_response())
}

/// `POST /experiment_saved_metrics/`: 201 with the saved metric, its query given a `uuid`.
pub async fn create(
    State(state): State<AppState>,
    auth: Authenticated,
    Path(project): Path<String>,
    Json(body): Json<SavedMetricBody>,
) -> ApiResult<Response> {
    let store = state.store.as_ref();
    let project = auth.project(store, &project, WRITE).await?;
    if let Some(Some(name)) = &body.name {
        let others = repository::list_all(store, project.id).await?;
        saved_metrics::name_taken(name, &others, None)?;
    }
    let at = state.clock.now();
    let saved = saved_metrics::create(&body, &auth.user, project.id, at)?;
    let saved = repository::create(store, project.id, saved, &Actor::user(&auth.user), at)
        .await
        .map_err(write_error)?;
    Ok((
        StatusCode::CREATED,
        axum::Json(render(&state, &saved).await?),
    )
        .into_response())
}

/// `GET /experiment_saved_metrics/:id/`
pub async fn retrieve(
    State(state): State<AppState>,
    auth: Authenticated,
    Path((project, id)): Path<(String, String)>,
) -> ApiResult<Response> {
    let store = state.store.as_ref();
    let project = auth.project(store, &project, READ).await?;
    let stored = repository::get(store, project.id, item_id(&id)?)
        .await?
        .ok_or_else(ApiError::not_found)?;
    Ok(axum::Json(render(&state, &stored.saved_metric).await?).into_response())
}

/// `PATCH` (and `PUT`) `/experiment_saved_metrics/:id/`: name, description, query, tags; the
/// query keeps its `uuid`.
pub async fn update(
    State(state): State<AppState>,
    auth: Authenticated,
    Path((project, id)): Path<(String, String)>,
    Json(body): Json<SavedMetricBody>,
) -> ApiResult<Response> {
    let store = state.store.as_ref();
    let project = auth.project(store, &project, WRITE).await?;
    let id = item_id(&id)?;
    let actor = Actor::user(&auth.user);
    for attempt in 0..ATTEMPTS {
        common::repository::pause_before(attempt).await;
        let stored = repository::get(store, project.id, id)
            .await?
            .ok_or_else(ApiError::not_found)?;
        if let Some(Some(name)) = &body.name {
            let others = repository::list_all(store, project.id).await?;
            saved_metrics::name_taken(name, &others, Some(id))?;
        }
        let next = saved_metrics::update(&body, &stored.saved_metric)?;
        let at = state.clock.now();
        match repository::save(store, project.id, &stored, next, &actor, at).await {
            Ok(saved) => return Ok(axum::Json(render(&state, &saved).await?).into_response()),
            Err(WriteError::Raced) => continue,
            Err(other) => return Err(write_error(other)),
        }
    }
    Err(write_error(WriteError::Raced))
}

/// `DELETE /experiment_saved_metrics/:id/`: 204, the experiments' links to it gone with it.
pub async fn destroy(
    State(state): State<AppState>,
    auth: Authenticated,
    Path((project, id)): Path<(String, String)>,
) -> ApiResult<Response> {
    let store = state.store.as_ref();
    let project = auth.project(store, &project, WRITE).await?;
    let id = item_id(&id)?;
    let actor = Actor::user(&auth.user);
    for attempt in 0..ATTEMPTS {
        common::repository::pause_before(attempt).await;
        let stored = repository::get(store, project.id, id)
            .await?
            .ok_or_else(ApiError::not_found)?;
        match repository::delete(store, project.id, &stored, &actor, state.clock.now()).await {
            Ok(()) => return Ok(StatusCode::NO_CONTENT.into_response()),
            Err(WriteError::Raced) => continue,
            Err(other) => return Err(write_error(other)),
        }
    }
    Err(write_error(WriteError::Raced))
}
