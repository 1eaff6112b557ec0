//! Async queries as jobs of the state's job runner (`common::jobs`): embedded they run in this
//! process; in AWS they go through SQS to the `worker` function. Either way the query's status in
//! the Store is the truth the client polls, and a cancel is a flag there that the running job
//! polls. The job's payload names the status (`{"query_id"}`); the status holds the query.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use common::AppState;
use common::jobs::{Job, JobContext, JobError, JobRun};
use common::models::Project;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::errors::exposed_message;
use crate::runner::{self, Run};
use crate::slots;
use crate::status::{self, QueryStatus};

/// How often a running job looks for a cancel.
const CANCEL_POLL: Duration = Duration::from_millis(200);
/// How often, at most, a running job writes its progress into its status (by the state's clock).
const PROGRESS_EVERY: chrono::Duration = chrono::Duration::seconds(1);

/// The `query` job: runs the async query its payload names.
pub struct QueryJob;

#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Payload {
    query_id: String,
}

#[async_trait]
impl Job for QueryJob {
    fn name(&self) -> &'static str {
        "query"
    }

    async fn run(&self, state: &AppState, run: &JobContext) -> Result<Value, JobError> {
        let team_id = run.team(self.name())?;
        let Payload { query_id } = run.payload(self.name())?;
        run_job(state, team_id, &query_id).await
    }

    /// The query's status ends failed too, so a poll stops waiting for it.
    async fn abandoned(&self, state: &AppState, run: &JobRun) -> Result<(), JobError> {
        let (Some(team_id), Ok(Payload { query_id })) = (
            run.team_id,
            serde_json::from_value::<Payload>(run.payload.clone()),
        ) else {
            return Ok(());
        };
        if QueryStatus::load(state, team_id, &query_id)
            .await?
            .is_none_or(|s| s.complete)
        {
            return Ok(());
        }
        finish(
            state,
            team_id,
            &query_id,
            Err(Some(
                "The query stopped: the process running it ended before it finished. Run it again."
                    .into(),
            )),
            None,
        )
        .await
    }
}

/// Makes the `query` job runnable here (the worker registers every job).
pub fn register(state: &AppState) {
    state.jobs.register(Arc::new(QueryJob));
}

/// Queues a run of the async query whose status `query_id` names (the status is created first).
pub async fn enqueue(state: &AppState, team_id: i64, query_id: &str) -> Result<JobRun, JobError> {
    let payload = serde_json::to_value(Payload {
        query_id: query_id.to_owned(),
    })
    .map_err(|error| JobError::permanent(error.to_string()))?;
    state
        .jobs
        .enqueue(state, Arc::new(QueryJob), Some(team_id), payload)
        .await
}

/// Watches a running query until it is cancelled (or its status is gone): looks for the cancel
/// flag in its status, and at most once per [`PROGRESS_EVERY`] writes what its plans have done
/// so far (`progress`, running since `started`) into the status, so a poll on any instance sees
/// it.
async fn watch(
    state: &AppState,
    team_id: i64,
    id: &str,
    progress: &engine::Progress,
    started: DateTime<Utc>,
) {
    let mut written = started;
    loop {
        tokio::time::sleep(CANCEL_POLL).await;
        let status = match QueryStatus::load(state, team_id, id).await {
            Ok(Some(status)) => status,
            Ok(None) => return,
            Err(error) => {
                tracing::warn!(%error, "cannot read a query status");
                continue;
            }
        };
        if status.cancelled {
            return;
        }
        let now = state.clock.now();
        if now - written < PROGRESS_EVERY {
            continue;
        }
        written = now;
        let current = status::Progress::of(progress.scanned(), now - started);
        let updated = QueryStatus::update(state, team_id, id, |mut status| {
            if !status.complete {
                status.query_progress = Some(current.clone());
            }
            Ok(status)
        })
        .await;
        match updated {
            Ok(status) if status.cancelled => return,
            Ok(_) => {}
            Err(error) => tracing::warn!(%error, "cannot record a query's progress"),
        }
    }
}

/// Runs a queued query to the end (or until cancelled) and records the outcome in its status.
/// The query's own failure (bad SQL, time or memory limit, cancel) is the status's to tell, not
/// the job's: the job fails only when there is no status to run, or no way to record the outcome.
pub async fn run_job(state: &AppState, team_id: i64, id: &str) -> Result<Value, JobError> {
    if QueryStatus::load(state, team_id, id).await?.is_none() {
        return Err(JobError::permanent(format!(
            "no async query {id} in project {team_id} (it ended more than its retention ago, or never started)"
        )));
    }
    let picked_up = state.clock.now();
    let status = QueryStatus::update(state, team_id, id, |mut status| {
        if status.pickup_time.is_none() {
            status.pickup_time = Some(picked_up);
        }
        Ok(status)
    })
    .await?;
    if status.complete {
        // Delivered again after it ended.
        return Ok(json!({"query_id": id, "ran": false}));
    }
    if status.cancelled {
        // Cancelled before it started: it ends as cancelled, so polls stop waiting.
        finish(state, team_id, id, Err(None), None).await?;
        return Ok(json!({"query_id": id, "ran": false}));
    }
    let Some(project) = Project::load(state.store.as_ref(), team_id).await? else {
        finish(
            state,
            team_id,
            id,
            Err(Some("Project not found.".into())),
            None,
        )
        .await?;
        return Err(JobError::permanent(format!("project {team_id} is gone")));
    };
    let slot = slots::wait(state, team_id).await;
    let node = status.job.node();
    let caller = status.job.caller();
    let progress = engine::Progress::new();
    let started = state.clock.now();
    let outcome = runner::run_watched(
        Run {
            state,
            project: &project,
            query_id: id,
            node: &node,
            caller: &caller,
            force: status.job.force,
            endpoint: "",
            log: true,
        },
        watch(state, team_id, id, &progress, started),
        &progress,
    )
    .await;
    if let Some(slot) = slot {
        slot.release().await;
    }
    // What the plans did in all (nothing when the answer came from the cache).
    let progress = status::Progress::of(progress.scanned(), state.clock.now() - started);
    match outcome {
        Ok(response) => {
            match status::store_results(state, team_id, id, &response).await {
                Ok(path) => finish(state, team_id, id, Ok(path), Some(progress)).await?,
                Err(error) => {
                    tracing::error!(%error, "cannot store async results");
                    finish(state, team_id, id, Err(None), Some(progress)).await?;
                    return Err(JobError::permanent(format!(
                        "cannot store the results of query {id}: {error}"
                    )));
                }
            }
            Ok(json!({"query_id": id, "ran": true, "error": false}))
        }
        Err(error) => {
            finish(
                state,
                team_id,
                id,
                Err(exposed_message(&error)),
                Some(progress),
            )
            .await?;
            Ok(json!({"query_id": id, "ran": true, "error": true}))
        }
    }
}

async fn finish(
    state: &AppState,
    team_id: i64,
    id: &str,
    outcome: Result<String, Option<String>>,
    progress: Option<status::Progress>,
) -> Result<(), JobError> {
    QueryStatus::update(state, team_id, id, |mut status| {
        status.complete = true;
        status.end_time = Some(state.clock.now());
        if progress.is_some() {
            status.query_progress = progress.clone();
        }
        if status.cancelled {
            status.error = true;
            status.error_message = Some("Query was cancelled".into());
            return Ok(status);
        }
        match &outcome {
            Ok(path) => status.results_path = Some(path.clone()),
            Err(message) => {
                status.error = true;
                status.error_message = message.clone();
            }
        }
        Ok(status)
    })
    .await?;
    Ok(())
}
