//! Materialized endpoints on both backends and under both prefixes: a version's whole result
//! stored as Parquet and served exactly as the query answers inline (with a variable, with
//! pages), not served when stale, failed or `refresh: direct`, moved to a new version, removed
//! on deactivation and delete; materialization_status; the OpenAPI document.

use std::sync::Arc;

use api_tests::{World, error_shape, respond};
use axum::body::Body;
use axum::http::{Method, Request, StatusCode};
use common::AppState;
use common::clock::ManualClock;
use endpoint_core::{MaterializationStatus, repository};
use futures::TryStreamExt;
use serde_json::{Value, json};

const PREFIXES: [&str; 2] = ["projects", "environments"];

const DAILY: &str = "select toDate(timestamp) as day, count() as events, uniq(distinct_id) as users \
     from events where event = {variables.event} group by day order by day";

fn with_event(text: &str) -> Value {
    json!({"kind": "HogQLQuery", "query": text,
        "variables": {"v-1": {"code_name": "event", "value": "signup"}}})
}

async fn seed(world: &World) {
    let mut events = Vec::new();
    for day in 1..=4 {
        for (event, who) in [
            ("signup", "a"),
            ("signup", "b"),
            ("pageview", "a"),
            ("signup", "a"),
        ] {
            events.push(json!({"event": event, "distinct_id": who,
                "timestamp": format!("2026-11-0{day}T1{day}:00:00Z")}));
        }
    }
    events.push(
        json!({"event": "purchase", "distinct_id": "c", "timestamp": "2026-11-02T09:00:00Z"}),
    );
    world.capture(events).await;
    lake::commit_all(&world.backend.state).await.unwrap();
}

async fn run(world: &World, uri: &str, body: Value) -> Value {
    let (status, answer) = world
        .send_json(Method::POST, &format!("{uri}run/"), body.clone())
        .await;
    assert_eq!(status, StatusCode::OK, "{uri} {body} {answer}");
    answer
}

