//! Endpoints under contention, on both backends: sixteen PATCHes of one endpoint at once, none
//! holding to a version, all succeed (a write that lost the race to another's commit reads
//! again and retries), each query change its own version.

use api_tests::World;
use axum::http::{Method, StatusCode};
use serde_json::{Value, json};

const WRITERS: u64 = 16;

fn sql(text: &str) -> Value {
    json!({"kind": "HogQLQuery", "query": text})
}

/// Sends `bodies` to `uri` all at once; every answer must be a 200. Answers the bodies.
async fn patch_at_once(world: &World, uri: &str, bodies: Vec<Value>) -> Vec<Value> {
    let patches = bodies
        .into_iter()
        .map(|body| world.send_json(Method::PATCH, uri, body));
    let answers = futures::future::join_all(patches).await;
    let failed: Vec<&(StatusCode, Value)> = answers
        .iter()
        .filter(|(status, _)| *status != StatusCode::OK)
        .collect();
    assert!(
        failed.is_empty(),
        "{}: {} of {WRITERS} failed: {failed:?}",
        world.name(),
        failed.len()
    );
    answers.into_iter().map(|(_, body)| body).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_patches_without_a_version_all_land() {
    for world in World::all().await {
        let name = world.name();
        let uri = world.endpoints_uri("projects");
        let item = format!("{uri}contended/");
        world
            .create_endpoint(
                "projects",
                json!({"name": "contended", "query": sql("select 0 as n")}),
            )
            .await;

        // Sixteen query changes: sixteen new versions, 2 to 17, one per writer.
        let bodies = (1..=WRITERS)
            .map(|i| json!({"query": sql(&format!("select {i} as n"))}))
            .collect();
        let answers = patch_at_once(&world, &item, bodies).await;
        let mut made: Vec<u64> = answers
            .iter()
            .map(|body| body["current_version"].as_u64().unwrap())
            .collect();
        made.sort_unstable();
        assert_eq!(made, (2..=WRITERS + 1).collect::<Vec<_>>(), "{name}");
        let (_, after) = world.get(&item, Some(world.admin_key())).await;
        assert_eq!(after["current_version"], json!(WRITERS + 1), "{name}");
        assert_eq!(after["versions_count"], json!(WRITERS + 1), "{name}");
        let (_, versions) = world
            .get(&format!("{item}versions/"), Some(world.admin_key()))
            .await;
        let versions = versions.as_array().unwrap();
        // The current version holds the query of the writer that committed last.
        assert_eq!(versions[0]["query"], after["query"], "{name}");
        let mut queries: Vec<&str> = versions
            .iter()
            .map(|v| v["query"]["query"].as_str().unwrap())
            .collect();
        queries.sort_unstable();
        let mut expected: Vec<String> = (0..=WRITERS).map(|i| format!("select {i} as n")).collect();
        expected.sort_unstable();
        assert_eq!(queries, expected, "{name}: every change is a version");

        // Sixteen settings changes of the current version: all land, no version is made, and
        // the description is one writer's.
        let bodies = (1..=WRITERS)
            .map(|i| json!({"description": format!("writer {i}"), "cache_age_seconds": 300 + i}))
            .collect();
        patch_at_once(&world, &item, bodies).await;
        let (_, after) = world.get(&item, Some(world.admin_key())).await;
        assert_eq!(after["versions_count"], json!(WRITERS + 1), "{name}");
        let description = after["description"].as_str().unwrap();
        let writer: u64 = description
            .strip_prefix("writer ")
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("{name}: {after}"));
        assert_eq!(
            after["cache_age_seconds"],
            json!(300 + writer),
            "{name}: one writer's change, whole: {after}"
        );

        // `?version=N` names the version to change, not a version read: those retry as well.
        let bodies = (1..=WRITERS)
            .map(|i| json!({"description": format!("first, by {i}")}))
            .collect();
        patch_at_once(&world, &format!("{item}?version=1"), bodies).await;
        let (_, first) = world
            .get(&format!("{item}versions/1/"), Some(world.admin_key()))
            .await;
        assert!(
            first["description"]
                .as_str()
                .is_some_and(|d| d.starts_with("first, by ")),
            "{name}: {first}"
        );
    }
}
