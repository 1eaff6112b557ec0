//! The activity log of cohorts (PostHog's `activity` actions of the viewset).

use axum::extract::{Path, State};
use axum::response::{IntoResponse, Response};
use cohort_core::repository;
use common::activity::{self, ActivityPage};
use common::error::{ApiError, ApiResult};
use common::http::item_id;
use common::{AppState, Authenticated};

use crate::shared::ACTIVITY_READ;

/// `GET /cohorts/activity`: every cohort's history, newest first.
pub async fn activity_of_all(
    State(state): State<AppState>,
    auth: Authenticated,
    Path(project): Path<String>,
    page: ActivityPage,
) -> ApiResult<Response> {
    let store = state.store.as_ref();
    let project = auth.project(store, &project, ACTIVITY_READ).await?;
    let entries = activity::list(store, project.id, repository::SCOPE, None).await?;
    Ok(axum::Json(page.answer(&entries)).into_response())
}

/// `GET /cohorts/:id/activity`: one cohort's history (404 when deleted or unknown).
pub async fn activity_of_one(
    State(state): State<AppState>,
    auth: Authenticated,
    Path((project, id)): Path<(String, String)>,
    page: ActivityPage,
) -> ApiResult<Response> {
    let store = state.store.as_ref();
    let project = auth.project(store, &project, ACTIVITY_READ).await?;
    let id = item_id(&id)?;
    if repository::get_live(store, project.id, id).await?.is_none() {
        return Err(ApiError::not_found());
    }
    let entries =
        activity::list(store, project.id, repository::SCOPE, Some(&id.to_string())).await?;
    Ok(axum::Json(page.answer(&entries)).into_response())
}
