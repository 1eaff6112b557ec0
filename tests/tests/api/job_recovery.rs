//! A job run whose process stopped, on both backends: `analytics serve` starting on the same
//! store (`local::serve::serve_until`, the path the binary takes) fails the run the stopped
//! process was running, and `/api/projects/:id/jobs/` shows it failed beside the next run,
//! which succeeds.

use std::sync::Arc;
use std::time::Duration;

use api_tests::World;
use axum::http::StatusCode;
use common::AppState;
use common::jobs::{JobRun, Jobs, RunStatus};
use common::testing::Hanging;
use serde_json::{Value, json};

/// Another process on the world's store: a runner of its own.
fn process(world: &World) -> AppState {
    AppState {
        jobs: Arc::new(Jobs::default()),
        ..world.backend.state.clone()
    }
}

/// The run once `done` says it has got where the test waits for it (background tasks of this
/// test's processes do the work).
async fn when(state: &AppState, team: i64, id: uuid::Uuid, done: fn(&JobRun) -> bool) -> JobRun {
    for _ in 0..600 {
        let run = JobRun::load(state.store.as_ref(), Some(team), "compact", id)
            .await
            .unwrap()
            .expect("the run is recorded");
        if done(&run) {
            return run;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("run {id} did not get there");
}

#[tokio::test]
async fn serve_fails_the_runs_of_a_process_that_stopped() {
    for world in World::all().await {
        let name = world.name();
        let team = world.bootstrap.project.id;
        // A first process starts a compaction of the project and stops in the middle of it.
        let first = process(&world);
        let hung = first
            .jobs
            .enqueue(
                &first,
                Arc::new(Hanging("compact")),
                Some(team),
                Value::Null,
            )
            .await
            .unwrap();
        when(&first, team, hung.id, |run| {
            run.status == RunStatus::Running
        })
        .await;
        drop(first);

        // `analytics serve` starts on the same store.
        let second = process(&world);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let server = tokio::spawn(local::serve::serve_until(listener, second.clone(), async {
            let _ = stopped.await;
        }));
        let failed = when(&second, team, hung.id, |run| run.status.is_final()).await;
        assert_eq!(failed.status, RunStatus::Failed, "{name}: {failed:?}");

        // The next compaction of the project runs there and succeeds.
        let next = second
            .jobs
            .enqueue(
                &second,
                Arc::new(lake::jobs::Compact),
                Some(team),
                Value::Null,
            )
            .await
            .unwrap();
        let next = when(&second, team, next.id, |run| run.status.is_final()).await;
        assert_eq!(next.status, RunStatus::Succeeded, "{name}: {next:?}");

        let (status, listed) = world
            .get(
                &format!("/api/projects/{team}/jobs/?job=compact"),
                Some(world.admin_key()),
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{name} {listed}");
        assert_eq!(listed["count"], json!(2), "{name} {listed}");
        let runs = listed["results"].as_array().unwrap();
        assert_eq!(runs[0]["id"], json!(next.id), "{name}: newest first");
        assert_eq!(runs[0]["status"], json!("succeeded"), "{name} {listed}");
        assert_eq!(runs[1]["id"], json!(hung.id), "{name}");
        assert_eq!(runs[1]["status"], json!("failed"), "{name} {listed}");
        assert!(
            runs[1]["error"]
                .as_str()
                .is_some_and(|error| error.starts_with(common::jobs::ABANDONED)),
            "{name} {listed}"
        );
        assert!(runs[1]["ended_at"].is_string(), "{name} {listed}");

        let _ = stop.send(());
        server.await.unwrap().unwrap();
    }
}
