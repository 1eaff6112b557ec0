//! Route family `query` (`/api/projects/:project_id/query/...`): run SQL-dialect nodes sync or
//! async, poll and cancel async runs, read the query log, upgrade nodes, draft SQL; and the one
//! experiments route that reads the event lake (`requires_flag_implementation`), and property
//! values for pickers (`/events/values/`). The HTTP side only: running, caching, slots and
//! async jobs are the `query-service` crate's.

mod draft;
mod flag_implementation;
mod property_values;
mod request;
mod routes;

use axum::routing::{get, post};
use common::routes::Routes;

pub fn router() -> Routes {
    Routes::new()
        .route("/api/projects/{project_id}/query", post(routes::create))
        .route(
            "/api/projects/{project_id}/query/check_auth_for_async",
            post(routes::check_auth_for_async),
        )
        .route(
            "/api/projects/{project_id}/query/draft_sql",
            get(routes::draft_sql),
        )
        .route(
            "/api/projects/{project_id}/query/upgrade",
            post(routes::upgrade),
        )
        .route(
            "/api/projects/{project_id}/query/{id}",
            get(routes::retrieve)
                .delete(routes::cancel)
                .post(routes::create_with_kind),
        )
        .route(
            "/api/projects/{project_id}/query/{id}/log",
            get(routes::log),
        )
        .route(
            "/api/projects/{project_id}/events/values",
            get(property_values::values),
        )
        // A static segment beside the experiments family's `/experiments/{id}`: both routers
        // merge in `functions/local`, and the static route wins for this name.
        .route(
            "/api/projects/{project_id}/experiments/requires_flag_implementation",
            get(flag_implementation::requires_flag_implementation),
        )
}
