//! `ExperimentQuery` through `/query/`: the experiment is read from the Store (404-like and
//! not-started 400s naming `experiment_id`), per-variant counts from a small event set, the
//! Bayesian and frequentist fields, the cache keyed by the experiment's settings too, async runs;
//! and the project's `test_account_filters`.

use std::time::Duration;

use api_tests::{World, error_shape};
use axum::http::{Method, StatusCode};
use chrono::{DateTime, Utc};
use common::store::{Condition, Item};
use experiment_core::Experiment;
use serde_json::{Value, json};

const FLAG_KEY: &str = "checkout-exp";

async fn post(world: &World, path: &str, key: &str, body: Value) -> (StatusCode, Value) {
    world
        .send(Method::POST, path, Some(key), Some(&body.to_string()))
        .await
}

/// Writes an experiment item directly (the create route is another helper's).
async fn put_experiment(world: &World, id: i64, flag_id: i64, extra: Value) -> Experiment {
    let project = world.bootstrap.project.id;
    let mut body = json!({
        "id": id, "team_id": project, "name": format!("Experiment {id}"),
        "feature_flag_id": flag_id, "created_at": "2026-10-01T00:00:00Z",
        "exposure_criteria": {"filterTestAccounts": false},
    });
    if let (Value::Object(body), Value::Object(extra)) = (&mut body, extra) {
        body.extend(extra);
    }
    let experiment: Experiment = serde_json::from_value(body).unwrap();
    let item = Item::of(
        format!("TEAM#{project}"),
        experiment_core::repository::experiment_sk(id),
        &experiment,
    )
    .unwrap();
    world
        .backend
        .state
        .store
        .put(item, Condition::None)
        .await
        .unwrap();
    experiment
}

async fn create_flag(world: &World) -> i64 {
    let flag = world
        .create_flag(json!({
            "key": FLAG_KEY,
            "filters": {"groups": [{"properties": [], "rollout_percentage": 100}],
                        "multivariate": {"variants": [
                            {"key": "control", "rollout_percentage": 50},
                            {"key": "test", "rollout_percentage": 50}]}},
        }))
        .await;
    flag["id"].as_i64().unwrap()
}

fn exposure(distinct_id: &str, variant: &str, at: DateTime<Utc>) -> Value {
    json!({"event": "$feature_flag_called", "distinct_id": distinct_id,
           "timestamp": at.to_rfc3339(),
           "properties": {"$feature_flag": FLAG_KEY, "$feature_flag_response": variant}})
}

fn purchase(distinct_id: &str, at: DateTime<Utc>) -> Value {
    json!({"event": "purchase", "distinct_id": distinct_id, "timestamp": at.to_rfc3339(),
           "properties": {}})
}

fn metric() -> Value {
    json!({"kind": "ExperimentMetric", "uuid": "m-purchases", "metric_type": "mean",
           "source": {"kind": "EventsNode", "event": "purchase"}})
}

fn node(experiment_id: Value) -> Value {
    json!({"query": {"kind": "ExperimentQuery", "experiment_id": experiment_id, "metric": metric()}})
}

