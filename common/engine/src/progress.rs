//! How far a query has got, read from its physical plans' metrics while they run: rows and bytes
//! the scans have read, the rows they are expected to read, and the compute time spent. What
//! PostHog reads from ClickHouse's `system.processes` for an async query's `query_progress`.

use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use datafusion::physical_plan::metrics::MetricsSet;
use datafusion::physical_plan::{ExecutionPlan, StatisticsArgs, StatisticsContext};

/// A snapshot of what a query's plans have done so far.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Scanned {
    /// Rows the scans (the plans' leaves) produced.
    pub rows: u64,
    /// Bytes the scans read from storage (Parquet's `bytes_scanned`).
    pub bytes: u64,
    /// Rows the scans are expected to read, from the files' statistics; never fewer than `rows`.
    pub estimated_rows: u64,
    /// Time the operators spent computing (their `elapsed_compute`, and the scans' decoding
    /// time), in nanoseconds, summed over every thread: CPU time rather than wall time.
    pub compute_nanos: u64,
}

impl Scanned {
    fn add(self, other: Scanned) -> Scanned {
        Scanned {
            rows: self.rows + other.rows,
            bytes: self.bytes + other.bytes,
            estimated_rows: self.estimated_rows + other.estimated_rows,
            compute_nanos: self.compute_nanos + other.compute_nanos,
        }
    }
}

/// The plans of the queries a run executes, published as each is planned, so another task can
/// read their metrics while they run ([`Progress::scanned`]). Cloning shares it.
#[derive(Debug, Clone, Default)]
pub struct Progress(Arc<Mutex<Vec<Watched>>>);

#[derive(Debug)]
struct Watched {
    plan: Arc<dyn ExecutionPlan>,
    /// Rows its scans are expected to read (statistics do not change while it runs).
    estimated_rows: u64,
    /// When it runs on a cluster (its operators are not here to read): how far the job is.
    remote: Option<Arc<RemoteProgress>>,
}

/// How far a job on a cluster has got, as its scheduler reports it (the share of its stages
/// done, in percent); the cluster's client updates it while the job runs.
#[derive(Debug, Default)]
pub struct RemoteProgress(AtomicU8);

impl RemoteProgress {
    pub fn set_percent(&self, percent: u8) {
        self.0.store(percent.min(100), Ordering::Relaxed);
    }

    fn percent(&self) -> u64 {
        u64::from(self.0.load(Ordering::Relaxed))
    }
}

impl Progress {
    pub fn new() -> Self {
        Self::default()
    }

    /// Watches `plan` (a query about to run) beside the plans already watched.
    pub(crate) fn publish(&self, plan: Arc<dyn ExecutionPlan>) {
        self.watch(plan, None);
    }

    /// Watches `plan`, run on a cluster whose job reports how far it is to `remote`.
    pub(crate) fn publish_remote(&self, plan: Arc<dyn ExecutionPlan>, remote: Arc<RemoteProgress>) {
        self.watch(plan, Some(remote));
    }

    /// Watches `plan`, instead of itself when it is already watched (a query meant for the
    /// cluster that runs here after all).
    fn watch(&self, plan: Arc<dyn ExecutionPlan>, remote: Option<Arc<RemoteProgress>>) {
        let estimated_rows = estimated_rows(plan.as_ref());
        let mut watched = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        watched.retain(|watched| !Arc::ptr_eq(&watched.plan, &plan));
        watched.push(Watched {
            plan,
            estimated_rows,
            remote,
        });
    }

    /// What every watched plan has done so far (zeros before the first is planned).
    pub fn scanned(&self) -> Scanned {
        let watched = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        watched
            .iter()
            .map(|watched| {
                let mut scanned = match &watched.remote {
                    // Rows in proportion to the stages done: the executors' metrics stay there.
                    Some(remote) => Scanned {
                        rows: watched.estimated_rows * remote.percent() / 100,
                        ..Scanned::default()
                    },
                    None => scanned(watched.plan.as_ref()),
                };
                scanned.estimated_rows = watched.estimated_rows.max(scanned.rows);
                scanned
            })
            .fold(Scanned::default(), Scanned::add)
    }
}

/// What `plan` has done so far: rows and bytes of its leaves (the scans), compute time of every
/// operator. `estimated_rows` is left at zero (see [`Progress`], which knows it).
pub(crate) fn scanned(plan: &dyn ExecutionPlan) -> Scanned {
    let metrics = plan.metrics();
    let mut here = Scanned {
        compute_nanos: metrics.as_ref().map_or(0, compute_nanos),
        ..Scanned::default()
    };
    let children = plan.children();
    if children.is_empty() {
        here.rows = metrics.as_ref().and_then(|m| m.output_rows()).unwrap_or(0) as u64;
        here.bytes = metrics
            .as_ref()
            .and_then(|m| m.sum_by_name("bytes_scanned"))
            .map_or(0, |v| v.as_usize() as u64);
        return here;
    }
    children
        .iter()
        .map(|child| scanned(child.as_ref()))
        .fold(here, Scanned::add)
}

/// An operator's compute time: its `elapsed_compute`, plus the decoding time file scans record
/// apart (their `elapsed_compute` is not timed).
fn compute_nanos(metrics: &MetricsSet) -> u64 {
    let compute = metrics.elapsed_compute().unwrap_or(0);
    let decoding = metrics
        .sum_by_name("time_elapsed_processing")
        .map_or(0, |v| v.as_usize());
    (compute + decoding) as u64
}

/// Rows the leaves of `plan` are expected to produce, from their statistics (a leaf without any
/// counts nothing).
fn estimated_rows(plan: &dyn ExecutionPlan) -> u64 {
    let children = plan.children();
    if children.is_empty() {
        return StatisticsContext::new()
            .compute(plan, &StatisticsArgs::new())
            .ok()
            .and_then(|statistics| statistics.num_rows.get_value().copied())
            .unwrap_or(0) as u64;
    }
    children
        .iter()
        .map(|child| estimated_rows(child.as_ref()))
        .sum()
}
