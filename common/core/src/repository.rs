//! One repository for the entities a project owns (flags, experiments, cohorts, surveys,
//! endpoints): each lives in the project's partition (`TEAM#<id>`) under `<PREFIX><key>`, so one
//! prefix query lists them in key order, and every change to one is a transaction holding the
//! item (under the item version that was read) and its activity entry.
//!
//! An entity says where it lives and how the log names it ([`Entity`]); the reads
//! ([`get`], [`get_live`], [`list_all`], [`list_live`]) and the writes' parts ([`plan_new`],
//! [`plan_numbered`], [`plan_save`], [`put_over`], [`record`]) are written here once. A family's
//! repository keeps only its own transactions (key and name claims, linked items, cascades), and
//! names its typed reads and its `Stored` with [`entity_reads!`](crate::entity_reads).

use chrono::{DateTime, Utc};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use uuid::Uuid;

use crate::activity::{self, Actor, Record};
use crate::store::{self, Condition, Item, Store, StoreError, WriteOp};

/// A project's partition, where its entities and their activity live.
pub fn team_pk(team_id: i64) -> String {
    format!("TEAM#{team_id}")
}

/// How a key is written after its entity's prefix in a sort key.
pub trait SortKey {
    fn sort_key_part(&self) -> String;
}

/// Zero-padded, so sort-key order is id order.
impl SortKey for i64 {
    fn sort_key_part(&self) -> String {
        format!("{self:019}")
    }
}

/// A uuid v7 sorts in creation order as it is.
impl SortKey for Uuid {
    fn sort_key_part(&self) -> String {
        self.to_string()
    }
}

/// A name sorts as its UTF-8 bytes.
impl SortKey for str {
    fn sort_key_part(&self) -> String {
        self.to_owned()
    }
}

/// What the repository reads off an entity: its project, its key, and whether it is
/// soft-deleted (kept, but shown by no read route).
pub trait Fields {
    /// What the sort key holds after the prefix: an id, a uuid, a name.
    type Key: SortKey + std::fmt::Display + ?Sized + Send + Sync;

    fn key(&self) -> &Self::Key;
    fn team_id(&self) -> i64;
    fn deleted(&self) -> bool {
        false
    }
}

/// The fields of a stamped entity (see [`Stamps`]) that are bookkeeping, not changes worth a
/// line in the activity log.
pub const BOOKKEEPING: &[&str] = &[
    "id",
    "team_id",
    "version",
    "created_at",
    "updated_at",
    "created_by",
];

/// [`BOOKKEEPING`] and `more`, as a constant: `N` is their count together.
pub const fn bookkeeping_and<const N: usize>(more: &[&'static str]) -> [&'static str; N] {
    assert!(
        N == BOOKKEEPING.len() + more.len(),
        "N must count both lists"
    );
    let mut all = [""; N];
    let mut i = 0;
    while i < N {
        all[i] = if i < BOOKKEEPING.len() {
            BOOKKEEPING[i]
        } else {
            more[i - BOOKKEEPING.len()]
        };
        i += 1;
    }
    all
}

/// An entity of a project, stored as JSON at (`TEAM#<team_id>`, `<PREFIX><key>`).
pub trait Entity: Fields + Serialize + DeserializeOwned + Send + Sync + 'static {
    /// The sort-key prefix of every item of this kind (`FLAG#`, `COHORT#`, ...); no other kind's
    /// prefix may start with it.
    const PREFIX: &'static str;
    /// The activity log's scope (PostHog's model name: `FeatureFlag`, `Cohort`, ...).
    const SCOPE: &'static str;
    /// Top-level fields that are bookkeeping, not changes worth a log line.
    const IGNORED_IN_DIFFS: &'static [&'static str] = BOOKKEEPING;
    /// Whether a deleted item's history is still shown (`GET .../:id/activity`).
    const HISTORY_OUTLIVES_DELETE: bool = false;

    /// The activity log's `detail.name` (a flag's key, a survey's name).
    fn display_name(&self) -> String;

    /// The activity log's `item_id`.
    fn item_id(&self) -> String {
        self.key().to_string()
    }

    fn sort_key(key: &Self::Key) -> String {
        format!("{}{}", Self::PREFIX, key.sort_key_part())
    }
}

/// One entity, deleted or not, with the Store item's version that a write must still find.
pub async fn get<E: Entity>(
    store: &dyn Store,
    team_id: i64,
    key: &E::Key,
) -> Result<Option<(E, u64)>, StoreError> {
    store::get_versioned(store, &team_pk(team_id), &E::sort_key(key)).await
}

