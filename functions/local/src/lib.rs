//! The `analytics` binary: every route family in one process, the embedded committer, admin,
//! import. (Its benchmarks are the `bench` crate, `analytics-bench`, which drives this library.)

pub mod admin;
pub mod allocator;
pub mod cli;
pub mod cluster;
pub mod import;
pub mod serve;

use common::AppState;
use common::http::App;
use common::routes::Routes;

/// An HTTP route family: the name of its crate and Lambda binary, and its route table.
pub type Family = (&'static str, fn() -> Routes);

/// Every HTTP route family: what `analytics serve` mounts, each family's `main.rs` serves alone,
/// and the tests walk.
pub const FAMILIES: [Family; 12] = [
    ("users", users::router),
    ("capture", capture::router),
    ("query", query::router),
    ("flags", flags::router),
    ("experiments", experiments::router),
    ("cohorts", cohorts::router),
    ("surveys", surveys::router),
    ("endpoints", endpoints::router),
    ("dashboards", dashboards::router),
    ("persons", persons::router),
    ("actions", actions::router),
    ("webapp", webapp::router),
];

/// Every family's routes, as `analytics serve` mounts them.
pub fn routes() -> Routes {
    FAMILIES
        .iter()
        .fold(Routes::new(), |all, (_, family)| all.merge(family()))
}

/// The app `analytics serve` runs (the API and the console), with every job registered so runs
/// queued by name (an experiment's timeseries recalculation) find their job in this process.
pub fn app(state: AppState) -> App {
    register_jobs(&state);
    common::http::finish(routes(), state)
}

/// Every job, as the worker registers them.
pub fn register_jobs(state: &AppState) {
    lake::jobs::register(state);
    query_service::jobs::register(state);
    query_service::experiments::timeseries::register(state);
    query_service::cohorts::calculation::register(state);
    query_service::endpoints::materialization::register(state);
}
