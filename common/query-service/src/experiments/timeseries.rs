//! The `experiment_timeseries` job (experiment_stats.md 1.8): a recalculation of one metric's
//! daily results. Each day is a full cumulative run of the experiment query with `as_of` = the
//! start of the next day in the project's time zone, stored as that day's `MetricResult`; the
//! recalculation's `last_successful_date` moves with it, so a retried run resumes after the last
//! stored day. A query that fails stores a failed day and fails the recalculation (it would fail
//! the same way again); only a Store failure fails the attempt, to be retried.

use std::sync::Arc;

use async_trait::async_trait;
use chrono::NaiveDate;
use common::AppState;
use common::jobs::{Job, JobContext, JobError};
use common::models::Project;
use experiment_core::results::{
    self, MetricResult, Recalculation, RecalculationStatus, ResultStatus, TIMESERIES_JOB,
    TIMESERIES_JOB_ATTEMPTS, TimeseriesJob,
};
use experiment_core::spec::spec_of;
use serde_json::{Value, json};
use uuid::Uuid;

use crate::errors::exposed_message;

/// Runs recalculations queued by name (`experiment_core::results::TIMESERIES_JOB`).
pub struct ExperimentTimeseriesJob;

#[async_trait]
impl Job for ExperimentTimeseriesJob {
    fn name(&self) -> &'static str {
        TIMESERIES_JOB
    }

    fn max_attempts(&self) -> u32 {
        TIMESERIES_JOB_ATTEMPTS
    }

    async fn run(&self, state: &AppState, run: &JobContext) -> Result<Value, JobError> {
        let team_id = run.team(self.name())?;
        let job: TimeseriesJob = run.payload(self.name())?;
        recalculate(state, team_id, &job, run.attempt >= TIMESERIES_JOB_ATTEMPTS).await
    }
}

/// Makes the job runnable here (the worker, `analytics serve`, the in-process app).
pub fn register(state: &AppState) {
    state.jobs.register(Arc::new(ExperimentTimeseriesJob));
}

/// How the days went.
enum Outcome {
    Completed {
        days: usize,
    },
    /// The recalculation cannot finish: why (a query error, the experiment gone...).
    Failed(String),
    /// A newer recalculation replaced this one: it owns the rows now.
    Replaced,
}

/// Runs the recalculation `job` names to its end. `last_attempt`: a Store failure now fails the
/// recalculation too, so it does not stay `in_progress` and block new ones forever.
pub async fn recalculate(
    state: &AppState,
    team_id: i64,
    job: &TimeseriesJob,
    last_attempt: bool,
) -> Result<Value, JobError> {
    let store = state.store.as_ref();
    let found =
        results::find_recalculation(store, team_id, job.experiment_id, &job.fingerprint).await?;
    let Some((current, _)) = found else {
        return Ok(json!({"ran": false, "reason": "no such recalculation"}));
    };
    if current.id != job.recalculation_id || !current.status.is_active() {
        // Replaced, or delivered again after it ended.
        return Ok(json!({"ran": false, "status": current.status.name()}));
    }
    let Some(recalculation) =
        set_status(state, team_id, job, RecalculationStatus::InProgress, None).await?
    else {
        return Ok(json!({"ran": false}));
    };
    match days(state, team_id, &recalculation).await {
        Ok(Outcome::Completed { days }) => {
            set_status(state, team_id, job, RecalculationStatus::Completed, None).await?;
            Ok(json!({"ran": true, "status": "completed", "days": days}))
        }
        Ok(Outcome::Failed(message)) => {
            set_status(
                state,
                team_id,
                job,
                RecalculationStatus::Failed,
                Some(message.clone()),
            )
            .await?;
            Ok(json!({"ran": true, "status": "failed", "error": message}))
        }
        Ok(Outcome::Replaced) => Ok(json!({"ran": true, "status": "replaced"})),
        Err(error) => {
            if last_attempt {
                let message = error.to_string();
                if let Err(store) = set_status(
                    state,
                    team_id,
                    job,
                    RecalculationStatus::Failed,
                    Some(message),
                )
                .await
                {
                    tracing::warn!(error = %store, "cannot mark a recalculation failed");
                }
            }
            Err(error)
        }
    }
}

