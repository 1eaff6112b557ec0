//! Route family `persons`: persons (`/api/projects/:id/persons/`) and the event and property
//! definitions ingestion maintains (`/event_definitions/`, `/property_definitions/`); person
//! edits and deletes are in the activity log (`/persons/activity/`).

mod activity;
mod definitions;
mod deletion;
mod persons;

use axum::routing::{get, post};
use common::routes::Routes;

/// Every route of the family; entry points add fallbacks and layers with `common::http::finish`.
pub fn router() -> Routes {
    Routes::new()
        .route("/api/projects/{project_id}/persons", get(persons::list))
        .route(
            "/api/projects/{project_id}/persons/bulk_delete",
            post(persons::bulk_delete),
        )
        .route(
            "/api/projects/{project_id}/persons/activity",
            get(activity::of_all),
        )
        .route(
            "/api/projects/{project_id}/persons/values",
            get(persons::values),
        )
        .route(
            "/api/projects/{project_id}/persons/{id}",
            get(persons::retrieve)
                .patch(persons::update)
                .put(persons::update)
                .delete(persons::destroy),
        )
        .route(
            "/api/projects/{project_id}/persons/{id}/activity",
            get(activity::of_one),
        )
        .route(
            "/api/projects/{project_id}/persons/{id}/update_property",
            post(persons::update_property),
        )
        .route(
            "/api/projects/{project_id}/persons/{id}/delete_property",
            post(persons::delete_property),
        )
        .route(
            "/api/projects/{project_id}/event_definitions",
            get(definitions::list_events),
        )
        .route(
            "/api/projects/{project_id}/event_definitions/{id}",
            get(definitions::retrieve_event).delete(definitions::delete_event),
        )
        .route(
            "/api/projects/{project_id}/property_definitions",
            get(definitions::list_properties),
        )
        .route(
            "/api/projects/{project_id}/property_definitions/{id}",
            get(definitions::retrieve_property).delete(definitions::delete_property),
        )
}
