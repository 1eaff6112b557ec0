//! `analytics-bench endpoints`: the run latency of a saved-query endpoint served from its
//! materialized Parquet result, beside the same query run inline, through the real endpoints API
//! of the embedded server over generated events.
//!
//! Two endpoints hold the same query with one variable (the event name): `daily-materialized`
//! (`is_materialized: true`) and `daily-inline`. The bench waits for the materialization (and
//! reports how long it took), checks that both answer every event name with the very same
//! `results` (and that the materialized answers say `endpoint_materialized: true`), then times
//! runs of each, the variable rotating over the generator's event names. Inline runs ask
//! `"refresh": "force"`, so the query service computes them rather than reading its cache.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use chrono::{DateTime, DurationRound, TimeDelta, Utc};
use common::AppState;
use serde_json::{Value, json};

use super::client::Client;
use super::generator::{EVENT_MIX, Generator, import_and_report};
use super::query::{BenchData, bench_data, serve};

const MATERIALIZED: &str = "daily-materialized";
const INLINE: &str = "daily-inline";
/// The endpoints' query: one row per day of the chosen event.
const QUERY: &str = "select toStartOfDay(timestamp) as day, count() as events, \
     uniq(distinct_id) as users from events where event = {variables.event} \
     group by day order by day";
/// The variable's code name (what runs pass in `variables`) and its id in the query.
const VARIABLE: &str = "event";
const VARIABLE_ID: &str = "5c1e7a3e-0b6d-4f3a-9a57-6e2d2b1c0e01";
/// How often the materialization status is polled.
const POLL_EVERY: Duration = Duration::from_millis(100);
/// The aim for a materialized run.
const AIM_P50_MS: f64 = 20.0;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Events to generate.
    #[arg(long, default_value_t = 10_000_000)]
    events: u64,
    /// Data dir to load into (and keep); default: a temporary dir, removed at the end.
    #[arg(long)]
    data_dir: Option<PathBuf>,
    /// When the project's table already has data, use it as it is instead of generating (the
    /// bench's endpoints are deleted and created again, so the materialization is timed anew).
    #[arg(long)]
    reuse: bool,
    /// Seed of the generator.
    #[arg(long, default_value_t = 42)]
    seed: u64,
    /// Timed runs of the materialized endpoint (after one warm-up run per event name).
    #[arg(long, default_value_t = 200)]
    runs: usize,
    /// Timed runs of the inline endpoint (each computes the query: seconds on 10M events).
    #[arg(long, default_value_t = 12)]
    inline_runs: usize,
    /// How long to wait for the materialization, in minutes.
    #[arg(long, default_value_t = 15)]
    timeout_minutes: u64,
}

