//! One suite, both backends: every test runs on SQLite and, when the emulator is expected, on DynamoDB.

use std::sync::Arc;

use common::store::{
    self, Condition, Index, Item, QueryOptions, SqliteStore, Store, StoreError, WriteOp,
};
use common::testing;
use serde_json::json;

/// A backend under test; the temp dir holding a SQLite file lives as long as the tuple.
type Backend = (&'static str, Arc<dyn Store>, Option<tempfile::TempDir>);

async fn backends() -> Vec<Backend> {
    backends_with_page_size(None).await
}

/// `page_size` caps DynamoDB's per-request `Limit`, forcing many requests per query.
async fn backends_with_page_size(page_size: Option<i32>) -> Vec<Backend> {
    let dir = tempfile::tempdir().unwrap();
    let file = SqliteStore::open(&dir.path().join("store.sqlite")).unwrap();
    let mut all: Vec<Backend> = vec![
        ("sqlite-memory", Arc::new(testing::memory_store()), None),
        ("sqlite-file", Arc::new(file), Some(dir)),
    ];
    if let Some(dynamo) = testing::dynamo_store().await {
        let dynamo = match page_size {
            Some(size) => dynamo.with_page_size(size),
            None => dynamo,
        };
        all.push(("dynamodb", Arc::new(dynamo), None));
    }
    all
}

/// Adds one to the counter item `C`/`C` `times` times under optimistic locking; `update`'s bounded
/// retries may give up under contention, so the caller tries again.
async fn increment(store: &dyn Store, times: usize) {
    for _ in 0..times {
        loop {
            let result = store::update(store, "C", "C", |mut v: serde_json::Value| {
                v["value"] = json!(v["value"].as_i64().unwrap() + 1);
                Ok(v)
            })
            .await;
            match result {
                Ok(_) => break,
                Err(StoreError::ConditionFailed) => continue,
                Err(other) => panic!("{other}"),
            }
        }
    }
}

fn keys(page: &store::Page) -> Vec<String> {
    page.items.iter().map(|item| item.sk.clone()).collect()
}

fn past() -> i64 {
    chrono::Utc::now().timestamp() - 60
}

fn future() -> i64 {
    chrono::Utc::now().timestamp() + 3600
}

#[tokio::test]
async fn items_round_trip_exactly() {
    for (name, store, _dir) in backends().await {
        let data = json!({"n": 1.5, "big": 9007199254740993u64, "s": "ünï", "null": null, "list": [1, {"a": []}]});
        let item = Item::new("P#1", "S#1", data.clone())
            .with_gsi1("G#1", "X")
            .with_expiry(future());
        store.put(item.clone(), Condition::None).await.unwrap();
        let read = store.get("P#1", "S#1").await.unwrap().expect(name);
        assert_eq!(read, item, "{name}");
        assert!(store.get("P#1", "S#2").await.unwrap().is_none(), "{name}");
        assert!(store.get("P#2", "S#1").await.unwrap().is_none(), "{name}");
    }
}

#[tokio::test]
async fn conditional_puts_and_deletes() {
    for (name, store, _dir) in backends().await {
        let item = Item::new("P", "S", json!({"v": 1}));
        store.put(item.clone(), Condition::NotExists).await.unwrap();
        assert!(
            matches!(
                store.put(item.clone(), Condition::NotExists).await,
                Err(StoreError::ConditionFailed)
            ),
            "{name}"
        );
        assert!(
            matches!(
                store
                    .put(Item::new("P", "missing", json!({})), Condition::Exists)
                    .await,
                Err(StoreError::ConditionFailed)
            ),
            "{name}"
        );

        let mut next = item.clone();
        next.version = 2;
        next.data = json!({"v": 2});
        assert!(
            matches!(
                store.put(next.clone(), Condition::VersionEquals(7)).await,
                Err(StoreError::ConditionFailed)
            ),
            "{name}"
        );
        store
            .put(next.clone(), Condition::VersionEquals(1))
            .await
            .unwrap();
        assert_eq!(
            store.get("P", "S").await.unwrap().unwrap().data,
            json!({"v": 2}),
            "{name}"
        );

        assert!(
            matches!(
                store.delete("P", "S", Condition::VersionEquals(1)).await,
                Err(StoreError::ConditionFailed)
            ),
            "{name}"
        );
        store
            .delete("P", "S", Condition::VersionEquals(2))
            .await
            .unwrap();
        assert!(store.get("P", "S").await.unwrap().is_none(), "{name}");
        // Deleting what is not there is fine unless a condition says otherwise.
        store.delete("P", "S", Condition::None).await.unwrap();
        assert!(
            matches!(
                store.delete("P", "S", Condition::Exists).await,
                Err(StoreError::ConditionFailed)
            ),
            "{name}"
        );
    }
}

#[tokio::test]
async fn optimistic_updates_lose_nothing_under_concurrency() {
    for (name, store, _dir) in backends().await {
        store
            .put(
                Item::new("C", "C", json!({"value": 0})),
                Condition::NotExists,
            )
            .await
            .unwrap();
        let mut tasks = Vec::new();
        for _ in 0..8 {
            let store = store.clone();
            tasks.push(tokio::spawn(async move {
                increment(store.as_ref(), 3).await;
            }));
        }
        for task in tasks {
            task.await.unwrap();
        }
        let item = store.get("C", "C").await.unwrap().unwrap();
        assert_eq!(item.data["value"], 24, "{name}");
        assert_eq!(item.version, 25, "{name}");
        assert!(
            matches!(
                store::update(store.as_ref(), "C", "absent", |v: serde_json::Value| Ok(v)).await,
                Err(StoreError::ConditionFailed)
            ),
            "{name}"
        );
    }
}

async fn fill(store: &dyn Store, pk: &str, count: usize) {
    let ops: Vec<WriteOp> = (0..count)
        .map(|i| WriteOp::Put {
            item: Item::new(pk, format!("ITEM#{i:03}"), json!({"i": i}))
                .with_gsi1(format!("G{pk}"), format!("{:03}", count - i)),
            condition: Condition::None,
        })
        .collect();
    store.transact_write(ops).await.unwrap();
}

async fn walk(
    store: &dyn Store,
    partition: &str,
    mut options: QueryOptions,
) -> (Vec<String>, usize) {
    let mut all = Vec::new();
    let mut pages = 0;
    loop {
        let page = store.query(partition, options.clone()).await.unwrap();
        pages += 1;
        if let Some(limit) = options.limit {
            assert!(page.items.len() <= limit);
        }
        all.extend(keys(&page));
        match page.cursor {
            Some(cursor) => options.cursor = Some(cursor),
            None => return (all, pages),
        }
        assert!(pages < 1000, "pagination does not end");
    }
}

#[tokio::test]
async fn queries_walk_a_prefix_in_order_with_cursors() {
    for (name, store, _dir) in backends_with_page_size(Some(2)).await {
        fill(store.as_ref(), "Q", 10).await;
        store
            .put(Item::new("Q", "OTHER#1", json!({})), Condition::None)
            .await
            .unwrap();
        store
            .put(Item::new("Q2", "ITEM#999", json!({})), Condition::None)
            .await
            .unwrap();

        let expected: Vec<String> = (0..10).map(|i| format!("ITEM#{i:03}")).collect();
        let everything = store
            .query(
                "Q",
                QueryOptions {
                    sk_prefix: "ITEM#".into(),
                    ..Default::default()
                },
            )
            .await
            .unwrap();
        assert_eq!(keys(&everything), expected, "{name}");
        assert!(everything.cursor.is_none(), "{name}");

        let (walked, pages) = walk(
            store.as_ref(),
            "Q",
            QueryOptions {
                sk_prefix: "ITEM#".into(),
                limit: Some(3),
                ..Default::default()
            },
        )
        .await;
        assert_eq!(walked, expected, "{name}");
        assert_eq!(pages, 4, "{name}");

        // An exact fit hands out no cursor to an empty page.
        let (walked, pages) = walk(
            store.as_ref(),
            "Q",
            QueryOptions {
                sk_prefix: "ITEM#".into(),
                limit: Some(5),
                ..Default::default()
            },
        )
        .await;
        assert_eq!((walked.len(), pages), (10, 2), "{name}");

        let (backwards, _) = walk(
            store.as_ref(),
            "Q",
            QueryOptions {
                sk_prefix: "ITEM#".into(),
                limit: Some(4),
                descending: true,
                ..Default::default()
            },
        )
        .await;
        assert_eq!(
            backwards,
            expected.iter().rev().cloned().collect::<Vec<_>>(),
            "{name}"
        );

        let (by_gsi, _) = walk(
            store.as_ref(),
            "GQ",
            QueryOptions {
                index: Index::Gsi1,
                limit: Some(3),
                ..Default::default()
            },
        )
        .await;
        assert_eq!(
            by_gsi,
            expected.iter().rev().cloned().collect::<Vec<_>>(),
            "{name}"
        );

        let all = walk(store.as_ref(), "Q", QueryOptions::default()).await.0;
        assert_eq!(all.len(), 11, "{name}");
    }
}

#[tokio::test]
async fn cursors_are_opaque_and_bound_to_their_partition() {
    for (name, store, _dir) in backends().await {
        fill(store.as_ref(), "A", 4).await;
        fill(store.as_ref(), "B", 4).await;
        let page = store
            .query(
                "A",
                QueryOptions {
                    limit: Some(2),
                    ..Default::default()
                },
            )
            .await
            .unwrap();
        let cursor = page.cursor.clone().unwrap();
        let elsewhere = store
            .query(
                "B",
                QueryOptions {
                    limit: Some(2),
                    cursor: Some(cursor.clone()),
                    ..Default::default()
                },
            )
            .await;
        assert!(
            matches!(elsewhere, Err(StoreError::InvalidCursor)),
            "{name}"
        );
        let on_gsi = store
            .query(
                "A",
                QueryOptions {
                    index: Index::Gsi1,
                    cursor: Some(cursor),
                    ..Default::default()
                },
            )
            .await;
        assert!(matches!(on_gsi, Err(StoreError::InvalidCursor)), "{name}");
        for garbage in ["", "!!!", "e30", "bm90IGpzb24"] {
            let result = store
                .query(
                    "A",
                    QueryOptions {
                        cursor: Some(garbage.into()),
                        ..Default::default()
                    },
                )
                .await;
            assert!(
                matches!(result, Err(StoreError::InvalidCursor)),
                "{name} {garbage:?}"
            );
        }
    }
}

#[tokio::test]
async fn pagination_crosses_one_megabyte_pages() {
    for (name, store, _dir) in backends().await {
        // 30 items of ~100 KB: DynamoDB answers a full query in at least three 1 MB pages.
        let filler = "x".repeat(100_000);
        for chunk in (0..30).collect::<Vec<usize>>().chunks(10) {
            let ops = chunk
                .iter()
                .map(|i| WriteOp::Put {
                    item: Item::new(
                        "BIG",
                        format!("ITEM#{i:03}"),
                        json!({"i": i, "filler": filler}),
                    ),
                    condition: Condition::None,
                })
                .collect();
            store.transact_write(ops).await.unwrap();
        }
        let expected: Vec<String> = (0..30).map(|i| format!("ITEM#{i:03}")).collect();
        let all = store.query("BIG", QueryOptions::default()).await.unwrap();
        assert_eq!(keys(&all), expected, "{name}");
        let (walked, pages) = walk(
            store.as_ref(),
            "BIG",
            QueryOptions {
                limit: Some(25),
                ..Default::default()
            },
        )
        .await;
        assert_eq!(walked, expected, "{name}");
        assert_eq!(pages, 2, "{name}");
    }
}

#[tokio::test]
async fn expired_items_are_invisible() {
    for (name, store, _dir) in backends_with_page_size(Some(2)).await {
        for i in 0..12 {
            let item = Item::new("T", format!("ITEM#{i:02}"), json!({"i": i}));
            // Two in three are expired, in runs that leave whole DynamoDB pages empty after filtering.
            let item = if i % 3 == 2 {
                item.with_expiry(future())
            } else {
                item.with_expiry(past())
            };
            store.put(item, Condition::None).await.unwrap();
        }
        assert!(store.get("T", "ITEM#00").await.unwrap().is_none(), "{name}");
        assert!(store.get("T", "ITEM#02").await.unwrap().is_some(), "{name}");
        let (walked, _) = walk(
            store.as_ref(),
            "T",
            QueryOptions {
                limit: Some(1),
                ..Default::default()
            },
        )
        .await;
        assert_eq!(
            walked,
            vec!["ITEM#02", "ITEM#05", "ITEM#08", "ITEM#11"],
            "{name}"
        );
        // An expired item counts as absent for conditions.
        store
            .put(
                Item::new("T", "ITEM#00", json!({"fresh": true})),
                Condition::NotExists,
            )
            .await
            .unwrap();
        assert!(
            matches!(
                store
                    .put(Item::new("T", "ITEM#01", json!({})), Condition::Exists)
                    .await,
                Err(StoreError::ConditionFailed)
            ),
            "{name}"
        );
    }
}

#[tokio::test]
async fn transactions_are_all_or_nothing() {
    for (name, store, _dir) in backends().await {
        store
            .put(Item::new("X", "TAKEN", json!({})), Condition::None)
            .await
            .unwrap();
        let ops = vec![
            WriteOp::Put {
                item: Item::new("X", "NEW1", json!({})),
                condition: Condition::NotExists,
            },
            WriteOp::Delete {
                pk: "X".into(),
                sk: "TAKEN".into(),
                condition: Condition::Exists,
            },
            WriteOp::Put {
                item: Item::new("X", "NEW2", json!({})),
                condition: Condition::NotExists,
            },
            WriteOp::Check {
                pk: "X".into(),
                sk: "ABSENT".into(),
                condition: Condition::Exists,
            },
        ];
        assert!(
            matches!(
                store.transact_write(ops).await,
                Err(StoreError::ConditionFailed)
            ),
            "{name}"
        );
        assert!(store.get("X", "NEW1").await.unwrap().is_none(), "{name}");
        assert!(store.get("X", "TAKEN").await.unwrap().is_some(), "{name}");

        let duplicate = vec![
            WriteOp::Put {
                item: Item::new("X", "D", json!({})),
                condition: Condition::None,
            },
            WriteOp::Delete {
                pk: "X".into(),
                sk: "D".into(),
                condition: Condition::None,
            },
        ];
        assert!(
            matches!(
                store.transact_write(duplicate).await,
                Err(StoreError::Invalid(_))
            ),
            "{name}"
        );
        assert!(
            matches!(
                store.transact_write(vec![]).await,
                Err(StoreError::Invalid(_))
            ),
            "{name}"
        );

        let hundred: Vec<WriteOp> = (0..100)
            .map(|i| WriteOp::Put {
                item: Item::new("H", format!("{i:03}"), json!({})),
                condition: Condition::NotExists,
            })
            .collect();
        let mut too_many = hundred.clone();
        too_many.push(WriteOp::Put {
            item: Item::new("H", "100", json!({})),
            condition: Condition::None,
        });
        assert!(
            matches!(
                store.transact_write(too_many).await,
                Err(StoreError::Invalid(_))
            ),
            "{name}"
        );
        store.transact_write(hundred).await.unwrap();
        assert_eq!(
            store
                .query("H", QueryOptions::default())
                .await
                .unwrap()
                .items
                .len(),
            100,
            "{name}"
        );
    }
}

#[tokio::test]
async fn grouped_transactions_each_succeed_or_fail_whole() {
    let put = |sk: &str| WriteOp::Put {
        item: Item::new("G", sk, json!({ "sk": sk })),
        condition: Condition::NotExists,
    };
    for (name, store, _dir) in backends().await {
        store
            .put(Item::new("G", "TAKEN", json!({})), Condition::None)
            .await
            .unwrap();
        let applied = store
            .transact_write_each(vec![
                vec![put("A"), put("B")],
                vec![put("C"), put("TAKEN")],
                vec![put("D")],
            ])
            .await
            .unwrap();
        assert_eq!(applied, [true, false, true], "{name}");
        let page = store.query("G", QueryOptions::default()).await.unwrap();
        assert_eq!(keys(&page), ["A", "B", "D", "TAKEN"], "{name}");
        assert!(
            matches!(
                store
                    .transact_write_each(vec![vec![put("E")], vec![]])
                    .await,
                Err(StoreError::Invalid(_))
            ),
            "{name}"
        );
    }
}

/// Several processes (here: several independent stores on one file) share the SQLite store safely.
#[tokio::test]
async fn sqlite_files_are_shared_safely_between_openers() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store.sqlite");
    let first = Arc::new(SqliteStore::open(&path).unwrap());
    let second = Arc::new(SqliteStore::open(&path).unwrap());
    first
        .put(
            Item::new("C", "C", json!({"value": 0})),
            Condition::NotExists,
        )
        .await
        .unwrap();
    let mut tasks = Vec::new();
    for store in [first.clone(), second.clone(), first.clone(), second.clone()] {
        tasks.push(tokio::spawn(async move {
            increment(store.as_ref(), 10).await;
        }));
    }
    for task in tasks {
        task.await.unwrap();
    }
    let item = second.get("C", "C").await.unwrap().unwrap();
    assert_eq!(item.data["value"], 40);
    assert_eq!(item.version, 41);
}

