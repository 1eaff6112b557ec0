//! The worker function through its Lambda entry (`worker::function_handler`, the handler
//! `main.rs` gives `lambda_runtime`), fed the sample events of `events/worker/` on both backends:
//! scheduled jobs, batches of S3 notifications, queued job runs and a poisoned message.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use api_tests::{World, receive_batch, sqs_job_queue};
use aws_lambda_events::event::sqs::SqsEvent;
use axum::http::StatusCode;
use common::AppState;
use common::clock::ManualClock;
use common::jobs::{JobRun, RunStatus};
use common::testing::{TestBackend, emulator_endpoint};
use lambda_runtime::{Context, LambdaEvent};
use serde_json::{Value, json};
use worker::{WorkerEvent, WorkerResponse};

fn samples() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../events/worker")
}

/// A sample as the Lambda runtime would hand it over, with text substitutions.
fn sample(name: &str, replace: &[(&str, &str)]) -> WorkerEvent {
    let mut text = std::fs::read_to_string(samples().join(name)).unwrap();
    for (from, to) in replace {
        text = text.replace(from, to);
    }
    serde_json::from_str(&text).unwrap_or_else(|error| panic!("{name}: {error}"))
}

/// Runs the Lambda handler with a minute left before the invocation's deadline.
async fn invoke(state: &AppState, event: WorkerEvent) -> WorkerResponse {
    let mut context = Context::default();
    let now_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64;
    context.deadline = now_ms + 60_000;
    worker::function_handler(state, LambdaEvent::new(event, context))
        .await
        .expect("the worker answers")
}

fn failures(response: &WorkerResponse) -> Vec<String> {
    match response {
        WorkerResponse::Batch(batch) => batch
            .batch_item_failures
            .iter()
            .map(|failure| failure.item_identifier.clone())
            .collect(),
        other => panic!("expected an SQS batch response, got {other:?}"),
    }
}

#[test]
fn every_sample_is_a_worker_event() {
    let mut seen = 0;
    for entry in std::fs::read_dir(samples()).unwrap() {
        let name = entry.unwrap().file_name().to_string_lossy().into_owned();
        match sample(&name, &[]) {
            WorkerEvent::Scheduled(job) => {
                assert!(name.starts_with("scheduled-"), "{name}");
                assert!(
                    ["commit", "compact", "endpoint_materialization"].contains(&job.job.as_str()),
                    "{name}"
                );
            }
            WorkerEvent::Sqs(batch) => {
                assert!(name.starts_with("sqs-"), "{name}");
                assert!(!batch.records.is_empty(), "{name}");
            }
        }
        seen += 1;
    }
    assert!(seen >= 5, "only {seen} worker samples");
}

#[tokio::test]
async fn a_poisoned_message_fails_alone() {
    for world in World::all().await {
        let name = world.name();
        let state = world.backend.state.clone();
        worker::register_jobs(&state);
        let team = world.bootstrap.project.id;
        let events = (0..3)
            .map(|i| json!({"event": "e", "distinct_id": format!("u{i}"), "timestamp": "2026-11-20T10:00:00Z"}))
            .collect();
        world.capture(events).await;
        let key = format!("team_id%3D{team}/");
        let event = sample(
            "sqs-batch-with-poisoned-message.json",
            &[("team_id%3D1/", &key)],
        );
        let response = invoke(&state, event).await;
        // Only the poisoned message goes back to the queue: the notification next to it was
        // committed and S3's test event was taken, neither is delivered again.
        assert_eq!(
            failures(&response),
            vec!["22222222-2222-4222-8222-222222222222".to_owned()],
            "{name}"
        );
        assert_eq!(
            lake::table::scan(&state, team).await.unwrap().len(),
            3,
            "{name}"
        );
        // The notification sample itself commits (nothing left, so nothing fails).
        let event = sample("sqs-staging-notification.json", &[("team_id%3D1/", &key)]);
        assert!(failures(&invoke(&state, event).await).is_empty(), "{name}");
    }
}

#[tokio::test]
async fn a_queued_job_that_fails_is_recorded_and_acknowledged() {
    for world in World::all().await {
        let name = world.name();
        let state = world.backend.state.clone();
        worker::register_jobs(&state);
        let team = world.bootstrap.project.id.to_string();
        // The sample names a query nobody started: the run fails for good and is recorded,
        // and SQS is not asked to deliver it again.
        let event = sample(
            "sqs-query-job.json",
            &[("\\\"team_id\\\": 1", &format!("\\\"team_id\\\": {team}"))],
        );
        let response = invoke(&state, event).await;
        assert!(failures(&response).is_empty(), "{name}");
        let runs = JobRun::list(
            state.store.as_ref(),
            Some(world.bootstrap.project.id),
            Some("query"),
            10,
        )
        .await
        .unwrap();
        assert_eq!(runs.len(), 1, "{name} {runs:?}");
        assert_eq!(runs[0].status, RunStatus::Failed, "{name} {runs:?}");
        assert!(runs[0].ended_at.is_some(), "{name}");
        // An unknown job is a poisoned message: it fails alone.
        let unknown = json!({"Records": [
            {"messageId": "ok", "eventSource": "aws:sqs", "body": "{\"Service\": \"Amazon S3\", \"Event\": \"s3:TestEvent\"}"},
            {"messageId": "bad", "eventSource": "aws:sqs", "body": json!({"job": "no-such-job", "run_id": uuid::Uuid::now_v7()}).to_string()}
        ]});
        let batch: SqsEvent = serde_json::from_value(unknown).unwrap();
        let response = invoke(&state, WorkerEvent::Sqs(batch)).await;
        assert_eq!(failures(&response), vec!["bad".to_owned()], "{name}");
    }
}