/// One entity unless it is deleted (what every read route shows).
pub async fn get_live<E: Entity>(
    store: &dyn Store,
    team_id: i64,
    key: &E::Key,
) -> Result<Option<E>, StoreError> {
    Ok(get::<E>(store, team_id, key)
        .await?
        .map(|(entity, _)| entity)
        .filter(|entity| !entity.deleted()))
}

/// Every entity of a project, deleted ones included, in key order.
pub async fn list_all<E: Entity>(store: &dyn Store, team_id: i64) -> Result<Vec<E>, StoreError> {
    store::list_prefix(store, &team_pk(team_id), E::PREFIX).await
}

/// Every entity of a project that is not deleted, in key order.
pub async fn list_live<E: Entity>(store: &dyn Store, team_id: i64) -> Result<Vec<E>, StoreError> {
    let mut all = list_all::<E>(store, team_id).await?;
    all.retain(|entity| !entity.deleted());
    Ok(all)
}

/// Waits before try `attempt` (counted from 0) of a write that lost a race: nothing before the
/// first, [`store::conflict_backoff`] before the others.
pub async fn pause_before(attempt: u32) {
    if attempt > 0 {
        tokio::time::sleep(store::conflict_backoff(attempt)).await;
    }
}

/// Commits `ops` in one transaction: `false` when a condition failed (another writer got there
/// first, or a key is taken), any other failure an error.
pub async fn commit(store: &dyn Store, ops: Vec<WriteOp>) -> Result<bool, StoreError> {
    match store.transact_write(ops).await {
        Ok(()) => Ok(true),
        Err(StoreError::ConditionFailed) => Ok(false),
        Err(other) => Err(other),
    }
}

/// The entity as JSON, for the activity log's diff.
pub fn encode<E: Entity>(entity: &E) -> Result<Value, StoreError> {
    serde_json::to_value(entity).map_err(|source| StoreError::Encode {
        pk: team_pk(entity.team_id()),
        sk: E::sort_key(entity.key()),
        source,
    })
}

/// The entity's item, unversioned.
fn item<E: Entity>(entity: &E) -> Result<Item, StoreError> {
    Item::of(team_pk(entity.team_id()), E::sort_key(entity.key()), entity)
}

/// The put of a new entity: fails if its key is taken.
pub fn put_new<E: Entity>(entity: &E) -> Result<WriteOp, StoreError> {
    Ok(WriteOp::Put {
        item: item(entity)?,
        condition: Condition::NotExists,
    })
}

/// The put of `entity` over the item read at `item_version`: fails if it changed since.
pub fn put_over<E: Entity>(entity: &E, item_version: u64) -> Result<WriteOp, StoreError> {
    let mut item = item(entity)?;
    item.version = item_version + 1;
    Ok(WriteOp::Put {
        item,
        condition: Condition::VersionEquals(item_version),
    })
}

/// An activity entry about `entity`: `before` and `after` as [`encode`] (or a richer view) gives
/// them, `before` None for a creation.
pub fn record<'a, E: Entity>(
    entity: &E,
    actor: &Actor,
    activity: &'a str,
    before: Option<&'a Value>,
    after: &'a Value,
    at: DateTime<Utc>,
) -> Record<'a> {
    Record {
        team_id: entity.team_id(),
        actor: actor.clone(),
        activity,
        scope: E::SCOPE,
        item_id: entity.item_id(),
        name: Some(entity.display_name()),
        before,
        after,
        ignored_fields: E::IGNORED_IN_DIFFS,
        at,
    }
}

/// The bookkeeping fields of an entity that keeps a `version` counter.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Stamps<K> {
    pub id: K,
    pub team_id: i64,
    pub version: u64,
    pub created_at: DateTime<Utc>,
    pub created_by: Option<Uuid>,
    pub updated_at: Option<DateTime<Utc>>,
}

/// An entity with [`Stamps`]: the repository fills them on create and carries them on save.
/// Implement it (and [`Fields`], by `id`) with [`stamped!`](crate::stamped) for a struct with the
/// usual field names.
pub trait Stamped: Entity<Key: Copy + Sized> {
    fn stamps(&self) -> Stamps<Self::Key>;
    fn set_stamps(&mut self, stamps: Stamps<Self::Key>);
}

