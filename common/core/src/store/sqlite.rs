//! Embedded backend: one SQLite file in WAL mode, shared safely by several processes
//! (`analytics serve`, `analytics admin`, functions under `cargo lambda watch`).

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use rusqlite::{Connection, OpenFlags, OptionalExtension, TransactionBehavior, params};
use tokio::runtime::{Handle, RuntimeFlavor};

use crate::clock::{Clock, SystemClock};

use super::{
    Condition, Cursor, Index, Item, Page, QueryOptions, Store, StoreError, WriteOp,
    validate_transaction, validate_transactions,
};

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS items (
    pk TEXT NOT NULL,
    sk TEXT NOT NULL,
    version INTEGER NOT NULL,
    data TEXT NOT NULL,
    gsi1pk TEXT,
    gsi1sk TEXT,
    expires_at INTEGER,
    PRIMARY KEY (pk, sk)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS items_gsi1 ON items (gsi1pk, gsi1sk, pk, sk) WHERE gsi1pk IS NOT NULL;
";

/// Above every character a key can hold, so `prefix || MAX_CHAR` bounds a prefix range.
const MAX_CHAR: char = '\u{10FFFF}';

/// Read connections per store. A WAL read never waits for writers, so a few connections keep
/// several readers going at once (the async workers' inline reads and blocking threads' reads).
const READERS: usize = 4;

/// What a read may take on an async worker before it is run again off the executor: a point
/// read or a short list costs microseconds there, less than any hand-off to another thread
/// (under load each hand-off woke a thread, and on two cores those threads queued behind each
/// other: the tail of every API request).
const INLINE: Cap = Cap {
    rows: 64,
    bytes: 256 << 10,
};

/// A bound on the rows, and the JSON bytes they hold, that one read returns.
#[derive(Debug, Clone, Copy)]
struct Cap {
    rows: usize,
    bytes: usize,
}

#[derive(Clone)]
pub struct SqliteStore {
    writer: Arc<Mutex<Connection>>,
    /// Empty for in-memory stores, whose one connection is the whole database.
    readers: Arc<Vec<Mutex<Connection>>>,
    /// What "now" is for TTL expiry and for the entities written through this store.
    clock: Arc<dyn Clock>,
}

impl SqliteStore {
    pub fn open(path: &Path) -> Result<Self, StoreError> {
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(|source| StoreError::Folder {
                path: parent.to_owned(),
                source,
            })?;
        }
        let writer = configure(Connection::open(path)?)?;
        writer.execute_batch(SCHEMA)?;
        let readers = (0..READERS)
            .map(|_| {
                let reader = Connection::open_with_flags(
                    path,
                    OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
                )?;
                reader.busy_timeout(Duration::from_secs(10))?;
                cache_pages(&reader)?;
                Ok(Mutex::new(reader))
            })
            .collect::<Result<Vec<_>, StoreError>>()?;
        Ok(Self {
            writer: Arc::new(Mutex::new(writer)),
            readers: Arc::new(readers),
            clock: Arc::new(SystemClock),
        })
    }

    /// The same store reading time from `clock` (the application state's).
    pub fn with_clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = clock;
        self
    }

    fn now_unix(&self) -> i64 {
        self.clock.now().timestamp()
    }

    /// A private in-memory store, for tests and benchmarks.
    pub fn in_memory() -> Result<Self, StoreError> {
        let connection = configure(Connection::open_in_memory()?)?;
        connection.execute_batch(SCHEMA)?;
        Ok(Self {
            writer: Arc::new(Mutex::new(connection)),
            readers: Arc::new(Vec::new()),
            clock: Arc::new(SystemClock),
        })
    }

    /// Runs a write off the async executor: it may wait for another process's lock.
    async fn write<T, F>(&self, work: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(&mut Connection) -> Result<T, StoreError> + Send + 'static,
    {
        let connection = self.writer.clone();
        blocking(move || work(&mut *lock(&connection)?)).await
    }

    /// Runs a short read right here, on the calling task, if a connection is free at once
    /// (never waiting for one): `None` when none is, or when `work` gives up (`Ok(None)`: the
    /// read ran past [`INLINE`]). Then [`Self::read`] runs it off the executor.
    fn read_inline<T>(
        &self,
        work: impl FnOnce(&Connection) -> Result<Option<T>, StoreError>,
    ) -> Option<Result<T, StoreError>> {
        let connection = if self.readers.is_empty() {
            self.writer.try_lock().ok()?
        } else {
            self.readers
                .iter()
                .find_map(|reader| reader.try_lock().ok())?
        };
        work(&connection).transpose()
    }

    /// Runs a read off the async executor: a long query, or one waiting for a connection (an
    /// in-memory store's is the writer's), would otherwise stall every task on the worker.
    /// On a multi-threaded runtime the calling thread becomes the blocking one
    /// (`block_in_place` hands its other tasks to another worker), which spares the hop to
    /// the blocking pool. A current-thread runtime cannot hand its tasks over.
    async fn read<T, F>(&self, work: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(&Connection) -> Result<T, StoreError> + Send + 'static,
    {
        match Handle::try_current().map(|runtime| runtime.runtime_flavor()) {
            Ok(RuntimeFlavor::MultiThread) => tokio::task::block_in_place(|| self.read_here(work)),
            Ok(_) => {
                let store = self.clone();
                blocking(move || store.read_here(work)).await
            }
            // Polled outside any runtime: there is no executor to stall.
            Err(_) => self.read_here(work),
        }
    }

    /// Runs a read on a free read connection (or waits for the first one), on this thread.
    fn read_here<T>(
        &self,
        work: impl FnOnce(&Connection) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        if self.readers.is_empty() {
            return work(&*lock(&self.writer)?);
        }
        for reader in self.readers.iter() {
            if let Ok(connection) = reader.try_lock() {
                return work(&connection);
            }
        }
        work(&*lock(&self.readers[0])?)
    }
}

/// One hop to tokio's blocking pool for a whole store call (never one per item).
async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, StoreError> + Send + 'static,
) -> Result<T, StoreError> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(StoreError::Worker)?
}

