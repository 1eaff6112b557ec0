//! Route family `users`: the caller (`/api/users/:uuid/`) and their projects (`/api/projects/`).

mod payload;
mod projects;
mod users;

use axum::Router;
use axum::routing::get;
use common::AppState;

/// Every route of the family; entry points add fallbacks and layers with `common::http::finish`.
pub fn router() -> Router<AppState> {
    Router::new()
        .route("/api/users/{uuid}", get(users::retrieve))
        .route("/api/projects", get(projects::list))
        .route(
            "/api/projects/{project_id}",
            get(projects::retrieve).patch(projects::update),
        )
}
