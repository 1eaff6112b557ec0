//! `analytics-bench experiments`: an `ExperimentQuery` through the real query API (a mean and a
//! funnel metric of an experiment stored as the API stores it) over a generated events table
//! with persons exposed to the experiment's flag, side by side with the same computation in
//! DuckDB SQL over the same Parquet files, and whether both give the same per-variant numbers.
//!
//! The events come from `data`, the flag and experiment from `setup`, the metrics and their
//! DuckDB SQL from `metrics`.

mod data;
mod metrics;
mod setup;

use std::path::PathBuf;
use std::time::Instant;

use anyhow::bail;
use chrono::{DurationRound, TimeDelta, Utc};
use common::AppState;
use serde_json::{Value, json};

use super::duckdb::{Python, same_numbers, time_duckdb_queries};
use super::generator::import_and_report;
use super::query::{BenchData, WARMUP, bench_data, serve, table_files};
use metrics::{BenchMetric, our_rows, same_keys};
use setup::Client;

const FLAG_KEY: &str = "bench-experiment";

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Events to generate (at least the experiment's own: about 4 per exposed person).
    #[arg(long, default_value_t = 10_000_000)]
    events: u64,
    /// Persons exposed to the experiment's flag (half as many others make unrelated events).
    #[arg(long, default_value_t = 200_000)]
    persons: u32,
    /// Data dir to load into (and keep; it must be new); default: a temporary dir.
    #[arg(long)]
    data_dir: Option<PathBuf>,
    /// Seed of the generator.
    #[arg(long, default_value_t = 42)]
    seed: u64,
    /// Timed runs per metric (the best is reported), after one warm-up run.
    #[arg(long, default_value_t = 3)]
    runs: usize,
    #[command(flatten)]
    python: Python,
    /// Time our side only.
    #[arg(long)]
    skip_duckdb: bool,
    /// When `--data-dir` already holds this bench's events and experiment, time them again
    /// instead of generating (a 10M-event load takes minutes).
    #[arg(long)]
    reuse: bool,
}

pub async fn run(args: Args) -> anyhow::Result<()> {
    if args.events == 0 || args.persons == 0 {
        bail!("--events and --persons must be at least 1");
    }
    let BenchData {
        _temporary,
        state,
        project,
        key,
        loaded,
        ..
    } = bench_data(args.data_dir.as_ref(), args.reuse).await?;
    // The experiment starts a day into the data: exposures of the first day do not count.
    let end = Utc::now().duration_trunc(TimeDelta::hours(1))?;
    if !loaded {
        load(&state, project, &args, end).await?;
    }
    let files = table_files(&state, project).await?;

    let address = serve(state.clone()).await?;
    let mut client = Client::new(address, &key).await?;
    let (experiment, start) = if loaded {
        setup::find(&mut client, project, FLAG_KEY).await?
    } else {
        let start = end - TimeDelta::days(29);
        (
            setup::create(&mut client, project, FLAG_KEY, start).await?,
            start,
        )
    };

    let metrics = metrics::metrics(FLAG_KEY, start);
    let mut ours = Vec::new();
    for metric in &metrics {
        ours.push(time_ours(&mut client, project, experiment, metric, args.runs).await?);
    }
    let duckdb = if args.skip_duckdb {
        None
    } else {
        let queries = metrics.iter().map(|m| (m.name, m.duckdb.clone())).collect();
        match time_duckdb_queries(&files, queries, args.runs, &args.python).await {
            Ok(report) => Some(report),
            Err(error) => {
                eprintln!("duckdb side skipped: {error:#}");
                None
            }
        }
    };
    print_table(&metrics, &ours, duckdb.as_ref());

    let failed: Vec<&str> = metrics
        .iter()
        .zip(&ours)
        .filter(|(_, timing)| timing.error.is_some())
        .map(|(metric, _)| metric.name)
        .collect();
    if !failed.is_empty() {
        bail!("ExperimentQuery failed for: {}", failed.join(", "));
    }
    Ok(())
}