/// Waits for the queued materialization run of `uri` to end; answers its status.
async fn settled(world: &World, uri: &str) -> Value {
    for _ in 0..1000 {
        let (status, body) = world
            .get(
                &format!("{uri}materialization_status/"),
                Some(world.admin_key()),
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{body}");
        if matches!(body["status"].as_str(), Some("Completed" | "Failed")) {
            return body;
        }
        // The run is a task of this process (the embedded queue); let it go on.
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    panic!("{uri}: the materialization never ended");
}

/// The stored objects under `materialized/team_id=<team>/`.
async fn stored(state: &AppState, team: i64) -> Vec<String> {
    let prefix = object_store::path::Path::from(format!("materialized/team_id={team}"));
    state
        .objects
        .list(Some(&prefix))
        .map_ok(|meta| meta.location.to_string())
        .try_collect()
        .await
        .unwrap()
}

fn same_answer(materialized: &Value, inline: &Value) {
    assert_eq!(
        materialized["endpoint_materialized"], true,
        "{materialized}"
    );
    assert_eq!(inline["endpoint_materialized"], false, "{inline}");
    for key in ["results", "columns", "types", "hasMore", "limit", "offset"] {
        assert_eq!(
            materialized[key], inline[key],
            "{key}: {materialized} vs {inline}"
        );
    }
}

#[tokio::test]
async fn a_materialized_run_answers_what_the_query_answers() {
    for world in World::all().await {
        seed(&world).await;
        let team = world.bootstrap.project.id;
        for prefix in PREFIXES {
            let uri = world.endpoints_uri(prefix);
            let mat = format!("{uri}daily-mat/");
            let inline = format!("{uri}daily-inline/");
            let created = world
                .create_endpoint(
                    prefix,
                    json!({"name": "daily-mat", "query": with_event(DAILY),
                    "is_materialized": true, "sync_frequency": "1hour"}),
                )
                .await;
            assert_eq!(created["is_materialized"], true);
            world
                .create_endpoint(
                    prefix,
                    json!({"name": "daily-inline", "query": with_event(DAILY)}),
                )
                .await;
            let status = settled(&world, &mat).await;
            assert_eq!(status["status"], "Completed", "{status}");
            assert_eq!(status["sync_frequency"], "1hour");
            assert_eq!(status["can_materialize"], true);
            assert_eq!(status["error"], "");
            assert!(status["last_materialized_at"].is_string(), "{status}");
            assert_eq!(stored(&world.backend.state, team).await.len(), 1);

            for event in ["signup", "pageview", "purchase"] {
                let body = json!({"variables": {"event": event}});
                let served = run(&world, &mat, body.clone()).await;
                let computed = run(&world, &inline, body).await;
                same_answer(&served, &computed);
                assert!(served["endpoint_materialized_at"].is_string());
                assert!(!served["results"].as_array().unwrap().is_empty());
            }
            let before = run(&world, &inline, json!({"variables": {"event": "signup"}})).await;
            let before = before["results"][0].clone();
            // Served runs are in the query log too, under the endpoint's name and path.
            let id = format!("mat-{prefix}");
            run(
                &world,
                &mat,
                json!({"variables": {"event": "signup"}, "client_query_id": id}),
            )
            .await;
            let (status, log) = world
                .send_json(Method::POST, &format!("/api/projects/{team}/query/"), json!({"query": {
                    "kind": "HogQLQuery",
                    "query": format!("select name, endpoint, result_rows from query_log where query_id = '{id}'")}}))
                .await;
            assert_eq!(status, StatusCode::OK, "{log}");
            assert_eq!(
                log["results"],
                json!([[
                    "daily-mat",
                    format!("/api/{prefix}/{team}/endpoints/daily-mat/run"),
                    4
                ]])
            );
            // A value nothing matched: the query answers (no rows here, as inline).
            let served = run(&world, &mat, json!({"variables": {"event": "nothing"}})).await;
            assert_eq!(served["results"], json!([]));
            // Pages over the stored rows, as over the query's.
            let page = json!({"variables": {"event": "signup"}, "limit": 2, "offset": 1});
            same_answer(
                &run(&world, &mat, page.clone()).await,
                &run(&world, &inline, page).await,
            );

            let (status, body) = world
                .send_json(Method::POST, &format!("{mat}run/"), json!({}))
                .await;
            assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
            assert_eq!(error_shape(&body).1.as_deref(), Some("variables"));
            assert_eq!(body["detail"], "Required variable 'event' not provided");

            // New events: the stored result still answers while fresh; `direct` runs the query.
            world
                .capture(vec![json!({"event": "signup", "distinct_id": format!("z-{prefix}"), "timestamp": "2026-11-01T23:00:00Z"})])
                .await;
            lake::commit_all(&world.backend.state).await.unwrap();
            let body = json!({"variables": {"event": "signup"}});
            let served = run(&world, &mat, body.clone()).await;
            assert_eq!(served["results"][0], before);
            let after = run(&world, &inline, body.clone()).await["results"][0].clone();
            assert_eq!(after[1].as_i64(), before[1].as_i64().map(|n| n + 1));
            let direct = run(
                &world,
                &mat,
                json!({"variables": {"event": "signup"}, "refresh": "direct"}),
            )
            .await;
            assert_eq!(direct["endpoint_materialized"], false);
            assert_eq!(direct["results"][0], after);

            // An hour on, the result is stale and the query answers.
            let later = AppState {
                clock: Arc::new(ManualClock::at(
                    chrono::Utc::now() + chrono::Duration::minutes(61),
                )),
                ..world.backend.state.clone()
            };
            let app = local::app(later);
            let request = Request::post(format!("{mat}run/"))
                .header("authorization", format!("Bearer {}", world.admin_key()))
                .header("content-type", "application/json")
                .body(Body::from(body.to_string()))
                .unwrap();
            let (status, stale) = respond(app, request).await;
            assert_eq!(status, StatusCode::OK, "{stale}");
            assert_eq!(stale["endpoint_materialized"], false);
            assert_eq!(stale["results"][0], after);

            // A failed run is not served either.
            let store = world.backend.state.store.as_ref();
            let id: uuid::Uuid = created["id"].as_str().unwrap().parse().unwrap();
            let mut item = repository::get_materialization(store, team, id, 1)
                .await
                .unwrap()
                .unwrap();
            item.status = MaterializationStatus::Failed;
            item.error = "boom".into();
            repository::put_materialization(store, team, &item)
                .await
                .unwrap();
            let failed = run(&world, &mat, body.clone()).await;
            assert_eq!(failed["endpoint_materialized"], false);
            let (_, status) = world
                .get(
                    &format!("{mat}materialization_status/"),
                    Some(world.admin_key()),
                )
                .await;
            assert_eq!(
                (status["status"].clone(), status["error"].clone()),
                (json!("Failed"), json!("boom"))
            );

            // A new version takes the materialization over; the old result goes.
            let (status, patched) = world
                .send_json(
                    Method::PATCH,
                    &mat,
                    json!({"query": with_event(&DAILY.replace("count()", "count() * 2"))}),
                )
                .await;
            assert_eq!(status, StatusCode::OK, "{patched}");
            assert_eq!(patched["current_version"], 2);
            assert_eq!(patched["is_materialized"], true);
            assert_eq!(settled(&world, &mat).await["status"], "Completed");
            assert!(
                repository::get_materialization(store, team, id, 1)
                    .await
                    .unwrap()
                    .is_none()
            );
            let objects = stored(&world.backend.state, team).await;
            assert_eq!(objects.len(), 1, "{objects:?}");
            assert!(
                objects[0].contains("/endpoint=daily-mat/v=2/"),
                "{objects:?}"
            );
            let served = run(&world, &mat, body.clone()).await;
            assert_eq!(served["endpoint_materialized"], true);
            assert_eq!(
                served["results"][0][1].as_i64(),
                after[1].as_i64().map(|n| n * 2)
            );
            // Version 1 runs inline.
            let old = run(
                &world,
                &mat,
                json!({"variables": {"event": "signup"}, "version": 1}),
            )
            .await;
            assert_eq!(old["endpoint_materialized"], false);
            assert_eq!(old["results"][0], after);

            // Deactivating stops it and removes the data; so does deleting.
            let (status, off) = world
                .send_json(Method::PATCH, &mat, json!({"is_active": false}))
                .await;
            assert_eq!(status, StatusCode::OK, "{off}");
            assert_eq!(off["is_materialized"], false);
            assert!(stored(&world.backend.state, team).await.is_empty());
            let (status, body) = world
                .send_json(Method::PATCH, &mat, json!({"is_materialized": true}))
                .await;
            assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
            assert_eq!(
                body["detail"],
                "Cannot enable materialization on inactive endpoint."
            );
            world
                .send_json(
                    Method::PATCH,
                    &mat,
                    json!({"is_active": true, "is_materialized": true}),
                )
                .await;
            assert_eq!(settled(&world, &mat).await["status"], "Completed");
            assert_eq!(stored(&world.backend.state, team).await.len(), 1);
            for name in ["daily-mat", "daily-inline"] {
                let (status, _) = world
                    .send_json(Method::DELETE, &format!("{uri}{name}/"), json!({}))
                    .await;
                assert_eq!(status, StatusCode::NO_CONTENT);
            }
            assert!(stored(&world.backend.state, team).await.is_empty());
            assert!(
                repository::list_materializations(store, team)
                    .await
                    .unwrap()
                    .is_empty()
            );
        }
    }
}

#[tokio::test]
async fn queries_without_variables_and_aggregates_and_refusals() {
    for world in World::all().await {
        seed(&world).await;
        let prefix = "environments";
        let uri = world.endpoints_uri(prefix);
        // No variable, no LIMIT: the default page of the whole stored result.
        let listing = json!({"kind": "HogQLQuery",
            "query": "select event, distinct_id, timestamp from events order by timestamp, event, distinct_id"});
        world
            .create_endpoint(
                prefix,
                json!({"name": "all", "query": listing.clone(), "is_materialized": true}),
            )
            .await;
        world
            .create_endpoint(prefix, json!({"name": "all-inline", "query": listing}))
            .await;
        assert_eq!(
            settled(&world, &format!("{uri}all/")).await["status"],
            "Completed"
        );
        for body in [
            json!({}),
            json!({"limit": 5, "offset": 3}),
            json!({"limit": 50}),
        ] {
            same_answer(
                &run(&world, &format!("{uri}all/"), body.clone()).await,
                &run(&world, &format!("{uri}all-inline/"), body).await,
            );
        }
        // An aggregate without GROUP BY: one row per value, even for a value no event has.
        let total = with_event("select count() as n from events where event = {variables.event}");
        world
            .create_endpoint(
                prefix,
                json!({"name": "total", "query": total, "is_materialized": true}),
            )
            .await;
        assert_eq!(
            settled(&world, &format!("{uri}total/")).await["status"],
            "Completed"
        );
        let signup = run(
            &world,
            &format!("{uri}total/"),
            json!({"variables": {"event": "signup"}}),
        )
        .await;
        assert_eq!(
            (
                signup["results"].clone(),
                signup["endpoint_materialized"].clone()
            ),
            (json!([[12]]), json!(true))
        );
        let none = run(
            &world,
            &format!("{uri}total/"),
            json!({"variables": {"event": "nothing"}}),
        )
        .await;
        assert_eq!(none["results"], json!([[0]]));
        // The query's own LIMIT is kept per value.
        let top = with_event(
            "select distinct_id, count() as c from events where event = {variables.event} group by distinct_id order by c desc, distinct_id limit 1",
        );
        world
            .create_endpoint(
                prefix,
                json!({"name": "top", "query": top.clone(), "is_materialized": true}),
            )
            .await;
        world
            .create_endpoint(prefix, json!({"name": "top-inline", "query": top}))
            .await;
        assert_eq!(
            settled(&world, &format!("{uri}top/")).await["status"],
            "Completed"
        );
        for event in ["signup", "pageview"] {
            let body = json!({"variables": {"event": event}});
            same_answer(
                &run(&world, &format!("{uri}top/"), body.clone()).await,
                &run(&world, &format!("{uri}top-inline/"), body).await,
            );
        }

        // A day on, the schedule's run queues every materialization that is due again.
        let later = AppState {
            clock: Arc::new(ManualClock::at(
                chrono::Utc::now() + chrono::Duration::hours(25),
            )),
            ..world.backend.state.clone()
        };
        let scheduled = common::jobs::ScheduledJob {
            job: "endpoint_materialization".into(),
            team_id: None,
            payload: Value::Null,
        };
        let swept = later
            .jobs
            .run_scheduled(&later, scheduled, None)
            .await
            .unwrap();
        let queued = swept.output.unwrap()["queued"].clone();
        let mut names: Vec<&str> = queued
            .as_array()
            .unwrap()
            .iter()
            .filter(|q| q["team_id"] == json!(world.bootstrap.project.id))
            .map(|q| q["endpoint"].as_str().unwrap())
            .collect();
        names.sort();
        assert_eq!(names, ["all", "top", "total"], "{queued}");

        // What cannot be materialized says why, and an unmaterialized endpoint says whether it could.
        for text in [
            "select {variables.event} as e from events where event = {variables.event}",
            "select event from events where event = {variables.event} or 1 = 1",
        ] {
            let (status, body) = world
                .send_json(
                    Method::POST,
                    &uri,
                    json!({"name": "nope", "query": with_event(text), "is_materialized": true}),
                )
                .await;
            assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
            assert_eq!(
                error_shape(&body).1.as_deref(),
                Some("is_materialized"),
                "{body}"
            );
        }
        let odd = with_event("select event from events where event = {variables.event} or 1 = 1");
        let created = world
            .create_endpoint(prefix, json!({"name": "odd", "query": odd}))
            .await;
        assert_eq!(created["materialization"]["can_materialize"], false);
        assert!(
            created["materialization"]["reason"]
                .as_str()
                .unwrap()
                .contains("event"),
            "{created}"
        );
        let (status, body) = world
            .send_json(
                Method::PATCH,
                &format!("{uri}odd/"),
                json!({"is_materialized": true}),
            )
            .await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
        let (_, plain) = world
            .get(
                &format!("{uri}all-inline/materialization_status/"),
                Some(world.admin_key()),
            )
            .await;
        assert_eq!(plain, json!({"can_materialize": true, "reason": null}));
    }
}

#[tokio::test]
async fn each_endpoint_has_an_openapi_document() {
    for world in World::all().await {
        for prefix in PREFIXES {
            let uri = world.endpoints_uri(prefix);
            let name = format!("doc-{prefix}");
            world
                .create_endpoint(
                    prefix,
                    json!({"name": name, "query": with_event(DAILY), "description": "Daily"}),
                )
                .await;
            let (status, doc) = world
                .get(
                    &format!("{uri}{name}/openapi.json"),
                    Some(world.admin_key()),
                )
                .await;
            assert_eq!(status, StatusCode::OK, "{doc}");
            assert_eq!(doc["openapi"], "3.0.3");
            assert_eq!(doc["info"]["title"], name.as_str());
            let path = format!(
                "/api/{prefix}/{}/endpoints/{name}/run/",
                world.bootstrap.project.id
            );
            let run = &doc["paths"][&path];
            assert!(run["get"].is_object() && run["post"].is_object(), "{doc}");
            let body = &run["post"]["requestBody"]["content"]["application/json"]["schema"];
            assert_eq!(
                body["properties"]["variables"]["properties"]["event"],
                json!({"type": "string", "default": "signup"})
            );
            let rows = &run["post"]["responses"]["200"]["content"]["application/json"]["schema"]["properties"]
                ["results"]["items"];
            assert_eq!(rows["minItems"], 3, "{rows}");
            assert!(
                rows["description"]
                    .as_str()
                    .unwrap()
                    .contains("users (Int64)"),
                "{rows}"
            );
            let (status, _) = world
                .get(
                    &format!("{uri}missing/openapi.json"),
                    Some(world.admin_key()),
                )
                .await;
            assert_eq!(status, StatusCode::NOT_FOUND);
        }
    }
}
