//! The entity store: DynamoDB semantics (single table, `pk`/`sk`, GSI1, TTL) behind one trait,
//! with an embedded SQLite backend and a DynamoDB backend that pass the same conformance suite.

mod cursor;
mod dynamo;
mod sqlite;

use std::time::Duration;

use async_trait::async_trait;
use serde::{Serialize, de::DeserializeOwned};

use crate::clock::{Clock, SystemClock};

pub use cursor::Cursor;
pub use dynamo::DynamoStore;
pub use sqlite::SqliteStore;

/// DynamoDB's limit for one TransactWriteItems call.
pub const MAX_TRANSACTION_ITEMS: usize = 100;

/// One stored item. `data` is the entity as JSON; the key attributes live beside it.
#[derive(Debug, Clone, PartialEq)]
pub struct Item {
    pub pk: String,
    pub sk: String,
    /// Bumped by every optimistic update; new items start at 1.
    pub version: u64,
    pub data: serde_json::Value,
    pub gsi1pk: Option<String>,
    pub gsi1sk: Option<String>,
    /// Unix seconds after which the item is gone for every read (DynamoDB TTL semantics).
    pub expires_at: Option<i64>,
}

impl Item {
    pub fn new(pk: impl Into<String>, sk: impl Into<String>, data: serde_json::Value) -> Self {
        Self {
            pk: pk.into(),
            sk: sk.into(),
            version: 1,
            data,
            gsi1pk: None,
            gsi1sk: None,
            expires_at: None,
        }
    }

    /// An item holding a serialized entity.
    pub fn of<T: Serialize>(
        pk: impl Into<String>,
        sk: impl Into<String>,
        entity: &T,
    ) -> Result<Self, StoreError> {
        let mut item = Self::new(pk, sk, serde_json::Value::Null);
        item.set_data(entity)?;
        Ok(item)
    }

    /// Replaces `data` with `entity`, serialized.
    pub fn set_data<T: Serialize>(&mut self, entity: &T) -> Result<(), StoreError> {
        self.data = serde_json::to_value(entity).map_err(|source| StoreError::Encode {
            pk: self.pk.clone(),
            sk: self.sk.clone(),
            source,
        })?;
        Ok(())
    }

    pub fn with_gsi1(mut self, pk: impl Into<String>, sk: impl Into<String>) -> Self {
        self.gsi1pk = Some(pk.into());
        self.gsi1sk = Some(sk.into());
        self
    }

    pub fn with_expiry(mut self, expires_at: i64) -> Self {
        self.expires_at = Some(expires_at);
        self
    }

    /// The entity stored in `data`.
    pub fn parse<T: DeserializeOwned>(&self) -> Result<T, StoreError> {
        T::deserialize(&self.data).map_err(|source| StoreError::Decode {
            pk: self.pk.clone(),
            sk: self.sk.clone(),
            source,
        })
    }

    pub(crate) fn is_expired(&self, now: i64) -> bool {
        self.expires_at.is_some_and(|at| at <= now)
    }
}

/// What must hold for a write to happen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Condition {
    None,
    /// No live item has this key (an expired one counts as absent).
    NotExists,
    /// A live item exists at exactly this version.
    VersionEquals(u64),
    /// A live item exists, whatever its version.
    Exists,
}

/// One action of an all-or-nothing transaction.
#[derive(Debug, Clone, PartialEq)]
pub enum WriteOp {
    Put {
        item: Item,
        condition: Condition,
    },
    Delete {
        pk: String,
        sk: String,
        condition: Condition,
    },
    Check {
        pk: String,
        sk: String,
        condition: Condition,
    },
}

impl WriteOp {
    pub fn key(&self) -> (&str, &str) {
        match self {
            WriteOp::Put { item, .. } => (&item.pk, &item.sk),
            WriteOp::Delete { pk, sk, .. } | WriteOp::Check { pk, sk, .. } => (pk, sk),
        }
    }
}

