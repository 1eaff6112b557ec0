//! Route family `surveys` (`/api/projects/:project_id/surveys/`, and the public `/api/surveys/`
//! that posthog-js fetches with the project token): CRUD with the survey's internal flags,
//! launch and stop, responses read from the lake and their archive, stats and response counts
//! (SQL-dialect queries through the query service), duplicate to projects, summaries and the
//! activity log.

mod crud;
mod duplicate;
mod lifecycle;
mod public;
mod responses;
mod search;
mod shared;
mod stats;
mod summaries;

use axum::routing::{delete, get, post};
use common::repository::routes::{entity_routes, item_methods};
use common::routes::Routes;
use survey_core::Survey;

const BASE: &str = "/api/projects/{project_id}/surveys";

fn path(tail: &str) -> String {
    format!("{BASE}{tail}")
}

/// Every route of the family; entry points add fallbacks and layers with `common::http::finish`.
pub fn router() -> Routes {
    let item = item_methods(crud::retrieve, crud::update, delete(crud::destroy));
    let routes = entity_routes::<Survey>(BASE, get(crud::list).post(crud::create), item);
    routes
        .route("/api/surveys", get(public::surveys))
        .route(&path("/stats"), get(stats::global))
        .route(&path("/responses_count"), get(stats::responses_count))
        .route(&path("/question_labels"), get(crud::question_labels))
        .route(&path("/{id}/launch"), post(lifecycle::launch))
        .route(&path("/{id}/stop"), post(lifecycle::stop))
        .route(&path("/{id}/stats"), get(stats::of_one))
        .route(&path("/{id}/responses"), get(responses::list))
        .route(
            &path("/{id}/responses/{response}/archive"),
            post(responses::archive),
        )
        .route(
            &path("/{id}/responses/{response}/unarchive"),
            post(responses::unarchive),
        )
        .route(
            &path("/{id}/archived-response-uuids"),
            get(responses::archived_uuids),
        )
        .route(
            &path("/{id}/duplicate_to_projects"),
            post(duplicate::to_projects),
        )
        .route(
            &path("/{id}/summarize_responses"),
            post(summaries::summarize_responses),
        )
        .route(
            &path("/{id}/summary_headline"),
            post(summaries::summary_headline),
        )
}
