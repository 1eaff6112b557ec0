//! What shredding costs ingestion: the bulk importer over one export, and capture (`POST /batch/`
//! until every acknowledged event is in the Delta table), each run with shredding off and on, over
//! a fresh data dir per run so that neither inherits the other's registry or files.

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use hyper::body::Bytes;

use super::load::Report;
use super::query::with_shredding;
use super::{Shot, serve_fresh_until};

/// How long the last acknowledged event may take to be committed before the run is called failed.
const COMMIT_WAIT: Duration = Duration::from_secs(600);

/// Which shredding settings an ingestion bench runs: `both` shows what it costs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Shredding {
    Off,
    On,
    Both,
}

impl Shredding {
    /// The settings to run, in order.
    pub fn settings(self) -> &'static [bool] {
        match self {
            Self::Off => &[false],
            Self::On => &[true],
            Self::Both => &[false, true],
        }
    }
}

pub fn label(shredding: bool) -> &'static str {
    if shredding {
        "shredding on"
    } else {
        "shredding off"
    }
}

/// How much lower `on` is than `off`, as a share of `off` (events/s: higher is better).
pub fn cost_line(what: &str, off: f64, on: f64) -> String {
    format!(
        "{what}: {off:.0} events/s with shredding off, {on:.0} on: shredding costs {:.1}%",
        (1.0 - on / off.max(1e-9)) * 100.0
    )
}

/// Imports `file` into the bootstrap project of a fresh embedded store in `data_dir`, shredding
/// or not; the store is closed on return, so it holds no memory while whatever is next runs.
pub async fn import_once(
    data_dir: &Path,
    file: &Path,
    shredding: bool,
) -> anyhow::Result<local::import::Summary> {
    let state = local::serve::state_for(data_dir.to_path_buf()).await?;
    let state = with_shredding(&state, shredding);
    let bootstrap = common::provisioning::bootstrap_if_empty(state.store.as_ref())
        .await?
        .context("a fresh store bootstraps")?;
    // The import's own peak, not the generator's (Linux: clear_refs 5 resets the mark).
    let _ = std::fs::write("/proc/self/clear_refs", "5");
    local::import::import_file(&state, bootstrap.project.id, file).await
}

/// Imports `file` once per setting, each into a data dir of its own under `scratch` (removed
/// after it, so one table at a time is on disk), printing each summary, then what shredding
/// costs when both ran.
pub async fn imports(
    file: &Path,
    shredding: Shredding,
    scratch: &Path,
) -> anyhow::Result<Vec<local::import::Summary>> {
    let mut summaries = Vec::new();
    for &on in shredding.settings() {
        let data_dir = scratch.join(label(on).replace(' ', "-"));
        let summary = import_once(&data_dir, file, on).await?;
        println!("import, {}: {summary}", label(on));
        std::fs::remove_dir_all(&data_dir)?;
        summaries.push(summary);
    }
    if let [off, on] = summaries.as_slice() {
        println!(
            "{}",
            cost_line("import", off.events_per_s(), on.events_per_s())
        );
    }
    Ok(summaries)
}

/// `bench query`'s measure of what shredding costs ingestion: an export of `events` generated
/// events (`seed`'s) imported with shredding off and on, then capture loaded for
/// `capture_seconds` with each.
pub async fn shredding_cost(events: u64, seed: u64, capture_seconds: u64) -> anyhow::Result<()> {
    let scratch = tempfile::tempdir()?;
    let file = scratch.path().join("export.ndjson.gz");
    super::import::write_export(events, seed, &file)?;
    println!("what shredding costs ingestion: an export of {events} events, imported twice");
    imports(&file, Shredding::Both, scratch.path()).await?;
    let load = CaptureLoad {
        connections: CAPTURE_CONNECTIONS,
        seconds: capture_seconds,
        batch: CAPTURE_BATCH,
    };
    capture(load, Shredding::Both, CAPTURE_ROUNDS).await
}

/// `bench capture`'s defaults.
pub const CAPTURE_CONNECTIONS: usize = 16;
pub const CAPTURE_BATCH: usize = 100;
pub const CAPTURE_ROUNDS: usize = 2;

/// How `bench capture` loads the server.
#[derive(Debug, Clone, Copy)]
pub struct CaptureLoad {
    pub connections: usize,
    pub seconds: u64,
    /// Events per request.
    pub batch: usize,
}

/// One capture run's figures.
pub struct CaptureRun {
    pub load: Report,
    pub events: u64,
    /// From the end of the load until the last acknowledged event was committed.
    pub commit_lag: Duration,
}

impl CaptureRun {
    pub fn acknowledged_per_s(&self) -> f64 {
        self.events as f64 / self.load.elapsed.as_secs_f64().max(1e-9)
    }

    /// Events over the load and the commit lag together: what reaches the table per second.
    pub fn committed_per_s(&self) -> f64 {
        self.events as f64
            / (self.load.elapsed + self.commit_lag)
                .as_secs_f64()
                .max(1e-9)
    }
}

impl std::fmt::Display for CaptureRun {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}\n{} events acknowledged, {:.0} events/s; the last committed {:.2} s after the load \
             ended: {:.0} events/s end to end",
            self.load,
            self.events,
            self.acknowledged_per_s(),
            self.commit_lag.as_secs_f64(),
            self.committed_per_s(),
        )
    }
}