/// Which key a query walks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Index {
    #[default]
    Primary,
    Gsi1,
}

#[derive(Debug, Clone, Default)]
pub struct QueryOptions {
    pub index: Index,
    /// Only sort keys starting with this prefix.
    pub sk_prefix: String,
    /// Page size; `None` means everything.
    pub limit: Option<usize>,
    /// From a previous page's `cursor`.
    pub cursor: Option<String>,
    /// Newest (largest sort key) first.
    pub descending: bool,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct Page {
    pub items: Vec<Item>,
    /// Present when more items may follow; opaque to callers.
    pub cursor: Option<String>,
}

impl Page {
    /// A page from up to `limit + 1` items in order: the extra one only says that more exist,
    /// so a cursor is handed out exactly when another page has items.
    pub(crate) fn from_overfetched(mut items: Vec<Item>, options: &QueryOptions) -> Self {
        let mut cursor = None;
        if let Some(limit) = options.limit
            && items.len() > limit
        {
            items.truncate(limit);
            cursor = items
                .last()
                .map(|item| Cursor::after(item, options.index).encode());
        }
        Self { items, cursor }
    }
}

/// What went wrong in the store. Backend failures keep their cause as the error's source, so a
/// log can show the whole chain and a caller can inspect it (e.g. SQLite's busy code).
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("condition failed")]
    ConditionFailed,
    #[error("transaction cancelled: {0}")]
    TransactionCancelled(String),
    #[error("invalid cursor")]
    InvalidCursor,
    #[error("invalid request to the store: {0}")]
    Invalid(String),
    /// Stored data that does not have the expected shape.
    #[error("encoding: {0}")]
    Encoding(String),
    #[error("item {pk}/{sk} does not encode as JSON")]
    Encode {
        pk: String,
        sk: String,
        #[source]
        source: serde_json::Error,
    },
    #[error("item {pk}/{sk} does not decode")]
    Decode {
        pk: String,
        sk: String,
        #[source]
        source: serde_json::Error,
    },
    #[error("SQLite call failed")]
    Sqlite(#[from] rusqlite::Error),
    #[error("cannot create the SQLite store's folder {}", path.display())]
    Folder {
        path: std::path::PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// A panic while a connection was held; the connection may be mid-transaction.
    #[error("SQLite connection poisoned by an earlier panic")]
    Poisoned,
    /// The blocking thread running a store call panicked or was cancelled.
    #[error("store worker thread failed")]
    Worker(#[source] tokio::task::JoinError),
    #[error("DynamoDB {operation} failed")]
    Dynamo {
        operation: &'static str,
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
}

/// The storage boundary every handler talks to.
#[async_trait]
pub trait Store: Send + Sync + 'static {
    /// What "now" is for this store: TTL expiry, and the timestamps of entities written
    /// without a request at hand (provisioning). The backends take the state's clock.
    fn clock(&self) -> &dyn Clock {
        &SystemClock
    }

    async fn get(&self, pk: &str, sk: &str) -> Result<Option<Item>, StoreError>;

    async fn put(&self, item: Item, condition: Condition) -> Result<(), StoreError>;

    async fn delete(&self, pk: &str, sk: &str, condition: Condition) -> Result<(), StoreError>;

    /// Items of one partition (or one GSI1 partition) in sort-key order, a page at a time.
    async fn query(&self, partition: &str, options: QueryOptions) -> Result<Page, StoreError>;

    /// Up to [`MAX_TRANSACTION_ITEMS`] actions on distinct keys; all happen or none.
    async fn transact_write(&self, ops: Vec<WriteOp>) -> Result<(), StoreError>;

    /// Several independent transactions on distinct keys (they may run concurrently): each
    /// all-or-nothing, and `false` in its place when a condition failed. Bulk writers use it so
    /// a backend can batch them (one SQLite commit, concurrent DynamoDB calls). On any other
    /// error some groups may have been applied, each of them whole.
    async fn transact_write_each(
        &self,
        groups: Vec<Vec<WriteOp>>,
    ) -> Result<Vec<bool>, StoreError> {
        let mut applied = Vec::with_capacity(groups.len());
        for ops in groups {
            applied.push(condition_outcome(self.transact_write(ops).await)?);
        }
        Ok(applied)
    }
}

/// A transaction's outcome as [`Store::transact_write_each`] reports it.
pub(crate) fn condition_outcome(result: Result<(), StoreError>) -> Result<bool, StoreError> {
    match result {
        Ok(()) => Ok(true),
        Err(StoreError::ConditionFailed) => Ok(false),
        Err(other) => Err(other),
    }
}

/// [`validate_transaction`] for each of [`Store::transact_write_each`]'s groups, before any is sent.
pub(crate) fn validate_transactions(groups: &[Vec<WriteOp>]) -> Result<(), StoreError> {
    groups.iter().try_for_each(|ops| validate_transaction(ops))
}

/// Checks shared by both backends before a transaction is sent.
pub(crate) fn validate_transaction(ops: &[WriteOp]) -> Result<(), StoreError> {
    if ops.is_empty() || ops.len() > MAX_TRANSACTION_ITEMS {
        return Err(StoreError::Invalid(format!(
            "a transaction holds 1 to {MAX_TRANSACTION_ITEMS} actions, got {}",
            ops.len()
        )));
    }
    let mut keys = std::collections::HashSet::new();
    for op in ops {
        if !keys.insert(op.key()) {
            return Err(StoreError::Invalid(format!(
                "two actions of one transaction target {}/{}",
                op.key().0,
                op.key().1
            )));
        }
    }
    Ok(())
}

/// Every item of a partition (or of a GSI1 partition), read page by page.
pub async fn query_all(
    store: &dyn Store,
    partition: &str,
    index: Index,
) -> Result<Vec<Item>, StoreError> {
    query_pages(
        store,
        partition,
        QueryOptions {
            index,
            ..Default::default()
        },
    )
    .await
}

/// Every item of a partition whose sort key starts with `sk_prefix`, in key order.
pub async fn query_prefix(
    store: &dyn Store,
    partition: &str,
    sk_prefix: &str,
) -> Result<Vec<Item>, StoreError> {
    query_pages(
        store,
        partition,
        QueryOptions {
            sk_prefix: sk_prefix.to_owned(),
            ..Default::default()
        },
    )
    .await
}

/// Every item `options` selects (its `limit` and `cursor` aside), read 1000 at a time.
pub async fn query_pages(
    store: &dyn Store,
    partition: &str,
    options: QueryOptions,
) -> Result<Vec<Item>, StoreError> {
    let mut items = Vec::new();
    let mut cursor = None;
    loop {
        let page = store
            .query(
                partition,
                QueryOptions {
                    limit: Some(1000),
                    cursor: cursor.take(),
                    ..options.clone()
                },
            )
            .await?;
        items.extend(page.items);
        match page.cursor {
            Some(next) => cursor = Some(next),
            None => return Ok(items),
        }
    }
}

/// The entity an item holds and the item's version (the condition a later write must still meet).
pub async fn get_versioned<T: DeserializeOwned>(
    store: &dyn Store,
    pk: &str,
    sk: &str,
) -> Result<Option<(T, u64)>, StoreError> {
    match store.get(pk, sk).await? {
        Some(item) => Ok(Some((item.parse()?, item.version))),
        None => Ok(None),
    }
}

/// The entities of a partition's items whose sort key starts with `sk_prefix`, in key order.
pub async fn list_prefix<T: DeserializeOwned>(
    store: &dyn Store,
    partition: &str,
    sk_prefix: &str,
) -> Result<Vec<T>, StoreError> {
    query_prefix(store, partition, sk_prefix)
        .await?
        .iter()
        .map(Item::parse)
        .collect()
}

/// A per-partition id counter's item (`COUNTER#<KIND>`).
#[derive(Serialize, serde::Deserialize)]
struct Counter {
    value: i64,
}

/// The next id of the counter at (`pk`, `counter_sk`) and the write that claims it: put the write
/// in the same transaction as the item that takes the id. A concurrent claim makes that
/// transaction fail with [`StoreError::ConditionFailed`]; read again and retry.
pub async fn claim_next_id(
    store: &dyn Store,
    pk: &str,
    counter_sk: &str,
) -> Result<(i64, WriteOp), StoreError> {
    claim_next_ids(store, pk, counter_sk, 1).await
}

/// The first of the counter's next `count` ids (`count` at least 1) and the one write that
/// claims them all, for a transaction that creates several items numbered by one counter.
pub async fn claim_next_ids(
    store: &dyn Store,
    pk: &str,
    counter_sk: &str,
    count: i64,
) -> Result<(i64, WriteOp), StoreError> {
    let current = store.get(pk, counter_sk).await?;
    let (last, condition, version) = match &current {
        Some(item) => (
            item.parse::<Counter>()?.value,
            Condition::VersionEquals(item.version),
            item.version + 1,
        ),
        None => (0, Condition::NotExists, 1),
    };
    let first = last + 1;
    let mut item = Item::of(
        pk,
        counter_sk,
        &Counter {
            value: last + count.max(1),
        },
    )?;
    item.version = version;
    Ok((first, WriteOp::Put { item, condition }))
}

/// Tries of [`update`] before it gives up with [`StoreError::ConditionFailed`].
pub const UPDATE_ATTEMPTS: u32 = 8;
const BACKOFF_BASE: Duration = Duration::from_millis(2);
const BACKOFF_CAP: Duration = Duration::from_millis(100);

/// The pause before retry `attempt` (1 for the first retry) of a write that lost a race:
/// exponential backoff with full jitter, so writers that collided do not collide again in step.
pub fn conflict_backoff(attempt: u32) -> Duration {
    crate::backoff::full_jitter(crate::backoff::ceiling(BACKOFF_BASE, BACKOFF_CAP, attempt))
}

/// Read, change and write back one item under optimistic locking, retrying on concurrent changes
/// (at most [`UPDATE_ATTEMPTS`] times, pausing [`conflict_backoff`] between tries).
/// `change` gets the current entity and returns the new one; it may run more than once.
pub async fn update<T, F>(store: &dyn Store, pk: &str, sk: &str, change: F) -> Result<T, StoreError>
where
    T: Serialize + DeserializeOwned,
    F: FnMut(T) -> Result<T, StoreError>,
{
    update_indexed(store, pk, sk, change, |_, _| {}).await
}

/// [`update`] for an item whose GSI1 keys follow its entity: `index` sets them on the item to
/// write from the changed entity (e.g. a sparse index only some states of it belong in).
pub async fn update_indexed<T, F, I>(
    store: &dyn Store,
    pk: &str,
    sk: &str,
    mut change: F,
    index: I,
) -> Result<T, StoreError>
where
    T: Serialize + DeserializeOwned,
    F: FnMut(T) -> Result<T, StoreError>,
    I: Fn(&T, &mut Item),
{
    for attempt in 0..UPDATE_ATTEMPTS {
        if attempt > 0 {
            tokio::time::sleep(conflict_backoff(attempt)).await;
        }
        let Some(current) = store.get(pk, sk).await? else {
            return Err(StoreError::ConditionFailed);
        };
        let updated = change(current.parse()?)?;
        let mut item = current.clone();
        item.set_data(&updated)?;
        item.version = current.version + 1;
        index(&updated, &mut item);
        match store
            .put(item, Condition::VersionEquals(current.version))
            .await
        {
            Ok(()) => return Ok(updated),
            Err(StoreError::ConditionFailed) => continue,
            Err(other) => return Err(other),
        }
    }
    Err(StoreError::ConditionFailed)
}

/// The retries of one optimistic write (read, plan, conditional write) that must never fail for
/// another writer's sake: call [`Contention::lost`] after each try whose conditions failed, and
/// try again when it says so.
///
/// A try lost while the item guarding the write moved on (the next try reads a newer version:
/// another writer committed) is tried again however often that happens: the write waits its
/// turn. Tries lost with the guarding item where it was (a transaction cancelled for
/// overlapping one in flight, as DynamoDB does, or a condition on some other item) count:
/// after [`UPDATE_ATTEMPTS`] of those the write gives up with [`StoreError::ConditionFailed`].
#[derive(Debug, Default)]
pub struct Contention {
    previous: Option<u64>,
    stalled: u32,
    tries: u32,
}

impl Contention {
    /// After a try that lost, having read version `read` of the guarding item (the one every
    /// writer of the same thing conditions its transaction on): pauses [`conflict_backoff`] and
    /// answers `Ok` to try again, or gives up.
    pub async fn lost(&mut self, read: u64) -> Result<(), StoreError> {
        if self.previous == Some(read) {
            self.stalled += 1;
            if self.stalled >= UPDATE_ATTEMPTS {
                return Err(StoreError::ConditionFailed);
            }
        }
        self.previous = Some(read);
        self.tries = self.tries.saturating_add(1);
        tokio::time::sleep(conflict_backoff(self.tries)).await;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_grows_to_its_cap_with_jitter() {
        for attempt in 1..=12 {
            let ceiling = (BACKOFF_BASE * 2u32.pow(attempt - 1)).min(BACKOFF_CAP);
            let pauses: Vec<Duration> = (0..200).map(|_| conflict_backoff(attempt)).collect();
            assert!(pauses.iter().all(|pause| *pause <= ceiling), "{attempt}");
            // Full jitter: the pauses spread over the range rather than sitting at the ceiling.
            let distinct: std::collections::HashSet<_> = pauses.iter().collect();
            assert!(distinct.len() > 100, "{attempt}: {distinct:?}");
        }
        // Large attempt numbers neither overflow nor pass the cap.
        for attempt in [64, u32::MAX] {
            assert!(conflict_backoff(attempt) <= BACKOFF_CAP);
        }
    }

    /// Tries that lose having read the versions in `reads`, one after another, then one that
    /// commits: the outcome and the number of tries.
    async fn lost_then_done(reads: &[u64]) -> (Result<(), StoreError>, usize) {
        let mut contention = Contention::default();
        for (tries, &read) in reads.iter().enumerate() {
            if let Err(error) = contention.lost(read).await {
                return (Err(error), tries + 1);
            }
        }
        (Ok(()), reads.len() + 1)
    }

    #[tokio::test]
    async fn a_write_waits_while_others_commit_and_gives_up_only_when_stuck() {
        // Every lost try saw a newer version than the one before: others kept committing, so
        // the write goes on past UPDATE_ATTEMPTS losses and lands.
        let moving: Vec<u64> = (1..=UPDATE_ATTEMPTS as u64 + 4).collect();
        let (result, tries) = lost_then_done(&moving).await;
        assert!(result.is_ok(), "{result:?}");
        assert_eq!(tries, moving.len() + 1);
        // Nothing moved between lost tries: UPDATE_ATTEMPTS of those and it gives up.
        let stuck = vec![7; 2 * UPDATE_ATTEMPTS as usize];
        let (result, tries) = lost_then_done(&stuck).await;
        assert!(
            matches!(result, Err(StoreError::ConditionFailed)),
            "{result:?}"
        );
        assert_eq!(tries, UPDATE_ATTEMPTS as usize + 1);
        // Progress in between starts nothing over, but does not count against it either.
        let mixed = [3, 3, 4, 4, 5, 6, 6];
        let (result, tries) = lost_then_done(&mixed).await;
        assert!(result.is_ok(), "{result:?}");
        assert_eq!(tries, mixed.len() + 1);
    }
}
