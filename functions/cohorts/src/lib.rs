//! Route family `cohorts` (`/api/projects/:project_id/cohorts/`): CRUD with soft delete, static
//! membership by person id, the stored members of any cohort, and the activity log. A dynamic
//! cohort's members are computed by the `cohort_calculation` job, queued here when its
//! definition is set.

mod crud;
mod membership;
mod shared;

use axum::routing::{get, patch};
use cohort_core::Cohort;
use common::repository::routes::HardDelete::EmptyBody;
use common::repository::routes::{entity_routes, item_methods, refused_delete};
use common::routes::Routes;

use shared::WRITE;

const BASE: &str = "/api/projects/{project_id}/cohorts";

fn path(tail: &str) -> String {
    format!("{BASE}{tail}")
}

/// Every route of the family; entry points add fallbacks and layers with `common::http::finish`.
pub fn router() -> Routes {
    let refused = refused_delete(WRITE, EmptyBody);
    let item = item_methods(crud::retrieve, crud::update, refused);
    let routes = entity_routes::<Cohort>(BASE, get(crud::list).post(crud::create), item);
    routes
        .route(&path("/{id}/persons"), get(membership::persons))
        .route(
            &path("/{id}/add_persons_to_static_cohort"),
            patch(membership::add_persons),
        )
        .route(
            &path("/{id}/remove_person_from_static_cohort"),
            patch(membership::remove_person),
        )
}
