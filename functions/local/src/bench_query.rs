//! `analytics bench query`: typical product-analytics queries through the real query API over a
//! deterministic synthetic events table, side by side with DuckDB over the same Parquet files.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use axum::extract::Request;
use chrono::{DateTime, DurationRound, TimeDelta, Utc};
use common::AppState;
use common::config::{Backend, Config};
use common::models::User;
use common::staging::StagedEvent;
use engine::rows::ParsedRows;
use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper::client::conn::http1::SendRequest;
use hyper_util::rt::TokioIo;
use indicatif::{ProgressBar, ProgressStyle};
use serde_json::{Map, Value, json};
use tokio::net::{TcpListener, TcpStream};
use uuid::Uuid;

/// Events generated and handed to the importer at a time.
const CHUNK: usize = 50_000;
/// Untimed runs before the timed ones.
const WARMUP: usize = 1;

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
    /// Python with the `duckdb` package; default `.venv/bin/python` at the repository root,
    /// else `python3`.
    #[arg(long)]
    python: Option<PathBuf>,
    /// Time our queries only.
    #[arg(long)]
    skip_duckdb: bool,
}

/// One query, in our dialect (or as a structured node) and as DuckDB SQL over a view `events` of
/// the same Parquet files.
struct BenchQuery {
    name: &'static str,
    ours: Ours,
    duckdb: &'static str,
}

enum Ours {
    /// Dialect text, run as a HogQLQuery.
    Sql(&'static str),
    /// A structured node (JSON), and how its `results` become rows comparable with DuckDB's.
    Node {
        node: &'static str,
        rows: fn(&Value) -> Value,
    },
}

impl Ours {
    fn request(&self) -> Value {
        let query = match self {
            Ours::Sql(text) => json!({"kind": "HogQLQuery", "query": text}),
            Ours::Node { node, .. } => serde_json::from_str(node).unwrap_or(Value::Null),
        };
        json!({"query": query, "refresh": "force_blocking"})
    }

