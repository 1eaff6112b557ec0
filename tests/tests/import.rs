//! `analytics import` on the embedded backend: PostHog export lines (properties as JSON text,
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

    local::import::run(data_dir.clone(), team, file)
        .await
        .unwrap();
    let rows = engine::lake::scan(&state, team).await.unwrap();
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
        local::import::run(data_dir, 999, dir.path().join("events.ndjson.gz"))
            .await
            .is_err(),
        "unknown project"
    );
}
