//! `analytics-bench query`: typical product-analytics queries through the real query API over a
//! deterministic synthetic events table, side by side with ClickHouse holding the same events in
//! PostHog's layout (chDB) and DuckDB over the same Parquet files.
//!
//! The queries are in `queries`, the events come from `generator`, the engines' sides are in
//! `clickhouse` and `duckdb`, what they share (running a script, comparing answers) in `script`.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, bail};
use axum::extract::Request;
use chrono::{DateTime, DurationRound, TimeDelta, Utc};
use common::AppState;
use common::config::{Backend, Config};
use common::models::User;
use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use serde_json::Value;
use tokio::net::TcpListener;
use uuid::Uuid;

use super::clickhouse::{self, time_clickhouse};
use super::duckdb::time_duckdb;
use super::generator::{Generator, import};
use super::import::write_export_until;
use super::load::connect;
use super::queries::{BenchQuery, QUERIES};
use super::script::{Agreement, Python, mib, result_of};

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
    /// Leave DuckDB out.
    #[arg(long)]
    skip_duckdb: bool,
    /// Leave ClickHouse out (it runs when `--python` has `chdb`): otherwise the generated events
    /// are also written as a PostHog export (`export.ndjson.gz` in the data dir) and loaded into
    /// chDB (`chdb/` there) in PostHog's layout.
    #[arg(long)]
    skip_clickhouse: bool,
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
    /// Only these questions (names as printed, comma-separated), on every engine: for profiling one.
    #[arg(long, value_delimiter = ',')]
    only: Vec<String>,
}

