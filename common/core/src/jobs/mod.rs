//! Background jobs: named units of work with a JSON payload that any family plugs in.
//!
//! A family implements [`Job`] and enqueues runs through [`Jobs::enqueue`]. In AWS a run travels
//! as an SQS message to the `worker` function; embedded it runs as a task of this process. Either
//! way [`Jobs::execute`] runs it: the run's record in the Store (see [`runs`]) says queued,
//! running, retrying, succeeded or failed, with its times and last error, so any instance can
//! answer a status poll. A failed attempt is retried with exponential backoff and equal jitter
//! until the job's `max_attempts`; schedules (EventBridge in AWS, [`schedule::every`] embedded)
//! start runs by name.
//!
//! A run whose process stops (killed, out of memory, a Lambda past its timeout) does not stay
//! `running`: each run records its owner, the process instance running it, and, in an
//! invocation with a deadline, a lease ([`runs::LEASE`]). An in-process runner starting up
//! ([`Jobs::recover`]) fails the runs other instances were running and takes over the ones
//! their queues held; in AWS, every run that starts fails the runs of the same job whose lease
//! is past (SQS delivering a run again, before that, takes it over).

pub mod http;
pub mod runs;
pub mod schedule;

use std::collections::HashMap;
use std::sync::{Arc, RwLock};
use std::time::Duration;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::time::Instant;
use uuid::Uuid;

use crate::state::AppState;
use crate::store::StoreError;

pub use runs::{ABANDONED, JobRun, LEASE, RunStatus};

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// One kind of background work.
#[async_trait]
pub trait Job: Send + Sync + 'static {
    /// The name queue messages and schedules carry (`{"job": "<name>"}`).
    fn name(&self) -> &'static str;

    /// Attempts before a run is recorded as failed for good.
    fn max_attempts(&self) -> u32 {
        5
    }

    /// The wait before attempt `attempt + 1`, before jitter: doubling from 2 s, at most 15 minutes
    /// (the longest delay SQS can hold a message).
    fn backoff(&self, attempt: u32) -> Duration {
        crate::backoff::ceiling(Duration::from_secs(2), MAX_DELAY, attempt)
    }

    /// Does the work; the value is kept on the run record as its output.
    async fn run(&self, state: &AppState, run: &JobContext) -> Result<Value, JobError>;

    /// A run of this job was failed because the process running it stopped
    /// ([`runs::ABANDONED`]): what the job keeps of its own (a query's status) says so too.
    async fn abandoned(&self, _state: &AppState, _run: &JobRun) -> Result<(), JobError> {
        Ok(())
    }
}

/// The longest delay a queued retry can take (SQS `DelaySeconds`).
const MAX_DELAY: Duration = Duration::from_secs(900);

/// What a running job knows of its run.
#[derive(Debug, Clone)]
pub struct JobContext {
    pub run_id: Uuid,
    pub team_id: Option<i64>,
    pub payload: Value,
    /// 1 for the first attempt.
    pub attempt: u32,
    /// When the invocation running it must be done (a Lambda's deadline); `None` embedded.
    pub deadline: Option<Instant>,
}

impl JobContext {
    /// The payload as the job's own type; a payload that does not fit is not worth retrying.
    pub fn payload<T: serde::de::DeserializeOwned>(&self, job: &str) -> Result<T, JobError> {
        T::deserialize(&self.payload).map_err(|source| JobError::Payload {
            job: job.to_owned(),
            source,
        })
    }

    /// The project the run is for; jobs that need one refuse a run without it.
    pub fn team(&self, job: &str) -> Result<i64, JobError> {
        self.team_id
            .ok_or_else(|| JobError::permanent(format!("the {job} job needs a team_id")))
    }
}

/// A queued run, as an SQS message body carries it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Envelope {
    pub job: String,
    pub run_id: Uuid,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub team_id: Option<i64>,
    #[serde(default)]
    pub payload: Value,
    #[serde(default = "first_attempt")]
    pub attempt: u32,
}