#[tokio::test]
async fn experiment_queries_run_through_the_query_api() {
    for world in World::all().await {
        let name = world.name();
        let project = world.bootstrap.project.id;
        let key = world.key(&["query:read"], Some(vec![project])).await;
        let path = format!("/api/projects/{project}/query/");
        let flag = create_flag(&world).await;
        let start = Utc::now() - chrono::Duration::days(2);
        put_experiment(
            &world,
            1,
            flag,
            json!({"start_date": start, "stats_config": {"method": "bayesian"}}),
        )
        .await;
        put_experiment(&world, 2, flag, json!({})).await;
        put_experiment(
            &world,
            3,
            flag,
            json!({"start_date": start, "deleted": true}),
        )
        .await;

        // The statistics need 50 exposures per arm. control: c0..c59, ten buying once (one of
        // them also bought before their exposure, not counted); test: t0..t54, twenty buying
        // once and five of those twice (sum 25, sum of squares 35).
        let at = |minutes: i64| start + chrono::Duration::minutes(minutes);
        let mut events = Vec::new();
        for n in 0..60 {
            events.push(exposure(&format!("c{n}"), "control", at(1)));
        }
        for n in 0..55 {
            events.push(exposure(&format!("t{n}"), "test", at(1)));
        }
        for n in 0..10 {
            events.push(purchase(&format!("c{n}"), at(10)));
        }
        events.push(purchase("c0", at(0)));
        for n in 0..20 {
            events.push(purchase(&format!("t{n}"), at(10)));
        }
        for n in 0..5 {
            events.push(purchase(&format!("t{n}"), at(11)));
        }
        world.capture(events).await;
        lake::commit_all(&world.backend.state).await.unwrap();

        for (experiment_id, detail) in [
            (json!(null), "experiment_id is required."),
            (json!(99), "Experiment 99 does not exist."),
            (json!(3), "Experiment 3 does not exist."),
            (json!(2), "Experiment has not been started yet."),
        ] {
            let (status, body) = post(&world, &path, &key, node(experiment_id.clone())).await;
            assert_eq!(
                status,
                StatusCode::BAD_REQUEST,
                "{name} {experiment_id} {body}"
            );
            let (_, attr) = error_shape(&body);
            assert_eq!(
                attr.as_deref(),
                Some("query.experiment_id"),
                "{name} {body}"
            );
            assert_eq!(body["detail"], json!(detail), "{name} {body}");
        }

        let (status, bayesian) = post(&world, &path, &key, node(json!(1))).await;
        assert_eq!(status, StatusCode::OK, "{name} {bayesian}");
        assert_eq!(bayesian["is_cached"], json!(false), "{name}");
        let baseline = &bayesian["baseline"];
        assert_eq!(baseline["key"], json!("control"), "{name} {bayesian}");
        assert_eq!(
            baseline["number_of_samples"],
            json!(60),
            "{name} {bayesian}"
        );
        assert_eq!(baseline["sum"].as_f64(), Some(10.0), "{name} {bayesian}");
        let test = &bayesian["variant_results"][0];
        assert_eq!(test["key"], json!("test"), "{name} {bayesian}");
        assert_eq!(test["number_of_samples"], json!(55), "{name} {bayesian}");
        assert_eq!(test["sum"].as_f64(), Some(25.0), "{name} {bayesian}");
        assert_eq!(
            test["sum_squares"].as_f64(),
            Some(35.0),
            "{name} {bayesian}"
        );
        assert_eq!(test["method"], json!("bayesian"), "{name} {bayesian}");
        assert!(test["chance_to_win"].is_number(), "{name} {bayesian}");
        assert!(test["credible_interval"].is_array(), "{name} {bayesian}");

        // Again: cached.
        let (status, again) = post(&world, &path, &key, node(json!(1))).await;
        assert_eq!(status, StatusCode::OK, "{name} {again}");
        assert_eq!(again["is_cached"], json!(true), "{name}");

        // stats_config is not in the SQL, yet a change must not serve the old answer.
        put_experiment(
            &world,
            1,
            flag,
            json!({"start_date": start, "stats_config": {"method": "frequentist"}}),
        )
        .await;
        let (status, frequentist) = post(&world, &path, &key, node(json!(1))).await;
        assert_eq!(status, StatusCode::OK, "{name} {frequentist}");
        assert_eq!(frequentist["is_cached"], json!(false), "{name}");
        let test = &frequentist["variant_results"][0];
        assert_eq!(test["method"], json!("frequentist"), "{name} {frequentist}");
        assert!(test["p_value"].is_number(), "{name} {frequentist}");
        assert!(
            test["confidence_interval"].is_array(),
            "{name} {frequentist}"
        );
        assert_eq!(test["number_of_samples"], json!(55), "{name}");

        // Async: queued, then the status completes with the same numbers.
        let mut queued = node(json!(1));
        queued["refresh"] = json!("force_async");
        queued["client_query_id"] = json!("exp-async-1");
        let (status, body) = post(&world, &path, &key, queued).await;
        assert_eq!(status, StatusCode::ACCEPTED, "{name} {body}");
        let mut done = Value::Null;
        for _ in 0..400 {
            let (status, polled) = world.get(&format!("{path}exp-async-1/"), Some(&key)).await;
            if status == StatusCode::OK {
                done = polled;
                break;
            }
            assert_eq!(status, StatusCode::ACCEPTED, "{name} {polled}");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let results = &done["query_status"]["results"];
        assert_eq!(
            results["baseline"]["number_of_samples"],
            json!(60),
            "{name} {done}"
        );
        // An async request for a draft is refused before anything is queued.
        let mut draft = node(json!(2));
        draft["async"] = json!(true);
        let (status, body) = post(&world, &path, &key, draft).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{name} {body}");
    }
}

#[tokio::test]
async fn projects_keep_test_account_filters() {
    for world in World::all().await {
        let name = world.name();
        let project = world.bootstrap.project.id;
        let uri = format!("/api/projects/{project}/");
        let (status, shown) = world.get(&uri, Some(world.admin_key())).await;
        assert_eq!(status, StatusCode::OK, "{name} {shown}");
        assert_eq!(
            shown["test_account_filters"],
            json!(common::models::project_default_test_account_filters()),
            "{name} {shown}: PostHog's default"
        );
        let filters = json!([{"key": "email", "value": "@example.com",
                              "operator": "not_icontains", "type": "person"}]);
        let body = json!({"test_account_filters": filters}).to_string();
        let (status, updated) = world
            .send(Method::PATCH, &uri, Some(world.admin_key()), Some(&body))
            .await;
        assert_eq!(status, StatusCode::OK, "{name} {updated}");
        assert_eq!(updated["test_account_filters"], filters, "{name}");
        let (_, shown) = world.get(&uri, Some(world.admin_key())).await;
        assert_eq!(shown["test_account_filters"], filters, "{name}");
        let bad = json!({"test_account_filters": [{"value": 1}]}).to_string();
        let (status, body) = world
            .send(Method::PATCH, &uri, Some(world.admin_key()), Some(&bad))
            .await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{name} {body}");
        assert_eq!(
            error_shape(&body).1.as_deref(),
            Some("test_account_filters"),
            "{name}"
        );
    }
}