pub async fn run(args: Args) -> anyhow::Result<()> {
    if args.events == 0 || args.runs == 0 || args.inline_runs == 0 {
        bail!("--events, --runs and --inline-runs must be at least 1");
    }
    let BenchData {
        _temporary,
        dir: data_dir,
        state,
        project,
        key,
        loaded,
    } = bench_data(args.data_dir.as_ref(), args.reuse).await?;
    if !loaded {
        load(&state, project, &args).await?;
    }

    let address = serve(state.clone()).await?;
    let mut client = Client::new(address, &key).await?;
    let events: Vec<&str> = EVENT_MIX.iter().map(|(name, _)| *name).collect();

    create(&mut client, project, INLINE, false).await?;
    let created = Instant::now();
    create(&mut client, project, MATERIALIZED, true).await?;
    let materialization = wait_materialized(
        &mut client,
        project,
        created,
        Duration::from_secs(args.timeout_minutes * 60),
    )
    .await?;
    let stored = stored_bytes(&data_dir, project);
    println!(
        "materialized in {:.2} s ({:.2} s queued, {:.2} s running){}",
        materialization.total.as_secs_f64(),
        materialization.queued.as_secs_f64(),
        (materialization.total - materialization.queued).as_secs_f64(),
        stored.map_or(String::new(), |bytes| format!(
            "; stored result {:.1} KiB",
            bytes as f64 / 1024.0
        )),
    );

    // The check, which is also the warm-up: each event name once on each side.
    let mut expected = BTreeMap::new();
    for event in &events {
        let inline = run_endpoint(&mut client, project, INLINE, event, "force").await?;
        let materialized = run_endpoint(&mut client, project, MATERIALIZED, event, "cache").await?;
        check_same(event, &inline.body, &materialized.body)?;
        expected.insert(event.to_string(), inline.body["results"].clone());
    }

    let mut materialized = Latencies::default();
    let mut not_materialized = 0;
    let mut differing = 0;
    for i in 0..args.runs {
        let event = events[i % events.len()];
        let run = run_endpoint(&mut client, project, MATERIALIZED, event, "cache").await?;
        materialized.push(run.elapsed);
        not_materialized += usize::from(run.body["endpoint_materialized"] != json!(true));
        differing += usize::from(expected.get(event) != Some(&run.body["results"]));
    }
    let mut inline = Latencies::default();
    for i in 0..args.inline_runs {
        let event = events[i % events.len()];
        let run = run_endpoint(&mut client, project, INLINE, event, "force").await?;
        inline.push(run.elapsed);
        differing += usize::from(expected.get(event) != Some(&run.body["results"]));
    }

    print_table(&args, &events, &materialized, &inline, &materialization);
    if not_materialized > 0 {
        bail!(
            "{not_materialized} of {} timed materialized runs did not answer \
             endpoint_materialized: true",
            args.runs
        );
    }
    if differing > 0 {
        bail!("{differing} timed runs answered other results than the check's");
    }
    Ok(())
}

/// Generates `--events` events into the project's table through the bulk importer.
async fn load(state: &AppState, project: i64, args: &Args) -> anyhow::Result<()> {
    let end = Utc::now().duration_trunc(TimeDelta::hours(1))?;
    println!(
        "generating {} events (seed {}, 30 days up to {end}) into project {project}",
        args.events, args.seed,
    );
    let mut generator = Generator::new(args.seed, args.events, end);
    import_and_report(state, project, &mut generator).await
}

fn endpoints_path(project: i64) -> String {
    format!("/api/projects/{project}/endpoints/")
}

/// Creates the endpoint `name` over [`QUERY`], first deleting one an earlier run left (`--reuse`).
async fn create(
    client: &mut Client,
    project: i64,
    name: &str,
    materialized: bool,
) -> anyhow::Result<()> {
    let path = endpoints_path(project);
    let existing = format!("{path}{name}/");
    let deleted = client
        .send(hyper::Method::DELETE, &existing, &Value::Null)
        .await?;
    if deleted.status.is_success() {
        println!("deleted the endpoint {name} an earlier run left");
    }
    let mut body = json!({
        "name": name,
        "query": {
            "kind": "HogQLQuery",
            "query": QUERY,
            "variables": {VARIABLE_ID: {"code_name": VARIABLE, "value": EVENT_MIX[0].0}},
        },
        "is_materialized": materialized,
    });
    // A sync frequency is refused on an endpoint that is not materialized.
    if materialized {
        body["sync_frequency"] = json!("24hour");
    }
    let answer = client.send(hyper::Method::POST, &path, &body).await?;
    if answer.status != hyper::StatusCode::CREATED {
        bail!(
            "creating the endpoint {name} through POST {path}: {} {}",
            answer.status,
            answer.text
        );
    }
    println!(
        "endpoint {name} created (is_materialized: {})",
        answer.body["is_materialized"]
    );
    Ok(())
}

struct Materialization {
    /// From the create request to the status `Completed`.
    total: Duration,
    /// From the create request to the first status that is not `Pending` (or `Unknown`).
    queued: Duration,
}