fn first_attempt() -> u32 {
    1
}

/// A schedule's input (`{"job": "compact"}`, optionally with a payload).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScheduledJob {
    pub job: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub team_id: Option<i64>,
    #[serde(default)]
    pub payload: Value,
}

#[derive(Debug, thiserror::Error)]
pub enum JobError {
    /// Worth another attempt (a backend hiccup, a busy slot, a timeout).
    #[error(transparent)]
    Failed(BoxError),
    /// Will fail the same way every time.
    #[error("{0}")]
    Permanent(String),
    #[error("the payload of a {job} job does not fit")]
    Payload {
        job: String,
        #[source]
        source: serde_json::Error,
    },
    #[error("no job is named {0:?}")]
    Unknown(String),
    #[error("the job's record")]
    Store(#[from] StoreError),
    #[error("cannot send the job to its queue")]
    Send(#[source] BoxError),
}

impl JobError {
    pub fn failed(error: impl Into<BoxError>) -> Self {
        Self::Failed(error.into())
    }

    pub fn permanent(message: impl Into<String>) -> Self {
        Self::Permanent(message.into())
    }

    fn retryable(&self) -> bool {
        matches!(self, Self::Failed(_) | Self::Store(_))
    }

    /// The error and its causes in one line, for the run record.
    fn chain(&self) -> String {
        crate::error::Chain(self).to_string()
    }
}

/// The jobs this process knows, and how their runs are delivered.
pub struct Jobs {
    known: RwLock<HashMap<&'static str, Arc<dyn Job>>>,
    /// This runner's id, recorded as the owner of the runs it runs or holds.
    instance: Uuid,
}

impl Default for Jobs {
    fn default() -> Self {
        Self {
            known: RwLock::default(),
            instance: Uuid::now_v7(),
        }
    }
}

/// What [`Jobs::recover`] did.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Recovered {
    /// Runs that were running in a process that stopped, now failed.
    pub failed: usize,
    /// Runs another process's queue held (queued, or waiting for a retry), now queued here.
    pub requeued: usize,
}

impl std::fmt::Debug for Jobs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let known = self.known.read().map(|known| {
            let mut names: Vec<_> = known.keys().copied().collect();
            names.sort_unstable();
            names
        });
        f.debug_struct("Jobs")
            .field("known", &known.ok())
            .field("instance", &self.instance)
            .finish()
    }
}

impl Jobs {
    /// This runner's id: a process (or a state built for a test) has its own.
    pub fn instance(&self) -> Uuid {
        self.instance
    }

    /// Makes `job` runnable here (the worker registers every job; a family registers the jobs it
    /// enqueues, so embedded runs find them). Registering a name again replaces it.
    pub fn register(&self, job: Arc<dyn Job>) {
        if let Ok(mut known) = self.known.write() {
            known.insert(job.name(), job);
        }
    }

    pub fn get(&self, name: &str) -> Option<Arc<dyn Job>> {
        self.known.read().ok()?.get(name).cloned()
    }

    /// Records a queued run of `job` and sends it on its way; answers the run's record.
    pub async fn enqueue(
        &self,
        state: &AppState,
        job: Arc<dyn Job>,
        team_id: Option<i64>,
        payload: Value,
    ) -> Result<JobRun, JobError> {
        self.register(job.clone());
        let now = state.clock.now();
        let run = JobRun::queued(job.as_ref(), team_id, payload, now, holder(state));
        run.create(state.store.as_ref()).await?;
        let envelope = run.envelope();
        if let Err(error) = deliver(state, envelope, Duration::ZERO).await {
            let message = error.to_string();
            let _ = runs::finish(state, &run.key(), Err(message)).await;
            return Err(error);
        }
        Ok(run)
    }

