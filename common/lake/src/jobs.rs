//! The lake's background jobs: `commit` (move staged batches into the tables) and `compact`
//! (deduplicate, squash overrides, optimize, vacuum). Both take an optional project: a run for
//! one project does that project; a run for none (the schedules) does every project, compaction
//! by queueing one run per project so each has its own record, retries and time budget.

use std::sync::Arc;

use async_trait::async_trait;
use common::AppState;
use common::jobs::{Job, JobContext, JobError};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::committer::{self, CommitReport};
use crate::compaction::{self, CompactionReport};

/// Neither job takes a payload beyond its project.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct NoPayload {}

fn no_payload(run: &JobContext, job: &str) -> Result<(), JobError> {
    if run.payload.is_null() {
        return Ok(());
    }
    run.payload::<NoPayload>(job).map(|_| ())
}

pub struct Commit;

#[async_trait]
impl Job for Commit {
    fn name(&self) -> &'static str {
        "commit"
    }

    async fn run(&self, state: &AppState, run: &JobContext) -> Result<Value, JobError> {
        no_payload(run, self.name())?;
        let reports = match run.team_id {
            Some(team) => vec![
                committer::commit_team(state, team)
                    .await
                    .map_err(JobError::failed)?,
            ],
            None => committer::commit_all(state)
                .await
                .map_err(JobError::failed)?,
        };
        Ok(commit_summary(&reports))
    }
}

fn commit_summary(reports: &[CommitReport]) -> Value {
    Value::Array(
        reports
            .iter()
            .map(|r| {
                json!({"team_id": r.team_id, "batches": r.batches, "events": r.events,
                    "recovered": r.recovered, "rejected": r.rejected, "version": r.version})
            })
            .collect(),
    )
}

pub struct Compact;

#[async_trait]
impl Job for Compact {
    fn name(&self) -> &'static str {
        "compact"
    }

    async fn run(&self, state: &AppState, run: &JobContext) -> Result<Value, JobError> {
        no_payload(run, self.name())?;
        match run.team_id {
            Some(team) => {
                let report = compaction::compact_team(state, team)
                    .await
                    .map_err(JobError::failed)?;
                Ok(compaction_summary(&report))
            }
            None => {
                let teams = compaction::teams_to_compact(state)
                    .await
                    .map_err(JobError::failed)?;
                let mut queued = Vec::with_capacity(teams.len());
                for team in &teams {
                    let run = state
                        .jobs
                        .enqueue(state, Arc::new(Compact), Some(*team), Value::Null)
                        .await?;
                    queued.push(json!({"team_id": team, "run_id": run.id}));
                }
                Ok(json!({ "queued": queued }))
            }
        }
    }
}

fn compaction_summary(report: &CompactionReport) -> Value {
    json!({
        "team_id": report.team_id,
        "files_added": report.files_added,
        "files_removed": report.files_removed,
        "files_vacuumed": report.files_vacuumed,
        "rows_deduplicated": report.rows_deduplicated,
        "overrides_squashed": report.overrides_squashed,
        "rows_reassigned": report.rows_reassigned,
        "persons_erased": report.persons_erased,
        "rows_erased": report.rows_erased,
    })
}

/// Registers the lake's jobs with the state's runner.
pub fn register(state: &AppState) {
    state.jobs.register(Arc::new(Commit));
    state.jobs.register(Arc::new(Compact));
}
