//! `/api/projects/:project_id/cohorts/`: list, create, retrieve and update (with soft delete and
//! restore); a hard delete is refused (`common::repository::routes::refused_delete`).

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use cohort_core::repository;
use cohort_core::service::{self, CohortBody};
use common::activity::Actor;
use common::error::ApiResult;
use common::http::Json;
use common::http::item_id;
use common::pagination::Pagination;
use common::repository::retry;
use common::{AppState, Authenticated};

use crate::shared::{READ, UPDATE_ATTEMPTS, WRITE, render, write_error};

/// `GET /cohorts/`: live cohorts, newest first, paged with `limit`/`offset`.
pub async fn list(
    State(state): State<AppState>,
    auth: Authenticated,
    Path(project): Path<String>,
    pagination: Pagination,
) -> ApiResult<Response> {
    let store = state.store.as_ref();
    let project = auth.project(store, &project, READ).await?;
    let mut cohorts = repository::list_live(store, project.id).await?;
    cohorts.sort_by(|a, b| b.created_at.cmp(&a.created_at).then(b.id.cmp(&a.id)));
    let mut rendered = Vec::new();
    for cohort in pagination.window(&cohorts) {
        rendered.push(render(store, cohort).await?);
    }
    Ok(axum::Json(pagination.page_of(cohorts.len(), &rendered)).into_response())
}

/// `POST /cohorts/`: 201 with the cohort; a dynamic one's calculation is queued.
pub async fn create(
    State(state): State<AppState>,
    auth: Authenticated,
    Path(project): Path<String>,
    Json(body): Json<CohortBody>,
) -> ApiResult<Response> {
    let store = state.store.as_ref();
    let project = auth.project(store, &project, WRITE).await?;
    let at = state.clock.now();
    let cohort = service::create(store, project.id, body, Some(auth.user.uuid), at).await?;
    let created = repository::create(
        store,
        project.id,
        cohort,
        &Actor::user(&auth.user),
        at,
        |_| Ok(Vec::new()),
    )
    .await
    .map_err(write_error)?;
    feature_flags::cache::cohorts_changed(&state, project.id);
    let created = if created.is_static {
        created
    } else {
        service::queue_calculation(&state, created).await
    };
    let answer = render(store, &created).await?;
    Ok((StatusCode::CREATED, axum::Json(answer)).into_response())
}

/// `GET /cohorts/:id/`: 404 for a deleted or unknown cohort.
pub async fn retrieve(
    State(state): State<AppState>,
    auth: Authenticated,
    Path((project, id)): Path<(String, String)>,
) -> ApiResult<Response> {
    let store = state.store.as_ref();
    let project = auth.project(store, &project, READ).await?;
    let stored = repository::found(store, project.id, item_id(&id)?, false).await?;
    Ok(axum::Json(render(store, &stored.cohort).await?).into_response())
}

/// `PATCH` (and `PUT`) `/cohorts/:id/`: a partial update; `deleted: true` soft-deletes and
/// `deleted: false` restores. A changed definition queues a new calculation.
pub async fn update(
    State(state): State<AppState>,
    auth: Authenticated,
    Path((project, id)): Path<(String, String)>,
    Json(body): Json<CohortBody>,
) -> ApiResult<Response> {
    let store = state.store.as_ref();
    let project = auth.project(store, &project, WRITE).await?;
    let (team_id, id) = (project.id, item_id(&id)?);
    let restoring = body.deleted == Some(false);
    let (state, body, actor) = (&state, &body, &Actor::user(&auth.user));
    let (saved, recalculate) = retry(UPDATE_ATTEMPTS, write_error, || async move {
        let before = repository::found(store, team_id, id, restoring).await?;
        let updated = service::update(store, team_id, body, &before.cohort).await?;
        let at = state.clock.now();
        let saved = repository::save(store, team_id, &before, updated.cohort, actor, at).await;
        Ok(saved.map(|saved| (saved, updated.recalculate)))
    })
    .await?;
    feature_flags::cache::cohorts_changed(state, team_id);
    let saved = if recalculate && !saved.deleted {
        service::queue_calculation(state, saved).await
    } else {
        saved
    };
    Ok(axum::Json(render(store, &saved).await?).into_response())
}