fn configure(connection: Connection) -> Result<Connection, StoreError> {
    // Other processes may hold the write lock briefly; wait rather than fail.
    connection.busy_timeout(Duration::from_secs(10))?;
    connection.pragma_update(None, "journal_mode", "WAL")?;
    // Each commit is on disk before it returns (NORMAL could lose the last ones in a power loss),
    // as DynamoDB's writes are durable on success.
    connection.pragma_update(None, "synchronous", "FULL")?;
    // Distinct ids are often random, so a bulk load touches pages all over the file: a larger
    // WAL lets a page changed by many transactions be copied back once per checkpoint.
    connection.pragma_update(None, "wal_autocheckpoint", 16_384)?;
    cache_pages(&connection)?;
    Ok(connection)
}

/// A page cache of 64 MiB and reads through a memory map (SQLite's defaults are 2 MiB and reads
/// copied through the kernel).
fn cache_pages(connection: &Connection) -> Result<(), StoreError> {
    connection.pragma_update(None, "cache_size", -65_536)?;
    connection.pragma_update(None, "mmap_size", 256i64 << 20)?;
    Ok(())
}

fn lock(
    connection: &Mutex<Connection>,
) -> Result<std::sync::MutexGuard<'_, Connection>, StoreError> {
    connection.lock().map_err(|_| StoreError::Poisoned)
}

const COLUMNS: &str = "pk, sk, version, data, gsi1pk, gsi1sk, expires_at";

fn read_item(row: &rusqlite::Row<'_>) -> rusqlite::Result<(Item, String)> {
    let data: String = row.get(3)?;
    Ok((
        Item {
            pk: row.get(0)?,
            sk: row.get(1)?,
            version: row.get::<_, i64>(2)? as u64,
            data: serde_json::Value::Null,
            gsi1pk: row.get(4)?,
            gsi1sk: row.get(5)?,
            expires_at: row.get(6)?,
        },
        data,
    ))
}

fn decode((mut item, data): (Item, String)) -> Result<Item, StoreError> {
    match serde_json::from_str(&data) {
        Ok(value) => item.data = value,
        Err(source) => {
            return Err(StoreError::Decode {
                pk: item.pk,
                sk: item.sk,
                source,
            });
        }
    }
    Ok(item)
}

/// The item unless missing or expired at `now` (unix seconds).
fn get_live(
    connection: &Connection,
    pk: &str,
    sk: &str,
    now: i64,
) -> Result<Option<Item>, StoreError> {
    let found = connection
        .prepare_cached(&format!(
            "SELECT {COLUMNS} FROM items WHERE pk = ?1 AND sk = ?2 \
             AND (expires_at IS NULL OR expires_at > ?3)"
        ))?
        .query_row(params![pk, sk, now], read_item)
        .optional()?;
    found.map(decode).transpose()
}

