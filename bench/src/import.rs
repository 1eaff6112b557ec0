//! `analytics-bench import`: events/s and peak RSS of the bulk importer on a generated PostHog
//! export: gzip NDJSON with properties as JSON text and ClickHouse-style timestamps, as PostHog's
//! batch exports write them. Beside it, DuckDB converting the same file to one Parquet file
//! (`bench/scripts/bench_import_duckdb.py`) and ClickHouse (chDB) loading it into PostHog's events
//! table (`bench/scripts/bench_clickhouse.py`).

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::Context;
use chrono::{DateTime, DurationRound, TimeDelta, Utc};
use common::staging::StagedEvent;
use flate2::Compression;
use flate2::write::GzEncoder;
use indicatif::{ProgressBar, ProgressStyle};
use serde_json::{Value, json};

use super::clickhouse::{self, load_clickhouse};
use super::generator::Generator;
use super::ingestion::{Shredding, imports};
use super::script::{Python, mib, run_script};

/// Events generated at a time.
const CHUNK: usize = 50_000;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Events in the export.
    #[arg(long, default_value_t = 10_000_000)]
    events: u64,
    /// Where the export is written and kept; an existing file is imported as it is.
    /// Default: a temporary file.
    #[arg(long)]
    file: Option<PathBuf>,
    /// Seed of the generator (the same as `bench query`'s).
    #[arg(long, default_value_t = 42)]
    seed: u64,
    #[command(flatten)]
    python: Python,
    /// Leave DuckDB out.
    #[arg(long)]
    skip_duckdb: bool,
    /// Leave ClickHouse (chDB loading the export into PostHog's layout) out; it runs when
    /// `--python` has `chdb`.
    #[arg(long)]
    skip_clickhouse: bool,
    /// Imports with shredding off, on, or both (off, then on: what shredding costs the import).
    /// DuckDB is compared with the last.
    #[arg(long, value_enum, default_value = "both")]
    shredding: Shredding,
}

const EXPORT_TIME: &str = "%Y-%m-%d %H:%M:%S%.6f";

/// One line of a PostHog export.
fn export_line(event: &StagedEvent) -> serde_json::Result<Vec<u8>> {
    let mut line = serde_json::to_vec(&json!({
        "uuid": event.uuid,
        "event": event.event,
        "distinct_id": event.distinct_id,
        "properties": serde_json::to_string(&event.properties)?,
        "elements_chain": event.elements_chain.as_deref().unwrap_or_default(),
        "timestamp": event.timestamp.format(EXPORT_TIME).to_string(),
        "created_at": event.created_at.format(EXPORT_TIME).to_string(),
    }))?;
    line.push(b'\n');
    Ok(line)
}

/// Writes a gzip export of `events` generated events (`seed`'s) up to the current hour to `path`.
pub(super) fn write_export(events: u64, seed: u64, path: &Path) -> anyhow::Result<()> {
    let end = Utc::now().duration_trunc(TimeDelta::hours(1))?;
    write_export_until(events, seed, end, path)
}

/// [`write_export`] of the events generated up to `end`: the events `bench query` loads with the
/// same seed, count and end.
pub(super) fn write_export_until(
    events: u64,
    seed: u64,
    end: DateTime<Utc>,
    path: &Path,
) -> anyhow::Result<()> {
    let mut generator = Generator::new(seed, events, end);
    let file =
        std::fs::File::create(path).with_context(|| format!("cannot create {}", path.display()))?;
    let mut output = GzEncoder::new(std::io::BufWriter::new(file), Compression::fast());
    let bar = ProgressBar::new(events).with_style(
        ProgressStyle::with_template("generating {bar:40} {pos}/{len} events ({eta} left)")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    loop {
        let chunk = generator.chunk(CHUNK);
        if chunk.is_empty() {
            break;
        }
        for event in &chunk {
            output.write_all(&export_line(event)?)?;
        }
        bar.inc(chunk.len() as u64);
    }
    output.finish()?.flush()?;
    bar.finish_and_clear();
    Ok(())
}

pub async fn run(args: Args) -> anyhow::Result<()> {
    let temporary = tempfile::tempdir()?;
    let file = args
        .file
        .clone()
        .unwrap_or_else(|| temporary.path().join("export.ndjson.gz"));
    if file.exists() {
        println!("importing the existing export {}", file.display());
    } else {
        write_export(args.events, args.seed, &file)?;
        println!(
            "generated {} events (seed {}) into {}: {} bytes",
            args.events,
            args.seed,
            file.display(),
            std::fs::metadata(&file)?.len()
        );
    }
    let summaries = imports(&file, args.shredding, temporary.path()).await?;
    let Some(summary) = summaries.last() else {
        return Ok(());
    };
    if !args.skip_duckdb {
        let output = temporary.path().join("duckdb.parquet");
        match time_duckdb(&file, &output, &args.python).await {
            Ok(report) => print_duckdb(summary, &report),
            Err(error) => eprintln!("duckdb side skipped: {error:#}"),
        }
        // The Parquet file is not needed past its size; chDB's table gets the disk next.
        let _ = std::fs::remove_file(&output);
    }
    if !args.skip_clickhouse {
        if !args.python.has_module(clickhouse::MODULE).await {
            println!(
                "clickhouse side skipped: --python has no {}",
                clickhouse::MODULE
            );
            return Ok(());
        }
        let path = temporary.path().join("chdb");
        match load_clickhouse(&file, &path, &args.python).await {
            Ok(report) => print_clickhouse(summary, &report),
            Err(error) => eprintln!("clickhouse side skipped: {error:#}"),
        }
    }
    Ok(())
}

/// ClickHouse's load, then ours over it in events/s (above 1: we are faster).
fn print_clickhouse(ours: &local::import::Summary, report: &Value) {
    clickhouse::print_load(report);
    let rows = report["load"]["rows"].as_u64().unwrap_or(0);
    if rows != ours.report.rows {
        eprintln!("clickhouse loaded {rows} events, ours {}", ours.report.rows);
    }
    if let Some(theirs) = clickhouse::events_per_s(report) {
        println!(
            "ours / clickhouse: {:.2}x events/s",
            ours.events_per_s() / theirs
        );
    }
}

/// DuckDB's report on converting `file` into the Parquet file `output`, on as many threads as
/// our importer uses (one per core).
async fn time_duckdb(file: &Path, output: &Path, python: &Python) -> anyhow::Result<Value> {
    let threads = std::thread::available_parallelism().map_or(2, |n| n.get());
    let input = json!({"file": file, "output": output, "threads": threads});
    run_script("bench_import_duckdb.py", python, &input).await
}

/// DuckDB's figures, then ours over DuckDB's in events/s (above 1: we are faster).
fn print_duckdb(ours: &local::import::Summary, duckdb: &Value) {
    let rows = duckdb["rows"].as_u64().unwrap_or(0);
    let seconds = duckdb["seconds"].as_f64().unwrap_or(f64::NAN);
    let theirs = rows as f64 / seconds.max(1e-9);
    let peak = mib(duckdb["peak_rss_bytes"].as_u64());
    println!(
        "duckdb {} ({} threads): {rows} events to Parquet ({} bytes) in {seconds:.1} s: \
         {theirs:.0} events/s, peak RSS {peak} (the Python process)",
        duckdb["duckdb_version"].as_str().unwrap_or("?"),
        duckdb["threads"],
        duckdb["parquet_bytes"],
    );
    if rows != ours.report.rows {
        eprintln!("duckdb read {rows} events, ours {}", ours.report.rows);
    }
    println!(
        "ours / duckdb: {:.2}x events/s",
        ours.events_per_s() / theirs
    );
}
