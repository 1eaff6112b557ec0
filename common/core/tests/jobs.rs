//! The job runner on every backend: runs are recorded, failed attempts are retried with backoff
//! until they succeed or run out of attempts, errors that would only repeat end the run at once,
//! and runs whose process stopped end as failed (or are queued again) instead of never.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use common::AppState;
use common::clock::{Clock, ManualClock};
use common::jobs::{Job, JobContext, JobError, JobRun, Jobs, Recovered, RunStatus, ScheduledJob};
use common::testing::TestState;
use serde::Deserialize;
use serde_json::{Value, json};

/// Fails its first `failures` attempts, then answers its payload's `n` doubled.
struct Flaky {
    failures: u32,
    attempts: AtomicU32,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Payload {
    n: i64,
}

#[async_trait]
impl Job for Flaky {
    fn name(&self) -> &'static str {
        "flaky"
    }

    fn max_attempts(&self) -> u32 {
        3
    }

    fn backoff(&self, _attempt: u32) -> Duration {
        Duration::from_millis(5)
    }

    async fn run(&self, _: &AppState, run: &JobContext) -> Result<Value, JobError> {
        let payload: Payload = run.payload(self.name())?;
        let attempt = self.attempts.fetch_add(1, Ordering::SeqCst) + 1;
        assert_eq!(attempt, run.attempt, "the context counts attempts");
        if attempt <= self.failures {
            return Err(JobError::failed(std::io::Error::other(format!(
                "backend hiccup {attempt}"
            ))));
        }
        Ok(json!({ "doubled": payload.n * 2 }))
    }
}

