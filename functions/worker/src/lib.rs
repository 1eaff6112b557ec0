//! The `worker` function: commits staged capture batches (S3 notifications through the commit
//! queue), runs queued jobs (the job queue) and starts scheduled jobs (EventBridge), answering
//! SQS with the messages that failed so only those are delivered again.

pub mod event;

use std::collections::BTreeMap;
use std::time::Duration;

use aws_lambda_events::event::sqs::{BatchItemFailure, SqsBatchResponse, SqsEvent};
use common::AppState;
use common::error::Chain;
use common::jobs::{JobError, JobRun};
use lambda_runtime::LambdaEvent;
use serde::Serialize;
use tokio::time::Instant;

pub use event::{Message, WorkerEvent, parse_message};

/// A job is not started with less time than this left in the invocation: it goes back to the
/// queue for another invocation instead of being cut off half way.
const JOB_START_MARGIN: Duration = Duration::from_secs(5);

/// Every job the worker can run.
pub fn register_jobs(state: &AppState) {
    lake::jobs::register(state);
    query_service::jobs::register(state);
    query_service::experiments::timeseries::register(state);
    query_service::cohorts::calculation::register(state);
    query_service::endpoints::materialization::register(state);
}

#[derive(Debug, Serialize)]
#[serde(untagged)]
pub enum WorkerResponse {
    /// For SQS with `ReportBatchItemFailures`: the messages to deliver again.
    Batch(SqsBatchResponse),
    /// A scheduled run's record.
    Scheduled(Box<JobRun>),
}

/// The Lambda entry's handler, deadline from the invocation's context.
pub async fn function_handler(
    state: &AppState,
    event: LambdaEvent<WorkerEvent>,
) -> Result<WorkerResponse, JobError> {
    // Lambda's deadline passes in real time, whatever the state's clock says.
    let deadline = deadline_of(event.context.deadline, common::clock::wall_clock_ms());
    handle(state, event.payload, Some(deadline)).await
}

/// `deadline_ms` and `now_ms` are wall-clock milliseconds since the epoch, as Lambda gives them.
fn deadline_of(deadline_ms: u64, now_ms: u64) -> Instant {
    Instant::now() + Duration::from_millis(deadline_ms.saturating_sub(now_ms))
}

pub async fn handle(
    state: &AppState,
    event: WorkerEvent,
    deadline: Option<Instant>,
) -> Result<WorkerResponse, JobError> {
    match event {
        WorkerEvent::Scheduled(scheduled) => {
            let run = state.jobs.run_scheduled(state, scheduled, deadline).await?;
            tracing::info!(job = %run.job, run = %run.id, status = ?run.status, "scheduled run");
            Ok(WorkerResponse::Scheduled(Box::new(run)))
        }
        WorkerEvent::Sqs(batch) => Ok(WorkerResponse::Batch(
            handle_batch(state, batch, deadline).await,
        )),
    }
}

/// Commits first, then jobs, so a batch's slow jobs never hold its commits back; a message that
/// cannot be read, a commit that fails or a job that cannot be run or recorded fails alone.
pub async fn handle_batch(
    state: &AppState,
    batch: SqsEvent,
    deadline: Option<Instant>,
) -> SqsBatchResponse {
    let mut failed: Vec<String> = Vec::new();
    let mut commits: BTreeMap<i64, Vec<String>> = BTreeMap::new();
    let mut jobs = Vec::new();
    for record in batch.records {
        let id = record.message_id.unwrap_or_default();
        match parse_message(record.body.as_deref()) {
            Ok(Message::Staged(teams)) => {
                for team in teams {
                    commits.entry(team).or_default().push(id.clone());
                }
            }
            Ok(Message::Job(envelope)) => jobs.push((id, envelope)),
            Ok(Message::S3Test) => {}
            Err(error) => {
                tracing::error!(message = %id, error = %Chain(&error), "unreadable message");
                failed.push(id);
            }
        }
    }
    for (team, ids) in commits {
        match lake::commit_team(state, team).await {
            Ok(report) => tracing::info!(?report, "committed"),
            Err(error) => {
                tracing::error!(team, error = %Chain(&error), "commit failed");
                failed.extend(ids);
            }
        }
    }
    for (id, envelope) in jobs {
        let left = deadline.map(|deadline| deadline.saturating_duration_since(Instant::now()));
        if left.is_some_and(|left| left < JOB_START_MARGIN) {
            tracing::warn!(message = %id, job = %envelope.job, "no time left in this invocation; the job goes back to the queue");
            failed.push(id);
            continue;
        }
        let job = envelope.job.clone();
        match state.jobs.execute(state, envelope, deadline).await {
            Ok(run) => {
                tracing::info!(%job, run = %run.id, status = ?run.status, attempts = run.attempts, "job run")
            }
            Err(error) => {
                tracing::error!(message = %id, %job, error = %Chain(&error), "job could not run");
                failed.push(id);
            }
        }
    }
    failed.sort_unstable();
    failed.dedup();
    let mut response = SqsBatchResponse::default();
    response.batch_item_failures = failed
        .into_iter()
        .map(|id| {
            let mut failure = BatchItemFailure::default();
            failure.item_identifier = id;
            failure
        })
        .collect();
    response
}
