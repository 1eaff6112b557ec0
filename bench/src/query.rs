//! `analytics-bench query`: typical product-analytics queries through the real query API over a
//! deterministic synthetic events table, side by side with DuckDB over the same Parquet files.
//!
//! The queries are in `queries`, the events come from `generator`, the DuckDB side and the
//! comparison of numbers are in `duckdb`.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Instant;

use anyhow::{Context, bail};
use axum::extract::Request;
use chrono::{DurationRound, TimeDelta, Utc};
use common::AppState;
use common::config::{Backend, Config};
use common::models::User;
use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use serde_json::Value;
use tokio::net::TcpListener;
use uuid::Uuid;

use super::duckdb::{Python, same_numbers, time_duckdb};
use super::generator::{Generator, import};
use super::load::connect;
use super::queries::QUERIES;

/// Untimed runs before the timed ones.
pub(super) const WARMUP: usize = 1;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Events to generate.
    #[arg(long, default_value_t = 10_000_000)]
    events: u64,
    /// Data dir to load into (and keep); default: a temporary dir, removed at the end.
    #[arg(long)]
    data_dir: Option<PathBuf>,
    /// When the project's table already has data, query it as it is instead of generating.
    #[arg(long)]
    reuse: bool,
    /// Seed of the generator: the same seed and `--events` give the same events (timestamps
    /// are relative to the hour the data is generated in).
    #[arg(long, default_value_t = 42)]
    seed: u64,
    /// Timed runs per query (the best is reported), after one warm-up run.
    #[arg(long, default_value_t = 3)]
    runs: usize,
    #[command(flatten)]
    python: Python,
    /// Time our queries only.
    #[arg(long)]
    skip_duckdb: bool,
    /// Run compaction (which backfills shredded columns into files that lack them) before the
    /// shredded run, and time it: for a table loaded with `ANALYTICS_SHREDDING=off`.
    #[arg(long)]
    backfill: bool,
    /// After the queries, what shredding costs ingestion: an export of this many events imported
    /// with shredding off and on, and capture loaded with each (0 skips both).
    #[arg(long, default_value_t = 1_000_000)]
    ingestion_events: u64,
    /// Seconds of `POST /batch/` load per capture run in that measure.
    #[arg(long, default_value_t = 5)]
    capture_seconds: u64,
}

/// A bench's data: its folder (`--data-dir`, else a temporary one that `_temporary` keeps until
/// dropped), the embedded state over it, the bench project and its key, and whether the
/// project's events table already has data (refused unless `reuse`: the bench then times what is
/// there instead of generating).
pub struct BenchData {
    pub _temporary: Option<tempfile::TempDir>,
    pub dir: PathBuf,
    pub state: AppState,
    pub project: i64,
    pub key: String,
    pub loaded: bool,
}

pub async fn bench_data(dir: Option<&PathBuf>, reuse: bool) -> anyhow::Result<BenchData> {
    let (temporary, dir) = match dir {
        Some(dir) => (None, dir.clone()),
        None => {
            let temporary = tempfile::tempdir()?;
            let path = temporary.path().to_path_buf();
            (Some(temporary), path)
        }
    };
    let state = embedded_state(dir.clone()).await?;
    let (project, key) = project_and_key(&state).await?;
    println!("data dir {} (project {project})", dir.display());
    let files = table_files(&state, project).await?.len();
    if files > 0 && !reuse {
        bail!(
            "project {project}'s table in {} already has data: pass --reuse, or another --data-dir",
            dir.display()
        );
    }
    if files > 0 {
        println!("reusing the existing table ({files} Parquet files; generation options ignored)");
    }
    Ok(BenchData {
        _temporary: temporary,
        dir,
        state,
        project,
        key,
        loaded: files > 0,
    })
}