/// The questions `--only` keeps (all of them when it is empty); an unknown name is an error.
fn selected(only: &[String]) -> anyhow::Result<Vec<&'static BenchQuery>> {
    if let Some(unknown) = only
        .iter()
        .find(|name| !QUERIES.iter().any(|q| q.name == *name))
    {
        let names: Vec<&str> = QUERIES.iter().map(|q| q.name).collect();
        bail!(
            "--only: no question {unknown}; the questions are {}",
            names.join(", ")
        );
    }
    Ok(QUERIES
        .iter()
        .filter(|q| only.is_empty() || only.iter().any(|name| name == q.name))
        .collect())
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
    let questions = selected(&args.only)?;
    let BenchData {
        _temporary,
        dir,
        state,
        project,
        key,
        loaded,
    } = bench_data(args.data_dir.as_ref(), args.reuse).await?;

    let with_clickhouse = !args.skip_clickhouse && args.python.has_module(clickhouse::MODULE).await;
    if !args.skip_clickhouse && !with_clickhouse {
        println!(
            "clickhouse side skipped: --python has no {}",
            clickhouse::MODULE
        );
    }
    let export = dir.join("export.ndjson.gz");
    if !loaded {
        let end = Utc::now().duration_trunc(TimeDelta::hours(1))?;
        if with_clickhouse {
            write_clickhouse_export(&args, end, &export)?;
        }
        load(&state, project, &args, end).await?;
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
    let unshredded = time_ours(
        &with_shredding(&state, false),
        project,
        &key,
        &questions,
        args.runs,
    )
    .await?;
    let ours = time_ours(&state, project, &key, &questions, args.runs).await?;
    let query_peak = local::import::peak_rss_bytes();
    let duckdb = if args.skip_duckdb {
        None
    } else {
        match time_duckdb(&files, &questions, args.runs, &args.python).await {
            Ok(report) => Some(report),
            Err(error) => {
                eprintln!("duckdb side skipped: {error:#}");
                None
            }
        }
    };
    let clickhouse = if !with_clickhouse {
        None
    } else if !export.exists() {
        println!(
            "clickhouse side skipped: no export {} beside the reused table",
            export.display()
        );
        None
    } else {
        let path = dir.join("chdb");
        match time_clickhouse(&export, &path, loaded, &questions, args.runs, &args.python).await {
            Ok(report) => {
                clickhouse::print_load(&report);
                Some(report)
            }
            Err(error) => {
                eprintln!("clickhouse side skipped: {error:#}");
                None
            }
        }
    };
    print_table(
        &questions,
        &unshredded,
        &ours,
        clickhouse.as_ref(),
        duckdb.as_ref(),
    );

    if reset {
        println!(
            "peak RSS: analytics {} before the queries (startup and load), {} during them",
            mib(load_peak),
            mib(query_peak)
        );
    } else {
        println!("peak RSS: analytics {} (load and queries)", mib(query_peak));
    }
    if let Some(report) = &clickhouse {
        println!(
            "clickhouse: peak RSS {} during the queries (the Python process)",
            mib(report["peak_rss_bytes"].as_u64()),
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

/// The same events as `load` generates (same seed, count and end) as a PostHog export at `path`,
/// for ClickHouse to load.
fn write_clickhouse_export(args: &Args, end: DateTime<Utc>, path: &Path) -> anyhow::Result<()> {
    let started = Instant::now();
    write_export_until(args.events, args.seed, end, path)?;
    println!(
        "wrote the same {} events as a PostHog export for ClickHouse in {:.1} s: {} ({} bytes)",
        args.events,
        started.elapsed().as_secs_f64(),
        path.display(),
        std::fs::metadata(path)?.len()
    );
    Ok(())
}

/// Generates `--events` events up to `end` into the project's table through the bulk importer.
async fn load(
    state: &AppState,
    project: i64,
    args: &Args,
    end: DateTime<Utc>,
) -> anyhow::Result<()> {
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
    /// Planning and execution of the best run, as the response's `timings` give them.
    plan_ms: f64,
    execute_ms: f64,
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
    questions: &[&BenchQuery],
    runs: usize,
) -> anyhow::Result<Vec<Timing>> {
    let address = serve(state.clone()).await?;
    let mut sender = connect(address).await?;
    let path = format!("/api/projects/{project}/query/");
    let mut timings = Vec::new();
    for query in questions {
        let body = Bytes::from(query.ours.request().to_string());
        let mut best = f64::INFINITY;
        let (mut plan_ms, mut execute_ms) = (f64::NAN, f64::NAN);
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
            last = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
            if run == 0 {
                // What a query pays before the process holds anything of it (the persons
                // table, Parquet footers): reported beside the table, never in it.
                eprintln!("{}: first run {elapsed:.1} ms", query.name);
            }
            if run >= WARMUP && elapsed < best {
                best = elapsed;
                (plan_ms, execute_ms) = (phase_ms(&last, "plan"), phase_ms(&last, "execute"));
            }
        }
        if let Some(error) = &error {
            eprintln!("{}: {error}", query.name);
        }
        let results = query.ours.rows(&last["results"]);
        timings.push(Timing {
            name: query.name,
            best_ms: best,
            plan_ms,
            execute_ms,
            rows: results.as_array().map_or(0, |r| r.len()),
            results,
            error,
        });
    }
    Ok(timings)
}

/// The seconds a response's `timings` give a phase (`./plan`, or `./query_N/plan` summed over a
/// node's queries), in ms.
fn phase_ms(response: &Value, phase: &str) -> f64 {
    let suffix = format!("/{phase}");
    let seconds: f64 = response["timings"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|t| t["k"].as_str().is_some_and(|k| k.ends_with(&suffix)))
        .filter_map(|t| t["t"].as_f64())
        .sum();
    seconds * 1000.0
}

/// One engine's figures for one query beside ours: its time, ours over it, and whether the
/// numbers agree ("-" where either side has no answer).
struct Beside {
    ms: String,
    ratio: String,
    same: String,
}

impl Beside {
    fn of(
        engine: &str,
        ours: &Timing,
        theirs: Option<&Value>,
        rows: impl Fn(&Value) -> Value,
    ) -> Beside {
        let none = || Beside {
            ms: "-".to_owned(),
            ratio: "-".to_owned(),
            same: "-".to_owned(),
        };
        let Some(theirs) = theirs else {
            return none();
        };
        if let Some(error) = theirs["error"].as_str() {
            eprintln!(
                "{engine} {}: {}",
                ours.name,
                error.lines().next().unwrap_or("")
            );
            return Beside {
                ms: "error".to_owned(),
                ..none()
            };
        }
        let best = theirs["best_ms"].as_f64().unwrap_or(f64::NAN);
        let (ratio, same) = match ours.error {
            None => (
                format!("{:.2}x", ours.best_ms / best),
                Agreement::of(&ours.results, &rows(&theirs["results"])).label(),
            ),
            Some(_) => ("-".to_owned(), "-".to_owned()),
        };
        Beside {
            ms: format!("{best:.1}"),
            ratio,
            same,
        }
    }
}

fn print_table(
    questions: &[&BenchQuery],
    unshredded: &[Timing],
    ours: &[Timing],
    clickhouse: Option<&Value>,
    duckdb: Option<&Value>,
) {
    println!();
    println!(
        "{:<27} {:>4} {:>7} {:>7} {:>8} {:>8} {:>8} {:>8} {:>7} {:>7}  same numbers (clickhouse, duckdb, json)",
        "query", "rows", "plan", "exec", "json ms", "ours ms", "ch ms", "duck ms", "/ch", "/duck"
    );
    for ((timing, json), query) in ours.iter().zip(unshredded).zip(questions) {
        let json_ms = match &json.error {
            Some(_) => "error".to_owned(),
            None => format!("{:.1}", json.best_ms),
        };
        let same_as_json = match (&json.error, &timing.error) {
            (None, None) => Agreement::of(&timing.results, &json.results).label(),
            _ => "-".to_owned(),
        };
        let ours_ms = match &timing.error {
            Some(_) => "error".to_owned(),
            None => format!("{:.1}", timing.best_ms),
        };
        let ch = Beside::of(
            "clickhouse",
            timing,
            result_of(clickhouse, timing.name),
            |rows| query.clickhouse.rows(rows),
        );
        let duck = Beside::of(
            "duckdb",
            timing,
            result_of(duckdb, timing.name),
            Value::clone,
        );
        println!(
            "{:<27} {:>4} {:>7.1} {:>7.1} {:>8} {:>8} {:>8} {:>8} {:>7} {:>7}  {}, {}, {}",
            timing.name,
            timing.rows,
            timing.plan_ms,
            timing.execute_ms,
            json_ms,
            ours_ms,
            ch.ms,
            duck.ms,
            ch.ratio,
            duck.ratio,
            ch.same,
            duck.same,
            same_as_json
        );
    }
    println!();
}