fn condition_holds(existing: Option<&Item>, condition: Condition) -> bool {
    match condition {
        Condition::None => true,
        Condition::NotExists => existing.is_none(),
        Condition::Exists => existing.is_some(),
        Condition::VersionEquals(version) => existing.is_some_and(|item| item.version == version),
    }
}

fn write_put(connection: &Connection, item: &Item) -> Result<(), StoreError> {
    let data = serde_json::to_string(&item.data).map_err(|source| StoreError::Encode {
        pk: item.pk.clone(),
        sk: item.sk.clone(),
        source,
    })?;
    let values = params![
        item.pk,
        item.sk,
        item.version as i64,
        data,
        item.gsi1pk,
        item.gsi1sk,
        item.expires_at
    ];
    // Most puts rewrite an item under the same index keys: updating in place leaves the index
    // alone (a replace would delete and re-insert its entry too).
    let in_place = connection
        .prepare_cached(&format!(
            "INSERT INTO items ({COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7) \
             ON CONFLICT (pk, sk) DO UPDATE SET version = excluded.version, \
             data = excluded.data, expires_at = excluded.expires_at \
             WHERE items.gsi1pk IS excluded.gsi1pk AND items.gsi1sk IS excluded.gsi1sk"
        ))?
        .execute(values)?;
    if in_place == 0 {
        connection
            .prepare_cached(&format!(
                "INSERT OR REPLACE INTO items ({COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)"
            ))?
            .execute(values)?;
    }
    Ok(())
}

fn write_delete(connection: &Connection, pk: &str, sk: &str) -> Result<(), StoreError> {
    connection
        .prepare_cached("DELETE FROM items WHERE pk = ?1 AND sk = ?2")?
        .execute(params![pk, sk])?;
    Ok(())
}

/// Applies the actions inside one IMMEDIATE transaction: every condition is checked before any write.
fn apply(connection: &mut Connection, ops: &[WriteOp], now: i64) -> Result<(), StoreError> {
    let transaction = connection.transaction_with_behavior(TransactionBehavior::Immediate)?;
    if !apply_within(&transaction, ops, now)? {
        return Err(StoreError::ConditionFailed);
    }
    Ok(transaction.commit()?)
}

/// Applies each group in turn inside one transaction (one commit for all of them); a group
/// whose condition fails writes nothing.
fn apply_each(
    connection: &mut Connection,
    groups: &[Vec<WriteOp>],
    now: i64,
) -> Result<Vec<bool>, StoreError> {
    let transaction = connection.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let applied = groups
        .iter()
        .map(|ops| apply_within(&transaction, ops, now))
        .collect::<Result<Vec<_>, _>>()?;
    transaction.commit()?;
    Ok(applied)
}

/// Checks every condition, then writes every action; `false` (nothing written) when a
/// condition fails.
fn apply_within(connection: &Connection, ops: &[WriteOp], now: i64) -> Result<bool, StoreError> {
    for op in ops {
        let (pk, sk) = op.key();
        let condition = match op {
            WriteOp::Put { condition, .. }
            | WriteOp::Delete { condition, .. }
            | WriteOp::Check { condition, .. } => *condition,
        };
        if condition != Condition::None
            && !condition_holds(get_live(connection, pk, sk, now)?.as_ref(), condition)
        {
            return Ok(false);
        }
    }
    for op in ops {
        match op {
            WriteOp::Put { item, .. } => write_put(connection, item)?,
            WriteOp::Delete { pk, sk, .. } => write_delete(connection, pk, sk)?,
            WriteOp::Check { .. } => {}
        }
    }
    Ok(true)
}

#[async_trait]
impl Store for SqliteStore {
    fn clock(&self) -> &dyn Clock {
        self.clock.as_ref()
    }

    async fn get(&self, pk: &str, sk: &str) -> Result<Option<Item>, StoreError> {
        let now = self.now_unix();
        // One row by its key: always short enough to read inline.
        if let Some(found) =
            self.read_inline(|connection| get_live(connection, pk, sk, now).map(Some))
        {
            return found;
        }
        let (pk, sk) = (pk.to_owned(), sk.to_owned());
        self.read(move |connection| get_live(connection, &pk, &sk, now))
            .await
    }

