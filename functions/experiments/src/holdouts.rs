//! `/api/projects/:project_id/experiment_holdouts/`: PostHog's ExperimentHoldoutViewSet (list,
//! create, retrieve, update, hard delete) under the experiment scopes. A change of a holdout's
//! size reaches the flags of the experiments that name it; a delete detaches it from them.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use common::activity::Actor;
use common::error::{ApiError, ApiResult};
use common::http::{Json, item_id};
use common::pagination::Pagination;
use common::{AppState, Authenticated};
use experiment_core::holdouts::repository::{self, WriteError};
use experiment_core::holdouts::{self, Holdout, HoldoutBody};

use crate::shared::{READ, WRITE, creator};

/// Tries of a change before it answers 409 (each try is one read and one transaction).
const ATTEMPTS: u32 = 8;

fn write_error(error: WriteError) -> ApiError {
    match error {
        WriteError::Raced => {
            ApiError::conflict("The holdout kept changing under this request; retry.")
        }
        WriteError::Store(error) => error.into(),
    }
}

async fn render(state: &AppState, holdout: &Holdout) -> ApiResult<serde_json::Value> {
    let creator = creator(state.store.as_ref(), holdout.created_by).await?;
    Ok(holdouts::render(holdout, creator.as_ref()))
}

/// `GET /experiment_holdouts/`: newest first.
pub async fn list(
    State(state): State<AppState>,
    auth: Authenticated,
    Path(project): Path<String>,
    pagination: Pagination,
) -> ApiResult<Response> {
    let store = state.store.as_ref();
    let project = auth.project(store, &project, READ).await?;
    let mut rows = repository::list_all(store, project.id).await?;
    rows.sort_by(|a, b| b.created_at.cmp(&a.created_at).then(b.id.cmp(&a.id)));
    let mut rendered = Vec::new();
    for holdout in pagination.window(&rows) {
        rendered.push(render(&state, holdout).await?);
    }
    Ok(axum::Json(pagination.page_of(rows.len(), &rendered)).into_response())
}

/// `POST /experiment_holdouts/`: 201 with the holdout, its groups given `holdout-<id>`.
pub async fn create(
    State(state): State<AppState>,
    auth: Authenticated,
    Path(project): Path<String>,
    Json(body): Json<HoldoutBody>,
) -> ApiResult<Response> {
    let store = state.store.as_ref();
    let project = auth.project(store, &project, WRITE).await?;
    let at = state.clock.now();
    let holdout = holdouts::create(&body, &auth.user, project.id, at)?;
    let holdout = repository::create(store, project.id, holdout, &Actor::user(&auth.user), at)
        .await
        .map_err(write_error)?;
    Ok((
        StatusCode::CREATED,
        axum::Json(render(&state, &holdout).await?),
    )
        .into_response())
}

/// `GET /experiment_holdouts/:id/`
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
    Ok(axum::Json(render(&state, &stored.holdout).await?).into_response())
}

/// `PATCH` (and `PUT`) `/experiment_holdouts/:id/`: new filters reach the linked flags.
pub async fn update(
    State(state): State<AppState>,
    auth: Authenticated,
    Path((project, id)): Path<(String, String)>,
    Json(body): Json<HoldoutBody>,
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
        let next = holdouts::update(&body, &stored.holdout)?;
        let at = state.clock.now();
        match repository::save(store, project.id, &stored, next, &actor, at).await {
            Ok((holdout, flags_changed)) => {
                if flags_changed {
                    feature_flags::cache::definitions_changed(&state, project.id);
                }
                return Ok(axum::Json(render(&state, &holdout).await?).into_response());
            }
            Err(WriteError::Raced) => continue,
            Err(other) => return Err(write_error(other)),
        }
    }
    Err(write_error(WriteError::Raced))
}

/// `DELETE /experiment_holdouts/:id/`: 204, the holdout gone from its experiments and flags.
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
            Ok(flags_changed) => {
                if flags_changed {
                    feature_flags::cache::definitions_changed(&state, project.id);
                }
                return Ok(StatusCode::NO_CONTENT.into_response());
            }
            Err(WriteError::Raced) => continue,
            Err(other) => return Err(write_error(other)),
        }
    }
    Err(write_error(WriteError::Raced))
}
