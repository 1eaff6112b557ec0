//! Route family `dashboards`: saved insights (`/api/projects/:id/insights/`) and dashboards
//! (`/api/projects/:id/dashboards/`), both mounted under `/api/environments/` too. An insight's
//! `result` and a dashboard's tiles are computed through the query service (cache, slots,
//! limits, query log), a dashboard's filters laid over each tile's node.

mod dashboards;
mod insights;
mod refresh;
mod render;

use common::routes::Routes;

const INSIGHTS: &str = "/api/projects/{project_id}/insights";
const DASHBOARDS: &str = "/api/projects/{project_id}/dashboards";

/// Every route of the family; entry points add fallbacks and layers with `common::http::finish`.
pub fn router() -> Routes {
    insights::routes(INSIGHTS).merge(dashboards::routes(DASHBOARDS))
}
