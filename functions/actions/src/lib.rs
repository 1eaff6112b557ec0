//! Route family `actions`: actions (`/api/projects/:id/actions/`) and their activity log.

use common::routes::Routes;

/// Every route of the family; entry points add fallbacks and layers with `common::http::finish`.
pub fn router() -> Routes {
    Routes::new()
}