/// A store where another writer always gets in first: before each conditional put, the item
/// is rewritten behind the caller's back, so the put loses the race.
struct AlwaysContended {
    inner: Arc<dyn Store>,
    puts: std::sync::atomic::AtomicU32,
}

#[async_trait::async_trait]
impl Store for AlwaysContended {
    async fn get(&self, pk: &str, sk: &str) -> Result<Option<Item>, StoreError> {
        self.inner.get(pk, sk).await
    }

    async fn put(&self, item: Item, condition: Condition) -> Result<(), StoreError> {
        self.puts.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        if let Some(mut current) = self.inner.get(&item.pk, &item.sk).await? {
            current.version += 1;
            self.inner.put(current, Condition::None).await?;
        }
        self.inner.put(item, condition).await
    }

    async fn delete(&self, pk: &str, sk: &str, condition: Condition) -> Result<(), StoreError> {
        self.inner.delete(pk, sk, condition).await
    }

    async fn query(
        &self,
        partition: &str,
        options: QueryOptions,
    ) -> Result<store::Page, StoreError> {
        self.inner.query(partition, options).await
    }

    async fn transact_write(&self, ops: Vec<WriteOp>) -> Result<(), StoreError> {
        self.inner.transact_write(ops).await
    }
}

#[tokio::test]
async fn updates_that_keep_losing_give_up_after_bounded_attempts() {
    for (name, inner, _dir) in backends().await {
        inner
            .put(
                Item::new("C", "C", json!({"value": 0})),
                Condition::NotExists,
            )
            .await
            .unwrap();
        let store = AlwaysContended {
            inner: inner.clone(),
            puts: Default::default(),
        };
        let mut changes = 0;
        let result = store::update(&store, "C", "C", |mut v: serde_json::Value| {
            changes += 1;
            v["value"] = json!(1);
            Ok(v)
        })
        .await;
        assert!(
            matches!(result, Err(StoreError::ConditionFailed)),
            "{name}: {result:?}"
        );
        assert_eq!(changes, store::UPDATE_ATTEMPTS, "{name}");
        assert_eq!(
            store.puts.load(std::sync::atomic::Ordering::Relaxed),
            store::UPDATE_ATTEMPTS,
            "{name}"
        );
        let item = inner.get("C", "C").await.unwrap().unwrap();
        assert_eq!(item.data["value"], 0, "{name}: no lost race wrote anything");
    }
}

