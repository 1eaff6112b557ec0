//! Deleting a person: their Store item and distinct-id links go at once (a later event for one
//! of those ids makes a new person, as in PostHog), and with `delete_events` a request is left
//! for compaction to delete their events from the lake.

use common::AppState;
use common::error::ApiResult;
use common::models::Project;
use common::models::person::{self, EventDeletion, Person};

pub async fn delete(
    state: &AppState,
    project: &Project,
    person: Person,
    delete_events: bool,
) -> ApiResult<()> {
    let store = state.store.as_ref();
    // The request first: a delete cut short after it still deletes the events, and the person
    // can be deleted again.
    if delete_events {
        let deletion = EventDeletion {
            person: person.uuid,
            requested_at: state.clock.now(),
        };
        person::request_event_deletion(store, project.id, &deletion).await?;
    }
    person::delete(store, project.id, person.uuid).await?;
    tracing::info!(team_id = project.id, person = %person.uuid, delete_events, "person deleted");
    Ok(())
}
