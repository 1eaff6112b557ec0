//! The parts of an entity's writes: its item's put (new, or over the version read), its
//! activity entry, and the plans that put them together for a creation, a change and a hard
//! delete. Nothing here commits but [`commit`] and [`try_commit`]: a family adds its own writes
//! (a key's claim, linked items) to a plan before it commits it.

use chrono::{DateTime, Utc};
use serde_json::Value;
use uuid::Uuid;

use super::{Entity, VersionedRead, WriteError, team_pk};
use crate::activity::{self, Actor, Record};
use crate::store::{Condition, Item, Store, StoreError, WriteOp};

/// PostHog's activity for a soft-deleted item brought back.
pub const RESTORED: &str = "restored";

/// Commits `ops` in one transaction: `false` when a condition failed (another writer got there
/// first, or a key is taken), any other failure an error.
pub async fn commit(store: &dyn Store, ops: Vec<WriteOp>) -> Result<bool, StoreError> {
    match store.transact_write(ops).await {
        Ok(()) => Ok(true),
        Err(StoreError::ConditionFailed) => Ok(false),
        Err(other) => Err(other),
    }
}

/// [`commit`], a failed condition being [`WriteError::Raced`]: for a write whose every
/// condition is on what it read.
pub async fn try_commit(store: &dyn Store, ops: Vec<WriteOp>) -> Result<(), WriteError> {
    match commit(store, ops).await? {
        true => Ok(()),
        false => Err(WriteError::Raced),
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

/// The write of [`record`]'s entry, with what [`Entity::annotate`] adds to its `detail`.
pub fn entry_op<E: Entity>(
    entity: &E,
    actor: &Actor,
    activity: &str,
    before: Option<&Value>,
    after: &Value,
    at: DateTime<Utc>,
) -> Result<WriteOp, StoreError> {
    let mut entry = record(entity, actor, activity, before, after, at).entry();
    entity.annotate(&mut entry.detail);
    entry.put_op(entity.team_id())
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
/// Implement it (and [`Fields`](super::Fields), by `id`) with [`stamped!`](crate::stamped) for
/// a struct with the usual field names.
pub trait Stamped: Entity<Key: Copy + Sized> {
    fn stamps(&self) -> Stamps<Self::Key>;
    fn set_stamps(&mut self, stamps: Stamps<Self::Key>);
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
        entry_op(entity, actor, activity::CREATED, None, &after, at)?,
    ])
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
        entry_op(
            after,
            actor,
            activity,
            Some(&before_value),
            &after_value,
            at,
        )?,
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

/// The activity of a user's edit of an entity that can be restored (PostHog's perform_update
/// names the soft delete and the restore): `deleted`, `restored` or `updated`.
pub fn edit_activity<E: Entity>(before: &E, after: &E) -> &'static str {
    match (before.deleted(), after.deleted()) {
        (false, true) => activity::DELETED,
        (true, false) => RESTORED,
        _ => activity::UPDATED,
    }
}

/// Replaces `before` (as read) by `after` in one transaction, logged as a user's edit that may
/// soft-delete or restore it ([`edit_activity`]): [`WriteError::Raced`] when it changed since it
/// was read.
pub async fn save_edit<E: Stamped>(
    store: &dyn Store,
    team_id: i64,
    before: &impl VersionedRead<E>,
    mut after: E,
    actor: &Actor,
    at: DateTime<Utc>,
) -> Result<E, WriteError> {
    let (old, item_version) = (before.entity(), before.item_version());
    let activity = edit_activity(old, &after);
    let ops = plan_save(team_id, old, item_version, &mut after, activity, actor, at)?;
    try_commit(store, ops).await?;
    Ok(after)
}

/// The writes that remove `entity` for good (PostHog's hard delete), read at `item_version`,
/// and log `deleted`.
pub fn plan_delete<E: Entity>(
    entity: &E,
    item_version: u64,
    actor: &Actor,
    at: DateTime<Utc>,
) -> Result<Vec<WriteOp>, StoreError> {
    let last_seen = encode(entity)?;
    Ok(vec![
        WriteOp::Delete {
            pk: team_pk(entity.team_id()),
            sk: E::sort_key(entity.key()),
            condition: Condition::VersionEquals(item_version),
        },
        entry_op(entity, actor, activity::DELETED, None, &last_seen, at)?,
    ])
}