/// Polls the materialized endpoint's status until `Completed`; fails on `Failed` or `timeout`.
async fn wait_materialized(
    client: &mut Client,
    project: i64,
    created: Instant,
    timeout: Duration,
) -> anyhow::Result<Materialization> {
    let path = format!(
        "{}{MATERIALIZED}/materialization_status/",
        endpoints_path(project)
    );
    let mut queued = None;
    let mut last = String::new();
    loop {
        let answer = client.send(hyper::Method::GET, &path, &Value::Null).await?;
        if !answer.status.is_success() {
            bail!("GET {path}: {} {}", answer.status, answer.text);
        }
        let status = answer.body["status"].as_str().unwrap_or("?").to_owned();
        if status != last {
            println!(
                "materialization {status} after {:.2} s",
                created.elapsed().as_secs_f64()
            );
            last.clone_from(&status);
        }
        if !matches!(status.as_str(), "Pending" | "Unknown") && queued.is_none() {
            queued = Some(created.elapsed());
        }
        match status.as_str() {
            "Completed" => {
                let total = created.elapsed();
                return Ok(Materialization {
                    total,
                    queued: queued.unwrap_or(total),
                });
            }
            "Failed" => bail!(
                "the materialization failed: {}",
                answer.body["error"].as_str().unwrap_or(&answer.text)
            ),
            _ => {}
        }
        if created.elapsed() > timeout {
            bail!(
                "the materialization is still {status} after {} s",
                timeout.as_secs()
            );
        }
        tokio::time::sleep(POLL_EVERY).await;
    }
}

/// Bytes of the materialized endpoint's stored results (embedded object storage under the data
/// dir), if they can be read.
fn stored_bytes(data_dir: &Path, project: i64) -> Option<u64> {
    fn walk(dir: &Path) -> std::io::Result<u64> {
        let mut bytes = 0;
        for entry in std::fs::read_dir(dir)? {
            let entry = entry?;
            let meta = entry.metadata()?;
            bytes += match meta.is_dir() {
                true => walk(&entry.path())?,
                false => meta.len(),
            };
        }
        Ok(bytes)
    }
    let dir = data_dir
        .join("objects/materialized")
        .join(format!("team_id={project}"))
        .join(format!("endpoint={MATERIALIZED}"));
    walk(&dir).ok().filter(|bytes| *bytes > 0)
}

struct Run {
    elapsed: Duration,
    body: Value,
}

/// `POST .../endpoints/{name}/run/` with the event variable; fails on anything but 200.
async fn run_endpoint(
    client: &mut Client,
    project: i64,
    name: &str,
    event: &str,
    refresh: &str,
) -> anyhow::Result<Run> {
    let path = format!("{}{name}/run/", endpoints_path(project));
    let body = json!({"variables": {VARIABLE: event}, "refresh": refresh});
    let sent = Instant::now();
    let answer = client.send(hyper::Method::POST, &path, &body).await?;
    let elapsed = sent.elapsed();
    if answer.status != hyper::StatusCode::OK {
        bail!(
            "POST {path} (event {event:?}): {} {}",
            answer.status,
            answer.text
        );
    }
    Ok(Run {
        elapsed,
        body: answer.body,
    })
}

/// Whether the materialized answer for `event` is the inline one: the same `results` exactly,
/// and `endpoint_materialized: true`.
fn check_same(event: &str, inline: &Value, materialized: &Value) -> anyhow::Result<()> {
    let rows = inline["results"]
        .as_array()
        .with_context(|| format!("the inline run for {event:?} answered no results: {inline}"))?;
    if rows.is_empty() {
        bail!("the inline run for {event:?} answered no rows: nothing to compare");
    }
    if materialized["endpoint_materialized"] != json!(true) {
        bail!(
            "the materialized run for {event:?} did not say endpoint_materialized: true \
             (it says {}): it was not served from the materialized result",
            materialized["endpoint_materialized"]
        );
    }
    if materialized["results"] != inline["results"] {
        bail!(
            "the materialized and inline runs for {event:?} differ\n  inline       {} {}\n  \
             materialized {} {}",
            inline["columns"],
            inline["results"],
            materialized["columns"],
            materialized["results"],
        );
    }
    if materialized["columns"] != inline["columns"] {
        eprintln!(
            "note: same results for {event:?}, but other columns: inline {}, materialized {}",
            inline["columns"], materialized["columns"]
        );
    }
    let total: u64 = rows.iter().filter_map(|row| row[1].as_u64()).sum();
    println!(
        "{event:<14} identical: {} days, {total} events ({})",
        rows.len(),
        first_day(rows).map_or("-".to_owned(), |day| format!("from {day}")),
    );
    Ok(())
}

