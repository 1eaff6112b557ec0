//! Route family `actions` (`/api/projects/:project_id/actions/`): CRUD with soft delete
//! (`PATCH {"deleted": true}`; `DELETE` is refused as PostHog refuses it) and the activity log.

mod crud;
mod render;

use action_core::Action;
use axum::routing::get;
use common::repository::routes::HardDelete::EmptyBody;
use common::repository::routes::{entity_routes, item_methods, refused_delete};
use common::routes::Routes;

use crud::WRITE;

const BASE: &str = "/api/projects/{project_id}/actions";

/// Every route of the family; entry points add fallbacks and layers with `common::http::finish`.
pub fn router() -> Routes {
    let refused = refused_delete(WRITE, EmptyBody);
    let item = item_methods(crud::retrieve, crud::update, refused);
    entity_routes::<Action>(BASE, get(crud::list).post(crud::create), item)
}
