//! The record of each job run in the Store, so every instance sees the same status.
//!
//! Key: `TEAM#<id>` (or `JOBS` for runs that belong to no project) / `JOB#<name>#<run uuidv7>`,
//! so a project's runs of one job list newest first by a prefix query; kept 30 days. While a run
//! is open (queued, running, retrying) it is also in a sparse GSI1 partition, `JOBRUNS#OPEN` /
//! `<name>#<run uuidv7>`, where runs whose process is gone are found (see [`JobRun::abandoned`]).

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use uuid::Uuid;

use super::{Envelope, Job, JobError};
use crate::state::AppState;
use crate::store::{self, Condition, Index, Item, QueryOptions, Store, StoreError};

/// How long run records are kept.
const KEEP_DAYS: i64 = 30;

/// The GSI1 partition of open runs.
const OPEN_INDEX: &str = "JOBRUNS#OPEN";

/// How long a run started by an invocation with a deadline (a Lambda's) may stay `running`: an
/// invocation lasts at most 15 minutes; one more for clocks and the outcome's write. Past it,
/// the run's process is gone. Longer than the job queue's visibility timeout, so SQS delivering
/// the run again (which takes it over) comes first.
pub const LEASE: chrono::Duration = chrono::Duration::minutes(16);

/// The last error of a run whose process stopped while it ran.
pub const ABANDONED: &str = "the process running it stopped before the run ended";

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
    /// The process instance ([`super::Jobs::instance`]) that runs it, or (queued or retrying)
    /// whose in-process queue holds it; `None` while a queue (SQS) holds it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner: Option<Uuid>,
    /// While running in an invocation with a deadline: when its process is gone for sure if the
    /// run has not ended ([`LEASE`] after the attempt started). `None` for an in-process runner,
    /// which has no deadline: its runs are its own until it stops.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lease_until: Option<DateTime<Utc>>,
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
        owner: Option<Uuid>,
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
            owner,
            lease_until: None,
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
        let mut item = Item::of(key.pk, key.sk, self)?.with_expiry(expires.timestamp());
        self.index(&mut item);
        Ok(item)
    }

    /// In the open runs' index while not ended, out of it after.
    fn index(&self, item: &mut Item) {
        let open = !self.status.is_final();
        item.gsi1pk = open.then(|| OPEN_INDEX.to_owned());
        item.gsi1sk = open.then(|| format!("{}#{}", self.job, self.id));
    }

    /// Whether this run is open but the process it depends on is gone, as the process `me` sees
    /// it at `now`. A run of an invocation with a deadline is gone once its lease is past. A run
    /// of an in-process runner (no lease) lives only in that process's memory: gone for a runner
    /// starting up (`starting`), which knows every such run is another process's, and that
    /// process has stopped. Nobody's run (a queue holds it) and `me`'s own never are.
    pub fn abandoned(&self, me: Uuid, now: DateTime<Utc>, starting: bool) -> bool {
        if self.status.is_final() {
            return false;
        }
        match (self.owner, self.lease_until) {
            (None, _) => false,
            (Some(owner), _) if owner == me => false,
            (Some(_), Some(lease)) => lease <= now,
            (Some(_), None) => starting,
        }
    }

    /// Open runs (of the job `job`, or of every job) in key order, each with its item's version.
    /// The index is eventually consistent: read a run again before acting on it.
    pub(super) async fn open(
        store: &dyn Store,
        job: Option<&str>,
    ) -> Result<Vec<(Self, u64)>, StoreError> {
        let options = QueryOptions {
            index: Index::Gsi1,
            sk_prefix: job.map(|job| format!("{job}#")).unwrap_or_default(),
            ..Default::default()
        };
        store::query_pages(store, OPEN_INDEX, options)
            .await?
            .iter()
            .map(|item| Ok((item.parse()?, item.version)))
            .collect()
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

/// Marks a delivered attempt as running in this process (with a [`LEASE`] when the attempt has
/// a deadline); `None` when the run already ended (a repeated delivery). A run whose record is
/// gone (expired, or sent by hand) gets a new one.
pub(super) async fn start(
    state: &AppState,
    envelope: &Envelope,
    max_attempts: u32,
    has_deadline: bool,
) -> Result<Option<JobRun>, JobError> {
    let key = RunKey::of(envelope.team_id, &envelope.job, envelope.run_id);
    let now = state.clock.now();
    let owner = Some(state.jobs.instance());
    let lease_until = has_deadline.then(|| now + LEASE);
    let mut ended = false;
    let updated = update(state, &key, |mut run: JobRun| {
        ended = run.status.is_final();
        if !ended {
            run.status = RunStatus::Running;
            run.attempts = run.attempts.max(envelope.attempt);
            run.started_at.get_or_insert(now);
            run.next_attempt_at = None;
            run.owner = owner;
            run.lease_until = lease_until;
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
                owner,
                lease_until,
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

/// Records a failed attempt whose retry is queued for `at`, held by `holder` (see
/// [`JobRun::owner`]).
pub(super) async fn retrying(
    state: &AppState,
    key: &RunKey,
    error: String,
    at: DateTime<Utc>,
    holder: Option<Uuid>,
) -> Result<JobRun, JobError> {
    Ok(update(state, key, |mut run: JobRun| {
        run.status = RunStatus::Retrying;
        run.error = Some(error.clone());
        run.next_attempt_at = Some(at);
        run.owner = holder;
        run.lease_until = None;
        Ok(run)
    })
    .await?)
}

/// Records the end of a run: its output, or the error that ended it.
pub(super) async fn finish(
    state: &AppState,
    key: &RunKey,
    outcome: Result<Value, String>,
) -> Result<JobRun, JobError> {
    let now = state.clock.now();
    Ok(update(state, key, |mut run: JobRun| {
        run.ended_at = Some(now);
        run.next_attempt_at = None;
        run.lease_until = None;
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
    .await?)
}

/// A run's record changed under optimistic locking, its place in the open runs' index kept
/// in step with its status.
async fn update<F>(state: &AppState, key: &RunKey, change: F) -> Result<JobRun, StoreError>
where
    F: FnMut(JobRun) -> Result<JobRun, StoreError>,
{
    store::update_indexed(
        state.store.as_ref(),
        &key.pk,
        &key.sk,
        change,
        JobRun::index,
    )
    .await
}

/// Hands an open run to `holder` (see [`JobRun::owner`]) if its record is still at `version`;
/// `None` when it changed meanwhile (its process, or another, is acting on it).
pub(super) async fn take_over(
    store: &dyn Store,
    run: &JobRun,
    version: u64,
    holder: Option<Uuid>,
) -> Result<Option<JobRun>, StoreError> {
    let mut taken = run.clone();
    taken.owner = holder;
    taken.lease_until = None;
    write_if_unchanged(store, taken, version).await
}

/// Ends an open run whose process is gone as failed at `now`, with [`ABANDONED`] as its error,
/// if its record is still at `version`; `None` when it changed meanwhile.
pub(super) async fn fail_abandoned(
    store: &dyn Store,
    run: &JobRun,
    version: u64,
    now: DateTime<Utc>,
) -> Result<Option<JobRun>, StoreError> {
    let mut failed = run.clone();
    failed.status = RunStatus::Failed;
    failed.ended_at = Some(now);
    failed.next_attempt_at = None;
    failed.lease_until = None;
    failed.error = Some(match run.owner {
        Some(owner) => format!("{ABANDONED} (process {owner}, attempt {})", run.attempts),
        None => ABANDONED.to_owned(),
    });
    write_if_unchanged(store, failed, version).await
}

async fn write_if_unchanged(
    store: &dyn Store,
    run: JobRun,
    version: u64,
) -> Result<Option<JobRun>, StoreError> {
    let mut item = run.item()?;
    item.version = version + 1;
    match store.put(item, Condition::VersionEquals(version)).await {
        Ok(()) => Ok(Some(run)),
        Err(StoreError::ConditionFailed) => Ok(None),
        Err(error) => Err(error),
    }
}

/// The run at `key` as stored now, with its item's version (the index may lag behind).
pub(super) async fn load_versioned(
    store: &dyn Store,
    key: &RunKey,
) -> Result<Option<(JobRun, u64)>, StoreError> {
    store::get_versioned(store, &key.pk, &key.sk).await
}
