//! The `analytics` binary: every route family in one process, the embedded committer, admin, bench.

pub mod admin;
pub mod allocator;
pub mod bench;
pub mod cli;
pub mod import;
pub mod serve;

use axum::Router;
use common::AppState;
use common::http::App;

/// Every family's routes, as `analytics serve` mounts them.
pub fn routes() -> Router<AppState> {
    users::router()
        .merge(capture::router())
        .merge(query::router())
        .merge(flags::router())
        .merge(experiments::router())
        .merge(cohorts::router())
        .merge(surveys::router())
        .merge(endpoints::router())
}

/// The app `analytics serve` runs, with every job registered so runs queued by name (an
/// experiment's timeseries recalculation) find their job in this process.
pub fn app(state: AppState) -> App {
    register_jobs(&state);
    common::http::finish(routes(), state)
}

/// Every job, as the worker registers them.
pub fn register_jobs(state: &AppState) {
    engine::jobs::register(state);
    query_service::jobs::register(state);
    query_service::experiments::timeseries::register(state);
    query_service::cohorts::calculation::register(state);
    query_service::endpoints::materialization::register(state);
}
