//! `analytics-bench surveys`: `GET /api/projects/:id/surveys/:id/stats/` through the real
//! route over a generated events table holding one survey's events among many others, side by
//! side with the route's two queries written in DuckDB SQL over the same Parquet files, and
//! whether our answer is the one PostHog's formulas make of DuckDB's rows.
//!
//! The events come from `data`, the survey from `setup`, the DuckDB SQL and the comparison from
//! `check`.
//!
//! The query service caches every result under a key made of its SQL and the events table's
//! version, so asking the same stats again would time a cache read. Each request names its own
//! `date_to`, the current instant to the microsecond: later than every event (the answer is the
//! same), but a different bound in the SQL and so a different key. The bench counts the cache
//! files to prove it: each timed request must write the two results it computed.

mod check;
mod data;
mod setup;

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::bail;
use chrono::{DateTime, DurationRound, SecondsFormat, TimeDelta, Utc};
use common::AppState;
use serde_json::Value;
use uuid::Uuid;

use super::duckdb::{Python, time_duckdb_queries};
use super::generator::import_and_report;
use super::query::{BenchData, WARMUP, bench_data, serve, table_files};
use setup::Client;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Events to generate, the survey's among them.
    #[arg(long, default_value_t = 10_000_000)]
    events: u64,
    /// How many of them are the survey's (`survey shown`, `survey dismissed`, `survey sent`).
    #[arg(long, default_value_t = 1_000_000)]
    survey_events: u64,
    /// Data dir to load into (and keep; it must be new); default: a temporary dir.
    #[arg(long)]
    data_dir: Option<PathBuf>,
    /// Seed of the generator.
    #[arg(long, default_value_t = 42)]
    seed: u64,
    /// Timed requests (the best is reported), after one warm-up request.
    #[arg(long, default_value_t = 3)]
    runs: usize,
    #[command(flatten)]
    python: Python,
    /// Time our side only.
    #[arg(long)]
    skip_duckdb: bool,
    /// When `--data-dir` already holds this bench's events and survey, time them again instead
    /// of generating (a 10M-event load takes minutes).
    #[arg(long)]
    reuse: bool,
}

pub async fn run(args: Args) -> anyhow::Result<()> {
    if args.survey_events == 0 || args.events < args.survey_events {
        bail!("--survey-events must be at least 1 and at most --events");
    }
    let BenchData {
        _temporary,
        dir: data_dir,
        state,
        project,
        key,
        loaded,
    } = bench_data(args.data_dir.as_ref(), args.reuse).await?;

    // The survey first: the events must carry the id the API gives it. It starts a day before
    // the 30 days of events, so its window holds all of them.
    let address = serve(state.clone()).await?;
    let mut client = Client::new(address, &key).await?;
    let end = Utc::now().duration_trunc(TimeDelta::hours(1))?;
    let (survey, start) = if loaded {
        setup::find(&mut client, project).await?
    } else {
        setup::create(&mut client, project, end - TimeDelta::days(31)).await?
    };
    if !loaded {
        load(&state, project, &args, survey, end).await?;
    }
    let files = table_files(&state, project).await?;
    let load_peak = local::import::peak_rss_bytes();
    // Reset the high-water mark (Linux: clear_refs 5), so the timed requests get their own peak.
    let reset = std::fs::write("/proc/self/clear_refs", "5").is_ok();

    let cache_dir = data_dir
        .join("objects/query-cache")
        .join(format!("team_id={project}"));
    let ours = time_ours(&mut client, project, survey, &cache_dir, args.runs).await?;
    let split = engine_times(&state, project, ours.timed_from).await;
    let query_peak = local::import::peak_rss_bytes();
    let duckdb = if args.skip_duckdb {
        None
    } else {
        let queries = check::duckdb_queries(survey, start, ours.date_to);
        match time_duckdb_queries(&files, queries, args.runs, &args.python).await {
            Ok(report) => Some(report),
            Err(error) => {
                eprintln!("duckdb side skipped: {error:#}");
                None
            }
        }
    };
    print_table(&ours, duckdb.as_ref());
    if let Some(split) = split {
        println!("ours, per query (the query log's engine time, best of the timed runs): {split}");
    }

    let mib =
        |bytes: Option<u64>| bytes.map_or("?".to_owned(), |b| format!("{} MiB", b / (1 << 20)));
    if reset {
        println!(
            "peak RSS: analytics {} before the requests (startup and load), {} during them",
            mib(load_peak),
            mib(query_peak)
        );
    } else {
        println!(
            "peak RSS: analytics {} (load and requests)",
            mib(query_peak)
        );
    }
    if let Some(report) = &duckdb {
        println!(
            "duckdb {} ({} threads): peak RSS {} (the Python process)",
            report["duckdb_version"].as_str().unwrap_or("?"),
            report["threads"],
            mib(report["peak_rss_bytes"].as_u64()),
        );
    }
    if let Some(error) = &ours.error {
        bail!("the stats route failed: {error}");
    }
    if ours.cached_runs > 0 {
        bail!(
            "{} timed request(s) wrote no new cache entries: a cached answer was timed",
            ours.cached_runs
        );
    }
    Ok(())
}

