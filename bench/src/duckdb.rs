//! The DuckDB side of the benches: running a script of `bench/scripts/` with the Python of
//! `--python` (`run_script`), `bench query`'s queries over the same Parquet files, timed by
//! `bench/scripts/bench_query_duckdb.py`, and whether both engines agree on the numbers.

use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use serde_json::{Value, json};

use super::queries::QUERIES;
use super::query::WARMUP;

/// The scripts the benches run: `bench/scripts/` of the checkout this binary was built from.
const SCRIPTS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/scripts");

/// The Python that runs the DuckDB side of a bench.
#[derive(Debug, Clone, clap::Args)]
pub struct Python {
    /// Python with the `duckdb` and `pyarrow` packages, for example `.venv/bin/python` (which
    /// `scripts/test` creates).
    #[arg(
        long = "python",
        env = "ANALYTICS_BENCH_PYTHON",
        default_value = "python3"
    )]
    program: PathBuf,
}

pub(super) async fn time_duckdb(
    files: &[PathBuf],
    runs: usize,
    python: &Python,
) -> anyhow::Result<Value> {
    let queries = QUERIES.iter().map(|q| (q.name, q.duckdb.to_owned()));
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

/// Runs `script` of `bench/scripts/` with `python`, `input` as JSON on stdin, and returns the
/// JSON object it prints, or its `error` as an error.
pub(super) async fn run_script(
    script: &str,
    python: &Python,
    input: &Value,
) -> anyhow::Result<Value> {
    use std::io::Write;
    use std::process::{Command, Stdio};

    let script = Path::new(SCRIPTS).join(script);
    if !script.exists() {
        bail!("{} not found", script.display());
    }
    let python = python.program.clone();
    let input = input.to_string();
    println!("duckdb: {} {}", python.display(), script.display());
    let output = tokio::task::spawn_blocking(move || -> anyhow::Result<std::process::Output> {
        let mut child = Command::new(&python)
            .arg(&script)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .with_context(|| format!("cannot run {}", python.display()))?;
        child
            .stdin
            .take()
            .context("no stdin")?
            .write_all(input.as_bytes())?;
        Ok(child.wait_with_output()?)
    })
    .await??;
    if !output.status.success() {
        bail!("the duckdb script failed ({})", output.status);
    }
    let report: Value =
        serde_json::from_slice(&output.stdout).context("the duckdb script printed no JSON")?;
    if let Some(error) = report["error"].as_str() {
        bail!("{error}");
    }
    Ok(report)
}

/// Whether two answers agree on their numbers, row by row (labels and timestamps are spelled
/// differently by the two engines, and ties may order labels differently).
pub(super) fn same_numbers(ours: &Value, theirs: &Value) -> bool {
    let (Some(ours), Some(theirs)) = (ours.as_array(), theirs.as_array()) else {
        return false;
    };
    ours.len() == theirs.len()
        && ours.iter().zip(theirs).all(|(a, b)| {
            let (Some(a), Some(b)) = (a.as_array(), b.as_array()) else {
                return false;
            };
            a.len() == b.len()
                && a.iter()
                    .zip(b)
                    .all(|(x, y)| match (x.as_f64(), y.as_f64()) {
                        (Some(x), Some(y)) => {
                            (x - y).abs() <= 1e-9_f64.max(1e-6 * x.abs().max(y.abs()))
                        }
                        _ => true,
                    })
        })
}
