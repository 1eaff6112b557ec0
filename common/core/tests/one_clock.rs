//! Product code reads "now" from the clock in the state (`common::clock`), never from the
//! system directly: a test that moves a `ManualClock` must move every timestamp, expiry and
//! window the code computes. This reads the sources of every product crate (`common/*/src`,
//! `functions/*/src`) and fails on a direct call outside `clock.rs`. Unit-test modules (after
//! `#[cfg(test)]`, or files named `tests.rs`/`*_tests.rs`) and the bench crate may read the
//! system clock. `Instant::now()` (durations, not instants of the data) is allowed.

use std::path::{Path, PathBuf};

const FORBIDDEN: [&str; 3] = ["Utc::now", "SystemTime::now", "Local::now"];

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn rust_files(folder: &Path, found: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(folder) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            rust_files(&path, found);
        } else if path.extension().is_some_and(|extension| extension == "rs") {
            found.push(path);
        }
    }
}

fn is_test_file(path: &Path) -> bool {
    let name = path
        .file_name()
        .and_then(|name| name.to_str())
        .unwrap_or("");
    name == "tests.rs" || name.ends_with("_tests.rs")
}

#[test]
fn product_code_reads_time_only_from_the_clock() {
    let mut sources = Vec::new();
    for family in ["common", "functions"] {
        let Ok(crates) = std::fs::read_dir(workspace().join(family)) else {
            continue;
        };
        for krate in crates.flatten() {
            rust_files(&krate.path().join("src"), &mut sources);
        }
    }
    assert!(sources.len() > 100, "found only {} sources", sources.len());
    let mut offenders = Vec::new();
    for path in sources {
        if is_test_file(&path) || path.ends_with("common/core/src/clock.rs") {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        for (number, line) in text.lines().enumerate() {
            if line.trim_start().starts_with("#[cfg(test)]") {
                break;
            }
            if !line.trim_start().starts_with("//") && FORBIDDEN.iter().any(|f| line.contains(f)) {
                offenders.push(format!(
                    "{}:{}: {}",
                    path.display(),
                    number + 1,
                    line.trim()
                ));
            }
        }
    }
    assert!(
        offenders.is_empty(),
        "read the time from the state's clock (`state.clock.now()`, or `store.clock()`):\n{}",
        offenders.join("\n")
    );
}