/// Generates the events into the project's table through the bulk importer.
async fn load(
    state: &AppState,
    project: i64,
    args: &Args,
    survey: Uuid,
    end: DateTime<Utc>,
) -> anyhow::Result<()> {
    let mut generator = data::Generator::new(
        args.seed,
        args.events,
        args.survey_events,
        survey,
        setup::SURVEY_NAME,
        end,
    );
    println!(
        "generating {} events (seed {}; {} of survey {survey}; 30 days up to {end}) into \
         project {project}",
        generator.total(),
        args.seed,
        args.survey_events,
    );
    import_and_report(state, project, &mut generator).await
}

struct Timing {
    best_ms: f64,
    runs_ms: Vec<f64>,
    /// The last answer's body.
    body: Value,
    /// The `date_to` of the last request (DuckDB's window ends there too).
    date_to: DateTime<Utc>,
    /// When the first timed request was sent.
    timed_from: DateTime<Utc>,
    /// Timed requests after which the cache did not grow by the route's two results.
    cached_runs: usize,
    error: Option<String>,
}

/// Files in the project's query cache (none before the first cached result).
fn cache_entries(dir: &Path) -> usize {
    std::fs::read_dir(dir).map_or(0, |entries| entries.count())
}

/// `GET /api/projects/:id/surveys/:id/stats/`, each time with a new `date_to` so the query
/// service computes rather than reads its cache; one warm-up request, then the best of `runs`.
async fn time_ours(
    client: &mut Client,
    project: i64,
    survey: Uuid,
    cache_dir: &Path,
    runs: usize,
) -> anyhow::Result<Timing> {
    let mut timing = Timing {
        best_ms: f64::INFINITY,
        runs_ms: Vec::new(),
        body: Value::Null,
        date_to: Utc::now(),
        timed_from: Utc::now(),
        cached_runs: 0,
        error: None,
    };
    for run in 0..WARMUP + runs.max(1) {
        timing.date_to = Utc::now();
        let path = format!(
            "/api/projects/{project}/surveys/{survey}/stats/?date_to={}",
            timing.date_to.to_rfc3339_opts(SecondsFormat::Micros, true)
        );
        if run == WARMUP {
            timing.timed_from = timing.date_to;
        }
        let before = cache_entries(cache_dir);
        let sent = Instant::now();
        let answer = client.send(hyper::Method::GET, &path, &Value::Null).await?;
        let elapsed = sent.elapsed().as_secs_f64() * 1000.0;
        if answer.status != hyper::StatusCode::OK {
            let error = format!("{}: {}", answer.status, answer.text);
            eprintln!("stats: {error}");
            timing.error = Some(error);
            return Ok(timing);
        }
        if run >= WARMUP {
            timing.best_ms = timing.best_ms.min(elapsed);
            timing.runs_ms.push(elapsed);
            if cache_entries(cache_dir) < before + 2 {
                timing.cached_runs += 1;
            }
        }
        timing.body = answer.body;
    }
    Ok(timing)
}

