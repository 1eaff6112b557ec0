use std::sync::atomic::{AtomicU32, Ordering};

use axum::http::StatusCode;
use chrono::{DateTime, TimeZone, Utc};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::*;
use crate::activity::{self, Actor};
use crate::error::ApiError;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Thing {
    id: i64,
    team_id: i64,
    name: String,
    deleted: bool,
    created_by: Option<Uuid>,
    created_at: DateTime<Utc>,
    updated_at: Option<DateTime<Utc>>,
    version: u64,
}

impl Entity for Thing {
    const PREFIX: &'static str = "THING#";
    const SCOPE: &'static str = "Thing";

    const DETAIL_TYPE: Option<&'static str> = Some("thing");

    fn display_name(&self) -> String {
        self.name.clone()
    }
}

impl Numbered for Thing {
    const COUNTER: &'static str = "COUNTER#THING";
}

crate::stamped!(Thing, i64, soft_deleted);

mod things {
    use super::Thing;
    crate::entity_reads! { Thing, i64, Stored { thing, item_version }, live }
}

fn at() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2025, 1, 2, 3, 4, 5).unwrap()
}

fn thing(name: &str) -> Thing {
    Thing {
        id: 0,
        team_id: 0,
        name: name.into(),
        deleted: false,
        created_by: None,
        created_at: at(),
        updated_at: None,
        version: 0,
    }
}

#[test]
fn keys_and_ignored_fields() {
    assert_eq!(Thing::sort_key(&42), "THING#0000000000000000042");
    assert!(Thing::sort_key(&9) < Thing::sort_key(&10));
    assert_eq!(team_pk(7), "TEAM#7");
    const MORE: [&str; 7] = bookkeeping_and(&["count"]);
    assert_eq!(MORE[..6], *BOOKKEEPING);
    assert_eq!(MORE[6], "count");
}

#[tokio::test]
async fn numbered_creates_versioned_saves_and_soft_deletes() {
    let store = crate::testing::memory_store();
    let actor = Actor::system();
    let at = at();
    let mut thing = thing("a");
    let ops = plan_numbered(&store, &mut thing, 3, &actor, at)
        .await
        .unwrap();
    store.transact_write(ops).await.unwrap();
    assert_eq!((thing.id, thing.team_id, thing.version), (1, 3, 1));
    let item = store.get("TEAM#3", "THING#0000000000000000001").await;
    assert!(item.unwrap().is_some(), "the key layout");

    let stored = things::get(&store, 3, 1).await.unwrap().unwrap();
    assert_eq!(stored.thing, thing);
    let mut gone = stored.thing.clone();
    gone.deleted = true;
    gone.id = 99; // carried over from what was read
    let later = at + chrono::Duration::hours(1);
    let activity = edit_activity(&stored.thing, &gone);
    let ops = plan_save(
        3,
        &stored.thing,
        stored.item_version,
        &mut gone,
        activity,
        &actor,
        later,
    )
    .unwrap();
    assert!(commit(&store, ops.clone()).await.unwrap());
    assert_eq!(
        (gone.id, gone.version, gone.updated_at),
        (1, 2, Some(later))
    );
    // The same save again finds another item version.
    assert!(matches!(
        try_commit(&store, ops).await,
        Err(WriteError::Raced)
    ));
    assert_eq!(things::get_live(&store, 3, 1).await.unwrap(), None);
    assert!(things::list_live(&store, 3).await.unwrap().is_empty());
    assert_eq!(things::list_all(&store, 3).await.unwrap(), [gone.clone()]);
    let not_found = things::found(&store, 3, 1, false).await.unwrap_err();
    assert_eq!(not_found.status, StatusCode::NOT_FOUND);
    assert_eq!(things::found(&store, 3, 1, true).await.unwrap().thing, gone);
    assert_eq!(edit_activity(&gone, &stored.thing), RESTORED);

    let history = activity::list(&store, 3, "Thing", Some("1")).await.unwrap();
    let kinds: Vec<&str> = history.iter().map(|e| e.activity.as_str()).collect();
    assert_eq!(kinds, ["deleted", "created"]);
    let changes = history[0].detail.changes.clone().unwrap_or_default();
    assert_eq!(changes.len(), 1);
    assert_eq!(changes[0].field, "deleted");
    assert!(
        history
            .iter()
            .all(|entry| entry.detail.kind.as_deref() == Some("thing")),
        "annotated"
    );
}

