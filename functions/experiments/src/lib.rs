//! Route family `experiments` (`/api/projects/:project_id/experiments/`): CRUD and lifecycle
//! actions on experiments and their flags, the activity log, eligible flags, velocity stats, and
//! the daily timeseries of metric results with their recalculation (run by the job queue); and
//! the experiments' holdouts (`/experiment_holdouts/`) and saved metrics
//! (`/experiment_saved_metrics/`).

mod action_refs;
mod actions;
mod crud;
mod exposure_cohort;
mod holdouts;
mod reads;
mod saved_metrics;
mod shared;
mod timeseries;

use axum::routing::{get, post};
use common::activity::routes as activity;
use common::routes::Routes;
use experiment_core::Experiment;

const BASE: &str = "/api/projects/{project_id}/experiments";
const HOLDOUTS: &str = "/api/projects/{project_id}/experiment_holdouts";
const SAVED_METRICS: &str = "/api/projects/{project_id}/experiment_saved_metrics";

fn path(tail: &str) -> String {
    format!("{BASE}{tail}")
}

/// Every route of the family; entry points add fallbacks and layers with `common::http::finish`.
pub fn router() -> Routes {
    Routes::new()
        .route(&path(""), get(crud::list).post(crud::create))
        .route(&path("/activity"), get(activity::of_all::<Experiment>))
        .route(
            &path("/eligible_feature_flags"),
            get(reads::eligible_feature_flags),
        )
        .route(&path("/stats"), get(reads::stats))
        .route(
            &path("/{id}"),
            get(crud::retrieve)
                .patch(crud::update)
                .put(crud::update)
                .delete(crud::destroy),
        )
        .route(&path("/{id}/activity"), get(activity::of_one::<Experiment>))
        .route(&path("/{id}/launch"), post(actions::launch))
        .route(&path("/{id}/pause"), post(actions::pause))
        .route(&path("/{id}/resume"), post(actions::resume))
        .route(&path("/{id}/end"), post(actions::end))
        .route(&path("/{id}/ship_variant"), post(actions::ship_variant))
        .route(&path("/{id}/reset"), post(actions::reset))
        .route(&path("/{id}/archive"), post(actions::archive))
        .route(&path("/{id}/unarchive"), post(actions::unarchive))
        .route(&path("/{id}/duplicate"), post(actions::duplicate))
        .route(
            &path("/{id}/copy_to_project"),
            post(actions::copy_to_project),
        )
        .route(
            &path("/{id}/create_exposure_cohort_for_experiment"),
            post(exposure_cohort::create),
        )
        .route(
            "/api/projects/{project_id}/experiments/{id}/timeseries_results",
            get(timeseries::results),
        )
        .route(
            "/api/projects/{project_id}/experiments/{id}/recalculate_timeseries",
            post(timeseries::recalculate),
        )
        .route(HOLDOUTS, get(holdouts::list).post(holdouts::create))
        .route(
            &format!("{HOLDOUTS}/{{id}}"),
            get(holdouts::retrieve)
                .patch(holdouts::update)
                .put(holdouts::update)
                .delete(holdouts::destroy),
        )
        .route(
            SAVED_METRICS,
            get(saved_metrics::list).post(saved_metrics::create),
        )
        .route(
            &format!("{SAVED_METRICS}/{{id}}"),
            get(saved_metrics::retrieve)
                .patch(saved_metrics::update)
                .put(saved_metrics::update)
                .delete(saved_metrics::destroy),
        )
}