/// The best engine time of each of the route's queries since `since`, from the query log the
/// query service writes (`None` when it cannot be read).
async fn engine_times(state: &AppState, project: i64, since: DateTime<Utc>) -> Option<String> {
    let records = lake_core::query_log::since(&state.store, project, since)
        .await
        .ok()?;
    let split: Vec<String> = ["survey_stats", "survey_stats_dismissed_and_sent"]
        .iter()
        .filter_map(|name| {
            let best = records
                .iter()
                .filter(|r| r.name.as_deref() == Some(*name))
                .map(|r| r.query_duration_ms)
                .min_by(f64::total_cmp)?;
            Some(format!("{name} {best:.1} ms"))
        })
        .collect();
    (!split.is_empty()).then(|| split.join(", "))
}

fn print_table(ours: &Timing, duckdb: Option<&Value>) {
    let empty = Vec::new();
    let theirs = duckdb
        .and_then(|r| r["results"].as_array())
        .unwrap_or(&empty);
    let find = |name: &str| theirs.iter().find(|r| r["name"].as_str() == Some(name));
    let (per_event, both) = (find(check::EVENTS_QUERY), find(check::BOTH_QUERY));
    for failed in [per_event, both].into_iter().flatten() {
        if let Some(error) = failed["error"].as_str() {
            eprintln!("duckdb {}: {error}", failed["name"]);
        }
    }
    let best = |r: Option<&Value>| r.and_then(|r| r["best_ms"].as_f64());
    let ours_rows = check::ours(&ours.body);
    let expected = match (per_event, both) {
        (Some(p), Some(b)) if p["results"].is_array() && b["results"].is_array() => {
            Some(check::expected(&p["results"], &b["results"]))
        }
        _ => None,
    };
    println!();
    println!(
        "{:<34} {:>10} {:>10} {:>8}  same numbers",
        "request", "ours ms", "duckdb ms", "ratio"
    );
    let ours_ms = match &ours.error {
        Some(_) => "error".to_owned(),
        None => format!("{:.1}", ours.best_ms),
    };
    // DuckDB's time is the sum of its best times of the two queries the route runs.
    let (duck_ms, ratio, same) = match (best(per_event), best(both)) {
        (Some(a), Some(b)) => (
            format!("{:.1}", a + b),
            match ours.error {
                None => format!("{:.2}x", ours.best_ms / (a + b)),
                Some(_) => "-".to_owned(),
            },
            match (&ours.error, &expected) {
                (None, Some(expected)) if check::agree(&ours_rows, expected) => "yes",
                (None, Some(_)) => "NO",
                _ => "-",
            },
        ),
        _ => ("-".to_owned(), "-".to_owned(), "-"),
    };
    println!(
        "{:<34} {:>10} {:>10} {:>8}  {}",
        "GET surveys/:id/stats/", ours_ms, duck_ms, ratio, same
    );
    if let (Some(a), Some(b)) = (best(per_event), best(both)) {
        println!(
            "  duckdb: {} {a:.1} ms + {} {b:.1} ms",
            check::EVENTS_QUERY,
            check::BOTH_QUERY
        );
    }
    let runs: Vec<String> = ours.runs_ms.iter().map(|ms| format!("{ms:.1}")).collect();
    println!(
        "  ours: timed runs {} ms; {} of {} served from the cache",
        runs.join(", "),
        ours.cached_runs,
        ours.runs_ms.len()
    );
    println!();
    // The figures themselves, so a mismatch can be read off.
    println!(
        "[event, total, unique persons, first_us, last_us, persons only seen, total only seen]"
    );
    if ours.error.is_none() {
        println!("  ours   {ours_rows}");
    }
    if let Some(expected) = &expected {
        println!("  duckdb {expected}");
    }
}
