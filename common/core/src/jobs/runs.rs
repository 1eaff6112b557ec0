//! The record of each job run in the Store, so every instance sees the same status.
//!
//! Key: `TEAM#<id>` (or `JOBS` for runs that belong to no project) / `JOB#<name>#<run uuidv7>`,
//! so a project's runs of one job list newest first by a prefix query; kept 30 days.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use uuid::Uuid;

use super::{Envelope, Job, JobError};
use crate::state::AppState;
use crate::store::{self, Condition, Item, QueryOptions, Store, StoreError};

/// How long run records are kept.
const KEEP_DAYS: i64 = 30;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    Queued,
    Running,
    /// An attempt failed; the next one is queued for `next_attempt_at`.
    Retrying,
    Succeeded,
    Failed,
}

impl RunStatus {
    pub fn is_final(self) -> bool {
        matches!(self, Self::Succeeded | Self::Failed)
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JobRun {
    pub id: Uuid,
    pub job: String,
    pub team_id: Option<i64>,
    pub payload: Value,
    pub status: RunStatus,
    /// Attempts started so far.
    pub attempts: u32,
    pub max_attempts: u32,
    pub created_at: DateTime<Utc>,
    pub started_at: Option<DateTime<Utc>>,
    pub ended_at: Option<DateTime<Utc>>,
    pub next_attempt_at: Option<DateTime<Utc>>,
    /// The last attempt's error, causes included.
    pub error: Option<String>,
    pub output: Option<Value>,
}

/// Where a run's record lives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunKey {
    pub pk: String,
    pub sk: String,
}

fn partition(team_id: Option<i64>) -> String {
    match team_id {
        Some(team) => format!("TEAM#{team}"),
        None => "JOBS".to_owned(),
    }
}

impl RunKey {
    pub fn of(team_id: Option<i64>, job: &str, id: Uuid) -> Self {
        Self {
            pk: partition(team_id),
            sk: format!("JOB#{job}#{id}"),
        }
    }
}

impl JobRun {
    pub(super) fn queued(
        job: &dyn Job,
        team_id: Option<i64>,
        payload: Value,
        now: DateTime<Utc>,
    ) -> Self {
        Self {
            id: Uuid::now_v7(),
            job: job.name().to_owned(),
            team_id,
            payload,
            status: RunStatus::Queued,
            attempts: 0,
            max_attempts: job.max_attempts(),
            created_at: now,
            started_at: None,
            ended_at: None,
            next_attempt_at: None,
            error: None,
            output: None,
        }
    }

    pub fn key(&self) -> RunKey {
        RunKey::of(self.team_id, &self.job, self.id)
    }

    pub(super) fn envelope(&self) -> Envelope {
        Envelope {
            job: self.job.clone(),
            run_id: self.id,
            team_id: self.team_id,
            payload: self.payload.clone(),
            attempt: self.attempts + 1,
        }
    }

    fn item(&self) -> Result<Item, StoreError> {
        let key = self.key();
        let expires = self.created_at + chrono::Duration::days(KEEP_DAYS);
        Ok(Item::of(key.pk, key.sk, self)?.with_expiry(expires.timestamp()))
    }

    pub(super) async fn create(&self, store: &dyn Store) -> Result<(), StoreError> {
        store.put(self.item()?, Condition::NotExists).await
    }

    pub async fn load(
        store: &dyn Store,
        team_id: Option<i64>,
        job: &str,
        id: Uuid,
    ) -> Result<Option<Self>, StoreError> {
        let key = RunKey::of(team_id, job, id);
        match store.get(&key.pk, &key.sk).await? {
            Some(item) => Ok(Some(item.parse()?)),
            None => Ok(None),
        }
    }

    /// A project's (or the unowned) runs of `job`, or of every job, newest first.
    pub async fn list(
        store: &dyn Store,
        team_id: Option<i64>,
        job: Option<&str>,
        limit: usize,
    ) -> Result<Vec<Self>, StoreError> {
        let sk_prefix = match job {
            Some(job) => format!("JOB#{job}#"),
            None => "JOB#".to_owned(),
        };
        let page = store
            .query(
                &partition(team_id),
                QueryOptions {
                    sk_prefix,
                    limit: Some(limit),
                    descending: true,
                    ..Default::default()
                },
            )
            .await?;
        let mut runs = page
            .items
            .iter()
            .map(Item::parse)
            .collect::<Result<Vec<Self>, _>>()?;
        // Across jobs the key order is by name first; newest first is what a reader wants.
        runs.sort_by_key(|run| std::cmp::Reverse(run.id));
        Ok(runs)
    }
}

/// Marks a delivered attempt as running; `None` when the run already ended (a repeated
/// delivery). A run whose record is gone (expired, or sent by hand) gets a new one.
pub(super) async fn start(
    state: &AppState,
    envelope: &Envelope,
    max_attempts: u32,
) -> Result<Option<JobRun>, JobError> {
    let key = RunKey::of(envelope.team_id, &envelope.job, envelope.run_id);
    let now = state.clock.now();
    let mut ended = false;
    let updated = store::update(state.store.as_ref(), &key.pk, &key.sk, |mut run: JobRun| {
        ended = run.status.is_final();
        if !ended {
            run.status = RunStatus::Running;
            run.attempts = run.attempts.max(envelope.attempt);
            run.started_at.get_or_insert(now);
            run.next_attempt_at = None;
        }
        Ok(run)
    })
    .await;
    match updated {
        Ok(_) if ended => Ok(None),
        Ok(run) => Ok(Some(run)),
        Err(StoreError::ConditionFailed) => {
            let run = JobRun {
                id: envelope.run_id,
                job: envelope.job.clone(),
                team_id: envelope.team_id,
                payload: envelope.payload.clone(),
                status: RunStatus::Running,
                attempts: envelope.attempt,
                max_attempts,
                created_at: now,
                started_at: Some(now),
                ended_at: None,
                next_attempt_at: None,
                error: None,
                output: None,
            };
            run.create(state.store.as_ref()).await?;
            Ok(Some(run))
        }
        Err(error) => Err(error.into()),
    }
}

pub(super) async fn load_envelope(
    state: &AppState,
    envelope: &Envelope,
) -> Result<JobRun, JobError> {
    JobRun::load(
        state.store.as_ref(),
        envelope.team_id,
        &envelope.job,
        envelope.run_id,
    )
    .await?
    .ok_or(JobError::Store(StoreError::ConditionFailed))
}

pub(super) async fn retrying(
    state: &AppState,
    key: &RunKey,
    error: String,
    at: DateTime<Utc>,
) -> Result<JobRun, JobError> {
    Ok(
        store::update(state.store.as_ref(), &key.pk, &key.sk, |mut run: JobRun| {
            run.status = RunStatus::Retrying;
            run.error = Some(error.clone());
            run.next_attempt_at = Some(at);
            Ok(run)
        })
        .await?,
    )
}

/// Records the end of a run: its output, or the error that ended it.
pub(super) async fn finish(
    state: &AppState,
    key: &RunKey,
    outcome: Result<Value, String>,
) -> Result<JobRun, JobError> {
    let now = state.clock.now();
    Ok(
        store::update(state.store.as_ref(), &key.pk, &key.sk, |mut run: JobRun| {
            run.ended_at = Some(now);
            run.next_attempt_at = None;
            match &outcome {
                Ok(output) => {
                    run.status = RunStatus::Succeeded;
                    run.output = Some(output.clone());
                }
                Err(error) => {
                    run.status = RunStatus::Failed;
                    run.error = Some(error.clone());
                }
            }
            Ok(run)
        })
        .await?,
    )
}