    fn rows(&self, results: &Value) -> Value {
        match self {
            Ours::Sql(_) => results.clone(),
            Ours::Node { rows, .. } => rows(results),
        }
    }
}

/// A trend's buckets as `[day, value]` rows, empty buckets left out (DuckDB has no row for them).
fn trend_rows(results: &Value) -> Value {
    let series = &results[0];
    let days = series["days"].as_array().cloned().unwrap_or_default();
    let data = series["data"].as_array().cloned().unwrap_or_default();
    days.into_iter()
        .zip(data)
        .filter(|(_, value)| value.as_f64() != Some(0.0))
        .map(|(day, value)| json!([day, value]))
        .collect()
}

/// A funnel's steps as `[step, actors]` rows.
fn funnel_rows(results: &Value) -> Value {
    results
        .as_array()
        .map(|steps| {
            steps
                .iter()
                .map(|step| json!([step["order"], step["count"]]))
                .collect()
        })
        .unwrap_or_default()
}

/// A retention table as `[cohort, interval, actors]` rows, empty cells left out.
fn retention_rows(results: &Value) -> Value {
    let mut rows = Vec::new();
    for (cohort, row) in results.as_array().into_iter().flatten().enumerate() {
        for (interval, cell) in row["values"].as_array().into_iter().flatten().enumerate() {
            let count = cell["count"].as_u64().unwrap_or(0);
            if count > 0 {
                rows.push(json!([cohort, interval, count]));
            }
        }
    }
    Value::Array(rows)
}

/// Windows start at a day boundary (`today()`), so both engines see the same rows even though
/// they run a few seconds apart.
const QUERIES: &[BenchQuery] = &[
    BenchQuery {
        name: "events_last_7_days",
        ours: Ours::Sql("select count() from events where timestamp >= today() - interval 7 day"),
        duckdb: "select count(*) from events where timestamp >= current_date - interval 7 day",
    },
    BenchQuery {
        name: "daily_active_users",
        ours: Ours::Sql(
            "select toStartOfDay(timestamp) as day, uniq(distinct_id) as users from events \
               where timestamp >= today() - interval 30 day group by day order by day",
        ),
        duckdb: "select date_trunc('day', timestamp) as day, count(distinct distinct_id) as users \
                 from events where timestamp >= current_date - interval 30 day \
                 group by day order by day",
    },
    BenchQuery {
        name: "top_events",
        ours: Ours::Sql(
            "select event, count() as c from events group by event order by c desc limit 10",
        ),
        duckdb: "select event, count(*) as c from events group by event order by c desc limit 10",
    },
    BenchQuery {
        name: "top_browsers_pageviews",
        ours: Ours::Sql(
            "select properties.$browser as browser, count() as c from events \
               where event = '$pageview' group by browser order by c desc limit 10",
        ),
        duckdb: "select json_extract_string(properties, '$.\"$browser\"') as browser, count(*) as c \
                 from events where event = '$pageview' group by browser order by c desc limit 10",
    },
    BenchQuery {
        name: "revenue_by_day",
        ours: Ours::Sql(
            "select toStartOfDay(timestamp) as day, sum(toFloat(properties.amount)) as revenue \
               from events where event = 'purchase' group by day order by day",
        ),
        duckdb: "select date_trunc('day', timestamp) as day, \
                 sum(try_cast(json_extract_string(properties, '$.amount') as double)) as revenue \
                 from events where event = 'purchase' group by day order by day",
    },
    BenchQuery {
        name: "p90_purchase_amount",
        ours: Ours::Sql(
            "select quantile(0.9)(toFloat(properties.amount)) from events where event = 'purchase'",
        ),
        duckdb: "select quantile_cont(try_cast(json_extract_string(properties, '$.amount') as double), 0.9) \
                 from events where event = 'purchase'",
    },
    BenchQuery {
        name: "sessions_per_day",
        ours: Ours::Sql(
            "select toStartOfDay(timestamp) as day, uniq($session_id) as sessions from events \
               group by day order by day",
        ),
        duckdb: "select date_trunc('day', timestamp) as day, count(distinct \"$session_id\") as sessions \
                 from events group by day order by day",
    },
    BenchQuery {
        name: "top_paths_pageviews",
        ours: Ours::Sql(
            "select properties.$current_url as url, count() as c from events \
               where event = '$pageview' group by url order by c desc limit 20",
        ),
        duckdb: "select json_extract_string(properties, '$.\"$current_url\"') as url, count(*) as c \
                 from events where event = '$pageview' group by url order by c desc limit 20",
    },
    BenchQuery {
        name: "conversions_by_utm_source",
        ours: Ours::Sql(
            "select properties.utm_source as source, countIf(event = 'signed_up') as signups, \
               countIf(event = 'purchase') as purchases from events \
               group by source order by signups desc limit 10",
        ),
        duckdb: "select json_extract_string(properties, '$.utm_source') as source, \
                 count(*) filter (where event = 'signed_up') as signups, \
                 count(*) filter (where event = 'purchase') as purchases from events \
                 group by source order by signups desc limit 10",
    },
    BenchQuery {
        name: "trend_dau_pageviews",
        ours: Ours::Node {
            node: r#"{"kind": "TrendsQuery", "interval": "day", "dateRange": {"date_from": "-30d"},
                      "series": [{"kind": "EventsNode", "event": "$pageview", "math": "dau"}]}"#,
            rows: trend_rows,
        },
        duckdb: "select date_trunc('day', timestamp) as day, count(distinct person_id) as users \
                 from events where event = '$pageview' and timestamp >= current_date - interval 30 day \
                 group by day order by day",
    },
    BenchQuery {
        name: "funnel_pageview_signup_buy",
        ours: Ours::Node {
            node: r#"{"kind": "FunnelsQuery", "dateRange": {"date_from": "-30d"},
                      "funnelsFilter": {"funnelWindowInterval": 14, "funnelWindowIntervalUnit": "day"},
                      "series": [{"kind": "EventsNode", "event": "$pageview"},
                                 {"kind": "EventsNode", "event": "signed_up"},
                                 {"kind": "EventsNode", "event": "purchase"}]}"#,
            rows: funnel_rows,
        },
        // Ordered funnel: from every first-step event, the earliest next step at or after the
        // previous one, all within 14 days of the first; each person counts at their furthest.
        duckdb: "with e as (select person_id as p, timestamp as t, event from events \
                   where timestamp >= current_date - interval 30 day \
                   and event in ('$pageview', 'signed_up', 'purchase')), \
                 s1 as (select p, t as t1 from e where event = '$pageview'), \
                 s2 as (select p, t as t2 from e where event = 'signed_up'), \
                 s3 as (select p, t as t3 from e where event = 'purchase'), \
                 a2 as (select s1.p, t1, case when t2 <= t1 + interval 14 day then t2 end as t2 \
                   from s1 asof left join s2 on s1.p = s2.p and s1.t1 <= s2.t2), \
                 a3 as (select a2.p, t1, a2.t2, case when s3.t3 <= t1 + interval 14 day then s3.t3 end as t3 \
                   from a2 asof left join s3 on a2.p = s3.p and a2.t2 <= s3.t3), \
                 furthest as (select p, max(case when t3 is not null then 3 when t2 is not null then 2 else 1 end) as steps \
                   from a3 group by p) \
                 select s.step - 1 as step, count(*) filter (where steps >= s.step) as actors \
                 from furthest, (values (1), (2), (3)) as s(step) group by s.step order by s.step",
    },
    BenchQuery {
        name: "retention_pageviews_daily",
        ours: Ours::Node {
            node: r#"{"kind": "RetentionQuery", "dateRange": {"date_from": "-7d"},
                      "retentionFilter": {"period": "Day", "totalIntervals": 8,
                        "retentionType": "retention_recurring",
                        "targetEntity": {"id": "$pageview", "type": "events"},
                        "returningEntity": {"id": "$pageview", "type": "events"}}}"#,
            rows: retention_rows,
        },
        duckdb: "with d as (select distinct person_id as p, date_trunc('day', timestamp) as day from events \
                   where event = '$pageview' and timestamp >= current_date - interval 7 day) \
                 select dense_rank() over (order by a.day) - 1 as cohort, datediff('day', a.day, b.day) as k, \
                   count(*) as actors from d a join d b on a.p = b.p and b.day >= a.day \
                 group by a.day, k order by a.day, k",
    },
];

