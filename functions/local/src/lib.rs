//! The `analytics` binary: every route family in one process, the embedded committer, admin, bench.

pub mod admin;
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
}

pub fn app(state: AppState) -> App {
    common::http::finish(routes(), state)
}