pub async fn run(args: Args) -> anyhow::Result<()> {
    if args.events == 0 {
        bail!("--events must be at least 1");
    }
    let BenchData {
        _temporary,
        state,
        project,
        key,
        loaded,
        ..
    } = bench_data(args.data_dir.as_ref(), args.reuse).await?;

    if !loaded {
        load(&state, project, &args).await?;
    }
    let load_peak = local::import::peak_rss_bytes();
    // Reset the high-water mark (Linux: clear_refs 5), so the query phase gets its own peak.
    let reset = std::fs::write("/proc/self/clear_refs", "5").is_ok();

    if args.backfill {
        let started = Instant::now();
        let report = lake::compaction::compact_team(&state, project).await?;
        println!(
            "compaction in {:.1} s: {} files backfilled with shredded columns, {} added, {} removed",
            started.elapsed().as_secs_f64(),
            report.files_backfilled,
            report.files_added,
            report.files_removed
        );
    }
    let files = table_files(&state, project).await?;
    print_shredding(&state, project, &files).await?;
    let unshredded = time_ours(&with_shredding(&state, false), project, &key, args.runs).await?;
    let ours = time_ours(&state, project, &key, args.runs).await?;
    let query_peak = local::import::peak_rss_bytes();
    let duckdb = if args.skip_duckdb {
        None
    } else {
        match time_duckdb(&files, args.runs, &args.python).await {
            Ok(report) => Some(report),
            Err(error) => {
                eprintln!("duckdb side skipped: {error:#}");
                None
            }
        }
    };
    print_table(&unshredded, &ours, duckdb.as_ref());

    let mib =
        |bytes: Option<u64>| bytes.map_or("?".to_owned(), |b| format!("{} MiB", b / (1 << 20)));
    if reset {
        println!(
            "peak RSS: analytics {} before the queries (startup and load), {} during them",
            mib(load_peak),
            mib(query_peak)
        );
    } else {
        println!("peak RSS: analytics {} (load and queries)", mib(query_peak));
    }
    if let Some(report) = &duckdb {
        println!(
            "duckdb {} ({} threads): peak RSS {} (the Python process)",
            report["duckdb_version"].as_str().unwrap_or("?"),
            report["threads"],
            mib(report["peak_rss_bytes"].as_u64()),
        );
    }
    if args.ingestion_events > 0 {
        super::ingestion::shredding_cost(args.ingestion_events, args.seed, args.capture_seconds)
            .await?;
    }
    let failed: Vec<&str> = ours
        .iter()
        .chain(&unshredded)
        .filter(|t| t.error.is_some())
        .map(|t| t.name)
        .collect();
    if !failed.is_empty() {
        bail!("queries failed: {}", failed.join(", "));
    }
    Ok(())
}

/// The same state with shredded columns read (and written) or not.
pub(super) fn with_shredding(state: &AppState, on: bool) -> AppState {
    let mut config = (*state.config).clone();
    config.query.shredding = on;
    AppState {
        config: std::sync::Arc::new(config),
        ..state.clone()
    }
}

/// The table's bytes, and how many of them the shredded columns take (from the Parquet footers).
async fn print_shredding(state: &AppState, project: i64, files: &[PathBuf]) -> anyhow::Result<()> {
    let (total, shredded) = lake::shred::column_bytes(files)?;
    let registry = lake::shred::registry::load(state.store.as_ref(), project).await?;
    let table = lake::table::open_existing(state, project).await?;
    let coverage = match &table {
        Some(table) => lake::shred::Coverage::of(table, &registry)?,
        None => Default::default(),
    };
    let everywhere = coverage.keys.iter().filter(|k| k.everywhere).count();
    let mib = |bytes: u64| bytes as f64 / (1 << 20) as f64;
    println!(
        "table: {} files, {:.1} MiB of column data, {:.1} MiB of it in shredded columns \
         (+{:.1}% over the JSON-only table); {} keys shredded, {} of them in every file",
        files.len(),
        mib(total),
        mib(shredded),
        100.0 * shredded as f64 / (total - shredded).max(1) as f64,
        registry.active().count(),
        everywhere,
    );
    Ok(())
}