/// The whole chain of an error, outermost first.
fn chain(error: &dyn std::error::Error) -> Vec<String> {
    std::iter::successors(Some(error), |e| e.source())
        .map(ToString::to_string)
        .collect()
}

#[tokio::test]
async fn errors_keep_their_causes() {
    // An item whose data is not the entity asked for.
    let item = Item::new("P", "S", json!({"value": "not a number"}));
    let error = item
        .parse::<std::collections::HashMap<String, i64>>()
        .unwrap_err();
    assert!(matches!(error, StoreError::Decode { .. }), "{error:?}");
    let causes = chain(&error);
    assert_eq!(causes[0], "item P/S does not decode");
    assert!(
        causes.len() >= 2 && causes[1].contains("invalid type"),
        "{causes:?}"
    );

    // SQLite: a folder where the file should be, and a file where the folder should be.
    let dir = tempfile::tempdir().unwrap();
    let Err(error) = SqliteStore::open(dir.path()) else {
        panic!("a folder opened as a database");
    };
    assert!(matches!(error, StoreError::Sqlite(_)), "{error:?}");
    assert!(chain(&error).len() >= 2, "{:?}", chain(&error));
    let file = dir.path().join("file");
    std::fs::write(&file, "").unwrap();
    let Err(error) = SqliteStore::open(&file.join("store.sqlite")) else {
        panic!("a database under a file");
    };
    assert!(matches!(error, StoreError::Folder { .. }), "{error:?}");
    let io = std::error::Error::source(&error).and_then(|e| e.downcast_ref::<std::io::Error>());
    assert!(io.is_some(), "{:?}", chain(&error));

    // DynamoDB: a call on a table that does not exist names the operation and keeps the
    // service's answer as the cause.
    if let Some(endpoint) = testing::emulator_endpoint() {
        let missing = store::DynamoStore::new(testing::dynamo_client(&endpoint), "no-such-table");
        let error = missing.get("P", "S").await.unwrap_err();
        assert!(
            matches!(
                error,
                StoreError::Dynamo {
                    operation: "GetItem",
                    ..
                }
            ),
            "{error:?}"
        );
        let causes = chain(&error);
        assert_eq!(causes[0], "DynamoDB GetItem failed");
        assert!(
            causes
                .iter()
                .any(|cause| cause.contains("ResourceNotFound")),
            "{causes:?}"
        );
    }
}

