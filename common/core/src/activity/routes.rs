//! The activity-log routes every family mounts for its entity `E`: `GET .../activity` (the whole
//! scope's history) and `GET .../:id/activity` (one item's), PostHog's `activity` actions of a
//! viewset, both behind the `activity_log:read` scope and paged with [`ActivityPage`].

use std::str::FromStr;

use axum::extract::{Path, State};
use axum::response::{IntoResponse, Response};

use crate::activity::{self, ActivityPage};
use crate::error::{ApiError, ApiResult};
use crate::models::Scope;
use crate::repository::{self, Entity};
use crate::{AppState, Authenticated};

pub const ACTIVITY_READ: Scope = Scope::read("activity_log");

/// `GET .../activity`: every item's history of `E`'s scope, newest first (deleted items'
/// included).
pub async fn of_all<E: Entity>(
    State(state): State<AppState>,
    auth: Authenticated,
    Path(project): Path<String>,
    page: ActivityPage,
) -> ApiResult<Response> {
    of_scope(&state, &auth, &project, E::SCOPE, &page).await
}

/// [`of_all`] for a scope whose items are not an [`Entity`] (persons): every item's history
/// of `scope` in the project the path names, newest first.
pub async fn of_scope(
    state: &AppState,
    auth: &Authenticated,
    project: &str,
    scope: &str,
    page: &ActivityPage,
) -> ApiResult<Response> {
    let store = state.store.as_ref();
    let project = auth.project(store, project, ACTIVITY_READ).await?;
    let entries = activity::list(store, project.id, scope, None).await?;
    Ok(axum::Json(page.answer(&entries)).into_response())
}

/// `GET .../:id/activity`: one item's history; 404 when the id does not parse, the item does
/// not exist, or it is deleted (unless [`Entity::HISTORY_OUTLIVES_DELETE`]).
pub async fn of_one<E>(
    State(state): State<AppState>,
    auth: Authenticated,
    Path((project, id)): Path<(String, String)>,
    page: ActivityPage,
) -> ApiResult<Response>
where
    E: Entity<Key: FromStr + Sized>,
{
    let store = state.store.as_ref();
    let project = auth.project(store, &project, ACTIVITY_READ).await?;
    let key = id.parse::<E::Key>().map_err(|_| ApiError::not_found())?;
    let Some((item, _)) = repository::get::<E>(store, project.id, &key)
        .await?
        .filter(|(item, _)| E::HISTORY_OUTLIVES_DELETE || !item.deleted())
    else {
        return Err(ApiError::not_found());
    };
    let entries = activity::list(store, project.id, E::SCOPE, Some(&item.item_id())).await?;
    Ok(axum::Json(page.answer(&entries)).into_response())
}