async fn ended(state: &AppState, team: Option<i64>, id: uuid::Uuid) -> JobRun {
    for _ in 0..500 {
        let run = JobRun::load(state.store.as_ref(), team, "flaky", id)
            .await
            .unwrap()
            .expect("the run is recorded");
        if run.status.is_final() {
            return run;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("run {id} did not end");
}

#[tokio::test]
async fn failed_attempts_are_retried_until_one_succeeds() {
    for backend in TestState::all().await {
        let state = backend.state.clone();
        let job = Arc::new(Flaky {
            failures: 2,
            attempts: AtomicU32::new(0),
        });
        let queued = state
            .jobs
            .enqueue(&state, job.clone(), Some(4), json!({"n": 21}))
            .await
            .unwrap();
        assert_eq!(queued.status, RunStatus::Queued);
        let run = ended(&state, Some(4), queued.id).await;
        assert_eq!(run.status, RunStatus::Succeeded, "{run:?}");
        assert_eq!(run.attempts, 3);
        assert_eq!(run.output, Some(json!({"doubled": 42})));
        assert!(run.started_at.is_some() && run.ended_at >= run.started_at);
        // The last failure stays on the record for whoever looks.
        assert_eq!(run.error.as_deref(), Some("backend hiccup 2"));
        let listed = JobRun::list(state.store.as_ref(), Some(4), Some("flaky"), 10)
            .await
            .unwrap();
        assert_eq!(listed, vec![run]);
        assert!(
            JobRun::list(state.store.as_ref(), Some(5), None, 10)
                .await
                .unwrap()
                .is_empty(),
            "another project's runs are its own"
        );
    }
}

#[tokio::test]
async fn a_run_out_of_attempts_or_with_a_bad_payload_fails_for_good() {
    for backend in TestState::all().await {
        let state = backend.state.clone();
        let always = Arc::new(Flaky {
            failures: u32::MAX,
            attempts: AtomicU32::new(0),
        });
        let queued = state
            .jobs
            .enqueue(&state, always.clone(), None, json!({"n": 1}))
            .await
            .unwrap();
        let run = ended(&state, None, queued.id).await;
        assert_eq!(run.status, RunStatus::Failed, "{run:?}");
        assert_eq!(run.attempts, 3);
        assert_eq!(always.attempts.load(Ordering::SeqCst), 3);
        assert_eq!(run.error.as_deref(), Some("backend hiccup 3"));

        // A payload that does not fit fails on its first attempt: retrying cannot fix it.
        let job = Arc::new(Flaky {
            failures: 0,
            attempts: AtomicU32::new(0),
        });
        let queued = state
            .jobs
            .enqueue(&state, job.clone(), None, json!({"n": "x"}))
            .await
            .unwrap();
        let run = ended(&state, None, queued.id).await;
        assert_eq!(run.status, RunStatus::Failed, "{run:?}");
        assert_eq!(run.attempts, 1);
        assert!(
            run.error
                .as_deref()
                .is_some_and(|e| e.starts_with("the payload of a flaky job does not fit")),
            "{run:?}"
        );
    }
}

#[tokio::test]
async fn a_repeated_delivery_of_an_ended_run_does_nothing() {
    for backend in TestState::all().await {
        let state = backend.state.clone();
        let job = Arc::new(Flaky {
            failures: 0,
            attempts: AtomicU32::new(0),
        });
        let queued = state
            .jobs
            .enqueue(&state, job.clone(), Some(1), json!({"n": 2}))
            .await
            .unwrap();
        let run = ended(&state, Some(1), queued.id).await;
        let again = common::jobs::Envelope {
            job: "flaky".into(),
            run_id: run.id,
            team_id: Some(1),
            payload: json!({"n": 2}),
            attempt: 1,
        };
        let after = state.jobs.execute(&state, again, None).await.unwrap();
        assert_eq!(after, run);
        assert_eq!(job.attempts.load(Ordering::SeqCst), 1);
    }
}

/// A job whose payload says how its attempts go: `hang` never ends (its process is killed
/// under it), `fail_once` fails its first attempt and retries an hour later, `ok` succeeds.
struct Stuck;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Mode {
    mode: String,
}

#[async_trait]
impl Job for Stuck {
    fn name(&self) -> &'static str {
        "stuck"
    }

    fn backoff(&self, _attempt: u32) -> Duration {
        Duration::from_secs(3600)
    }

    async fn run(&self, _: &AppState, run: &JobContext) -> Result<Value, JobError> {
        let mode: Mode = run.payload(self.name())?;
        match (mode.mode.as_str(), run.attempt) {
            ("hang", _) => std::future::pending().await,
            ("fail_once", 1) => Err(JobError::failed(std::io::Error::other("first try"))),
            _ => Ok(json!({"attempt": run.attempt})),
        }
    }
}

/// Another process on the same store: a runner of its own (its own instance id) and a clock
/// set by hand.
fn process(backend: &TestState, clock: Arc<ManualClock>) -> AppState {
    let state = AppState {
        jobs: Arc::new(Jobs::default()),
        clock,
        ..backend.state.clone()
    };
    state.jobs.register(Arc::new(Stuck));
    state
}

/// The run's record once `done` says it has got where the test waits for it (a background
/// task of this process is doing the work).
async fn when(
    state: &AppState,
    team: i64,
    id: uuid::Uuid,
    done: impl Fn(&JobRun) -> bool,
) -> JobRun {
    for _ in 0..500 {
        let run = JobRun::load(state.store.as_ref(), Some(team), "stuck", id)
            .await
            .unwrap()
            .expect("the run is recorded");
        if done(&run) {
            return run;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("run {id} did not get there");
}

fn abandoned(run: &JobRun) -> bool {
    run.status == RunStatus::Failed
        && run
            .error
            .as_deref()
            .is_some_and(|error| error.starts_with(common::jobs::ABANDONED))
}

#[tokio::test]
async fn a_runner_starting_up_fails_what_a_stopped_process_ran_and_queues_what_it_held() {
    const TEAM: i64 = 7;
    for backend in TestState::all().await {
        let name = format!("{:?}", backend.backend);
        let start = backend.state.clock.now();
        // The first process runs one run that hangs and holds a retry due in an hour or less.
        let first = process(&backend, Arc::new(ManualClock::at(start)));
        let hung = first
            .jobs
            .enqueue(&first, Arc::new(Stuck), Some(TEAM), json!({"mode": "hang"}))
            .await
            .unwrap();
        let retried = first
            .jobs
            .enqueue(
                &first,
                Arc::new(Stuck),
                Some(TEAM),
                json!({"mode": "fail_once"}),
            )
            .await
            .unwrap();
        let running = when(&first, TEAM, hung.id, |r| r.status == RunStatus::Running).await;
        assert_eq!(running.owner, Some(first.jobs.instance()), "{name}");
        assert_eq!(
            running.lease_until, None,
            "{name}: in-process runs have no lease"
        );
        let waiting = when(&first, TEAM, retried.id, |r| {
            r.status == RunStatus::Retrying
        })
        .await;
        assert_eq!(waiting.owner, Some(first.jobs.instance()), "{name}");
        // It stops: nothing it held in memory will ever run, nothing it ran will ever end.
        drop(first);

        // The next process starts two hours later, on the same store.
        let second = process(
            &backend,
            Arc::new(ManualClock::at(start + chrono::Duration::hours(2))),
        );
        let recovered = second.jobs.recover(&second).await.unwrap();
        assert_eq!(
            recovered,
            Recovered {
                failed: 1,
                requeued: 1
            },
            "{name}"
        );
        let failed = JobRun::load(second.store.as_ref(), Some(TEAM), "stuck", hung.id)
            .await
            .unwrap()
            .unwrap();
        assert!(abandoned(&failed), "{name}: {failed:?}");
        assert_eq!(failed.ended_at, Some(second.clock.now()), "{name}");
        // The retry that was due meanwhile runs here, at once, and succeeds.
        let done = when(&second, TEAM, retried.id, |r| r.status.is_final()).await;
        assert_eq!(done.status, RunStatus::Succeeded, "{name}: {done:?}");
        assert_eq!(done.attempts, 2, "{name}");
        assert_eq!(done.owner, Some(second.jobs.instance()), "{name}");
        // Nothing is left to recover, and the next run of the job succeeds.
        let again = second.jobs.recover(&second).await.unwrap();
        assert_eq!(again, Recovered::default(), "{name}");
        let next = second
            .jobs
            .enqueue(&second, Arc::new(Stuck), Some(TEAM), json!({"mode": "ok"}))
            .await
            .unwrap();
        let next = when(&second, TEAM, next.id, |r| r.status.is_final()).await;
        assert_eq!(next.status, RunStatus::Succeeded, "{name}");
        let listed = JobRun::list(second.store.as_ref(), Some(TEAM), Some("stuck"), 10)
            .await
            .unwrap();
        let statuses: Vec<RunStatus> = listed.iter().map(|run| run.status).collect();
        assert_eq!(
            statuses,
            [
                RunStatus::Succeeded,
                RunStatus::Succeeded,
                RunStatus::Failed
            ],
            "{name}: newest first"
        );
    }
}

#[tokio::test]
async fn a_lambda_run_past_its_lease_fails_when_the_next_run_of_its_job_starts() {
    const TEAM: i64 = 8;
    for backend in TestState::all().await {
        let name = format!("{:?}", backend.backend);
        let start = backend.state.clock.now();
        let scheduled = |mode: &str| ScheduledJob {
            job: "stuck".into(),
            team_id: Some(TEAM),
            payload: json!({ "mode": mode }),
        };
        let deadline = || Some(tokio::time::Instant::now() + Duration::from_secs(60));
        // An invocation starts a run and is killed while it runs (its task is aborted).
        let killed = process(&backend, Arc::new(ManualClock::at(start)));
        let invocation = tokio::spawn({
            let (state, job) = (killed.clone(), scheduled("hang"));
            async move { state.jobs.run_scheduled(&state, job, deadline()).await }
        });
        let list = async |state: &AppState| {
            JobRun::list(state.store.as_ref(), Some(TEAM), Some("stuck"), 10)
                .await
                .unwrap()
        };
        let mut hung = None;
        for _ in 0..500 {
            hung = list(&killed).await.into_iter().next();
            if hung.is_some() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let hung = hung.expect("the run started");
        let hung = when(&killed, TEAM, hung.id, |r| r.status == RunStatus::Running).await;
        assert_eq!(
            hung.lease_until,
            Some(start + common::jobs::LEASE),
            "{name}"
        );
        invocation.abort();
        // A run of the same job without a deadline (an in-process runner's) that hangs too: no
        // lease, so no later run fails it.
        let in_process = killed
            .jobs
            .enqueue(
                &killed,
                Arc::new(Stuck),
                Some(TEAM),
                json!({"mode": "hang"}),
            )
            .await
            .unwrap();
        when(&killed, TEAM, in_process.id, |r| {
            r.status == RunStatus::Running
        })
        .await;

        // Ten minutes on, in another invocation: the lease holds, the run may still be going.
        let clock = Arc::new(ManualClock::at(start + chrono::Duration::minutes(10)));
        let next = process(&backend, clock.clone());
        let run = next
            .jobs
            .run_scheduled(&next, scheduled("ok"), deadline())
            .await
            .unwrap();
        assert_eq!(run.status, RunStatus::Succeeded, "{name}");
        let still = JobRun::load(next.store.as_ref(), Some(TEAM), "stuck", hung.id)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(still.status, RunStatus::Running, "{name}");

        // Past the lease, the next run of the job ends it as failed; it succeeds itself.
        clock.advance(chrono::Duration::minutes(7));
        let run = next
            .jobs
            .run_scheduled(&next, scheduled("ok"), deadline())
            .await
            .unwrap();
        assert_eq!(run.status, RunStatus::Succeeded, "{name}");
        let failed = JobRun::load(next.store.as_ref(), Some(TEAM), "stuck", hung.id)
            .await
            .unwrap()
            .unwrap();
        assert!(abandoned(&failed), "{name}: {failed:?}");
        assert_eq!(failed.ended_at, Some(clock.now()), "{name}");
        let statuses: Vec<RunStatus> = list(&next).await.iter().map(|run| run.status).collect();
        assert_eq!(
            statuses,
            [
                RunStatus::Succeeded,
                RunStatus::Succeeded,
                RunStatus::Running,
                RunStatus::Failed
            ],
            "{name}: the in-process run is left alone"
        );
        // SQS delivering the killed run's message again after that changes nothing.
        let again = common::jobs::Envelope {
            job: "stuck".into(),
            run_id: hung.id,
            team_id: Some(TEAM),
            payload: json!({"mode": "hang"}),
            attempt: 1,
        };
        let after = next.jobs.execute(&next, again, deadline()).await.unwrap();
        assert_eq!(after, failed, "{name}");
    }
}
