//! Route family `flags`: feature-flag CRUD and its activity log (`/api/projects/:id/feature_flags/`),
//! evaluation for PostHog's SDKs (`/flags/`, `/decide/`) and the definitions server SDKs evaluate
//! locally (`/api/feature_flag/local_evaluation/`, `/flags/definitions`), and posthog-js's remote
//! config (`/array/:token/config`, `/array/:token/config.js`).

mod crud;
mod definitions;
mod remote_config;
mod sdk;

use axum::routing::get;
use common::repository::routes::HardDelete::Explained;
use common::repository::routes::{entity_routes, item_methods, refused_delete};
use common::routes::Routes;
use feature_flags::FeatureFlag;

use crud::FLAG_WRITE;

const BASE: &str = "/api/projects/{project_id}/feature_flags";

/// Every route of the family; entry points add fallbacks and layers with `common::http::finish`.
pub fn router() -> Routes {
    let refused = refused_delete(FLAG_WRITE, Explained);
    let item = item_methods(crud::retrieve, crud::update, refused);
    let routes = entity_routes::<FeatureFlag>(BASE, get(crud::list).post(crud::create), item);
    routes
        .route(
            "/api/projects/{project_id}/feature_flags/local_evaluation",
            get(definitions::for_project),
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
