//! Handing a planned query to a cluster (the `cluster` crate runs it on Ballista): what a session
//! needs of one, which queries go there, and the dialect's functions as a plan's receiver
//! rebuilds them (by name, with the parameters the query's session gave them).

use std::sync::Arc;

use datafusion::arrow::array::RecordBatch;
use datafusion::common::DataFusionError;
use datafusion::datasource::physical_plan::FileScanConfig;
use datafusion::datasource::source::DataSourceExec;
use datafusion::logical_expr::{AggregateUDF, ScalarUDF};
use datafusion::physical_plan::ExecutionPlan;
use datafusion::prelude::SessionConfig;
use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};

pub use crate::progress::RemoteProgress;
use crate::{date_trunc, event_names, funnel, paths, typing, udfs, uniq};

/// Where a session's large queries run instead of in this process.
pub trait Cluster: Send + Sync {
    /// Queries whose files count more bytes than this (after pruning) go to the cluster.
    fn min_scan_bytes(&self) -> u64;

    /// Runs `plan` on the cluster and answers its batches. Dropping the future cancels the job.
    fn run(
        &self,
        plan: Arc<dyn ExecutionPlan>,
        job: Job,
    ) -> BoxFuture<'static, Result<Vec<RecordBatch>, DataFusionError>>;
}

/// What a cluster needs beside the plan.
pub struct Job {
    /// The query's id (the job's name on the cluster, so it can be found and cancelled).
    pub name: String,
    /// The project's time zone (IANA name), the dialect's functions' parameter; the one naming
    /// event codes carries its names itself.
    pub zone: String,
    /// The session's settings (time zone, batch size...), applied where the plan runs.
    pub config: SessionConfig,
    /// Where the client reports how far the job is (the query's `query_progress`).
    pub progress: Arc<RemoteProgress>,
}

/// The cluster could not be reached (its scheduler is down, or the address is wrong): a query
/// that may run here does; one that asked for the cluster fails with this.
#[derive(Debug, thiserror::Error)]
#[error("the query cluster is unreachable: {0}")]
pub struct Unreachable(pub String);

impl Unreachable {
    /// Whether `error` (as a cluster's `run` answered it) is this.
    pub fn is(error: &DataFusionError) -> bool {
        matches!(error.find_root(), DataFusionError::External(cause) if cause.is::<Unreachable>())
    }
}

/// Whether a query runs here or on the cluster.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Placement {
    /// The cluster when its scan is large enough (and one is configured), else here.
    #[default]
    Auto,
    /// Here, whatever its size.
    Local,
    /// The cluster, whatever its size (an error when none is configured).
    Cluster,
}

impl Placement {
    /// A node's `modifiers.engine` (`auto`, `local`, `cluster`; checked when the node was read).
    pub fn from_modifier(engine: Option<&str>) -> Self {
        match engine {
            Some("local") => Placement::Local,
            Some("cluster") => Placement::Cluster,
            _ => Placement::Auto,
        }
    }

    /// The `modifiers.engine` that asks for it (`None` for the default).
    pub fn modifier(self) -> Option<&'static str> {
        match self {
            Placement::Auto => None,
            Placement::Local => Some("local"),
            Placement::Cluster => Some("cluster"),
        }
    }
}

/// Which engine ran a query (the query log records it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Engine {
    #[default]
    Local,
    Cluster,
}

impl Engine {
    pub fn as_str(self) -> &'static str {
        match self {
            Engine::Local => "local",
            Engine::Cluster => "cluster",
        }
    }
}

/// What the dialect's functions of one query depend on: the project's time zone (naive date
/// text is read in it) and, where the query groups by event code, the project's event names.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct FunctionParameters {
    pub zone: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub event_names: Option<Vec<String>>,
}

impl FunctionParameters {
    /// Every scalar function of the dialect, as a session with these parameters registers them.
    pub fn scalar_functions(&self) -> Vec<ScalarUDF> {
        let zone: chrono_tz::Tz = self.zone.parse().unwrap_or(chrono_tz::UTC);
        let names = self.event_names.clone().map(Arc::new);
        scalar_functions(zone, names)
    }
}

/// The dialect's scalar functions for a session in `zone` (with `event_names`, the function
/// naming event codes).
pub(crate) fn scalar_functions(
    zone: chrono_tz::Tz,
    event_names: Option<Arc<Vec<String>>>,
) -> Vec<ScalarUDF> {
    let mut all = udfs::all(zone);
    all.push(date_trunc::date_trunc());
    all.extend(typing::all());
    all.extend(event_names.map(event_names::event_name));
    all
}

/// The dialect's aggregate functions (they take no parameters).
pub fn aggregate_functions() -> Vec<AggregateUDF> {
    vec![
        funnel::aggregate_funnel(),
        paths::aggregate_paths(),
        uniq::aggregate_uniq(),
        uniq::aggregate_uniq_exact(),
    ]
}

/// Whether `name` is one of the dialect's scalar functions (rather than DataFusion's).
pub fn is_dialect_function(name: &str) -> bool {
    static NAMES: std::sync::LazyLock<std::collections::HashSet<String>> =
        std::sync::LazyLock::new(|| {
            scalar_functions(chrono_tz::UTC, Some(Arc::new(Vec::new())))
                .iter()
                .map(|udf| udf.name().to_owned())
                .collect()
        });
    NAMES.contains(name)
}

/// The event names `udf` reads codes as, when it is the function naming event codes.
pub fn event_names_of(udf: &ScalarUDF) -> Option<Arc<Vec<String>>> {
    event_names::names_of(udf)
}

/// Bytes of the files `plan` scans, as planned (after partition and statistics pruning).
pub fn scan_bytes(plan: &Arc<dyn ExecutionPlan>) -> u64 {
    let mut bytes = 0;
    let mut pending = vec![Arc::clone(plan)];
    while let Some(node) = pending.pop() {
        if let Some(files) = node
            .downcast_ref::<DataSourceExec>()
            .and_then(|source| source.data_source().downcast_ref::<FileScanConfig>())
        {
            bytes += files
                .file_groups
                .iter()
                .flat_map(|group| group.files())
                .map(|file| file.object_meta.size)
                .sum::<u64>();
        }
        pending.extend(node.children().into_iter().cloned());
    }
    bytes
}