/// The embedded backend over `data_dir`, whatever ANALYTICS_BACKEND says.
pub(super) async fn embedded_state(data_dir: PathBuf) -> anyhow::Result<AppState> {
    let mut config = Config::from_env()?;
    config.backend = Backend::Sqlite;
    config.data_dir = data_dir;
    AppState::from_config(config)
        .await
        .context("cannot open the embedded store")
}

/// The bootstrap project and key of a fresh store; on a bootstrapped one, the bootstrap user's
/// current project and a new key.
pub(super) async fn project_and_key(state: &AppState) -> anyhow::Result<(i64, String)> {
    let store = state.store.as_ref();
    if let Some(bootstrap) = common::provisioning::bootstrap_if_empty(store).await? {
        return Ok((bootstrap.project.id, bootstrap.key_secret));
    }
    let meta = store
        .get("META", "BOOTSTRAP")
        .await?
        .context("the store has no bootstrap record")?;
    let user: Uuid = meta.data["user_uuid"]
        .as_str()
        .and_then(|u| u.parse().ok())
        .context("the bootstrap record names no user")?;
    let project = User::load(store, user)
        .await?
        .and_then(|u| u.current_team_id)
        .context("the bootstrap user has no current project")?;
    let (_, secret) =
        common::provisioning::create_key(store, user, "bench query", vec!["*".into()], None, None)
            .await?;
    Ok((project, secret))
}

/// Local paths of the table's active Parquet files (none when there is no table yet).
pub(super) async fn table_files(state: &AppState, project: i64) -> anyhow::Result<Vec<PathBuf>> {
    let Some(table) = lake::table::open_existing(state, project).await? else {
        return Ok(Vec::new());
    };
    table.get_file_uris()?.map(|uri| local_path(&uri)).collect()
}

fn local_path(uri: &str) -> anyhow::Result<PathBuf> {
    let Some(encoded) = uri.strip_prefix("file://") else {
        // Local tables list plain paths.
        if !uri.starts_with('/') {
            bail!("{uri} is not a local file");
        }
        return Ok(PathBuf::from(uri));
    };
    let bytes = encoded.as_bytes();
    let mut decoded = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match (bytes[i], hex) {
            (b'%', Some(byte)) => {
                decoded.push(byte);
                i += 3;
            }
            (byte, _) => {
                decoded.push(byte);
                i += 1;
            }
        }
    }
    Ok(PathBuf::from(String::from_utf8(decoded)?))
}

