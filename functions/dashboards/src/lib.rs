//! Route family `dashboards`: saved insights (`/api/projects/:id/insights/`) and dashboards
//! (`/api/projects/:id/dashboards/`), both mounted under `/api/environments/` too. An insight's
//! `result` and a dashboard's tiles are computed through the query service (cache, slots,
//! limits, query log), a dashboard's filters laid over each tile's node.

mod dashboards;
mod insights;
mod refresh;
mod render;

use axum::routing::get;
use common::activity::routes as activity;
use common::routes::Routes;
use dashboard_core::{Dashboard, Insight};

const INSIGHTS: &str = "/api/projects/{project_id}/insights";
const DASHBOARDS: &str = "/api/projects/{project_id}/dashboards";

/// Every route of the family; entry points add fallbacks and layers with `common::http::finish`.
pub fn router() -> Routes {
    Routes::new()
        .route(INSIGHTS, get(insights::list).post(insights::create))
        .route(
            &format!("{INSIGHTS}/activity"),
            get(activity::of_all::<Insight>),
        )
        .route(
            &format!("{INSIGHTS}/{{id}}"),
            get(insights::retrieve)
                .patch(insights::update)
                .put(insights::update)
                .delete(insights::destroy),
        )
        .route(
            &format!("{INSIGHTS}/{{id}}/activity"),
            get(activity::of_one::<Insight>),
        )
        .route(DASHBOARDS, get(dashboards::list).post(dashboards::create))
        .route(
            &format!("{DASHBOARDS}/activity"),
            get(activity::of_all::<Dashboard>),
        )
        .route(
            &format!("{DASHBOARDS}/{{id}}"),
            get(dashboards::retrieve)
                .patch(dashboards::update)
                .put(dashboards::update)
                .delete(dashboards::destroy),
        )
        .route(
            &format!("{DASHBOARDS}/{{id}}/activity"),
            get(activity::of_one::<Dashboard>),
        )
}
