//! Route family `persons`: persons (`/api/projects/:id/persons/`) and the event and property
//! definitions ingestion maintains (`/event_definitions/`, `/property_definitions/`).

use common::routes::Routes;

/// Every route of the family; entry points add fallbacks and layers with `common::http::finish`.
pub fn router() -> Routes {
    Routes::new()
}
