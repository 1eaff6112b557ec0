//! What the routes of the entity families share: the route table of an entity's CRUD and
//! activity log, PostHog's refusal of a hard delete, and a list's query string. The handlers
//! that differ by family (what a list filters, how an entity renders) stay in the family.

use std::str::FromStr;

use axum::extract::rejection::QueryRejection;
use axum::extract::{Path, Query, State};
use axum::handler::Handler;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{MethodRouter, delete, get};

use super::Entity;
use crate::activity::routes as activity;
use crate::error::{ApiError, ApiResult, ErrorType};
use crate::models::Scope;
use crate::routes::Routes;
use crate::{AppState, Authenticated};

/// The routes of entity `E` under `base` (`/api/projects/{project_id}/actions`): the
/// collection (`collection`: list and create), the whole scope's activity log
/// (`base/activity`), one item (`item`, at `base/{id}`; see [`item_methods`]) and its activity
/// log (`base/{id}/activity`).
pub fn entity_routes<E>(
    base: &str,
    collection: MethodRouter<AppState>,
    item: MethodRouter<AppState>,
) -> Routes
where
    E: Entity<Key: FromStr + Sized>,
{
    Routes::new()
        .route(base, collection)
        .route(&format!("{base}/activity"), get(activity::of_all::<E>))
        .route(&format!("{base}/{{id}}"), item)
        .route(
            &format!("{base}/{{id}}/activity"),
            get(activity::of_one::<E>),
        )
}

/// The methods of one item's route: `GET` reads it, `PATCH` and `PUT` update it (PostHog's
/// viewsets take a `PUT` as a partial update too), `DELETE` as `delete` answers it (a
/// handler's, or [`refused_delete`]).
pub fn item_methods<G, GT, U, UT>(
    retrieve: G,
    update: U,
    delete: MethodRouter<AppState>,
) -> MethodRouter<AppState>
where
    G: Handler<GT, AppState>,
    GT: 'static,
    U: Handler<UT, AppState>,
    UT: 'static,
{
    get(retrieve)
        .patch(update.clone())
        .put(update)
        .merge(delete)
}

/// How a family's viewset words PostHog's refusal of a hard delete (ForbidDestroyModel).
#[derive(Debug, Clone, Copy)]
pub enum HardDelete {
    /// A 405 with an empty body, typed JSON as DRF sends it (which also keeps the error-shape
    /// layer from filling it): actions, cohorts, experiments.
    EmptyBody,
    /// A 405 that says to soft-delete instead: flags, insights, dashboards.
    Explained,
}

impl HardDelete {
    fn answer(self) -> Response {
        match self {
            HardDelete::EmptyBody => (
                StatusCode::METHOD_NOT_ALLOWED,
                [(header::CONTENT_TYPE, "application/json")],
            )
                .into_response(),
            HardDelete::Explained => ApiError::new(
                StatusCode::METHOD_NOT_ALLOWED,
                ErrorType::InvalidRequest,
                "method_not_allowed",
                "Hard delete of this model is not allowed. Use a patch API call to set \"deleted\" to true",
            )
            .into_response(),
        }
    }
}

/// `DELETE .../{id}` of an entity that is only ever soft-deleted (`PATCH {"deleted": true}`):
/// refused as `answer` words it, once the key may write to the project (`write`).
pub fn refused_delete(write: Scope, answer: HardDelete) -> MethodRouter<AppState> {
    delete(
        move |State(state): State<AppState>,
              auth: Authenticated,
              Path((project, _id)): Path<(String, String)>| async move {
            auth.project(state.store.as_ref(), &project, write).await?;
            ApiResult::Ok(answer.answer())
        },
    )
}

/// A route's query string read into `T`, once the project has been checked (PostHog's
/// permissions answer before its filters do); a value of the wrong shape is a 400.
pub fn query_string<T>(params: Result<Query<T>, QueryRejection>) -> ApiResult<T> {
    params
        .map(|Query(params)| params)
        .map_err(|rejection| ApiError::bad_request("invalid_input", rejection.body_text()))
}
