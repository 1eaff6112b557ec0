//! Route family `cohorts` (`/api/projects/:project_id/cohorts/`): CRUD with soft delete, static
//! membership by person id, the stored members of any cohort, and the activity log. A dynamic
//! cohort's members are computed by the `cohort_calculation` job, queued here when its
//! definition is set.

mod crud;
mod membership;
mod shared;

use axum::routing::{get, patch};
use cohort_core::Cohort;
use common::activity::routes as activity;
use common::routes::Routes;

const BASE: &str = "/api/projects/{project_id}/cohorts";

fn path(tail: &str) -> String {
    format!("{BASE}{tail}")
}

/// Every route of the family; entry points add fallbacks and layers with `common::http::finish`.
pub fn router() -> Routes {
    Routes::new()
        .route(&path(""), get(crud::list).post(crud::create))
        .route(&path("/activity"), get(activity::of_all::<Cohort>))
        .route(
            &path("/{id}"),
            get(crud::retrieve)
                .patch(crud::update)
                .put(crud::update)
                .delete(crud::destroy),
        )
        .route(&path("/{id}/activity"), get(activity::of_one::<Cohort>))
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
