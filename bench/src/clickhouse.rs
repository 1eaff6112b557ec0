//! The ClickHouse side of the benches: the same PostHog export loaded into chDB (ClickHouse
//! embedded, PyPI `chdb`) as PostHog's events table (its sort key, partitions and `mat_` columns),
//! by `bench/scripts/bench_clickhouse.py`, then `bench query`'s questions as PostHog's HogQL prints
//! them for ClickHouse (`queries::QUERIES`' `clickhouse`).

use std::path::Path;

use serde_json::{Value, json};

use super::queries::{BenchQuery, MATERIALIZED};
use super::query::WARMUP;
use super::script::{Python, mib, run_script};

const SCRIPT: &str = "bench_clickhouse.py";
/// The module the script needs: without it the ClickHouse side is left out.
pub(super) const MODULE: &str = "chdb";

/// Loads `export` into a chDB database at `path` (unless `reuse` finds it loaded) and times
/// `bench query`'s questions there; the script's report (`load`, and `results` per name).
pub(super) async fn time_clickhouse(
    export: &Path,
    path: &Path,
    reuse: bool,
    questions: &[&BenchQuery],
    runs: usize,
    python: &Python,
) -> anyhow::Result<Value> {
    let queries: Vec<Value> = questions
        .iter()
        .map(|q| json!({"name": q.name, "sql": q.clickhouse.sql()}))
        .collect();
    let input = request(export, path, reuse, queries, runs);
    run_script(SCRIPT, python, &input).await
}

/// Loads `export` into a fresh chDB database at `path`, and nothing else: `bench import`'s side.
pub(super) async fn load_clickhouse(
    export: &Path,
    path: &Path,
    python: &Python,
) -> anyhow::Result<Value> {
    let input = request(export, path, false, Vec::new(), 1);
    run_script(SCRIPT, python, &input).await
}

fn request(export: &Path, path: &Path, reuse: bool, queries: Vec<Value>, runs: usize) -> Value {
    json!({
        "file": export,
        "path": path,
        "reuse": reuse,
        // The bench's project, in whose guard every query is written.
        "team_id": 1,
        "materialized": MATERIALIZED,
        "queries": queries,
        "runs": runs.max(1),
        "warmup": WARMUP,
    })
}

/// ClickHouse's load as one line: events/s, seconds, peak RSS, parts and size.
pub(super) fn print_load(report: &Value) {
    let load = &report["load"];
    let version = format!(
        "clickhouse {} (chDB {}, {} threads)",
        report["clickhouse_version"].as_str().unwrap_or("?"),
        report["chdb_version"].as_str().unwrap_or("?"),
        report["threads"],
    );
    let rows = load["rows"].as_u64().unwrap_or(0);
    let size = mib(load["bytes_on_disk"].as_u64());
    if load["reused"].as_bool() == Some(true) {
        println!(
            "{version}: reusing the loaded table ({rows} events, {} parts, {size})",
            load["parts"]
        );
        return;
    }
    println!(
        "{version}: loaded {rows} events into PostHog's layout ({} mat_ columns, the final merge \
         included) in {:.1} s: {:.0} events/s, peak RSS {} (the Python process); {} parts, {size}",
        MATERIALIZED.len(),
        load["seconds"].as_f64().unwrap_or(f64::NAN),
        events_per_s(report).unwrap_or(f64::NAN),
        mib(load["peak_rss_bytes"].as_u64()),
        load["parts"],
    );
}

/// ClickHouse's load rate, when it loaded (not reused).
pub(super) fn events_per_s(report: &Value) -> Option<f64> {
    report["load"]["events_per_s"].as_f64()
}
