//! Deleting a person: their Store item and distinct-id links go at once (a later event for one
//! of those ids makes a new person, as in PostHog), and with `delete_events` a request is left
//! for compaction to delete their events from the lake. The person's `deleted` activity entry
//! goes in the transaction that deletes them.

use common::activity::{self, Actor};
use common::error::ApiResult;
use common::models::Project;
use common::models::person::{self, EventDeletion, Person};
use common::{AppState, Authenticated};

pub async fn delete(
    state: &AppState,
    auth: &Authenticated,
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
    let entry = crate::activity::entry_op(
        &person,
        &Actor::user(&auth.user),
        activity::DELETED,
        None,
        state.clock.now(),
    )?;
    person::delete(store, project.id, person.uuid, vec![entry]).await?;
    tracing::info!(team_id = project.id, person = %person.uuid, delete_events, "person deleted");
    Ok(())
}
