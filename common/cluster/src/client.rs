//! What the query service submits through: a physical plan, planned and optimised here, sent
//! to the scheduler, its result partitions fetched from the executors. A job whose caller stops
//! waiting (a timeout, a cancel, a client gone) is cancelled on the cluster.

use std::sync::Arc;
use std::time::Duration;

use ballista_core::config::BallistaConfig;
use ballista_core::execution_plans::execute_physical_plan;
use ballista_core::extension::SessionConfigExt;
use common::config::ClusterAddress;
use datafusion::arrow::array::RecordBatch;
use datafusion::common::DataFusionError;
use datafusion::physical_plan::ExecutionPlan;
use datafusion_proto::protobuf::PhysicalPlanNode;
use engine::remote::{Cluster, Job, RemoteProgress, Unreachable};
use futures::TryStreamExt;
use futures::future::BoxFuture;
use serde::Deserialize;

use crate::codec::ClusterCodec;

/// How long reaching the scheduler may take before the cluster counts as unreachable.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(3);

/// A scheduler queries can be sent to.
#[derive(Clone)]
pub struct Client {
    address: ClusterAddress,
    min_scan_bytes: u64,
    http: reqwest::Client,
}

impl Client {
    pub fn new(address: ClusterAddress, min_scan_bytes: u64, http: reqwest::Client) -> Self {
        Self {
            address,
            min_scan_bytes,
            http,
        }
    }

    async fn submit(
        &self,
        plan: Arc<dyn ExecutionPlan>,
        job: Job,
    ) -> Result<Vec<RecordBatch>, DataFusionError> {
        let reachable = tokio::time::timeout(
            CONNECT_TIMEOUT,
            tokio::net::TcpStream::connect((self.address.host.as_str(), self.address.port)),
        )
        .await;
        match reachable {
            Ok(Ok(_)) => {}
            Ok(Err(error)) => return Err(unreachable(&self.address, error.to_string())),
            Err(_) => return Err(unreachable(&self.address, "no answer in 3 s".into())),
        }
        let codec = ClusterCodec::for_query(job.zone);
        let config = job
            .config
            .with_option_extension(BallistaConfig::default())
            .with_ballista_job_name(&job.name)
            .with_ballista_adaptive_query_planner(false);
        let mut cancel = CancelOnDrop {
            name: job.name.clone(),
            http: self.http.clone(),
            scheduler: self.rest(""),
            armed: true,
        };
        let _progress = Watch(tokio::spawn(report_progress(
            self.http.clone(),
            self.rest("/api/jobs"),
            job.name.clone(),
            job.progress,
        )));
        let ran = async {
            let stream = execute_physical_plan::<PhysicalPlanNode>(
                format!("http://{}:{}", self.address.host, self.address.port),
                &BallistaConfig::default(),
                plan,
                &codec,
                job.name,
                config,
            )
            .await?;
            stream.try_collect().await
        };
        let batches = ran.await.map_err(memory_as_such)?;
        cancel.armed = false;
        Ok(batches)
    }

    fn rest(&self, path: &str) -> String {
        format!("http://{}:{}{path}", self.address.host, self.address.port)
    }
}

impl Cluster for Client {
    fn min_scan_bytes(&self) -> u64 {
        self.min_scan_bytes
    }

    fn run(
        &self,
        plan: Arc<dyn ExecutionPlan>,
        job: Job,
    ) -> BoxFuture<'static, Result<Vec<RecordBatch>, DataFusionError>> {
        let client = self.clone();
        Box::pin(async move { client.submit(plan, job).await })
    }
}

/// A job that failed for want of memory on an executor, as the local engine says it (Ballista
/// passes the executor's error on as text).
fn memory_as_such(error: DataFusionError) -> DataFusionError {
    let text = error.to_string();
    if text.contains("Resources exhausted") {
        DataFusionError::ResourcesExhausted(text)
    } else {
        error
    }
}

/// How often a running job's progress is read from the scheduler.
const PROGRESS_EVERY: Duration = Duration::from_millis(250);

/// Reads the progress of the job named `name` from the scheduler's job list into `progress`,
/// until aborted.
async fn report_progress(
    http: reqwest::Client,
    jobs: String,
    name: String,
    progress: Arc<RemoteProgress>,
) {
    loop {
        tokio::time::sleep(PROGRESS_EVERY).await;
        let Ok(response) = http.get(&jobs).send().await else {
            continue;
        };
        let Ok(listed) = response.json::<Vec<JobSummary>>().await else {
            continue;
        };
        if let Some(job) = listed.iter().find(|job| job.job_name == name) {
            progress.set_percent(job.percent_complete);
        }
    }
}

/// A task aborted when this is dropped.
struct Watch(tokio::task::JoinHandle<()>);

impl Drop for Watch {
    fn drop(&mut self) {
        self.0.abort();
    }
}

fn unreachable(address: &ClusterAddress, reason: String) -> DataFusionError {
    DataFusionError::External(Box::new(Unreachable(format!("{address}: {reason}"))))
}

/// Cancels the job named `name` when dropped armed (its caller stopped waiting).
struct CancelOnDrop {
    http: reqwest::Client,
    /// The scheduler's REST API (`http://host:port`).
    scheduler: String,
    name: String,
    armed: bool,
}

#[derive(Deserialize)]
struct JobSummary {
    job_id: String,
    job_name: String,
    status: String,
    #[serde(default)]
    percent_complete: u8,
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        if !self.armed {
            return;
        }
        let (http, scheduler, name) =
            (self.http.clone(), self.scheduler.clone(), self.name.clone());
        runtime.spawn(async move {
            if let Err(error) = cancel(&http, &scheduler, &name).await {
                tracing::warn!(%error, job = %name, "could not cancel the cluster job");
            }
        });
    }
}

/// Cancels the job named `name`, found in the scheduler's job list.
async fn cancel(http: &reqwest::Client, scheduler: &str, name: &str) -> Result<(), reqwest::Error> {
    let listed: Vec<JobSummary> = http
        .get(format!("{scheduler}/api/jobs"))
        .send()
        .await?
        .error_for_status()?
        .json()
        .await?;
    for job in listed
        .iter()
        .filter(|job| job.job_name == name && matches!(job.status.as_str(), "Queued" | "Running"))
    {
        http.patch(format!("{scheduler}/api/job/{}", job.job_id))
            .send()
            .await?
            .error_for_status()?;
        tracing::info!(job = %job.job_id, name, "cluster job cancelled");
    }
    Ok(())
}