    /// Records a queued run of the job called `name` and sends it on its way, for a caller that
    /// must not link the job's code (a family Lambda queueing work the worker runs). The job need
    /// not be registered here: the process that executes the run must know it.
    pub async fn enqueue_named(
        &self,
        state: &AppState,
        name: &str,
        max_attempts: u32,
        team_id: Option<i64>,
        payload: Value,
    ) -> Result<JobRun, JobError> {
        let run = JobRun {
            id: Uuid::now_v7(),
            job: name.to_owned(),
            team_id,
            payload,
            status: RunStatus::Queued,
            attempts: 0,
            max_attempts,
            created_at: state.clock.now(),
            started_at: None,
            ended_at: None,
            next_attempt_at: None,
            error: None,
            output: None,
            owner: holder(state),
            lease_until: None,
        };
        run.create(state.store.as_ref()).await?;
        if let Err(error) = deliver(state, run.envelope(), Duration::ZERO).await {
            let _ = runs::finish(state, &run.key(), Err(error.to_string())).await;
            return Err(error);
        }
        Ok(run)
    }

    /// Starts a run of the job named by a schedule, here and now.
    pub async fn run_scheduled(
        &self,
        state: &AppState,
        scheduled: ScheduledJob,
        deadline: Option<Instant>,
    ) -> Result<JobRun, JobError> {
        let job = self
            .get(&scheduled.job)
            .ok_or_else(|| JobError::Unknown(scheduled.job.clone()))?;
        let run = JobRun::queued(
            job.as_ref(),
            scheduled.team_id,
            scheduled.payload,
            state.clock.now(),
            Some(self.instance),
        );
        run.create(state.store.as_ref()).await?;
        self.execute(state, run.envelope(), deadline).await
    }

    /// Runs one delivered attempt and records its outcome. `Ok` means the message is done with
    /// (the run succeeded, failed for good, or its retry is queued); `Err` means it should be
    /// delivered again (an unknown job, or the outcome could not be recorded or the retry sent).
    pub async fn execute(
        &self,
        state: &AppState,
        envelope: Envelope,
        deadline: Option<Instant>,
    ) -> Result<JobRun, JobError> {
        let job = self
            .get(&envelope.job)
            .ok_or_else(|| JobError::Unknown(envelope.job.clone()))?;
        let started = runs::start(state, &envelope, job.max_attempts(), deadline.is_some());
        let Some(run) = started.await? else {
            // Delivered again after it ended (SQS delivers at least once): nothing to do.
            return runs::load_envelope(state, &envelope).await;
        };
        // Earlier runs of this job whose process is gone end now, not never.
        if let Err(error) = self.end_abandoned(state, &envelope.job).await {
            tracing::warn!(job = %envelope.job, error = %error.chain(),
                "could not look for abandoned runs");
        }
        let context = JobContext {
            run_id: envelope.run_id,
            team_id: envelope.team_id,
            payload: envelope.payload.clone(),
            attempt: envelope.attempt,
            deadline,
        };
        let outcome = job.run(state, &context).await;
        let key = run.key();
        match outcome {
            Ok(output) => runs::finish(state, &key, Ok(output)).await,
            Err(error) if error.retryable() && envelope.attempt < job.max_attempts() => {
                let delay = crate::backoff::equal_jitter(job.backoff(envelope.attempt));
                tracing::warn!(job = %envelope.job, run = %envelope.run_id, attempt = envelope.attempt,
                    error = %error.chain(), ?delay, "job attempt failed; retrying");
                let next = Envelope {
                    attempt: envelope.attempt + 1,
                    ..envelope
                };
                let retry_at = state.clock.now()
                    + chrono::Duration::from_std(delay).unwrap_or(chrono::Duration::zero());
                let recorded =
                    runs::retrying(state, &key, error.chain(), retry_at, holder(state)).await?;
                deliver(state, next, delay).await?;
                Ok(recorded)
            }
            Err(error) => {
                tracing::error!(job = %envelope.job, run = %envelope.run_id, attempt = envelope.attempt,
                    error = %error.chain(), "job failed");
                runs::finish(state, &key, Err(error.chain())).await
            }
        }
    }
}

