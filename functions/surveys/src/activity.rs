//! The activity log of surveys (PostHog's `activity` actions of the viewset).

use axum::extract::{Path, State};
use axum::response::{IntoResponse, Response};
use common::activity::{self, ActivityPage};
use common::error::ApiResult;
use common::{AppState, Authenticated};
use survey_core::repository::SCOPE;

use crate::shared::{ACTIVITY_READ, load};

/// `GET /surveys/activity/`: every survey's history, newest first (deleted ones included).
pub async fn of_all(
    State(state): State<AppState>,
    auth: Authenticated,
    Path(project): Path<String>,
    page: ActivityPage,
) -> ApiResult<Response> {
    let store = state.store.as_ref();
    let project = auth.project(store, &project, ACTIVITY_READ).await?;
    let entries = activity::list(store, project.id, SCOPE, None).await?;
    Ok(axum::Json(page.answer(&entries)).into_response())
}

/// `GET /surveys/:id/activity/`: one survey's history (404 when it does not exist).
pub async fn of_one(
    State(state): State<AppState>,
    auth: Authenticated,
    Path((project, id)): Path<(String, String)>,
    page: ActivityPage,
) -> ApiResult<Response> {
    let store = state.store.as_ref();
    let project = auth.project(store, &project, ACTIVITY_READ).await?;
    let survey = load(store, project.id, &id).await?.survey;
    let entries = activity::list(store, project.id, SCOPE, Some(&survey.id.to_string())).await?;
    Ok(axum::Json(page.answer(&entries)).into_response())
}
