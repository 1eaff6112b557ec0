//! Route family `experiments` (`/api/projects/:project_id/experiments/`): CRUD and lifecycle
//! actions on experiments and their flags, the activity log, eligible flags, velocity stats, and
//! the daily timeseries of metric results with their recalculation (run by the job queue).

mod timeseries;

use axum::Router;
use axum::routing::{get, post};
use common::AppState;

/// Every route of the family; entry points add fallbacks and layers with `common::http::finish`.
pub fn router() -> Router<AppState> {
    Router::new()
        .route(
            "/api/projects/{project_id}/experiments/{id}/timeseries_results",
            get(timeseries::results),
        )
        .route(
            "/api/projects/{project_id}/experiments/{id}/recalculate_timeseries",
            post(timeseries::recalculate),
        )
}