fn first_day(rows: &[Value]) -> Option<DateTime<Utc>> {
    rows.first()?[0]
        .as_str()
        .and_then(|day| DateTime::parse_from_rfc3339(day).ok())
        .map(|day| day.with_timezone(&Utc))
}

/// Latencies of timed runs, in milliseconds.
#[derive(Default)]
struct Latencies(Vec<f64>);

impl Latencies {
    fn push(&mut self, elapsed: Duration) {
        self.0.push(elapsed.as_secs_f64() * 1000.0);
    }

    fn sorted(&self) -> Vec<f64> {
        let mut sorted = self.0.clone();
        sorted.sort_by(f64::total_cmp);
        sorted
    }

    /// The nearest-rank percentile `p` (0 to 100).
    fn percentile(&self, p: f64) -> f64 {
        let sorted = self.sorted();
        let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
        sorted
            .get(rank.clamp(1, sorted.len().max(1)) - 1)
            .copied()
            .unwrap_or(f64::NAN)
    }

    fn mean(&self) -> f64 {
        self.0.iter().sum::<f64>() / self.0.len().max(1) as f64
    }

    fn min(&self) -> f64 {
        self.sorted().first().copied().unwrap_or(f64::NAN)
    }

    fn max(&self) -> f64 {
        self.sorted().last().copied().unwrap_or(f64::NAN)
    }
}

fn print_table(
    args: &Args,
    events: &[&str],
    materialized: &Latencies,
    inline: &Latencies,
    materialization: &Materialization,
) {
    println!();
    println!(
        "POST /api/projects/:id/endpoints/:name/run/, variable {VARIABLE} rotating over {}",
        events.join(", ")
    );
    println!(
        "{:<36} {:>5} {:>10} {:>10} {:>10} {:>10} {:>10}",
        "endpoint", "runs", "p50 ms", "p95 ms", "mean ms", "min ms", "max ms"
    );
    let row = |label: &str, l: &Latencies| {
        println!(
            "{label:<36} {:>5} {:>10.2} {:>10.2} {:>10.2} {:>10.2} {:>10.2}",
            l.0.len(),
            l.percentile(50.0),
            l.percentile(95.0),
            l.mean(),
            l.min(),
            l.max()
        );
    };
    row(&format!("{MATERIALIZED} (Parquet, cache)"), materialized);
    row(&format!("{INLINE} (inline, force)"), inline);
    println!(
        "speedup (inline / materialized): p50 {:.0}x, p95 {:.0}x, mean {:.0}x",
        inline.percentile(50.0) / materialized.percentile(50.0),
        inline.percentile(95.0) / materialized.percentile(95.0),
        inline.mean() / materialized.mean(),
    );
    println!(
        "materialization: {:.2} s from the create request to Completed",
        materialization.total.as_secs_f64()
    );
    let p50 = materialized.percentile(50.0);
    println!(
        "aim (materialized p50 under {AIM_P50_MS} ms): {} ({p50:.2} ms over {} runs)",
        match p50 < AIM_P50_MS {
            true => "met",
            false => "NOT met",
        },
        args.runs
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_are_nearest_rank() {
        let mut l = Latencies::default();
        for ms in (1..=100).rev() {
            l.push(Duration::from_millis(ms));
        }
        assert_eq!(l.percentile(50.0), 50.0);
        assert_eq!(l.percentile(95.0), 95.0);
        assert_eq!(l.min(), 1.0);
        assert_eq!(l.max(), 100.0);
        assert!((l.mean() - 50.5).abs() < 1e-9);
        let mut one = Latencies::default();
        one.push(Duration::from_millis(7));
        assert_eq!(one.percentile(50.0), 7.0);
        assert_eq!(one.percentile(95.0), 7.0);
    }
}
