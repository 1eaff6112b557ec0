//! The DuckDB side of the benches: `bench query`'s queries over the table's own Parquet files,
//! timed by `bench/scripts/bench_query_duckdb.py` (the other benches pass their own lists).

use std::path::PathBuf;

use serde_json::{Value, json};

use super::queries::BenchQuery;
use super::query::WARMUP;
use super::script::run_script;
// The other benches reach the shared helpers through here.
pub(super) use super::script::{Python, same_numbers};

pub(super) async fn time_duckdb(
    files: &[PathBuf],
    questions: &[&BenchQuery],
    runs: usize,
    python: &Python,
) -> anyhow::Result<Value> {
    let queries = questions.iter().map(|q| (q.name, q.duckdb.to_owned()));
    time_duckdb_queries(files, queries.collect(), runs, python).await
}

/// Times `(name, sql)` queries in DuckDB over a view `events` of `files`, as `time_duckdb` does
/// for `bench query`'s own list; the script's report (`results` per name) comes back.
pub(super) async fn time_duckdb_queries(
    files: &[PathBuf],
    queries: Vec<(&str, String)>,
    runs: usize,
    python: &Python,
) -> anyhow::Result<Value> {
    let input = json!({
        "files": files,
        "queries": queries.iter().map(|(name, sql)| json!({"name": name, "sql": sql})).collect::<Vec<_>>(),
        "runs": runs.max(1),
        "warmup": WARMUP,
    });
    run_script("bench_query_duckdb.py", python, &input).await
}