pub async fn run(args: Args) -> anyhow::Result<()> {
    if args.events == 0 {
        bail!("--events must be at least 1");
    }
    let (_temporary, data_dir) = match &args.data_dir {
        Some(dir) => (None, dir.clone()),
        None => {
            let dir = tempfile::tempdir()?;
            let path = dir.path().to_path_buf();
            (Some(dir), path)
        }
    };
    let state = embedded_state(data_dir.clone()).await?;
    let (project, key) = project_and_key(&state).await?;
    println!("data dir {} (project {project})", data_dir.display());

    let files = table_files(&state, project).await?;
    if files.is_empty() {
        load(&state, project, &args).await?;
    } else if args.reuse {
        println!(
            "reusing the existing table ({} Parquet files; --events and --seed ignored)",
            files.len()
        );
    } else {
        bail!(
            "project {project}'s table in {} already has data: pass --reuse, or another --data-dir",
            data_dir.display()
        );
    }
    let files = table_files(&state, project).await?;
    let load_peak = crate::import::peak_rss_bytes();
    // Reset the high-water mark (Linux: clear_refs 5), so the query phase gets its own peak.
    let reset = std::fs::write("/proc/self/clear_refs", "5").is_ok();

    let ours = time_ours(&state, project, &key, args.runs).await?;
    let query_peak = crate::import::peak_rss_bytes();
    let duckdb = if args.skip_duckdb {
        None
    } else {
        match time_duckdb(&files, args.runs, args.python.clone()).await {
            Ok(report) => Some(report),
            Err(error) => {
                eprintln!("duckdb side skipped: {error:#}");
                None
            }
        }
    };
    print_table(&ours, duckdb.as_ref());

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
    let failed: Vec<&str> = ours
        .iter()
        .filter(|t| t.error.is_some())
        .map(|t| t.name)
        .collect();
    if !failed.is_empty() {
        bail!("queries failed: {}", failed.join(", "));
    }
    Ok(())
}

/// The embedded backend over `data_dir`, whatever ANALYTICS_BACKEND says.
async fn embedded_state(data_dir: PathBuf) -> anyhow::Result<AppState> {
    let mut config = Config::from_env()?;
    config.backend = Backend::Sqlite;
    config.data_dir = data_dir;
    AppState::from_config(config)
        .await
        .context("cannot open the embedded store")
}