/// Implements [`Fields`] (keyed by `id`, of type `$key`; `soft_deleted`: by its `deleted` flag)
/// and [`Stamped`] for an entity whose fields are named `id`, `team_id`, `version`,
/// `created_at`, `created_by` and `updated_at`.
#[macro_export]
macro_rules! stamped {
    ($entity:ty, $key:ty, soft_deleted) => {
        $crate::stamped!(@fields $entity, $key, fn deleted(&self) -> bool { self.deleted });
        $crate::stamped!(@stamps $entity);
    };
    ($entity:ty, $key:ty) => {
        $crate::stamped!(@fields $entity, $key,);
        $crate::stamped!(@stamps $entity);
    };
    (@fields $entity:ty, $key:ty, $($deleted:item)?) => {
        impl $crate::repository::Fields for $entity {
            type Key = $key;

            fn key(&self) -> &$key {
                &self.id
            }

            fn team_id(&self) -> i64 {
                self.team_id
            }

            $($deleted)?
        }
    };
    (@stamps $entity:ty) => {
        impl $crate::repository::Stamped for $entity {
            fn stamps(&self) -> $crate::repository::Stamps<Self::Key> {
                $crate::repository::Stamps {
                    id: self.id,
                    team_id: self.team_id,
                    version: self.version,
                    created_at: self.created_at,
                    created_by: self.created_by,
                    updated_at: self.updated_at,
                }
            }

            fn set_stamps(&mut self, stamps: $crate::repository::Stamps<Self::Key>) {
                self.id = stamps.id;
                self.team_id = stamps.team_id;
                self.version = stamps.version;
                self.created_at = stamps.created_at;
                self.created_by = stamps.created_by;
                self.updated_at = stamps.updated_at;
            }
        }
    };
}

/// The writes that store a new entity (its key already set) in `team_id` at `at`: version 1, its
/// put (failing if the key is taken) and its `created` entry.
pub fn plan_new<E: Stamped>(
    entity: &mut E,
    team_id: i64,
    actor: &Actor,
    at: DateTime<Utc>,
) -> Result<Vec<WriteOp>, StoreError> {
    entity.set_stamps(Stamps {
        team_id,
        version: 1,
        created_at: at,
        updated_at: Some(at),
        ..entity.stamps()
    });
    let after = encode(entity)?;
    Ok(vec![
        put_new(entity)?,
        record(entity, actor, activity::CREATED, None, &after, at).put_op()?,
    ])
}

/// [`plan_new`] with the project's next id from the counter at `counter_sk`: the counter's
/// write comes first. The transaction fails if another writer took the id meanwhile.
pub async fn plan_numbered<E: Stamped<Key = i64>>(
    store: &dyn Store,
    counter_sk: &str,
    entity: &mut E,
    team_id: i64,
    actor: &Actor,
    at: DateTime<Utc>,
) -> Result<Vec<WriteOp>, StoreError> {
    let (id, counter) = store::claim_next_id(store, &team_pk(team_id), counter_sk).await?;
    entity.set_stamps(Stamps {
        id,
        ..entity.stamps()
    });
    let mut ops = vec![counter];
    ops.extend(plan_new(entity, team_id, actor, at)?);
    Ok(ops)
}

/// The writes that replace `before` (read from `team_id`'s partition at `item_version`) by
/// `after`, logged as `activity`: `after` keeps `before`'s id and creation, its `version` is
/// bumped and `updated_at` set to `at`; its put requires the item version that was read.
pub fn plan_save<E: Stamped>(
    team_id: i64,
    before: &E,
    item_version: u64,
    after: &mut E,
    activity: &str,
    actor: &Actor,
    at: DateTime<Utc>,
) -> Result<Vec<WriteOp>, StoreError> {
    let old = before.stamps();
    after.set_stamps(Stamps {
        team_id,
        version: old.version + 1,
        updated_at: Some(at),
        ..old
    });
    let before_value = encode(before)?;
    let after_value = encode(after)?;
    Ok(vec![
        put_over(after, item_version)?,
        record(
            after,
            actor,
            activity,
            Some(&before_value),
            &after_value,
            at,
        )
        .put_op()?,
    ])
}

/// [`plan_save`] of a user's edit, logged `deleted` when it soft-deletes and `updated`
/// otherwise.
pub fn plan_edit<E: Stamped>(
    team_id: i64,
    before: &E,
    item_version: u64,
    after: &mut E,
    actor: &Actor,
    at: DateTime<Utc>,
) -> Result<Vec<WriteOp>, StoreError> {
    let activity = if !before.deleted() && after.deleted() {
        activity::DELETED
    } else {
        activity::UPDATED
    };
    plan_save(team_id, before, item_version, after, activity, actor, at)
}

