//! `analytics import`: PostHog export lines (properties as JSON text,
//! ClickHouse timestamps), gzip detected, bad lines skipped, persons resolved.

use std::io::Write;

#[tokio::test]
async fn export_lines_become_rows() {
    let dir = tempfile::tempdir().unwrap();
    let data_dir = dir.path().join("data");
    let config = common::config::Config::from_lookup(|name| {
        (name == "ANALYTICS_DATA_DIR").then(|| data_dir.display().to_string())
    })
    .unwrap();
    let state = common::AppState::from_config(config).await.unwrap();
    let bootstrap = common::provisioning::bootstrap_if_empty(state.store.as_ref())
        .await
        .unwrap()
        .unwrap();
    let team = bootstrap.project.id;

    let file = dir.path().join("events.ndjson.gz");
    let mut encoder = flate2::write::GzEncoder::new(
        std::fs::File::create(&file).unwrap(),
        flate2::Compression::fast(),
    );
    for i in 0..1000 {
        let line = serde_json::json!({
            "uuid": uuid::Uuid::new_v4().to_string(),
            "event": if i == 500 { "$identify" } else { "$pageview" },
            "distinct_id": if i == 500 { "ada".to_string() } else { format!("anon-{}", i % 10) },
            "timestamp": "2026-11-01 10:00:00.123456",
            "properties": if i == 500 {
                r#"{"$anon_distinct_id": "anon-0", "$set": {"email": "ada@example.com"}}"#.to_string()
            } else {
                format!(r#"{{"$current_url": "https://example.com/{i}"}}"#)
            },
        });
        writeln!(encoder, "{line}").unwrap();
    }
    writeln!(encoder, "{{not json").unwrap();
    writeln!(encoder, r#"{{"event": "no distinct id"}}"#).unwrap();
    encoder.finish().unwrap();

    local::import::run(data_dir.clone(), team, file, 1000)
        .await
        .unwrap();
    let rows = lake::table::scan(&state, team).await.unwrap();
    assert_eq!(rows.len(), 1000);
    let first = rows
        .iter()
        .find(|r| r.properties.contains("https://example.com/1\""))
        .unwrap();
    assert_eq!(first.timestamp_micros, 1_793_527_200_123_456);
    let identify = rows.iter().find(|r| r.event == "$identify").unwrap();
    let anon0 = rows.iter().find(|r| r.distinct_id == "anon-0").unwrap();
    assert_eq!(identify.person_id, anon0.person_id);
    assert!(
        local::import::run(data_dir, 999, dir.path().join("events.ndjson.gz"), 1000)
            .await
            .is_err(),
        "unknown project"
    );
}

/// An export out of time order, over several days: every row arrives, each file holds one day,
/// and each file's rows are sorted by event (its code), distinct id and time; imported again,
/// it adds nothing. Both backends.
#[tokio::test]
async fn imported_files_hold_one_day_each_sorted_and_a_second_import_adds_nothing() {
    use deltalake_core::arrow::array::AsArray;

    for world in api_tests::World::all().await {
        let state = world.backend.state.clone();
        let team = world.bootstrap.project.id;
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("events.ndjson");
        let (days, count) = (6, 1_800);
        let mut lines = String::new();
        for i in 0..count {
            // A permutation of 0..count: days and events interleave in the file.
            let n = (i * 7_919) % count;
            let event = ["$pageview", "signup", "purchase"][n % 3];
            let line = serde_json::json!({
                "uuid": uuid::Uuid::from_u128(n as u128 + 1).to_string(),
                "event": event,
                "distinct_id": format!("user-{}", n % 40),
                "timestamp": format!("2026-11-{:02} {:02}:{:02}:00", 10 + n % days, n % 24, n % 60),
                "properties": format!(r#"{{"n": {n}}}"#),
            });
            lines.push_str(&format!("{line}\n"));
        }
        std::fs::write(&file, lines).unwrap();
        local::import::import_file(&state, team, &file)
            .await
            .unwrap();

        let rows = lake::table::scan(&state, team).await.unwrap();
        let uuids: std::collections::HashSet<&str> = rows.iter().map(|r| r.uuid.as_str()).collect();
        assert_eq!(
            (rows.len(), uuids.len()),
            (count, count),
            "{}",
            world.name()
        );

        let table = lake::table::open_or_create(&state, team).await.unwrap();
        let actions = table.snapshot().unwrap().add_actions_table(true).unwrap();
        let paths = actions.column_by_name("path").unwrap().as_string::<i32>();
        let mut days_seen = std::collections::HashSet::new();
        for path in paths.iter().flatten() {
            let day = path.split('/').next().unwrap().to_owned();
            assert!(days_seen.insert(day.clone()), "{day} has two files: {path}");
            let keys = api_tests::event_time_keys(&state, team, path).await;
            assert!(keys.is_sorted(), "{path} is not sorted by event and time");
        }
        assert_eq!(days_seen.len(), days, "{}", world.name());

        // The same export again (an operator re-running a finished import): nothing added,
        // every row counted as already there.
        let again = local::import::import_file(&state, team, &file)
            .await
            .unwrap();
        assert_eq!(
            (again.report.rows, again.report.skipped, again.report.files),
            (count as u64, count as u64, 0),
            "{}",
            world.name()
        );
        assert_eq!(lake::table::scan(&state, team).await.unwrap().len(), count);
    }
}