impl Jobs {
    /// For an in-process runner starting up (`analytics serve`), before it runs anything: the
    /// open runs of other instances (processes that ran jobs in their own memory, on this
    /// store, and have stopped) are taken care of. Those that were running are failed with
    /// [`runs::ABANDONED`]; those their queue held (queued, or waiting for a retry) are queued
    /// here, their retry at the time it was due. Runs a queue (SQS) holds, and runs with a
    /// lease not yet past, are left alone.
    pub async fn recover(&self, state: &AppState) -> Result<Recovered, JobError> {
        let store = state.store.as_ref();
        let mut recovered = Recovered::default();
        for (run, version) in self.abandoned(state, None, true).await? {
            if run.status == RunStatus::Running {
                if runs::fail_abandoned(store, &run, version, state.clock.now())
                    .await?
                    .is_some()
                {
                    tracing::warn!(job = %run.job, run = %run.id, owner = ?run.owner,
                        "a run whose process stopped is failed");
                    self.tell_abandoned(state, &run).await;
                    recovered.failed += 1;
                }
                continue;
            }
            let Some(run) = runs::take_over(store, &run, version, holder(state)).await? else {
                continue;
            };
            let due = run.next_attempt_at.unwrap_or(run.created_at) - state.clock.now();
            let delay = due.to_std().unwrap_or(Duration::ZERO);
            deliver(state, run.envelope(), delay).await?;
            tracing::info!(job = %run.job, run = %run.id, ?delay,
                "a run another process held is queued here");
            recovered.requeued += 1;
        }
        Ok(recovered)
    }

    /// Fails the open runs of `job` whose process is gone (their lease is past); each is
    /// logged. Answers how many.
    async fn end_abandoned(&self, state: &AppState, job: &str) -> Result<usize, JobError> {
        let mut ended = 0;
        for (run, version) in self.abandoned(state, Some(job), false).await? {
            let now = state.clock.now();
            if runs::fail_abandoned(state.store.as_ref(), &run, version, now)
                .await?
                .is_some()
            {
                tracing::warn!(job = %run.job, run = %run.id, owner = ?run.owner,
                    lease_until = ?run.lease_until, "a run whose process stopped is failed");
                self.tell_abandoned(state, &run).await;
                ended += 1;
            }
        }
        Ok(ended)
    }

    /// Lets the job of a run failed as abandoned record it in its own state (a failure there is
    /// logged: the run is failed either way).
    async fn tell_abandoned(&self, state: &AppState, run: &JobRun) {
        if let Some(job) = self.get(&run.job)
            && let Err(error) = job.abandoned(state, run).await
        {
            tracing::warn!(job = %run.job, run = %run.id, %error,
                "the job could not record that its run was abandoned");
        }
    }

    /// The open runs (of `job`, or of every job) whose process is gone as this runner sees it
    /// ([`JobRun::abandoned`]), each as stored now with its item's version.
    async fn abandoned(
        &self,
        state: &AppState,
        job: Option<&str>,
        starting: bool,
    ) -> Result<Vec<(JobRun, u64)>, JobError> {
        let store = state.store.as_ref();
        let now = state.clock.now();
        let mut abandoned = Vec::new();
        for (listed, _) in JobRun::open(store, job).await? {
            if !listed.abandoned(self.instance, now, starting) {
                continue;
            }
            // The index may lag behind the record: decide on the record.
            if let Some((run, version)) = runs::load_versioned(store, &listed.key()).await?
                && run.abandoned(self.instance, now, starting)
            {
                abandoned.push((run, version));
            }
        }
        Ok(abandoned)
    }
}