/// Generates `--events` events into the project's table through the bulk importer.
async fn load(state: &AppState, project: i64, args: &Args) -> anyhow::Result<()> {
    let end = Utc::now().duration_trunc(TimeDelta::hours(1))?;
    println!(
        "generating {} events (seed {}, {} persons, 30 days up to {end}) into project {project}",
        args.events,
        args.seed,
        (args.events / 100).max(1),
    );
    let mut generator = Generator::new(args.seed, args.events, end);
    let (report, generating) = import(state, project, &mut generator).await?;
    let loading = (report.seconds - generating.as_secs_f64()).max(1e-9);
    println!(
        "loaded {} events in {:.1} s ({} commits): {:.0} rows/s through the importer \
         ({:.1} s of it generating; {:.0} rows/s end to end)",
        report.rows,
        report.seconds,
        report.commits,
        report.rows as f64 / loading,
        generating.as_secs_f64(),
        report.rows as f64 / report.seconds.max(1e-9),
    );
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Timing

struct Timing {
    name: &'static str,
    best_ms: f64,
    rows: usize,
    results: Value,
    error: Option<String>,
}

/// Serves the app (no committer, no compaction: nothing changes the table while it is timed).
pub(super) async fn serve(state: AppState) -> anyhow::Result<SocketAddr> {
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let address = listener.local_addr()?;
    let service = axum::ServiceExt::<Request>::into_make_service(local::app(state));
    tokio::spawn(async move { axum::serve(listener, service).await });
    Ok(address)
}

async fn time_ours(
    state: &AppState,
    project: i64,
    key: &str,
    runs: usize,
) -> anyhow::Result<Vec<Timing>> {
    let address = serve(state.clone()).await?;
    let mut sender = connect(address).await?;
    let path = format!("/api/projects/{project}/query/");
    let mut timings = Vec::new();
    for query in QUERIES {
        let body = Bytes::from(query.ours.request().to_string());
        let mut best = f64::INFINITY;
        let mut last = Value::Null;
        let mut error = None;
        for run in 0..WARMUP + runs.max(1) {
            if sender.ready().await.is_err() {
                sender = connect(address).await?;
            }
            let request = hyper::Request::builder()
                .method(hyper::Method::POST)
                .uri(&path)
                .header("host", address.to_string())
                .header("authorization", format!("Bearer {key}"))
                .header("content-type", "application/json")
                .body(Full::new(body.clone()))?;
            let sent = Instant::now();
            let response = sender.send_request(request).await?;
            let status = response.status();
            let bytes = response.into_body().collect().await?.to_bytes();
            let elapsed = sent.elapsed().as_secs_f64() * 1000.0;
            if status != hyper::StatusCode::OK {
                error = Some(format!("{status}: {}", String::from_utf8_lossy(&bytes)));
                break;
            }
            if run >= WARMUP {
                best = best.min(elapsed);
            }
            last = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
        }
        if let Some(error) = &error {
            eprintln!("{}: {error}", query.name);
        }
        let results = query.ours.rows(&last["results"]);
        timings.push(Timing {
            name: query.name,
            best_ms: best,
            rows: results.as_array().map_or(0, |r| r.len()),
            results,
            error,
        });
    }
    Ok(timings)
}

fn print_table(unshredded: &[Timing], ours: &[Timing], duckdb: Option<&Value>) {
    let empty = Vec::new();
    let theirs = duckdb
        .and_then(|r| r["results"].as_array())
        .unwrap_or(&empty);
    println!();
    println!(
        "{:<28} {:>5} {:>10} {:>10} {:>10} {:>8}  same numbers (duckdb, json)",
        "query", "rows", "json ms", "ours ms", "duckdb ms", "ratio"
    );
    for (timing, json) in ours.iter().zip(unshredded) {
        let json_ms = match &json.error {
            Some(_) => "error".to_owned(),
            None => format!("{:.1}", json.best_ms),
        };
        let same_as_json = if json.error.is_none() && timing.error.is_none() {
            if same_numbers(&timing.results, &json.results) {
                "yes"
            } else {
                "NO"
            }
        } else {
            "-"
        };
        let other = theirs
            .iter()
            .find(|r| r["name"].as_str() == Some(timing.name));
        let ours_ms = match &timing.error {
            Some(_) => "error".to_owned(),
            None => format!("{:.1}", timing.best_ms),
        };
        let (duck_ms, ratio, same) = match other {
            Some(other) if other["error"].is_string() => {
                let error = other["error"].as_str().unwrap_or("?");
                eprintln!(
                    "duckdb {}: {}",
                    timing.name,
                    error.lines().next().unwrap_or("")
                );
                ("error".to_owned(), "-".to_owned(), "-")
            }
            Some(other) => {
                let best = other["best_ms"].as_f64().unwrap_or(f64::NAN);
                let ratio = match timing.error {
                    None => format!("{:.2}x", timing.best_ms / best),
                    Some(_) => "-".to_owned(),
                };
                let same = match timing.error {
                    None if same_numbers(&timing.results, &other["results"]) => "yes",
                    None => "NO",
                    Some(_) => "-",
                };
                (format!("{best:.1}"), ratio, same)
            }
            None => ("-".to_owned(), "-".to_owned(), "-"),
        };
        println!(
            "{:<28} {:>5} {:>10} {:>10} {:>10} {:>8}  {}, {}",
            timing.name, timing.rows, json_ms, ours_ms, duck_ms, ratio, same, same_as_json
        );
    }
    println!();
}