/// The bootstrap project and key of a fresh store; on a bootstrapped one, the bootstrap user's
/// current project and a new key.
async fn project_and_key(state: &AppState) -> anyhow::Result<(i64, String)> {
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
async fn table_files(state: &AppState, project: i64) -> anyhow::Result<Vec<PathBuf>> {
    let Some(table) = engine::lake::open_existing(state, project).await? else {
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

// ---------------------------------------------------------------------------------------------
// The generator

/// SplitMix64: small, fast, and the same sequence everywhere for a seed.
struct Rng(u64);

impl Rng {
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (`n` > 0).
    fn below(&mut self, n: u64) -> u64 {
        ((self.next_u64() as u128 * n as u128) >> 64) as u64
    }

    /// Uniform in [0, 1).
    fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    fn pick<T: Copy>(&mut self, items: &[T]) -> T {
        items[self.below(items.len() as u64) as usize]
    }

    /// An index drawn with the given weights.
    fn weighted(&mut self, weights: &[u64]) -> usize {
        let mut roll = self.below(weights.iter().sum());
        for (index, weight) in weights.iter().enumerate() {
            if roll < *weight {
                return index;
            }
            roll -= weight;
        }
        weights.len() - 1
    }

    /// Skewed towards 0: a few items get most of the draws.
    fn skewed(&mut self, n: usize, power: f64) -> usize {
        ((n as f64 * self.unit().powf(power)) as usize).min(n - 1)
    }

    /// Standard normal (Box-Muller).
    fn gauss(&mut self) -> f64 {
        let u = 1.0 - self.unit();
        let v = self.unit();
        (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()
    }
}

/// (event, weight in per mille)
const EVENT_MIX: &[(&str, u64)] = &[
    ("$pageview", 600),
    ("$autocapture", 160),
    ("$pageleave", 120),
    ("feature_used", 80),
    ("purchase", 25),
    ("signed_up", 15),
];
const BROWSERS: &[(&str, u64)] = &[
    ("Chrome", 62),
    ("Safari", 20),
    ("Firefox", 7),
    ("Microsoft Edge", 6),
    ("Samsung Internet", 3),
    ("Opera", 2),
];
const OPERATING_SYSTEMS: &[(&str, &str, u64)] = &[
    ("Windows", "Desktop", 35),
    ("Mac OS X", "Desktop", 20),
    ("Android", "Mobile", 22),
    ("iOS", "Mobile", 17),
    ("Linux", "Desktop", 6),
];
const PLANS: &[(&str, u64)] = &[("free", 70), ("starter", 18), ("pro", 9), ("enterprise", 3)];
/// None: no utm_source on the person's events.
const UTM_SOURCES: &[(Option<&str>, u64)] = &[
    (None, 45),
    (Some("google"), 25),
    (Some("twitter"), 8),
    (Some("newsletter"), 8),
    (Some("linkedin"), 6),
    (Some("facebook"), 5),
    (Some("producthunt"), 3),
];
const FEATURES: &[&str] = &[
    "dashboards",
    "insights",
    "session-replay",
    "feature-flags",
    "experiments",
    "surveys",
    "notebooks",
    "data-warehouse",
    "cohorts",
    "annotations",
    "exports",
    "webhooks",
];
const PRODUCTS: &[&str] = &[
    "starter-monthly",
    "pro-monthly",
    "pro-yearly",
    "addon-seats",
];
const BUTTONS: &[&str] = &[
    "Sign up",
    "Get started",
    "Buy now",
    "Learn more",
    "Next",
    "Save",
];
const PATHS_COUNT: usize = 200;

fn weights<T>(table: &[(T, u64)]) -> Vec<u64> {
    table.iter().map(|(_, w)| *w).collect()
}

/// About 200 paths of a product site, most visited first.
fn paths() -> Vec<String> {
    let mut paths: Vec<String> = [
        "/",
        "/pricing",
        "/features",
        "/signup",
        "/login",
        "/docs",
        "/blog",
        "/about",
        "/contact",
        "/careers",
        "/changelog",
        "/customers",
        "/integrations",
        "/security",
        "/status",
    ]
    .iter()
    .map(|p| p.to_string())
    .collect();
    let sections = [
        "getting-started",
        "api",
        "sdks",
        "self-host",
        "product",
        "data",
    ];
    let mut k = 0;
    while paths.len() < PATHS_COUNT {
        paths.push(match k % 3 {
            0 | 1 => format!("/docs/{}/page-{}", sections[k % sections.len()], k / 3),
            _ => format!("/blog/post-{}", k / 3),
        });
        k += 1;
    }
    paths
}

struct Person {
    distinct_id: String,
    browser: &'static str,
    os: &'static str,
    device: &'static str,
    screen_width: u64,
    plan: &'static str,
    email: String,
    utm_source: Option<&'static str>,
    /// Whether an event of theirs was generated yet (the first one carries `$set`).
    seen: bool,
}

pub(crate) struct Generator {
    rng: Rng,
    persons: Vec<Person>,
    paths: Vec<String>,
    event_weights: Vec<u64>,
    start_us: i64,
    span_us: i64,
    total: u64,
    next: u64,
}

impl Generator {
    pub(crate) fn new(seed: u64, total: u64, end: DateTime<Utc>) -> Self {
        let mut rng = Rng(seed);
        let count = (total / 100).max(1) as usize;
        let (browser_weights, os_weights) = (
            weights(BROWSERS),
            OPERATING_SYSTEMS.iter().map(|o| o.2).collect::<Vec<_>>(),
        );
        let (plan_weights, utm_weights) = (weights(PLANS), weights(UTM_SOURCES));
        let persons = (0..count)
            .map(|i| {
                let id = Uuid::from_u64_pair(rng.next_u64(), rng.next_u64());
                let (os, device, _) = OPERATING_SYSTEMS[rng.weighted(&os_weights)];
                let browser = match os {
                    "iOS" => "Mobile Safari",
                    _ => BROWSERS[rng.weighted(&browser_weights)].0,
                };
                Person {
                    distinct_id: id.to_string(),
                    browser,
                    os,
                    device,
                    screen_width: match device {
                        "Mobile" => rng.pick(&[375, 390, 412, 430]),
                        _ => rng.pick(&[1280, 1440, 1536, 1920, 2560]),
                    },
                    plan: PLANS[rng.weighted(&plan_weights)].0,
                    email: format!("user{i}@example{}.com", i % 97),
                    utm_source: UTM_SOURCES[rng.weighted(&utm_weights)].0,
                    seen: false,
                }
            })
            .collect();
        let span = TimeDelta::days(30);
        Self {
            rng,
            persons,
            paths: paths(),
            event_weights: weights(EVENT_MIX),
            start_us: (end - span).timestamp_micros(),
            span_us: span.num_microseconds().unwrap_or(i64::MAX),
            total,
            next: 0,
        }
    }

    /// The next `n` events (fewer at the end), in time order as capture would see them.
    pub(crate) fn chunk(&mut self, n: usize) -> Vec<StagedEvent> {
        let end = (self.next + n as u64).min(self.total);
        let events = (self.next..end).map(|i| self.event(i)).collect();
        self.next = end;
        events
    }

    fn event(&mut self, i: u64) -> StagedEvent {
        let rng = &mut self.rng;
        let slot = (self.span_us as i128 * i as i128 / self.total as i128) as i64;
        let step = (self.span_us as u64 / self.total).max(1);
        let timestamp_us = self.start_us + slot + rng.below(step) as i64;
        let timestamp = DateTime::from_timestamp_micros(timestamp_us).unwrap_or_default();
        let created_at = timestamp + TimeDelta::milliseconds(rng.below(2_000) as i64);
        let person_index = rng.skewed(self.persons.len(), 2.0);
        let name = EVENT_MIX[rng.weighted(&self.event_weights)].0;
        let path = &self.paths[rng.skewed(self.paths.len(), 2.5)];
        let day = timestamp_us / 86_400_000_000;
        let session = Uuid::from_u64_pair(
            (person_index as u64) << 20 | (day as u64 & 0xFFFFF),
            rng.below(3) ^ 0x5e55_1017,
        );

        let person = &mut self.persons[person_index];
        let mut properties = Map::new();
        let mut put = |key: &str, value: Value| {
            properties.insert(key.to_owned(), value);
        };
        put("$browser", person.browser.into());
        put("$os", person.os.into());
        put("$device_type", person.device.into());
        put("$screen_width", person.screen_width.into());
        put("$current_url", format!("https://example.com{path}").into());
        put("$host", "example.com".into());
        put("$pathname", path.as_str().into());
        put("$session_id", session.to_string().into());
        put("$lib", "web".into());
        put("$lib_version", "1.200.0".into());
        if let Some(source) = person.utm_source {
            put("utm_source", source.into());
        }
        let mut elements_chain = None;
        match name {
            "$autocapture" => {
                let label = rng.pick(BUTTONS);
                put("$event_type", "click".into());
                elements_chain = Some(format!(
                    "button.btn.btn-primary:attr__class=\"btn btn-primary\"nth-child=\"2\"\
                     nth-of-type=\"1\"text=\"{label}\";div.container:nth-child=\"1\"nth-of-type=\"1\""
                ));
            }
            "feature_used" => put("feature", rng.pick(FEATURES).into()),
            "purchase" => {
                let amount = (40.0 * (0.8 * rng.gauss()).exp() * 100.0).round() / 100.0;
                put("amount", amount.into());
                put("currency", "USD".into());
                put("product", rng.pick(PRODUCTS).into());
            }
            "signed_up" => put("method", rng.pick(&["email", "google", "github"]).into()),
            _ => {}
        }
        if !person.seen {
            person.seen = true;
            put("$set", json!({"email": person.email, "plan": person.plan}));
        }
        let mut random = [0u8; 10];
        random[..8].copy_from_slice(&rng.next_u64().to_le_bytes());
        StagedEvent {
            uuid: uuid::Builder::from_unix_timestamp_millis(
                timestamp.timestamp_millis().max(0) as u64,
                &random,
            )
            .into_uuid(),
            event: name.to_owned(),
            distinct_id: person.distinct_id.clone(),
            properties,
            timestamp,
            created_at,
            elements_chain,
        }
    }
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
    let bar = ProgressBar::new(args.events).with_style(
        ProgressStyle::with_template("{bar:40} {pos}/{len} events ({per_sec}, {eta} left)")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    let mut importer = engine::import::Importer::new(state.clone(), project).await?;
    let mut generating = Duration::ZERO;
    loop {
        let started = Instant::now();
        let chunk = generator.chunk(CHUNK);
        generating += started.elapsed();
        if chunk.is_empty() {
            break;
        }
        importer.push(ParsedRows::from_staged(chunk)).await?;
        bar.set_position(generator.next);
    }
    let report = importer.finish().await?;
    bar.finish_and_clear();
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
async fn serve(state: AppState) -> anyhow::Result<SocketAddr> {
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let address = listener.local_addr()?;
    let service = axum::ServiceExt::<Request>::into_make_service(crate::app(state));
    tokio::spawn(async move { axum::serve(listener, service).await });
    Ok(address)
}

async fn connect(address: SocketAddr) -> anyhow::Result<SendRequest<Full<Bytes>>> {
    let stream = TcpStream::connect(address).await?;
    stream.set_nodelay(true)?;
    let (sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream)).await?;
    tokio::spawn(connection);
    Ok(sender)
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

fn repository_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The first of the current dir and the repository this binary was built from that holds `relative`.
fn find(relative: &str) -> Option<PathBuf> {
    let here = std::env::current_dir().ok();
    here.into_iter()
        .chain([repository_root()])
        .map(|root| root.join(relative))
        .find(|path| path.exists())
}

async fn time_duckdb(
    files: &[PathBuf],
    runs: usize,
    python: Option<PathBuf>,
) -> anyhow::Result<Value> {
    use std::io::Write;
    use std::process::{Command, Stdio};

    let script = find("scripts/bench_query_duckdb.py")
        .context("scripts/bench_query_duckdb.py not found (run from the repository)")?;
    let python = python
        .or_else(|| find(".venv/bin/python"))
        .unwrap_or_else(|| "python3".into());
    let input = json!({
        "files": files,
        "queries": QUERIES.iter().map(|q| json!({"name": q.name, "sql": q.duckdb})).collect::<Vec<_>>(),
        "runs": runs.max(1),
        "warmup": WARMUP,
    })
    .to_string();
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
fn same_numbers(ours: &Value, theirs: &Value) -> bool {
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

fn print_table(ours: &[Timing], duckdb: Option<&Value>) {
    let empty = Vec::new();
    let theirs = duckdb
        .and_then(|r| r["results"].as_array())
        .unwrap_or(&empty);
    println!();
    println!(
        "{:<28} {:>5} {:>10} {:>10} {:>8}  same numbers",
        "query", "rows", "ours ms", "duckdb ms", "ratio"
    );
    for timing in ours {
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
            "{:<28} {:>5} {:>10} {:>10} {:>8}  {}",
            timing.name, timing.rows, ours_ms, duck_ms, ratio, same
        );
    }
    println!();
}
