//! Route family `endpoints`: named, versioned saved queries of a project, under both
//! `/api/projects/:project_id/endpoints` and `/api/environments/:project_id/endpoints` (PostHog
//! registers both). CRUD by name with immutable versions, runs (inline through the query service,
//! or from a materialized Parquet result while it is fresh), materialization status, the last
//! execution times, and an OpenAPI document per endpoint.

mod crud;
mod executions;
mod materialization;
mod openapi;
mod recent;
mod run;
mod shared;
mod variables;
mod versions;

use axum::routing::{get, post};
use common::routes::Routes;

const BASE: &str = "/api/projects/{project_id}/endpoints";

fn path(tail: &str) -> String {
    format!("{BASE}{tail}")
}

/// Every route of the family (the table mounts each under `/api/environments` too); entry points
/// add fallbacks and layers with `common::http::finish`.
pub fn router() -> Routes {
    Routes::new()
        .route(&path(""), get(crud::list).post(crud::create))
        .route(&path("/last_execution_times"), post(executions::last))
        .route(
            &path("/{name}"),
            get(crud::retrieve)
                .patch(crud::update)
                .put(crud::update)
                .delete(crud::destroy),
        )
        .route(&path("/{name}/run"), get(run::get).post(run::post))
        .route(&path("/{name}/versions"), get(versions::list))
        .route(&path("/{name}/versions/{version}"), get(versions::retrieve))
        .route(
            &path("/{name}/materialization_status"),
            get(materialization::status),
        )
        .route(&path("/{name}/openapi.json"), get(openapi::document))
}