/// A `/batch/` body of `size` events shaped like posthog-js pageviews (no uuids: each gets its own).
fn batch_body(token: &str, size: usize) -> Bytes {
    let events: Vec<serde_json::Value> = (0..size)
        .map(|i| {
            serde_json::json!({
                "event": "$pageview",
                "distinct_id": format!("user-{}", i % 1000),
                "timestamp": "2026-11-22T10:00:00Z",
                "properties": {
                    "$current_url": format!("https://example.com/pricing?ref={i}"),
                    "$browser": "Firefox", "$os": "Linux", "$session_id": format!("s-{}", i % 50),
                    "$screen_width": 1920, "$lib": "web", "$lib_version": "1.200.0"
                }
            })
        })
        .collect();
    let body =
        serde_json::json!({ "api_key": token, "sent_at": "2026-11-22T10:00:01Z", "batch": events });
    Bytes::from(body.to_string())
}

/// Serves a fresh embedded store (committer included), loads `/batch/` for the load's duration,
/// waits until every acknowledged event is committed, then stops the server.
pub async fn capture_once(load: CaptureLoad, shredding: bool) -> anyhow::Result<CaptureRun> {
    let dir = tempfile::tempdir()?;
    let state = local::serve::state_for(dir.path().to_path_buf()).await?;
    let state = with_shredding(&state, shredding);
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let (address, bootstrap, server) = serve_fresh_until(state.clone(), async {
        let _ = stopped.await;
    })
    .await?;
    let shot = Shot {
        method: hyper::Method::POST,
        path: "/batch/".into(),
        headers: vec![("content-type".into(), "application/json".into())],
        body: batch_body(&bootstrap.project.api_token, load.batch),
    };
    let report = shot
        .load(address, load.connections, Duration::from_secs(load.seconds))
        .await?;
    let acknowledged = Instant::now();
    let events = (report.requests - report.errors) * load.batch as u64;
    while lake::committer::staged_count(&state).await? > 0 {
        if acknowledged.elapsed() > COMMIT_WAIT {
            bail!(
                "events acknowledged but not committed {} s after the load",
                COMMIT_WAIT.as_secs()
            );
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let commit_lag = acknowledged.elapsed();
    let _ = stop.send(());
    server.await??;
    Ok(CaptureRun {
        load: report,
        events,
        commit_lag,
    })
}

/// The order of `rounds` rounds of capture runs: with both settings, off-on then on-off and so
/// on, so that neither always runs on a file system the other has churned (each run creates and
/// deletes a file per request, and later runs on the same disk measured slower).
fn capture_order(shredding: Shredding, rounds: usize) -> Vec<bool> {
    (0..rounds)
        .flat_map(|round| {
            let settings = shredding.settings();
            let mut order = settings.to_vec();
            if round % 2 == 1 {
                order.reverse();
            }
            order
        })
        .collect()
}

fn mean(values: impl Iterator<Item = f64>) -> f64 {
    let (sum, count) = values.fold((0.0, 0usize), |(sum, count), v| (sum + v, count + 1));
    sum / count.max(1) as f64
}

/// `bench capture`: `rounds` runs per setting, then what shredding costs (the runs' means) when
/// both ran.
pub async fn capture(load: CaptureLoad, shredding: Shredding, rounds: usize) -> anyhow::Result<()> {
    let mut runs: Vec<(bool, CaptureRun)> = Vec::new();
    for on in capture_order(shredding, rounds.max(1)) {
        let run = capture_once(load, on).await?;
        println!(
            "capture, {} ({} per request):\n{run}",
            label(on),
            load.batch
        );
        runs.push((on, run));
    }
    if shredding == Shredding::Both {
        let means = |on: bool, figure: fn(&CaptureRun) -> f64| {
            mean(
                runs.iter()
                    .filter(|(o, _)| *o == on)
                    .map(|(_, r)| figure(r)),
            )
        };
        for (what, figure) in [
            (
                "capture acknowledged",
                CaptureRun::acknowledged_per_s as fn(&CaptureRun) -> f64,
            ),
            (
                "capture committed (end to end)",
                CaptureRun::committed_per_s,
            ),
        ] {
            println!(
                "{} (mean of {} runs each)",
                cost_line(what, means(false, figure), means(true, figure)),
                rounds.max(1)
            );
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn capture_runs_alternate_which_setting_goes_first() {
        assert_eq!(
            capture_order(Shredding::Both, 3),
            [false, true, true, false, false, true]
        );
        assert_eq!(capture_order(Shredding::On, 2), [true, true]);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn both_settings_import_every_event_into_a_table_of_their_own() {
        let scratch = tempfile::tempdir().unwrap();
        let file = scratch.path().join("export.ndjson.gz");
        super::super::import::write_export(500, 7, &file).unwrap();
        let summaries = imports(&file, Shredding::Both, scratch.path())
            .await
            .unwrap();
        let rows: Vec<u64> = summaries.iter().map(|s| s.report.rows).collect();
        assert_eq!(rows, [500, 500]);
        // Each run's data dir is gone once it is measured.
        let left: Vec<_> = std::fs::read_dir(scratch.path())
            .unwrap()
            .map(|entry| entry.unwrap().file_name())
            .collect();
        assert_eq!(left, ["export.ndjson.gz"]);
    }
}
