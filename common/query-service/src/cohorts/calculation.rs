//! The `cohort_calculation` job (queued by the cohorts family): a dynamic cohort's members are
//! `SELECT id FROM persons WHERE <membership(cohort, "id")>` over the event lake as of the
//! clock's now, stored with `cohort_core::members::replace`, then `count` and `last_calculation`
//! set. A static cohort is only recounted. A failing query counts an error on the cohort
//! (`errors_calculating`, `last_error_at`); an engine-internal failure is retried as well.

use std::collections::BTreeSet;
use std::sync::Arc;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use cohort_core::Cohort;
use cohort_core::calculation::{JOB, Request};
use common::AppState;
use common::jobs::{Job, JobContext, JobError};
use common::models::Project;
use common::store::StoreError;
use engine::QueryError;
use serde_json::{Value, json};
use uuid::Uuid;

use crate::errors::exposed_message;

/// Runs calculations queued by name ([`JOB`]).
pub struct CohortCalculationJob;

#[async_trait]
impl Job for CohortCalculationJob {
    fn name(&self) -> &'static str {
        JOB
    }

    fn max_attempts(&self) -> u32 {
        3
    }

    async fn run(&self, state: &AppState, run: &JobContext) -> Result<Value, JobError> {
        // The schedule's run (no project, no payload): every behavioural cohort again, so the
        // members flags read follow the events.
        if run.team_id.is_none() && run.payload.is_null() {
            return queue_behavioral(state).await;
        }
        let request: Request = run.payload(self.name())?;
        if run.team_id.is_some_and(|team| team != request.team_id) {
            return Err(JobError::permanent(
                "the payload's team_id is not the run's project",
            ));
        }
        calculate(state, request.team_id, request.cohort_id).await
    }
}

/// Queues one calculation per live behavioural cohort of every project that has events (a
/// project without an event table has no behaviour to recompute).
async fn queue_behavioral(state: &AppState) -> Result<Value, JobError> {
    let teams = lake_core::table::teams_with_tables(state)
        .await
        .map_err(JobError::failed)?;
    let mut queued = Vec::new();
    for team_id in teams {
        for cohort in cohort_core::repository::list_live(state.store.as_ref(), team_id).await? {
            if cohort.is_static || !cohort.is_behavioral() {
                continue;
            }
            let request = Request {
                team_id,
                cohort_id: cohort.id,
            };
            let run = state
                .jobs
                .enqueue(
                    state,
                    Arc::new(CohortCalculationJob),
                    Some(team_id),
                    json!(request),
                )
                .await?;
            queued.push(json!({"team_id": team_id, "cohort_id": cohort.id, "run_id": run.id}));
        }
    }
    Ok(json!({ "queued": queued }))
}

/// Makes the job runnable here (the worker, `analytics serve`, the in-process app).
pub fn register(state: &AppState) {
    state.jobs.register(Arc::new(CohortCalculationJob));
}

/// Calculates cohort `cohort_id` of project `team_id` now; answers what happened (the run's
/// output). A cohort that is gone is nothing to do.
pub async fn calculate(state: &AppState, team_id: i64, cohort_id: i64) -> Result<Value, JobError> {
    let store = state.store.as_ref();
    let Some(cohort) = cohort_core::repository::get_live(store, team_id, cohort_id).await? else {
        return Ok(json!({"ran": false, "reason": "no such cohort"}));
    };
    let Some(project) = Project::load(store, team_id).await? else {
        return Ok(json!({"ran": false, "reason": "no such project"}));
    };
    if cohort.is_static {
        let count = cohort_core::members::list(store, team_id, cohort_id)
            .await?
            .len();
        record_success(state, team_id, cohort_id, count).await?;
        return Ok(json!({"ran": true, "static": true, "count": count}));
    }
    match members(state, &project, &cohort).await {
        Ok(persons) => {
            cohort_core::members::replace(store, team_id, cohort_id, &persons).await?;
            record_success(state, team_id, cohort_id, persons.len()).await?;
            Ok(json!({"ran": true, "count": persons.len()}))
        }
        Err(error) => {
            let now = state.clock.now();
            bookkeeping(state, team_id, cohort_id, |cohort| {
                cohort.errors_calculating += 1;
                cohort.last_error_at = Some(now);
                cohort.is_calculating = false;
            })
            .await?;
            match exposed_message(&error) {
                Some(message) => Ok(json!({"ran": true, "status": "failed", "error": message})),
                None => Err(JobError::failed(error)),
            }
        }
    }
}

async fn record_success(
    state: &AppState,
    team_id: i64,
    cohort_id: i64,
    count: usize,
) -> Result<(), StoreError> {
    let now: DateTime<Utc> = state.clock.now();
    let count = i64::try_from(count).unwrap_or(i64::MAX);
    bookkeeping(state, team_id, cohort_id, |cohort| {
        cohort.count = Some(count);
        cohort.last_calculation = Some(now);
        cohort.is_calculating = false;
        cohort.errors_calculating = 0;
    })
    .await
}

async fn bookkeeping(
    state: &AppState,
    team_id: i64,
    cohort_id: i64,
    change: impl Fn(&mut Cohort),
) -> Result<(), StoreError> {
    cohort_core::repository::update_bookkeeping(
        state.store.as_ref(),
        team_id,
        cohort_id,
        |mut c| {
            change(&mut c);
            Ok(c)
        },
    )
    .await
    .map(|_| ())
}

/// The persons in the cohort now (every one of them).
async fn members(
    state: &AppState,
    project: &Project,
    cohort: &Cohort,
) -> Result<BTreeSet<Uuid>, QueryError> {
    let cohorts = super::load(state, project.id, [cohort.id])
        .await
        .map_err(QueryError::internal)?;
    let members =
        super::members_of(state, project, &cohorts, cohort.id, state.clock.now(), None).await?;
    Ok(members.unwrap_or_default())
}
