//! The job runner on every backend: runs are recorded, failed attempts are retried with backoff
//! until they succeed or run out of attempts, errors that would only repeat end the run at once.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use common::AppState;
use common::jobs::{Job, JobContext, JobError, JobRun, RunStatus};
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