/// Generates the events into the project's table through the bulk importer.
async fn load(
    state: &AppState,
    project: i64,
    args: &Args,
    end: chrono::DateTime<Utc>,
) -> anyhow::Result<()> {
    let mut generator = data::Generator::new(args.seed, args.events, args.persons, FLAG_KEY, end);
    println!(
        "generating {} events (seed {}; {} persons exposed to {FLAG_KEY}, {} experiment events; \
         30 days up to {end}) into project {project}",
        generator.total(),
        args.seed,
        args.persons,
        generator.experiment_events(),
    );
    if generator.total() > args.events {
        println!(
            "note: the experiment alone needs {} events, more than --events {}",
            generator.experiment_events(),
            args.events
        );
    }
    import_and_report(state, project, &mut generator).await
}

struct Timing {
    best_ms: f64,
    rows: Value,
    error: Option<String>,
}

/// `POST /api/projects/:id/query/` with the metric's `ExperimentQuery`, `force_blocking` so
/// every run computes; one warm-up run, then the best of `runs`.
async fn time_ours(
    client: &mut Client,
    project: i64,
    experiment: i64,
    metric: &BenchMetric,
    runs: usize,
) -> anyhow::Result<Timing> {
    let path = format!("/api/projects/{project}/query/");
    let body = json!({
        "query": {"kind": "ExperimentQuery", "experiment_id": experiment, "metric": metric.metric},
        "refresh": "force_blocking",
    });
    let mut best = f64::INFINITY;
    let mut last = Value::Null;
    for run in 0..WARMUP + runs.max(1) {
        let sent = Instant::now();
        let answer = client.send(hyper::Method::POST, &path, &body).await?;
        let elapsed = sent.elapsed().as_secs_f64() * 1000.0;
        if answer.status != hyper::StatusCode::OK {
            let error = format!("{}: {}", answer.status, answer.text);
            eprintln!("{}: {error}", metric.name);
            return Ok(Timing {
                best_ms: f64::NAN,
                rows: Value::Null,
                error: Some(error),
            });
        }
        if run >= WARMUP {
            best = best.min(elapsed);
        }
        last = answer.body;
    }
    Ok(Timing {
        best_ms: best,
        rows: our_rows(&last),
        error: None,
    })
}

fn print_table(metrics: &[BenchMetric], ours: &[Timing], duckdb: Option<&Value>) {
    let empty = Vec::new();
    let theirs = duckdb
        .and_then(|r| r["results"].as_array())
        .unwrap_or(&empty);
    println!();
    println!(
        "{:<26} {:>10} {:>10} {:>8}  same numbers",
        "metric", "ours ms", "duckdb ms", "ratio"
    );
    for (metric, timing) in metrics.iter().zip(ours) {
        let other = theirs
            .iter()
            .find(|r| r["name"].as_str() == Some(metric.name));
        let ours_ms = match &timing.error {
            Some(_) => "error".to_owned(),
            None => format!("{:.1}", timing.best_ms),
        };
        let (duck_ms, ratio, same) = match other {
            Some(other) if other["error"].is_string() => {
                let error = other["error"].as_str().unwrap_or("?");
                eprintln!("duckdb {}: {}", metric.name, error);
                ("error".to_owned(), "-".to_owned(), "-")
            }
            Some(other) => {
                let best = other["best_ms"].as_f64().unwrap_or(f64::NAN);
                let agree = same_keys(&timing.rows, &other["results"])
                    && same_numbers(&timing.rows, &other["results"]);
                match timing.error {
                    None => (
                        format!("{best:.1}"),
                        format!("{:.2}x", timing.best_ms / best),
                        if agree { "yes" } else { "NO" },
                    ),
                    Some(_) => (format!("{best:.1}"), "-".to_owned(), "-"),
                }
            }
            None => ("-".to_owned(), "-".to_owned(), "-"),
        };
        println!(
            "{:<26} {:>10} {:>10} {:>8}  {}",
            metric.name, ours_ms, duck_ms, ratio, same
        );
    }
    println!();
    // The per-variant figures, so a mismatch can be read off.
    for (metric, timing) in metrics.iter().zip(ours) {
        let other = theirs
            .iter()
            .find(|r| r["name"].as_str() == Some(metric.name));
        println!(
            "{} [variant, n, sum, sum_squares, step counts...]",
            metric.name
        );
        if timing.error.is_none() {
            println!("  ours   {}", timing.rows);
        }
        if let Some(rows) = other.map(|o| &o["results"]).filter(|r| r.is_array()) {
            println!("  duckdb {rows}");
        }
    }
}
