//! Route family `dashboards`: saved insights (`/api/projects/:id/insights/`) and dashboards
//! (`/api/projects/:id/dashboards/`).

use common::routes::Routes;

/// Every route of the family; entry points add fallbacks and layers with `common::http::finish`.
pub fn router() -> Routes {
    Routes::new()
}
