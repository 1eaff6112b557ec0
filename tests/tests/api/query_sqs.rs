//! Async queries in the AWS shape: the query function puts a job on SQS, the worker function
//! takes it from there and runs it, and the status in the Store is what the client polls. Runs
//! against the emulator only (there is no queue embedded: jobs run in-process there).

use api_tests::{World, receive_batch, sqs_job_queue};
use axum::http::{Method, StatusCode};
use common::jobs::{JobRun, RunStatus};
use common::testing::{TestState, emulator_endpoint};
use serde_json::json;
use worker::{WorkerEvent, WorkerResponse};

#[tokio::test]
async fn async_queries_go_through_sqs_to_the_worker() {
    let (Some(mut cloud), Some(endpoint)) = (TestState::cloud().await, emulator_endpoint()) else {
        return; // no emulator: nothing to run against
    };
    let (sqs, queue) = sqs_job_queue(&mut cloud.state, &endpoint).await;
    let world = World::on(cloud).await;
    let team = world.bootstrap.project.id;
    let path = format!("/api/projects/{team}/query/");
    let body = json!({"query": {"kind": "HogQLQuery", "query": "select 40 + 2 as answer"},
                      "async": true, "client_query_id": "through-sqs"});
    let (status, queued) = world
        .send(
            Method::POST,
            &path,
            Some(world.admin_key()),
            Some(&body.to_string()),
        )
        .await;
    assert_eq!(status, StatusCode::ACCEPTED, "{queued}");

    // Nothing runs it here: the job waits on the queue.
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    let (status, waiting) = world
        .get(&format!("{path}through-sqs/"), Some(world.admin_key()))
        .await;
    assert_eq!(status, StatusCode::ACCEPTED, "{waiting}");
    assert_eq!(waiting["query_status"]["complete"], json!(false));

    // The worker gets the SQS batch Lambda would hand it.
    let batch = receive_batch(&sqs, &queue).await;
    assert_eq!(batch.records.len(), 1, "{:?}", batch.records);
    worker::register_jobs(&world.backend.state);
    let response = worker::handle(&world.backend.state, WorkerEvent::Sqs(batch), None)
        .await
        .unwrap();
    let WorkerResponse::Batch(response) = response else {
        panic!("expected an SQS batch response, got {response:?}");
    };
    assert!(response.batch_item_failures.is_empty(), "{response:?}");
    let runs = JobRun::list(
        world.backend.state.store.as_ref(),
        Some(team),
        Some("query"),
        10,
    )
    .await
    .unwrap();
    assert_eq!(runs.len(), 1, "{runs:?}");
    assert_eq!(runs[0].status, RunStatus::Succeeded, "{runs:?}");

    let (status, done) = world
        .get(&format!("{path}through-sqs/"), Some(world.admin_key()))
        .await;
    assert_eq!(status, StatusCode::OK, "{done}");
    assert_eq!(done["query_status"]["complete"], json!(true));
    assert_eq!(
        done["query_status"]["results"]["results"],
        json!([[42]]),
        "{done}"
    );
}