    async fn put(&self, item: Item, condition: Condition) -> Result<(), StoreError> {
        let now = self.now_unix();
        self.write(move |connection| apply(connection, &[WriteOp::Put { item, condition }], now))
            .await
    }

    async fn delete(&self, pk: &str, sk: &str, condition: Condition) -> Result<(), StoreError> {
        let op = WriteOp::Delete {
            pk: pk.to_owned(),
            sk: sk.to_owned(),
            condition,
        };
        let now = self.now_unix();
        self.write(move |connection| apply(connection, &[op], now))
            .await
    }

    async fn query(&self, partition: &str, options: QueryOptions) -> Result<Page, StoreError> {
        let now = self.now_unix();
        if let Some(page) = self.read_inline(|connection| {
            query_page(connection, partition, &options, now, Some(INLINE))
        }) {
            return page;
        }
        let partition = partition.to_owned();
        self.read(move |connection| {
            // Uncapped, so always a page.
            Ok(query_page(connection, &partition, &options, now, None)?.unwrap_or_default())
        })
        .await
    }

    async fn transact_write(&self, ops: Vec<WriteOp>) -> Result<(), StoreError> {
        validate_transaction(&ops)?;
        let now = self.now_unix();
        self.write(move |connection| apply(connection, &ops, now))
            .await
    }

    async fn transact_write_each(
        &self,
        groups: Vec<Vec<WriteOp>>,
    ) -> Result<Vec<bool>, StoreError> {
        validate_transactions(&groups)?;
        let now = self.now_unix();
        self.write(move |connection| apply_each(connection, &groups, now))
            .await
    }
}

