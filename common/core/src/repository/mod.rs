//! One repository for the entities a project owns (flags, experiments, cohorts, surveys,
//! actions, dashboards, insights, holdouts, saved metrics, endpoints): each lives in the
//! project's partition (`TEAM#<id>`) under `<PREFIX><key>`, so one prefix query lists them in key
//! order, and every change to one is a transaction holding the item (under the item version that
//! was read) and its activity entry.
//!
//! An entity says where it lives and how the log names it ([`Entity`]); the reads
//! ([`get`], [`get_live`], [`list_all`], [`list_live`]) are written here once, and so are:
//! - the writes' parts ([`write`]: [`plan_new`], [`plan_save`], [`plan_delete`], [`put_over`],
//!   [`entry_op`], ...), and the numbering of entities by a project counter ([`numbered`]);
//! - the retries of a write that lost a race ([`retry()`]) and why a write did not happen
//!   ([`WriteError`], with a family's own reasons as its parameter);
//! - what the families' routes share ([`routes`]: the CRUD route table, the refused hard
//!   delete, a list's query string).
//!
//! A family's repository keeps only its own transactions (key and name claims, linked items,
//! cascades), and names its typed reads (with `found`, the read of a route that answers 404)
//! and its `Stored` with [`entity_reads!`](crate::entity_reads).

mod error;
mod macros;
pub mod numbered;
pub mod retry;
pub mod routes;
pub mod write;

#[cfg(test)]
mod tests;

use serde::Serialize;
use serde::de::DeserializeOwned;
use uuid::Uuid;

use crate::activity::Detail;
use crate::store::{self, Store, StoreError};

pub use error::{Never, WriteError};
pub use numbered::{Numbered, create_linked, create_numbered, number, plan_numbered};
pub use retry::{Written, pause_before, retry};
pub use write::{
    RESTORED, Stamped, Stamps, commit, edit_activity, encode, entry_op, plan_delete, plan_edit,
    plan_new, plan_save, put_new, put_over, record, save_edit, try_commit,
};

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

    /// Its activity entries' `detail.type`, where PostHog types them (a holdout's, a saved
    /// metric's: they share the experiments' scope).
    const DETAIL_TYPE: Option<&'static str> = None;

    /// What its activity entries' `detail` says besides its name: its [`Entity::DETAIL_TYPE`],
    /// and more where PostHog's log says more (an insight's names its short id).
    fn annotate(&self, detail: &mut Detail) {
        detail.kind = Self::DETAIL_TYPE.map(str::to_owned);
    }

    fn sort_key(key: &Self::Key) -> String {
        format!("{}{}", Self::PREFIX, key.sort_key_part())
    }
}

/// An entity as read, with the Store item's version that a write must still find: the `Stored`
/// of each entity's module ([`entity_reads!`](crate::entity_reads)), for code generic over
/// entities.
pub trait VersionedRead<E> {
    fn from_read(entity: E, item_version: u64) -> Self;
    fn entity(&self) -> &E;
    fn item_version(&self) -> u64;
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
