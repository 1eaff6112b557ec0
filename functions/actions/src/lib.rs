//! Route family `actions` (`/api/projects/:project_id/actions/`): CRUD with soft delete
//! (`PATCH {"deleted": true}`; `DELETE` is refused as PostHog refuses it) and the activity log.

mod crud;
mod render;

use action_core::Action;
use axum::routing::get;
use common::activity::routes as activity;
use common::routes::Routes;

const BASE: &str = "/api/projects/{project_id}/actions";

fn path(tail: &str) -> String {
    format!("{BASE}{tail}")
}

/// Every route of the family; entry points add fallbacks and layers with `common::http::finish`.
pub fn router() -> Routes {
    Routes::new()
        .route(&path(""), get(crud::list).post(crud::create))
        .route(&path("/activity"), get(activity::of_all::<Action>))
        .route(
            &path("/{id}"),
            get(crud::retrieve)
                .patch(crud::update)
                .put(crud::update)
                .delete(crud::destroy),
        )
        .route(&path("/{id}/activity"), get(activity::of_one::<Action>))
}
