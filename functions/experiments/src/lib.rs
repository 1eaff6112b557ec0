//! Route family `experiments` (`/api/projects/:project_id/experiments/`): CRUD and lifecycle
//! actions on experiments and their flags, the activity log, eligible flags, velocity stats, and
//! the daily timeseries of metric results with their recalculation (run by the job queue); and
//! the experiments' holdouts (`/experiment_holdouts/`) and saved metrics
//! (`/experiment_saved_metrics/`).

mod action_refs;
mod actions;
mod crud;
mod exposure_cohort;
mod reads;
mod resources;
mod shared;
mod timeseries;

use axum::routing::{delete, get, post};
use common::repository::routes::HardDelete::EmptyBody;
use common::repository::routes::{entity_routes, item_methods, refused_delete};
use common::routes::Routes;
use experiment_core::Experiment;
use experiment_core::holdouts::Holdout;
use experiment_core::saved_metrics::SavedMetric;

use shared::WRITE;

const BASE: &str = "/api/projects/{project_id}/experiments";
const HOLDOUTS: &str = "/api/projects/{project_id}/experiment_holdouts";
const SAVED_METRICS: &str = "/api/projects/{project_id}/experiment_saved_metrics";

fn path(tail: &str) -> String {
    format!("{BASE}{tail}")
}

/// Every route of the family; entry points add fallbacks and layers with `common::http::finish`.
pub fn router() -> Routes {
    let refused = refused_delete(WRITE, EmptyBody);
    let item = item_methods(crud::retrieve, crud::update, refused);
    let routes = entity_routes::<Experiment>(BASE, get(crud::list).post(crud::create), item)
        .merge(resource_routes::<Holdout>(HOLDOUTS))
        .merge(resource_routes::<SavedMetric>(SAVED_METRICS));
    routes
        .route(
            &path("/eligible_feature_flags"),
            get(reads::eligible_feature_flags),
        )
        .route(&path("/stats"), get(reads::stats))
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
}

/// A [`resources::Resource`]'s routes under `base`: no activity routes of their own (their
/// history is the experiments').
fn resource_routes<R: resources::Resource>(base: &str) -> Routes {
    Routes::new()
        .route(base, get(resources::list::<R>).post(resources::create::<R>))
        .route(
            &format!("{base}/{{id}}"),
            item_methods(
                resources::retrieve::<R>,
                resources::update::<R>,
                delete(resources::destroy::<R>),
            ),
        )
}