#[tokio::test]
async fn concurrent_numbered_creates_count_up_and_hard_deletes_are_guarded() {
    let store = crate::testing::memory_store();
    let actor = Actor::system();
    let (a, b) = tokio::join!(
        create_numbered::<_, Never>(&store, 1, thing("a"), &actor, at()),
        create_numbered::<_, Never>(&store, 1, thing("b"), &actor, at()),
    );
    let mut ids = [a.unwrap().id, b.unwrap().id];
    ids.sort_unstable();
    assert_eq!(ids, [1, 2]);

    let stored = things::get(&store, 1, 1).await.unwrap().unwrap();
    let stale = plan_delete(&stored.thing, stored.item_version + 1, &actor, at()).unwrap();
    assert!(!commit(&store, stale).await.unwrap());
    let ops = plan_delete(&stored.thing, stored.item_version, &actor, at()).unwrap();
    assert!(commit(&store, ops).await.unwrap());
    assert_eq!(things::get(&store, 1, 1).await.unwrap(), None);
    let history = activity::list(&store, 1, "Thing", Some("1")).await.unwrap();
    assert_eq!(history[0].activity, "deleted");
    assert_eq!(history[0].detail.changes, None);
}

#[tokio::test]
async fn a_link_that_keeps_failing_is_a_race_for_the_caller() {
    let store = crate::testing::memory_store();
    let actor = Actor::system();
    let tries = AtomicU32::new(0);
    // A write conditioned on an item that does not exist: it can never commit.
    let link = |_: &Thing| {
        tries.fetch_add(1, Ordering::SeqCst);
        let item = crate::store::Item::new("TEAM#1", "OTHER#1", serde_json::json!({}));
        Ok(vec![crate::store::WriteOp::Put {
            item,
            condition: crate::store::Condition::VersionEquals(7),
        }])
    };
    let linked = create_linked::<_, Never, _>(&store, 1, thing("a"), &actor, at(), link).await;
    assert!(matches!(linked, Err(WriteError::Raced)));
    assert_eq!(tries.load(Ordering::SeqCst), 1, "given up at once");
    assert!(things::list_all(&store, 1).await.unwrap().is_empty());
}

#[tokio::test]
async fn retries_run_until_done_or_stopped() {
    let tries = AtomicU32::new(0);
    let tries = &tries;
    let answer = |error: WriteError| error.answer_plain("thing");
    // Two lost races, then done.
    let done = retry(5, answer, || async move {
        let n = tries.fetch_add(1, Ordering::SeqCst);
        Ok(if n < 2 { Err(WriteError::Raced) } else { Ok(n) })
    })
    .await;
    assert_eq!(done.unwrap(), 2);

    // Every try lost: the family's 409.
    let lost: Result<(), ApiError> =
        retry(3, answer, || async move { Ok(Err(WriteError::Raced)) }).await;
    let lost = lost.unwrap_err();
    assert_eq!(lost.status, StatusCode::CONFLICT);
    assert_eq!(
        lost.body.detail,
        "The thing kept changing under this request; retry."
    );

    // The try's own error ends it at once.
    tries.store(0, Ordering::SeqCst);
    let stopped: Result<(), ApiError> = retry(3, answer, || async move {
        tries.fetch_add(1, Ordering::SeqCst);
        Err(ApiError::not_found())
    })
    .await;
    assert_eq!(stopped.unwrap_err().status, StatusCode::NOT_FOUND);
    assert_eq!(tries.load(Ordering::SeqCst), 1);
}

#[test]
fn a_family_refusal_is_answered_as_the_family_words_it() {
    #[derive(Debug, thiserror::Error)]
    #[error("taken")]
    struct Taken;
    let refused: WriteError<Taken> = WriteError::Refused(Taken);
    assert_eq!(refused.to_string(), "taken");
    let answer = refused.answer("thing", |Taken| ApiError::field("name", "unique", "Taken."));
    assert_eq!(answer.status, StatusCode::BAD_REQUEST);
    assert_eq!(answer.body.attr.as_deref(), Some("name"));
}