/// The queue runs are sent to, when one is configured: else they run in this process.
fn queue(state: &AppState) -> Option<(&aws_sdk_sqs::Client, &String)> {
    state
        .sqs
        .as_ref()
        .zip(state.config.query.job_queue_url.as_ref())
}

/// Who holds a run this process queues (see [`JobRun::owner`]): this runner when it runs its
/// own queue, nobody when SQS does.
fn holder(state: &AppState) -> Option<Uuid> {
    match queue(state) {
        Some(_) => None,
        None => Some(state.jobs.instance()),
    }
}

/// Sends a run to the worker through SQS when a queue is configured, else runs it in a task of
/// this process after `delay`.
async fn deliver(state: &AppState, envelope: Envelope, delay: Duration) -> Result<(), JobError> {
    match queue(state) {
        Some((sqs, queue)) => {
            let body = serde_json::to_string(&envelope)
                .map_err(|error| JobError::Send(Box::new(error)))?;
            sqs.send_message()
                .queue_url(queue)
                .message_body(body)
                .delay_seconds(delay.min(MAX_DELAY).as_secs() as i32)
                .send()
                .await
                .map_err(|error| JobError::Send(Box::new(error)))?;
            Ok(())
        }
        None => {
            tokio::spawn(run_here_later(state.clone(), envelope, delay));
            Ok(())
        }
    }
}

/// The embedded queue: the run, in a task of this process. Boxed as `Send` because running a
/// job can deliver its retry, which comes back here.
fn run_here_later(
    state: AppState,
    envelope: Envelope,
    delay: Duration,
) -> std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>> {
    Box::pin(async move {
        tokio::time::sleep(delay).await;
        let (job, run) = (envelope.job.clone(), envelope.run_id);
        if let Err(error) = state.jobs.execute(&state, envelope, None).await {
            tracing::error!(%job, %run, error = %error.chain(), "embedded job run failed");
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Named;

    #[async_trait]
    impl Job for Named {
        fn name(&self) -> &'static str {
            "named"
        }
        async fn run(&self, _: &AppState, _: &JobContext) -> Result<Value, JobError> {
            Ok(Value::Null)
        }
    }

    #[test]
    fn backoff_doubles_up_to_the_longest_queue_delay() {
        let waits: Vec<u64> = (1..=12).map(|n| Named.backoff(n).as_secs()).collect();
        assert_eq!(&waits[..5], &[2, 4, 8, 16, 32]);
        assert_eq!(waits[11], 900);
        assert_eq!(Named.backoff(u32::MAX).as_secs(), 900);
    }

    #[test]
    fn envelopes_round_trip_and_refuse_strangers() {
        let envelope = Envelope {
            job: "query".into(),
            run_id: Uuid::now_v7(),
            team_id: Some(3),
            payload: serde_json::json!({"query_id": "abc"}),
            attempt: 2,
        };
        let text = serde_json::to_string(&envelope).unwrap();
        assert_eq!(serde_json::from_str::<Envelope>(&text).unwrap(), envelope);
        let minimal: Envelope = serde_json::from_str(&format!(
            r#"{{"job": "x", "run_id": "{}"}}"#,
            envelope.run_id
        ))
        .unwrap();
        assert_eq!((minimal.attempt, minimal.team_id), (1, None));
        assert!(serde_json::from_str::<Envelope>(r#"{"job": "x"}"#).is_err());
        assert!(serde_json::from_str::<ScheduledJob>(r#"{"job": "compact", "extra": 1}"#).is_err());
        let scheduled: ScheduledJob = serde_json::from_str(r#"{"job": "compact"}"#).unwrap();
        assert_eq!(scheduled.job, "compact");
    }

    #[test]
    fn registry_finds_jobs_by_name() {
        let jobs = Jobs::default();
        assert!(jobs.get("named").is_none());
        jobs.register(Arc::new(Named));
        assert_eq!(jobs.get("named").map(|job| job.name()), Some("named"));
    }
}