/// 10,000 items in partition `P`: a read of them all takes hundreds of milliseconds in a debug
/// build, far beyond a thread's scheduling delay.
const LONG_READ_ITEMS: usize = 10_000;

async fn fill_for_a_long_read(store: &SqliteStore) {
    let groups = (0..LONG_READ_ITEMS)
        .map(|i| {
            vec![WriteOp::Put {
                item: Item::new("P", format!("S#{i:05}"), json!({"i": i})),
                condition: Condition::None,
            }]
        })
        .collect();
    store.transact_write_each(groups).await.unwrap();
}

/// SQLite reads leave the executor free: on a one-thread runtime another task runs while a
/// long read is in flight (an inline read would never yield).
#[tokio::test(flavor = "current_thread")]
async fn sqlite_reads_run_off_the_executor() {
    let dir = tempfile::tempdir().unwrap();
    let file = SqliteStore::open(&dir.path().join("store.sqlite")).unwrap();
    for store in [file, testing::memory_store()] {
        fill_for_a_long_read(&store).await;
        let ticker = testing::Ticker::start();
        let page = store.query("P", QueryOptions::default()).await.unwrap();
        assert_eq!(page.items.len(), LONG_READ_ITEMS);
        assert!(ticker.ticks.get() > 0);
    }
}

/// The same on a multi-threaded runtime with one worker, where a read takes over its calling
/// thread (`block_in_place`): the worker's other tasks move to another thread meanwhile.
#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn sqlite_reads_leave_the_only_worker_free() {
    let store = Arc::new(testing::memory_store());
    fill_for_a_long_read(&store).await;
    let ticker = testing::Ticker::start();
    // The test's own future runs outside the worker; the read must run on it.
    let reader = tokio::spawn({
        let (store, ticks) = (store.clone(), ticker.ticks.clone());
        async move {
            let before = ticks.get();
            let page = store.query("P", QueryOptions::default()).await.unwrap();
            assert_eq!(page.items.len(), LONG_READ_ITEMS);
            ticks.get() - before
        }
    });
    let ticked_during_read = reader.await.unwrap();
    assert!(ticked_during_read > 0);
}