/// Waits for the runs the embedded queue started in the background to end.
async fn ended_runs(state: &AppState, team: i64, job: &str) -> Vec<JobRun> {
    for _ in 0..600 {
        let runs = JobRun::list(state.store.as_ref(), Some(team), Some(job), 10)
            .await
            .unwrap();
        if !runs.is_empty() && runs.iter().all(|run| run.status.is_final()) {
            return runs;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("the {job} runs of project {team} did not end");
}

#[tokio::test]
async fn the_compact_schedule_removes_repeats_and_squashes_overrides() {
    for world in World::all().await {
        let name = world.name();
        let team = world.bootstrap.project.id;
        // Repeated uuids across two commits (an SDK retry) and a merge of two persons.
        let uuid = |i: u32| format!("0192f0a1-7c3e-7b2a-9d41-{i:012}");
        for range in [0..6, 3..8] {
            let events = range
                .map(|i| {
                    json!({"event": "e", "distinct_id": format!("u{}", i % 2), "uuid": uuid(i),
                    "timestamp": "2026-11-20T10:00:00Z"})
                })
                .collect();
            world.capture(events).await;
            lake::commit_team(&world.backend.state, team).await.unwrap();
        }
        let identify = json!({"event": "$identify", "distinct_id": "u0", "uuid": uuid(100),
            "timestamp": "2026-11-20T11:00:00Z", "properties": {"$anon_distinct_id": "u1"}});
        world.capture(vec![identify]).await;
        lake::commit_team(&world.backend.state, team).await.unwrap();
        let store = world.backend.state.store.clone();
        assert_eq!(
            lake_core::person_overrides::override_list(store.as_ref(), team)
                .await
                .unwrap()
                .len(),
            1,
            "{name}"
        );
        assert_eq!(
            lake::table::scan(&world.backend.state, team)
                .await
                .unwrap()
                .len(),
            12,
            "{name}"
        );

        // Two hours on: the override is past compaction's grace period.
        let mut state = AppState {
            clock: Arc::new(ManualClock::at(
                chrono::Utc::now() + chrono::Duration::hours(2),
            )),
            jobs: Arc::new(common::jobs::Jobs::default()),
            ..world.backend.state.clone()
        };
        let queue = match world.backend.backend {
            TestBackend::Cloud => Some(
                sqs_job_queue(
                    &mut state,
                    &emulator_endpoint().expect("the cloud backend runs on the emulator"),
                )
                .await,
            ),
            _ => None,
        };
        worker::register_jobs(&state);

        let scheduled = invoke(&state, sample("scheduled-compact.json", &[])).await;
        let WorkerResponse::Scheduled(run) = scheduled else {
            panic!("{name}: {scheduled:?}");
        };
        assert_eq!(run.status, RunStatus::Succeeded, "{name} {run:?}");
        let queued = run.output.as_ref().unwrap()["queued"].clone();
        assert!(
            queued
                .as_array()
                .unwrap()
                .iter()
                .any(|q| q["team_id"] == json!(team)),
            "{name} {queued}"
        );

        // In AWS the schedule's run queues one compaction per project on SQS, and Lambda
        // hands the worker those messages; embedded they run in this process.
        if let Some((sqs, url)) = &queue {
            let batch = receive_batch(sqs, url).await;
            assert!(!batch.records.is_empty(), "{name}");
            let response = invoke(&state, WorkerEvent::Sqs(batch)).await;
            assert!(failures(&response).is_empty(), "{name}");
        }
        let runs = ended_runs(&state, team, "compact").await;
        assert_eq!(runs.len(), 1, "{name} {runs:?}");
        let output = runs[0].output.clone().unwrap_or(Value::Null);
        assert_eq!(runs[0].status, RunStatus::Succeeded, "{name} {runs:?}");
        assert_eq!(output["rows_deduplicated"], json!(3), "{name} {output}");
        assert_eq!(output["overrides_squashed"], json!(1), "{name} {output}");
        // The project's job runs are there for whoever waits on them.
        let (status, listed) = world
            .get(
                &format!("/api/projects/{team}/jobs/?job=compact"),
                Some(world.admin_key()),
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{name} {listed}");
        assert_eq!(listed["count"], json!(1), "{name} {listed}");
        assert_eq!(listed["results"][0]["status"], json!("succeeded"), "{name}");
        let (status, one) = world
            .get(
                &format!("/api/projects/{team}/jobs/compact/{}/", runs[0].id),
                Some(world.admin_key()),
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{name} {one}");
        assert_eq!(
            one["output"]["overrides_squashed"],
            json!(1),
            "{name} {one}"
        );
        let (status, _) = world
            .get(
                &format!("/api/projects/{}/jobs/", world.foreign_project),
                Some(world.admin_key()),
            )
            .await;
        assert_eq!(
            status,
            StatusCode::FORBIDDEN,
            "{name}: another organization's runs"
        );
        let (status, bad) = world
            .get(
                &format!("/api/projects/{team}/jobs/?job=a%23b"),
                Some(world.admin_key()),
            )
            .await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{name} {bad}");
        assert_eq!(bad["attr"], json!("job"), "{name} {bad}");

        let rows = lake::table::scan(&state, team).await.unwrap();
        assert_eq!(rows.len(), 9, "{name}");
        let persons: std::collections::HashSet<_> =
            rows.iter().map(|row| row.person_id.clone()).collect();
        assert_eq!(persons.len(), 1, "{name}: one person after the merge");
        assert!(
            lake_core::person_overrides::override_list(store.as_ref(), team)
                .await
                .unwrap()
                .is_empty(),
            "{name}"
        );
    }
}