async fn set_status(
    state: &AppState,
    team_id: i64,
    job: &TimeseriesJob,
    status: RecalculationStatus,
    error: Option<String>,
) -> Result<Option<Recalculation>, JobError> {
    Ok(results::update_recalculation(
        state.store.as_ref(),
        team_id,
        job.experiment_id,
        &job.fingerprint,
        job.recalculation_id,
        state.clock.now(),
        |recalculation| {
            recalculation.status = status;
            recalculation.error_message = error.clone();
        },
    )
    .await?)
}

/// Each day from the start (or after the last stored day) to the end date or today.
async fn days(
    state: &AppState,
    team_id: i64,
    recalculation: &Recalculation,
) -> Result<Outcome, JobError> {
    let store = state.store.as_ref();
    let Some(project) = Project::load(store, team_id).await? else {
        return Ok(Outcome::Failed("Project not found.".into()));
    };
    let id = recalculation.experiment_id;
    let Some(experiment) = experiment_core::repository::get_live(store, team_id, id).await? else {
        return Ok(Outcome::Failed(format!("Experiment {id} does not exist.")));
    };
    let Some(start) = experiment.start_date else {
        return Ok(Outcome::Failed(
            "Cannot recalculate timeseries for experiment that hasn't started".into(),
        ));
    };
    let Some(flag) =
        feature_flags::repository::get(store, team_id, experiment.feature_flag_id).await?
    else {
        return Ok(Outcome::Failed(
            "The experiment's feature flag does not exist.".into(),
        ));
    };
    let spec = spec_of(&experiment, &flag.flag, &project);
    let tz = results::project_tz(&project);
    let resume_after = recalculation.last_successful_date;
    let todo: Vec<NaiveDate> = results::days(start, experiment.end_date, state.clock.now(), tz)
        .into_iter()
        .filter(|day| resume_after.is_none_or(|last| *day > last))
        .collect();
    for day in &todo {
        let as_of = results::end_of_day(*day, tz);
        let mut day_spec = spec.clone();
        day_spec.as_of = Some(as_of);
        let query_id = Uuid::now_v7().to_string();
        let outcome =
            super::run_as_of(state, &project, &recalculation.metric, day_spec, &query_id).await;
        let now = state.clock.now();
        let mut row = MetricResult {
            experiment_id: id,
            metric_uuid: recalculation.metric_uuid().to_owned(),
            fingerprint: recalculation.fingerprint.clone(),
            query_from: start,
            query_to: as_of,
            status: ResultStatus::Completed,
            result: None,
            query_id: Some(query_id),
            completed_at: None,
            error_message: None,
            created_at: now,
            updated_at: now,
        };
        match outcome {
            Ok(response) => {
                row.result = Some(super::stored_result(&response));
                row.completed_at = Some(now);
                results::upsert_result(store, team_id, row).await?;
                let moved = results::update_recalculation(
                    store,
                    team_id,
                    id,
                    &recalculation.fingerprint,
                    recalculation.id,
                    now,
                    |recalculation| recalculation.last_successful_date = Some(*day),
                )
                .await?;
                if moved.is_none() {
                    return Ok(Outcome::Replaced);
                }
            }
            Err(error) => {
                let message = exposed_message(&error)
                    .unwrap_or_else(|| "The experiment query failed.".to_owned());
                row.status = ResultStatus::Failed;
                row.error_message = Some(message.clone());
                results::upsert_result(store, team_id, row).await?;
                return Ok(Outcome::Failed(message));
            }
        }
    }
    Ok(Outcome::Completed { days: todo.len() })
}
