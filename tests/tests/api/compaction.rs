//! Compaction on both backends: many small files become one per partition, and scans running
//! throughout see every event exactly once.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use api_tests::World;
use serde_json::json;

/// Sends one `/batch/` request and commits it.
async fn capture_and_commit(world: &World, events: Vec<serde_json::Value>) {
    world.capture(events).await;
    lake::commit_team(&world.backend.state, world.bootstrap.project.id)
        .await
        .unwrap();
}

#[tokio::test]
async fn optimize_and_vacuum_keep_every_event_exactly_once() {
    for world in World::all().await {
        let name = world.name();
        let state = world.backend.state.clone();
        let team = world.bootstrap.project.id;
        for round in 0..6 {
            let events: Vec<_> = (0..20)
                .map(|i| json!({"event": "e", "distinct_id": format!("u{i}"), "timestamp": "2026-11-20T10:00:00Z", "properties": {"round": round}}))
                .collect();
            capture_and_commit(&world, events).await;
        }
        let files = |state: common::AppState| async move {
            let table = lake::table::open_existing(&state, team)
                .await
                .unwrap()
                .unwrap();
            table.get_file_uris().unwrap().count()
        };
        assert_eq!(files(state.clone()).await, 6, "{name}: one file per commit");

        // Readers keep scanning while the table is compacted.
        let stop = Arc::new(AtomicBool::new(false));
        let reader = {
            let (state, stop) = (state.clone(), stop.clone());
            tokio::spawn(async move {
                let mut scans = 0;
                while !stop.load(Ordering::Relaxed) || scans == 0 {
                    let rows = lake::table::scan(&state, team).await.unwrap();
                    assert_eq!(rows.len(), 120, "a scan saw {} rows", rows.len());
                    scans += 1;
                }
                scans
            })
        };
        let report = lake::compaction::compact_team(&state, team).await.unwrap();
        stop.store(true, Ordering::Relaxed);
        let scans = reader.await.unwrap();
        assert!(scans >= 1, "{name}");
        assert_eq!(
            (report.files_removed, report.files_added),
            (6, 1),
            "{name} {report:?}"
        );
        assert_eq!(files(state.clone()).await, 1, "{name}");
        let rows = lake::table::scan(&state, team).await.unwrap();
        assert_eq!(rows.len(), 120, "{name}");
        let unique: std::collections::HashSet<_> = rows.iter().map(|r| r.uuid.clone()).collect();
        assert_eq!(unique.len(), 120, "{name}");

        // Nothing to do the second time; a project without a table is fine.
        let again = lake::compaction::compact_team(&state, team).await.unwrap();
        assert_eq!(again.files_removed, 0, "{name}");
        assert_eq!(
            lake::compaction::compact_team(&state, 999)
                .await
                .unwrap()
                .files_added,
            0,
            "{name}"
        );
    }
}

#[tokio::test]
async fn events_sent_twice_are_kept_once_after_compaction() {
    for world in World::all().await {
        let name = world.name();
        let state = world.backend.state.clone();
        let team = world.bootstrap.project.id;
        let uuid = |i: u32| format!("0192f0a1-7c3e-7b2a-9d41-{i:012}");
        // The second request repeats half of the first (a retry), in a separate commit.
        for (round, range) in [("first", 0..10), ("retry", 5..16)] {
            let events: Vec<_> = range
                .map(|i| {
                    json!({"event": "e", "distinct_id": format!("u{i}"), "uuid": uuid(i),
                    "timestamp": "2026-11-20T10:00:00Z", "properties": {"round": round}})
                })
                .collect();
            capture_and_commit(&world, events).await;
        }
        assert_eq!(lake::table::scan(&state, team).await.unwrap().len(), 21);

        let stop = Arc::new(AtomicBool::new(false));
        let reader = {
            let (state, stop) = (state.clone(), stop.clone());
            tokio::spawn(async move {
                while !stop.load(Ordering::Relaxed) {
                    let rows = lake::table::scan(&state, team).await.unwrap();
                    assert!([21, 16].contains(&rows.len()), "a scan saw {}", rows.len());
                }
            })
        };
        let report = lake::compaction::compact_team(&state, team).await.unwrap();
        stop.store(true, Ordering::Relaxed);
        reader.await.unwrap();
        assert_eq!(report.rows_deduplicated, 5, "{name} {report:?}");
        let rows = lake::table::scan(&state, team).await.unwrap();
        assert_eq!(rows.len(), 16, "{name}");
        let unique: std::collections::HashSet<_> = rows.iter().map(|r| r.uuid.clone()).collect();
        assert_eq!(unique.len(), 16, "{name}");
        for row in rows.iter().filter(|r| r.uuid < uuid(10)) {
            assert!(row.properties.contains("first"), "{name}: {row:?}");
        }
        let again = lake::compaction::compact_team(&state, team).await.unwrap();
        assert_eq!(again.rows_deduplicated, 0, "{name}");
    }
}

#[tokio::test]
async fn compaction_merges_a_days_small_files_into_one_sorted_by_event_and_time() {
    for world in World::all().await {
        let name = world.name();
        let state = world.backend.state.clone();
        let team = world.bootstrap.project.id;
        // Each commit interleaves the events, later commits earlier in the day; a second day.
        for (round, event) in ["c", "b", "a"].iter().enumerate() {
            let events: Vec<_> = (0..10)
                .map(|i| {
                    let interleaved = ["c", "b", "a"][i % 3];
                    json!({"event": interleaved, "distinct_id": format!("u{i}"),
                    "timestamp": format!("2026-11-20T{:02}:00:{i:02}Z", 12 - round),
                    "properties": {"round": round}})
                })
                .chain([json!({"event": event, "distinct_id": "u0",
                    "timestamp": format!("2026-11-21T0{round}:00:00Z")})])
                .collect();
            capture_and_commit(&world, events).await;
        }
        let report = lake::compaction::compact_team(&state, team).await.unwrap();
        assert_eq!(
            (report.files_removed, report.files_added),
            (6, 2),
            "{name} {report:?}"
        );
        let table = lake::table::open_existing(&state, team)
            .await
            .unwrap()
            .unwrap();
        let mut rows = 0;
        for (path, _) in lake::rewrite::file_sizes(&table).unwrap() {
            let keys = api_tests::event_time_keys(&state, team, &path).await;
            assert!(
                keys.is_sorted(),
                "{name}: {path} is not sorted by event and time"
            );
            rows += keys.len();
        }
        assert_eq!(rows, 33, "{name}");
        let scanned = lake::table::scan(&state, team).await.unwrap();
        assert_eq!(scanned.len(), 33, "{name}");
    }
}