/// Declares, in an entity's repository module, what needs the entity's own name: its `Stored`
/// (the entity under the field `$field`, with the item version a write must still find, under
/// `$version`) and the typed reads over the generic ones: `get` and `list_all`, and for a
/// soft-deleted entity (`live`) `get_live` and `list_live`.
///
/// ```ignore
/// common::entity_reads! { Cohort, i64, Stored { cohort, item_version }, live }
/// ```
#[macro_export]
macro_rules! entity_reads {
    ($entity:ty, $key:ty, Stored { $field:ident, $version:ident }) => {
        #[doc = concat!("A `", stringify!($entity), "` as read, with the Store item's version that a write must still find.")]
        #[derive(Debug, Clone, PartialEq)]
        pub struct Stored {
            pub $field: $entity,
            pub $version: u64,
        }

        #[doc = concat!("One `", stringify!($entity), "`, deleted or not.")]
        pub async fn get(
            store: &dyn $crate::store::Store,
            team_id: i64,
            key: $key,
        ) -> Result<Option<Stored>, $crate::store::StoreError> {
            let key = ::std::borrow::Borrow::borrow(&key);
            Ok($crate::repository::get::<$entity>(store, team_id, key)
                .await?
                .map(|($field, $version)| Stored { $field, $version }))
        }

        #[doc = concat!("Every `", stringify!($entity), "` of a project, deleted ones included, in key order.")]
        pub async fn list_all(
            store: &dyn $crate::store::Store,
            team_id: i64,
        ) -> Result<Vec<$entity>, $crate::store::StoreError> {
            $crate::repository::list_all::<$entity>(store, team_id).await
        }
    };
    ($entity:ty, $key:ty, Stored { $field:ident, $version:ident }, live) => {
        $crate::entity_reads!($entity, $key, Stored { $field, $version });

        #[doc = concat!("One `", stringify!($entity), "` unless it is deleted (what every read route shows).")]
        pub async fn get_live(
            store: &dyn $crate::store::Store,
            team_id: i64,
            key: $key,
        ) -> Result<Option<$entity>, $crate::store::StoreError> {
            let key = ::std::borrow::Borrow::borrow(&key);
            $crate::repository::get_live::<$entity>(store, team_id, key).await
        }

        #[doc = concat!("Every `", stringify!($entity), "` of a project that is not deleted, in key order.")]
        pub async fn list_live(
            store: &dyn $crate::store::Store,
            team_id: i64,
        ) -> Result<Vec<$entity>, $crate::store::StoreError> {
            $crate::repository::list_live::<$entity>(store, team_id).await
        }
    };
}

#[cfg(test)]
mod tests {
    use chrono::TimeZone;
    use serde::Deserialize;

    use super::*;

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

        fn display_name(&self) -> String {
            self.name.clone()
        }
    }

    crate::stamped!(Thing, i64, soft_deleted);

    mod things {
        use super::Thing;
        crate::entity_reads! { Thing, i64, Stored { thing, item_version }, live }
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
        let at = Utc.with_ymd_and_hms(2025, 1, 2, 3, 4, 5).unwrap();
        let mut thing = Thing {
            id: 0,
            team_id: 0,
            name: "a".into(),
            deleted: false,
            created_by: None,
            created_at: at,
            updated_at: None,
            version: 0,
        };
        let ops = plan_numbered(&store, "COUNTER#THING", &mut thing, 3, &actor, at)
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
        let ops = plan_save(
            3,
            &stored.thing,
            stored.item_version,
            &mut gone,
            "deleted",
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
        assert!(!commit(&store, ops).await.unwrap());
        assert_eq!(things::get_live(&store, 3, 1).await.unwrap(), None);
        assert!(things::list_live(&store, 3).await.unwrap().is_empty());
        assert_eq!(things::list_all(&store, 3).await.unwrap(), [gone]);

        let history = activity::list(&store, 3, "Thing", Some("1")).await.unwrap();
        let kinds: Vec<&str> = history.iter().map(|e| e.activity.as_str()).collect();
        assert_eq!(kinds, ["deleted", "created"]);
        let changes = history[0].detail.changes.clone().unwrap_or_default();
        assert_eq!(changes.len(), 1);
        assert_eq!(changes[0].field, "deleted");
    }
}
