//! Actions in the Store: a project's actions live in its partition (`TEAM#<id>`) under
//! `ACTION#<zero-padded id>`, ids from the project's `COUNTER#ACTION` item; each write is one
//! transaction with its activity entry.

use chrono::{DateTime, Utc};
use common::activity::Actor;
use common::repository::{self as entities, Entity, Numbered, WriteError};
use common::store::{Store, StoreError};

use crate::Action;

/// The activity log's scope for actions (PostHog's model name).
pub const SCOPE: &str = "Action";

/// Top-level fields that are bookkeeping, not changes worth a log line.
const IGNORED_IN_DIFFS: [&str; 7] = entities::bookkeeping_and(&["last_calculated_at"]);

impl Entity for Action {
    const PREFIX: &'static str = "ACTION#";
    const SCOPE: &'static str = SCOPE;
    const IGNORED_IN_DIFFS: &'static [&'static str] = &IGNORED_IN_DIFFS;
    /// PostHog reads a deleted action by id (only its list hides them), history included.
    const HISTORY_OUTLIVES_DELETE: bool = true;

    fn display_name(&self) -> String {
        self.name.clone()
    }
}

impl Numbered for Action {
    const COUNTER: &'static str = "COUNTER#ACTION";
}

common::stamped!(Action, i64, soft_deleted);
common::entity_reads! { Action, i64, Stored { action, item_version }, live }

/// Stores `action` with the project's next id and its `created` entry; a lost race on the
/// counter is retried.
pub async fn create(
    store: &dyn Store,
    team_id: i64,
    action: Action,
    actor: &Actor,
    at: DateTime<Utc>,
) -> Result<Action, WriteError> {
    entities::create_numbered(store, team_id, action, actor, at).await
}

/// Replaces `before` (as read) by `after`, logged `updated`, `deleted` or `restored`.
pub use entities::save_edit as save;

/// The live action of the project, other than `except`, already named `name` (PostHog refuses
/// a second live action of one name).
pub async fn name_taken(
    store: &dyn Store,
    team_id: i64,
    name: &str,
    except: Option<i64>,
) -> Result<Option<i64>, StoreError> {
    Ok(list_live(store, team_id)
        .await?
        .into_iter()
        .filter(|action| action.name == name && Some(action.id) != except)
        .map(|action| action.id)
        .min())
}

#[cfg(test)]
mod tests {
    use chrono::TimeZone;
    use common::activity;

    use super::*;

    #[tokio::test]
    async fn ids_count_up_saves_are_guarded_and_names_found() {
        let store = common::testing::memory_store();
        let actor = Actor::system();
        let at = Utc.with_ymd_and_hms(2025, 1, 2, 3, 4, 5).unwrap();
        let mut action = Action::default_new(None, at);
        action.name = "Signed up".into();
        let first = create(&store, 1, action.clone(), &actor, at).await.unwrap();
        let second = create(&store, 1, action, &actor, at).await.unwrap();
        assert_eq!((first.id, second.id), (1, 2));
        assert_eq!(
            name_taken(&store, 1, "Signed up", Some(1)).await.unwrap(),
            Some(2)
        );

        let stored = get(&store, 1, 2).await.unwrap().unwrap();
        let mut gone = stored.action.clone();
        gone.deleted = true;
        save(&store, 1, &stored, gone.clone(), &actor, at)
            .await
            .unwrap();
        assert!(matches!(
            save(&store, 1, &stored, gone, &actor, at).await,
            Err(WriteError::Raced)
        ));
        assert_eq!(
            name_taken(&store, 1, "Signed up", Some(1)).await.unwrap(),
            None
        );
        let history = activity::list(&store, 1, SCOPE, Some("2")).await.unwrap();
        let kinds: Vec<&str> = history.iter().map(|e| e.activity.as_str()).collect();
        assert_eq!(kinds, ["deleted", "created"]);
    }
}
