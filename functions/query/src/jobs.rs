//! Async queries as jobs: embedded they run in this process; in AWS they go through SQS to the
//! `worker` function. Either way the status in the Store is the truth, and a cancel is a flag
//! there that the running job polls.

use std::time::Duration;

use chrono::Utc;
use common::AppState;
use common::models::Project;
use serde_json::json;

use crate::errors::exposed_message;
use crate::runner::{self, Run};
use crate::slots;
use crate::status::{self, QueryStatus};

/// How often a running job looks for a cancel.
const CANCEL_POLL: Duration = Duration::from_millis(200);

/// Sends the job on its way (SQS when configured, else a task here).
pub async fn enqueue(state: &AppState, team_id: i64, query_id: &str) -> Result<(), String> {
    match &state.config.query.job_queue_url {
        Some(queue) => {
            static CLIENT: tokio::sync::OnceCell<aws_sdk_sqs::Client> =
                tokio::sync::OnceCell::const_new();
            let client = CLIENT
                .get_or_init(|| async {
                    let mut loader = aws_config::defaults(aws_config::BehaviorVersion::latest());
                    // An emulator's endpoint (AWS_ENDPOINT_URL), as for the store and objects.
                    if let Some(endpoint) = &state.config.aws_endpoint_url {
                        loader = loader.endpoint_url(endpoint);
                    }
                    aws_sdk_sqs::Client::new(&loader.load().await)
                })
                .await;
            client
                .send_message()
                .queue_url(queue)
                .message_body(
                    json!({"job": "query", "team_id": team_id, "query_id": query_id}).to_string(),
                )
                .send()
                .await
                .map_err(|e| e.to_string())?;
            Ok(())
        }
        None => {
            let state = state.clone();
            let id = query_id.to_owned();
            tokio::spawn(async move { run_job(&state, team_id, &id).await });
            Ok(())
        }
    }
}

async fn cancelled(state: &AppState, team_id: i64, id: &str) {
    loop {
        tokio::time::sleep(CANCEL_POLL).await;
        match QueryStatus::load(state, team_id, id).await {
            Ok(Some(status)) if !status.cancelled => continue,
            Ok(_) => return,
            Err(error) => tracing::warn!(%error, "cannot read a query status"),
        }
    }
}

/// Runs a queued query to the end (or until cancelled) and records the outcome in its status.
pub async fn run_job(state: &AppState, team_id: i64, id: &str) {
    let picked = QueryStatus::update(state, team_id, id, |mut status| {
        if status.pickup_time.is_none() {
            status.pickup_time = Some(Utc::now());
        }
        Ok(status)
    })
    .await;
    let status = match picked {
        Ok(status) if !status.complete && !status.cancelled => status,
        Ok(_) => return,
        Err(error) => {
            tracing::warn!(%error, id, "async query status is gone");
            return;
        }
    };
    let project = match Project::load(state.store.as_ref(), team_id).await {
        Ok(Some(project)) => project,
        _ => {
            finish(
                state,
                team_id,
                id,
                Err(Some("Project not found.".into())),
                None,
            )
            .await;
            return;
        }
    };
    let slot = slots::wait(state, team_id).await;
    let node = status.job.node();
    let caller = status.job.caller();
    let started = std::time::Instant::now();
    let outcome = runner::run(
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
        cancelled(state, team_id, id),
    )
    .await;
    if let Some(slot) = slot {
        slot.release().await;
    }
    let elapsed = started.elapsed();
    match outcome {
        Ok(response) => {
            let progress = status::Progress {
                time_elapsed: elapsed.as_millis() as u64,
                ..Default::default()
            };
            match status::store_results(state, team_id, id, &response).await {
                Ok(path) => finish(state, team_id, id, Ok(path), Some(progress)).await,
                Err(error) => {
                    tracing::error!(%error, "cannot store async results");
                    finish(state, team_id, id, Err(None), Some(progress)).await
                }
            }
        }
        Err(error) => finish(state, team_id, id, Err(exposed_message(&error)), None).await,
    }
}

async fn finish(
    state: &AppState,
    team_id: i64,
    id: &str,
    outcome: Result<String, Option<String>>,
    progress: Option<status::Progress>,
) {
    let result = QueryStatus::update(state, team_id, id, |mut status| {
        status.complete = true;
        status.end_time = Some(Utc::now());
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
    .await;
    if let Err(error) = result {
        tracing::warn!(%error, id, "cannot record the end of an async query");
    }
}
