//! Route family `flags`: feature-flag CRUD and its activity log (`/api/projects/:id/feature_flags/`),
//! evaluation for PostHog's SDKs (`/flags/`, `/decide/`) and the definitions server SDKs evaluate
//! locally (`/api/feature_flag/local_evaluation/`, `/flags/definitions`), and posthog-js's remote
//! config (`/array/:token/config`, `/array/:token/config.js`).

mod crud;
mod definitions;
mod remote_config;
mod sdk;

use axum::routing::get;
use common::activity::routes as activity;
use common::routes::Routes;
use feature_flags::FeatureFlag;

/// Every route of the family; entry points add fallbacks and layers with `common::http::finish`.
pub fn router() -> Routes {
    Routes::new()
        .route(
            "/api/projects/{project_id}/feature_flags",
            get(crud::list).post(crud::create),
        )
        .route(
            "/api/projects/{project_id}/feature_flags/activity",
            get(activity::of_all::<FeatureFlag>),
        )
        .route(
            "/api/projects/{project_id}/feature_flags/local_evaluation",
            get(definitions::for_project),
        )
        .route(
            "/api/projects/{project_id}/feature_flags/{id}",
            get(crud::retrieve)
                .patch(crud::update)
                .put(crud::update)
                .delete(crud::destroy),
        )
        .route(
            "/api/projects/{project_id}/feature_flags/{id}/activity",
            get(activity::of_one::<FeatureFlag>),
        )
        .route(
            "/api/feature_flag/local_evaluation",
            get(definitions::for_token),
        )
        .route("/flags/definitions", get(definitions::for_token))
        .route("/flags", get(sdk::flags).post(sdk::flags))
        .route("/decide", get(sdk::decide).post(sdk::decide))
        .route("/array/{token}/config", get(remote_config::json))
        .route("/array/{token}/config.js", get(remote_config::script))
}
