//! `/api/projects/:project_id/actions/`: list, create, retrieve and update (with soft delete and
//! restore); a hard delete is refused (`common::repository::routes::refused_delete`).

use action_core::Action;
use action_core::body::{self, ActionBody};
use action_core::repository;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use common::activity::Actor;
use common::error::{ApiError, ApiResult};
use common::http::{Json, item_id};
use common::models::Scope;
use common::pagination::Pagination;
use common::repository::{WriteError, retry};
use common::store::Store;
use common::{AppState, Authenticated};
use serde_json::Value;

use crate::render;

const READ: Scope = Scope::read("action");
pub const WRITE: Scope = Scope::write("action");
/// Tries of an update before it answers 409 (each try is one read and one transaction).
const UPDATE_ATTEMPTS: u32 = 16;

fn write_error(error: WriteError) -> ApiError {
    error.answer_plain("action")
}

/// PostHog's `validate`: a live action's name is unique in its project.
async fn check_name(store: &dyn Store, team_id: i64, action: &Action) -> ApiResult<()> {
    if action.deleted {
        return Ok(());
    }
    match repository::name_taken(store, team_id, &action.name, Some(action.id)).await? {
        Some(other) => Err(ApiError::field(
            "name",
            "unique",
            format!("This project already has an action with this name, ID {other}"),
        )),
        None => Ok(()),
    }
}

/// `GET /actions/`: live actions in PostHog's order (latest `last_calculated_at` first, then
/// by name), paged with `limit`/`offset`.
pub async fn list(
    State(state): State<AppState>,
    auth: Authenticated,
    Path(project): Path<String>,
    pagination: Pagination,
) -> ApiResult<Response> {
    let store = state.store.as_ref();
    let project = auth.project(store, &project, READ).await?;
    let mut actions = repository::list_live(store, project.id).await?;
    actions.sort_by(|a, b| {
        b.last_calculated_at
            .cmp(&a.last_calculated_at)
            .then_with(|| a.name.cmp(&b.name))
            .then(a.id.cmp(&b.id))
    });
    let mut rendered = Vec::new();
    for action in pagination.window(&actions) {
        rendered.push(render::action(store, action).await?);
    }
    Ok(axum::Json(pagination.page_of(actions.len(), &rendered)).into_response())
}

/// `POST /actions/`: 201 with the action.
pub async fn create(
    State(state): State<AppState>,
    auth: Authenticated,
    Path(project): Path<String>,
    Json(value): Json<Value>,
) -> ApiResult<Response> {
    let store = state.store.as_ref();
    let project = auth.project(store, &project, WRITE).await?;
    let body: ActionBody = body::parse(value)?;
    let at = state.clock.now();
    let action = body.apply_to(&Action::default_new(Some(auth.user.uuid), at), true)?;
    check_name(store, project.id, &action).await?;
    let created = repository::create(store, project.id, action, &Actor::user(&auth.user), at)
        .await
        .map_err(write_error)?;
    let answer = render::action(store, &created).await?;
    Ok((StatusCode::CREATED, axum::Json(answer)).into_response())
}

/// `GET /actions/:id/`: deleted actions too, as PostHog answers them.
pub async fn retrieve(
    State(state): State<AppState>,
    auth: Authenticated,
    Path((project, id)): Path<(String, String)>,
) -> ApiResult<Response> {
    let store = state.store.as_ref();
    let project = auth.project(store, &project, READ).await?;
    let stored = repository::found(store, project.id, item_id(&id)?, true).await?;
    Ok(axum::Json(render::action(store, &stored.action).await?).into_response())
}

/// `PATCH` (and `PUT`) `/actions/:id/`: a partial update; `steps` replaces every step;
/// `deleted: true` soft-deletes and `deleted: false` restores.
pub async fn update(
    State(state): State<AppState>,
    auth: Authenticated,
    Path((project, id)): Path<(String, String)>,
    Json(value): Json<Value>,
) -> ApiResult<Response> {
    let store = state.store.as_ref();
    let project = auth.project(store, &project, WRITE).await?;
    let (team_id, id) = (project.id, item_id(&id)?);
    let body = &body::parse(value)?;
    let (state, actor) = (&state, &Actor::user(&auth.user));
    let saved = retry(UPDATE_ATTEMPTS, write_error, || async move {
        let before = repository::found(store, team_id, id, true).await?;
        let after = body.apply_to(&before.action, false)?;
        if after.name != before.action.name || (before.action.deleted && !after.deleted) {
            check_name(store, team_id, &after).await?;
        }
        let at = state.clock.now();
        Ok(repository::save(store, team_id, &before, after, actor, at).await)
    })
    .await?;
    Ok(axum::Json(render::action(store, &saved).await?).into_response())
}
