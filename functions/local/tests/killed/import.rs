//! `analytics import` killed (SIGKILL) part way, then run again to the end: the table holds every
//! event of the file exactly once, the second run saying how many it found already there.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

/// Events in the export, and rows per commit: enough commits that the kill lands between two.
const EVENTS: usize = 100_000;
const ROWS_PER_COMMIT: usize = 8_000;

async fn state_for(data_dir: &Path) -> common::AppState {
    let data_dir = data_dir.display().to_string();
    let config = common::config::Config::from_lookup(|name| {
        (name == "ANALYTICS_DATA_DIR").then(|| data_dir.clone())
    })
    .unwrap();
    common::AppState::from_config(config).await.unwrap()
}

/// A PostHog export over three days, out of time order.
fn write_export(file: &Path) {
    let mut out = flate2::write::GzEncoder::new(
        std::fs::File::create(file).unwrap(),
        flate2::Compression::fast(),
    );
    for i in 0..EVENTS {
        let n = (i * 7_919) % EVENTS;
        let event = ["$pageview", "signup", "purchase"][n % 3];
        let line = serde_json::json!({
            "uuid": uuid::Uuid::from_u128(n as u128 + 1).to_string(),
            "event": event,
            "distinct_id": format!("user-{}", n % 997),
            "timestamp": format!("2026-11-{:02} {:02}:{:02}:00", 10 + n % 3, n % 24, n % 60),
            "properties": format!(r#"{{"n": {n}, "$browser": "b{}"}}"#, n % 5),
        });
        writeln!(out, "{line}").unwrap();
    }
    out.finish().unwrap();
}

fn import(data_dir: &Path, project: i64, file: &Path) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_analytics"));
    command
        .args([
            "import",
            "--project",
            &project.to_string(),
            "--rows-per-commit",
        ])
        .arg(ROWS_PER_COMMIT.to_string())
        .arg(file)
        .arg("--data-dir")
        .arg(data_dir)
        .env_remove("ANALYTICS_BACKEND")
        .env("RUST_LOG", "warn");
    command
}

/// Delta log entries written so far under `dir` (every table's).
fn commits(dir: &Path) -> usize {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    entries
        .flatten()
        .map(|entry| {
            let path = entry.path();
            if path.is_dir() {
                commits(&path)
            } else {
                usize::from(
                    path.parent().is_some_and(|p| p.ends_with("_delta_log"))
                        && path.extension().is_some_and(|e| e == "json"),
                )
            }
        })
        .sum()
}

#[tokio::test(flavor = "multi_thread")]
async fn an_import_killed_then_run_again_holds_every_event_once() {
    let dir = tempfile::tempdir().unwrap();
    let data_dir = dir.path().join("data");
    let project = {
        let state = state_for(&data_dir).await;
        common::provisioning::bootstrap_if_empty(state.store.as_ref())
            .await
            .unwrap()
            .unwrap()
            .project
            .id
    };
    let file = dir.path().join("export.ndjson.gz");
    write_export(&file);

    let mut first = import(&data_dir, project, &file)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Killed once a few commits are in: the table creation, then data.
    let mut killed = false;
    for _ in 0..6_000 {
        if first.try_wait().unwrap().is_some() {
            break;
        }
        if commits(&data_dir) >= 4 {
            first.kill().unwrap();
            killed = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    first.wait().unwrap();
    assert!(killed, "the first import ended before it could be killed");

    let output = import(&data_dir, project, &file).output().unwrap();
    let printed = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{printed}");
    // "...; {added} added, {skipped} already in the table (skipped); ..."
    let number_before = |words: &str| -> u64 {
        let at = printed.find(words).unwrap_or_else(|| panic!("{printed}"));
        printed[..at]
            .rsplit(|c: char| !c.is_ascii_digit())
            .find(|part| !part.is_empty())
            .and_then(|digits| digits.parse().ok())
            .unwrap_or_else(|| panic!("{printed}"))
    };
    let (added, skipped) = (
        number_before(" added"),
        number_before(" already in the table"),
    );
    assert_eq!(added + skipped, EVENTS as u64, "{printed}");
    assert!(skipped > 0, "the killed run committed nothing: {printed}");

    let state = state_for(&data_dir).await;
    let rows = lake::table::scan(&state, project).await.unwrap();
    let uuids: std::collections::HashSet<&str> = rows.iter().map(|r| r.uuid.as_str()).collect();
    assert_eq!((rows.len(), uuids.len()), (EVENTS, EVENTS));
}