/// The page, or `None` once it holds more than `cap` (the rows past it are never read).
fn query_page(
    connection: &Connection,
    partition: &str,
    options: &QueryOptions,
    now: i64,
    cap: Option<Cap>,
) -> Result<Option<Page>, StoreError> {
    let (partition_column, sort_column, order_columns) = match options.index {
        Index::Primary => ("pk", "sk", "sk"),
        Index::Gsi1 => ("gsi1pk", "gsi1sk", "gsi1sk, pk, sk"),
    };
    let (comparison, direction) = if options.descending {
        ("<", "DESC")
    } else {
        (">", "ASC")
    };
    let mut sql = format!(
        "SELECT {COLUMNS} FROM items WHERE {partition_column} = ?1 \
         AND (expires_at IS NULL OR expires_at > ?2) \
         AND {sort_column} >= ?3 AND {sort_column} < ?4"
    );
    let cursor = match &options.cursor {
        Some(text) => Some(Cursor::decode(text, partition, options.index)?),
        None => None,
    };
    // The range starts (or, descending, ends) at the cursor's key: SQLite seeks the index by
    // these bounds, not by the row-value test below, so with the prefix's bounds alone each
    // page walked every row before the cursor again (100 pages of 100,000 persons: 7.6 s
    // against 0.6 s).
    let mut lower = options.sk_prefix.clone();
    let mut upper = format!("{}{MAX_CHAR}", options.sk_prefix);
    if let Some(cursor) = &cursor {
        let at = match options.index {
            Index::Primary => cursor.sk.clone(),
            Index::Gsi1 => cursor.gsi1sk.clone().unwrap_or_default(),
        };
        if options.descending {
            upper = upper.min(format!("{at}{MAX_CHAR}"));
        } else {
            lower = lower.max(at);
        }
    }
    let mut values: Vec<rusqlite::types::Value> = vec![
        partition.to_owned().into(),
        now.into(),
        lower.into(),
        upper.into(),
    ];
    if let Some(cursor) = cursor {
        match options.index {
            Index::Primary => {
                sql.push_str(&format!(" AND sk {comparison} ?5"));
                values.push(cursor.sk.into());
            }
            Index::Gsi1 => {
                sql.push_str(&format!(" AND (gsi1sk, pk, sk) {comparison} (?5, ?6, ?7)"));
                values.push(cursor.gsi1sk.unwrap_or_default().into());
                values.push(cursor.pk.into());
                values.push(cursor.sk.into());
            }
        }
    }
    let order = order_columns
        .split(", ")
        .map(|column| format!("{column} {direction}"))
        .collect::<Vec<_>>()
        .join(", ");
    sql.push_str(&format!(" ORDER BY {order}"));
    // One extra row tells whether another page exists.
    if let Some(limit) = options.limit {
        sql.push_str(&format!(" LIMIT {}", limit + 1));
    }
    let mut statement = connection.prepare_cached(&sql)?;
    let rows = statement.query_map(rusqlite::params_from_iter(values), read_item)?;
    let (mut items, mut bytes) = (Vec::new(), 0);
    for row in rows {
        let row = row?;
        bytes += row.1.len();
        if let Some(cap) = cap
            && (items.len() >= cap.rows || bytes > cap.bytes)
        {
            return Ok(None);
        }
        items.push(decode(row)?);
    }
    Ok(Some(Page::from_overfetched(items, options)))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// `count` items in partition `pk`, each holding `bytes` of text.
    async fn fill(store: &SqliteStore, pk: &str, count: usize, bytes: usize) {
        let groups = (0..count)
            .map(|i| {
                let item = Item::new(
                    pk,
                    format!("S#{i:05}"),
                    json!({ "text": "x".repeat(bytes) }),
                );
                vec![WriteOp::Put {
                    item,
                    condition: Condition::NotExists,
                }]
            })
            .collect();
        store.transact_write_each(groups).await.unwrap();
    }

    /// A read that runs past the inline cap (in rows or in bytes) is run again off the
    /// executor and answers whole, on a file's read connections and on an in-memory store.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn reads_past_the_inline_cap_answer_whole() {
        let dir = tempfile::tempdir().unwrap();
        let file = SqliteStore::open(&dir.path().join("store.sqlite")).unwrap();
        for store in [file, SqliteStore::in_memory().unwrap()] {
            let partitions = [
                ("UNDER", INLINE.rows - 1, 10),
                ("AT", INLINE.rows, 10),
                ("OVER", INLINE.rows + 1, 10),
                ("LARGE", 3, INLINE.bytes / 2),
            ];
            for (pk, count, bytes) in partitions {
                fill(&store, pk, count, bytes).await;
                let all = store.query(pk, QueryOptions::default()).await.unwrap();
                assert_eq!((all.items.len(), all.cursor), (count, None), "{pk}");
                let mut walked = 0;
                let mut cursor = None;
                loop {
                    let options = QueryOptions {
                        limit: Some(INLINE.rows + 1),
                        cursor,
                        ..Default::default()
                    };
                    let page = store.query(pk, options).await.unwrap();
                    walked += page.items.len();
                    cursor = page.cursor;
                    if cursor.is_none() {
                        break;
                    }
                }
                assert_eq!(walked, count, "{pk}");
                let last = format!("S#{:05}", count - 1);
                assert_eq!(store.get(pk, &last).await.unwrap().unwrap().sk, last);
            }
        }
    }

    /// Paging walks every item of a prefix once, in order, either way, on either index (the
    /// range each page reads starts at its cursor; items sharing a GSI key are ordered by key).
    #[tokio::test]
    async fn pages_walk_a_prefix_once_in_order_either_way_on_either_index() {
        let store = SqliteStore::in_memory().unwrap();
        let groups = (0..25)
            .map(|i| {
                // Three items share each GSI sort key, so pages break inside a run of equals.
                let item = Item::new("P", format!("S#{i:02}"), json!({}))
                    .with_gsi1("G", format!("K#{:02}", i / 3));
                vec![WriteOp::Put {
                    item,
                    condition: Condition::NotExists,
                }]
            })
            .chain([vec![WriteOp::Put {
                item: Item::new("P", "T#00", json!({})).with_gsi1("G", "L#00"),
                condition: Condition::NotExists,
            }]])
            .collect();
        store.transact_write_each(groups).await.unwrap();
        for index in [Index::Primary, Index::Gsi1] {
            let (partition, prefix) = match index {
                Index::Primary => ("P", "S#"),
                Index::Gsi1 => ("G", "K#"),
            };
            for descending in [false, true] {
                let mut walked = Vec::new();
                let mut cursor = None;
                loop {
                    let options = QueryOptions {
                        index,
                        sk_prefix: prefix.into(),
                        limit: Some(4),
                        cursor,
                        descending,
                    };
                    let page = store.query(partition, options).await.unwrap();
                    walked.extend(page.items.into_iter().map(|item| item.sk));
                    cursor = page.cursor;
                    if cursor.is_none() {
                        break;
                    }
                }
                let mut expected: Vec<String> = (0..25).map(|i| format!("S#{i:02}")).collect();
                if descending {
                    expected.reverse();
                }
                assert_eq!(walked, expected, "{index:?}, descending {descending}");
            }
        }
    }
}
