//! The `analytics` binary: every route family in one process, plus admin, bench and (later) import.

pub mod admin;
pub mod bench;
pub mod cli;
pub mod serve;

use axum::Router;
use common::AppState;
use common::http::App;

/// Every family's routes, as `analytics serve` mounts them.
pub fn routes() -> Router<AppState> {
    users::router()
}

pub fn app(state: AppState) -> App {
    common::http::finish(routes(), state)
}
