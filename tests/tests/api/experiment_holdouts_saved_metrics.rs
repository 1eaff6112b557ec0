//! Experiment holdouts and saved metrics on both backends: CRUD and 400s of
//! `/experiment_holdouts/` and `/experiment_saved_metrics/`, an experiment that names both (its
//! render, its flag's `filters.holdout`, refused ids), `/flags` answering `holdout-<id>` to the
//! users PostHog's hash puts in the holdout, deletes that detach, and a saved metric's results
//! equal to the same metric given inline.

use api_tests::{World, error_shape};
use axum::http::{Method, StatusCode};
use chrono::Utc;
use serde_json::{Value, json};

fn holdouts_uri(world: &World) -> String {
    format!(
        "/api/projects/{}/experiment_holdouts/",
        world.bootstrap.project.id
    )
}

fn saved_metrics_uri(world: &World) -> String {
    format!(
        "/api/projects/{}/experiment_saved_metrics/",
        world.bootstrap.project.id
    )
}

async fn send(world: &World, method: Method, uri: &str, body: Value) -> (StatusCode, Value) {
    world
        .send(
            method,
            uri,
            Some(world.admin_key()),
            Some(&body.to_string()),
        )
        .await
}

async fn created(world: &World, uri: &str, body: Value) -> Value {
    let (status, answer) = send(world, Method::POST, uri, body.clone()).await;
    assert_eq!(
        status,
        StatusCode::CREATED,
        "{} {body} {answer}",
        world.name()
    );
    answer
}

/// The 400's `(detail, attr)`, after checking the error shape.
fn refusal(status: StatusCode, body: &Value, name: &str) -> (String, Option<String>) {
    assert_eq!(status, StatusCode::BAD_REQUEST, "{name} {body}");
    let (_, attr) = error_shape(body);
    (body["detail"].as_str().unwrap_or_default().to_owned(), attr)
}

fn mean_metric(event: &str) -> Value {
    json!({"kind": "ExperimentMetric", "metric_type": "mean",
        "source": {"kind": "EventsNode", "event": event}})
}

fn holdout_body(name: &str, percentage: f64) -> Value {
    json!({"name": name, "description": "kept out",
        "filters": [{"properties": [], "rollout_percentage": percentage}]})
}

/// The experiment's flag as `/api/.../feature_flags/:id/` shows it.
async fn flag_of(world: &World, experiment: &Value) -> Value {
    let uri = format!("{}{}/", world.flags_uri(), experiment["feature_flag"]["id"]);
    let (status, flag) = world.get(&uri, Some(world.admin_key())).await;
    assert_eq!(status, StatusCode::OK, "{} {flag}", world.name());
    flag
}

#[tokio::test]
async fn holdouts_crud_validation_scopes_and_activity() {
    for world in World::all().await {
        let name = world.name();
        let uri = holdouts_uri(&world);
        let holdout = created(&world, &uri, holdout_body("Q4 holdout", 10.0)).await;
        let id = holdout["id"].as_i64().expect("integer id");
        assert_eq!(holdout["name"], "Q4 holdout", "{name}");
        assert_eq!(holdout["description"], "kept out", "{name}");
        // PostHog stamps each group with the holdout's variant.
        assert_eq!(
            holdout["filters"],
            json!([{"properties": [], "rollout_percentage": 10.0, "variant": format!("holdout-{id}")}]),
            "{name}"
        );
        assert_eq!(
            holdout["created_by"]["email"], world.bootstrap.user.email,
            "{name}"
        );
        assert!(holdout["created_at"].is_string(), "{name}");
        assert!(holdout["updated_at"].is_string(), "{name}");

        let second = created(&world, &uri, holdout_body("Second", 5.0)).await;
        let (status, list) = world.get(&uri, Some(world.admin_key())).await;
        assert_eq!(status, StatusCode::OK, "{name} {list}");
        assert_eq!(list["count"], 2, "{name} {list}");
        assert_eq!(
            list["results"][0]["id"], second["id"],
            "{name}: newest first"
        );

        let item = format!("{uri}{id}/");
        let (status, patched) =
            send(&world, Method::PATCH, &item, json!({"name": "Renamed"})).await;
        assert_eq!(status, StatusCode::OK, "{name} {patched}");
        assert_eq!(patched["name"], "Renamed", "{name}");
        assert_eq!(patched["filters"], holdout["filters"], "{name}");

        for (body, detail, attr) in [
            (
                json!({"filters": [{"rollout_percentage": 5}]}),
                "This field is required.",
                Some("name"),
            ),
            (
                json!({"name": "x"}),
                "Filters are required to create an holdout group",
                None,
            ),
            (
                json!({"name": "x", "filters": []}),
                "Filters must not be empty.",
                Some("filters"),
            ),
            (
                json!({"name": "x", "filters": [{"properties": []}]}),
                "Rollout percentage must be present.",
                Some("filters"),
            ),
            (
                json!({"name": "x", "filters": [{"rollout_percentage": 150}]}),
                "Rollout percentage must be between 0 and 100.",
                Some("filters"),
            ),
            (
                json!({"name": "x".repeat(401), "filters": [{"rollout_percentage": 5}]}),
                "Ensure this field has no more than 400 characters.",
                Some("name"),
            ),
        ] {
            let (status, answer) = send(&world, Method::POST, &uri, body.clone()).await;
            let (got, got_attr) = refusal(status, &answer, &name);
            assert_eq!(got, detail, "{name} {body}");
            assert_eq!(got_attr.as_deref(), attr, "{name} {body}");
        }
        let (status, answer) = send(
            &world,
            Method::POST,
            &uri,
            json!({"name": 3, "filters": []}),
        )
        .await;
        let (_, attr) = refusal(status, &answer, &name);
        assert_eq!(attr.as_deref(), Some("name"), "{name} {answer}");

        // Scopes: PostHog's viewset uses the experiment scope.
        let reader = world.key(&["experiment:read"], None).await;
        let (status, _) = world.get(&item, Some(&reader)).await;
        assert_eq!(status, StatusCode::OK, "{name}");
        let (status, _) = world
            .send(
                Method::POST,
                &uri,
                Some(&reader),
                Some(&holdout_body("no", 1.0).to_string()),
            )
            .await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{name}");
        let (status, _) = world.get(&uri, None).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED, "{name}");

        // Hard delete: 204, then 404.
        let (status, body) = world
            .send(Method::DELETE, &item, Some(world.admin_key()), None)
            .await;
        assert_eq!(status, StatusCode::NO_CONTENT, "{name} {body}");
        let (status, _) = world.get(&item, Some(world.admin_key())).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{name}");
        let (status, _) = world
            .get(&format!("{uri}nope/"), Some(world.admin_key()))
            .await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{name}");

        // Logged under the Experiment scope, typed `holdout`, as PostHog logs it.
        let activity_uri = format!("{}activity", world.experiments_uri());
        let (status, log) = world.get(&activity_uri, Some(world.admin_key())).await;
        assert_eq!(status, StatusCode::OK, "{name} {log}");
        let kinds: Vec<(String, String)> = log["results"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|entry| entry["item_id"] == json!(id.to_string()))
            .map(|entry| {
                assert_eq!(entry["scope"], "Experiment", "{name}");
                assert_eq!(entry["detail"]["type"], "holdout", "{name} {entry}");
                (
                    entry["activity"].as_str().unwrap().to_owned(),
                    entry["detail"]["name"].as_str().unwrap().to_owned(),
                )
            })
            .collect();
        assert_eq!(
            kinds,
            [
                ("deleted".to_owned(), "Renamed".to_owned()),
                ("updated".to_owned(), "Renamed".to_owned()),
                ("created".to_owned(), "Q4 holdout".to_owned()),
            ],
            "{name}"
        );
    }
}

#[tokio::test]
async fn saved_metrics_crud_validation_and_search() {
    for world in World::all().await {
        let name = world.name();
        let uri = saved_metrics_uri(&world);
        let saved = created(
            &world,
            &uri,
            json!({"name": "Purchases", "description": "buys", "query": mean_metric("purchase"),
                "tags": ["Revenue", "revenue "]}),
        )
        .await;
        let id = saved["id"].as_i64().expect("integer id");
        let uuid = saved["query"]["uuid"]
            .as_str()
            .expect("uuid filled")
            .to_owned();
        assert_eq!(saved["query"]["source"]["event"], "purchase", "{name}");
        assert_eq!(saved["tags"], json!(["revenue"]), "{name}");
        assert_eq!(saved["description"], "buys", "{name}");
        assert_eq!(
            saved["created_by"]["email"], world.bootstrap.user.email,
            "{name}"
        );
        for field in ["created_at", "updated_at"] {
            assert!(saved[field].is_string(), "{name} {field}");
        }
        created(
            &world,
            &uri,
            json!({"name": "activation", "query": mean_metric("signed_up")}),
        )
        .await;

        // Listed by name, case-insensitively; `search` looks in names, descriptions and tags.
        let (_, list) = world.get(&uri, Some(world.admin_key())).await;
        let names: Vec<&str> = list["results"]
            .as_array()
            .unwrap()
            .iter()
            .map(|row| row["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["activation", "Purchases"], "{name}");
        let (_, found) = world
            .get(&format!("{uri}?search=REVENUE"), Some(world.admin_key()))
            .await;
        assert_eq!(found["count"], 1, "{name} {found}");

        for (body, detail, attr) in [
            (
                json!({"name": "purchases", "query": mean_metric("x")}),
                "A shared metric with this name already exists.",
                Some("name"),
            ),
            (
                json!({"query": mean_metric("x")}),
                "This field is required.",
                Some("name"),
            ),
            (
                json!({"name": "n"}),
                "This field is required.",
                Some("query"),
            ),
            (
                json!({"name": "n", "query": {}}),
                "Query is required to create a saved metric",
                None,
            ),
            (
                json!({"name": "n", "query": {"kind": "ExperimentFunnelsQuery"}}),
                "Legacy metric kind 'ExperimentFunnelsQuery' is no longer supported for new saved metrics. Use 'ExperimentMetric' instead.",
                None,
            ),
            (
                json!({"name": "n", "query": {"kind": "TrendsQuery"}}),
                "Metric query kind must be 'ExperimentMetric'",
                None,
            ),
            (
                json!({"name": "n", "query": {"kind": "ExperimentMetric"}}),
                "ExperimentMetric requires a metric_type",
                None,
            ),
        ] {
            let (status, answer) = send(&world, Method::POST, &uri, body.clone()).await;
            let (got, got_attr) = refusal(status, &answer, &name);
            assert_eq!(got, detail, "{name} {body}");
            assert_eq!(got_attr.as_deref(), attr, "{name} {body}");
        }
        // The typed model of inline metrics checks the query too.
        let (status, answer) = send(
            &world,
            Method::POST,
            &uri,
            json!({"name": "n", "query": {"kind": "ExperimentMetric", "metric_type": "mean"}}),
        )
        .await;
        let (detail, _) = refusal(status, &answer, &name);
        assert!(detail.contains("source"), "{name} {detail}");

        // PATCH keeps the uuid; changing it is refused.
        let item = format!("{uri}{id}/");
        let (status, patched) = send(
            &world,
            Method::PATCH,
            &item,
            json!({"query": mean_metric("order"), "name": "Orders"}),
        )
        .await;
        assert_eq!(status, StatusCode::OK, "{name} {patched}");
        assert_eq!(patched["query"]["uuid"], json!(uuid), "{name}");
        assert_eq!(patched["query"]["source"]["event"], "order", "{name}");
        let mut moved = mean_metric("order");
        moved["uuid"] = json!("another");
        let (status, answer) = send(&world, Method::PATCH, &item, json!({"query": moved})).await;
        let (detail, _) = refusal(status, &answer, &name);
        assert_eq!(detail, "Saved metric UUID cannot be changed", "{name}");

        let (status, _) = world
            .send(Method::DELETE, &item, Some(world.admin_key()), None)
            .await;
        assert_eq!(status, StatusCode::NO_CONTENT, "{name}");
        let (status, _) = world.get(&item, Some(world.admin_key())).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{name}");

        let (_, log) = world
            .get(
                &format!("{}activity", world.experiments_uri()),
                Some(world.admin_key()),
            )
            .await;
        let typed = log["results"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|entry| entry["detail"]["type"] == "shared_metric")
            .count();
        assert_eq!(typed, 4, "{name}: 2 created, 1 updated, 1 deleted {log}");
    }
}

#[tokio::test]
async fn an_experiment_with_a_holdout_and_saved_metrics() {
    for world in World::all().await {
        let name = world.name();
        let holdout = created(&world, &holdouts_uri(&world), holdout_body("Global", 20.0)).await;
        let holdout_id = holdout["id"].as_i64().unwrap();
        let primary = created(
            &world,
            &saved_metrics_uri(&world),
            json!({"name": "Purchases", "query": mean_metric("purchase")}),
        )
        .await;
        let secondary = created(
            &world,
            &saved_metrics_uri(&world),
            json!({"name": "Signups", "query": mean_metric("signed_up")}),
        )
        .await;

        // Ids that name nothing in the project are refused.
        let base = json!({"name": "Checkout", "feature_flag_key": "checkout-exp"});
        let with = |extra: Value| {
            let mut body = base.clone();
            body.as_object_mut()
                .unwrap()
                .extend(extra.as_object().unwrap().clone());
            body
        };
        let (status, answer) = send(
            &world,
            Method::POST,
            &world.experiments_uri(),
            with(json!({"holdout_id": 999})),
        )
        .await;
        let (detail, attr) = refusal(status, &answer, &name);
        assert_eq!(
            detail, "Invalid pk \"999\" - object does not exist.",
            "{name}"
        );
        assert_eq!(attr.as_deref(), Some("holdout_id"), "{name}");
        for links in [
            json!([{"id": 999}]),
            json!([{"id": primary["id"]}, {"id": primary["id"]}]),
        ] {
            let (status, answer) = send(
                &world,
                Method::POST,
                &world.experiments_uri(),
                with(json!({"saved_metrics_ids": links})),
            )
            .await;
            let (detail, _) = refusal(status, &answer, &name);
            assert_eq!(
                detail, "Saved metric does not exist or does not belong to this project",
                "{name}"
            );
        }

        let experiment = world
            .create_experiment(with(json!({
                "holdout_id": holdout_id,
                "saved_metrics_ids": [
                    {"id": primary["id"], "metadata": {"type": "primary"}},
                    {"id": secondary["id"], "metadata": {"type": "secondary"}},
                ],
            })))
            .await;
        let experiment_id = experiment["id"].clone();
        assert_eq!(experiment["holdout_id"], json!(holdout_id), "{name}");
        assert_eq!(experiment["holdout"]["id"], json!(holdout_id), "{name}");
        assert_eq!(experiment["holdout"]["name"], "Global", "{name}");
        assert_eq!(
            experiment["holdout"]["filters"], holdout["filters"],
            "{name}"
        );
        let links = experiment["saved_metrics"].as_array().unwrap();
        assert_eq!(links.len(), 2, "{name} {experiment}");
        let link = &links[0];
        let mut fields: Vec<&str> = link
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        fields.sort_unstable();
        assert_eq!(
            fields,
            [
                "created_at",
                "experiment",
                "id",
                "metadata",
                "name",
                "query",
                "saved_metric"
            ],
            "{name}"
        );
        assert!(link["id"].is_i64(), "{name}");
        assert_eq!(link["experiment"], experiment_id, "{name}");
        assert_eq!(link["saved_metric"], primary["id"], "{name}");
        assert_eq!(link["metadata"], json!({"type": "primary"}), "{name}");
        assert_eq!(link["query"], primary["query"], "{name}");
        assert_eq!(link["name"], "Purchases", "{name}");
        assert_eq!(links[1]["metadata"]["type"], "secondary", "{name}");
        assert_ne!(links[1]["id"], link["id"], "{name}");
        assert_eq!(
            experiment["feature_flag"]["filters"]["holdout"],
            json!({"id": holdout_id, "exclusion_percentage": 20.0}),
            "{name}"
        );

        // The list (PostHog's basic serializer) shows the holdout too.
        let (_, list) = world
            .get(&world.experiments_uri(), Some(world.admin_key()))
            .await;
        assert_eq!(
            list["results"][0]["holdout"]["id"],
            json!(holdout_id),
            "{name} {list}"
        );

        // A draft's holdout may change (null detaches it); the flag follows.
        let item = format!("{}{experiment_id}/", world.experiments_uri());
        let (status, detached) =
            send(&world, Method::PATCH, &item, json!({"holdout_id": null})).await;
        assert_eq!(status, StatusCode::OK, "{name} {detached}");
        assert_eq!(detached["holdout"], Value::Null, "{name}");
        assert!(
            flag_of(&world, &experiment).await["filters"]
                .get("holdout")
                .is_none(),
            "{name}"
        );
        let (status, answer) =
            send(&world, Method::PATCH, &item, json!({"holdout_id": 12345})).await;
        let (_, attr) = refusal(status, &answer, &name);
        assert_eq!(attr.as_deref(), Some("holdout_id"), "{name}");
        let (status, attached) = send(
            &world,
            Method::PATCH,
            &item,
            json!({"holdout_id": holdout_id, "saved_metrics_ids": [{"id": secondary["id"], "metadata": {"type": "primary"}}]}),
        )
        .await;
        assert_eq!(status, StatusCode::OK, "{name} {attached}");
        assert_eq!(attached["holdout"]["id"], json!(holdout_id), "{name}");
        assert_eq!(
            attached["saved_metrics"].as_array().unwrap().len(),
            1,
            "{name}"
        );
        assert_eq!(
            attached["saved_metrics"][0]["saved_metric"], secondary["id"],
            "{name}"
        );

        // Resizing the holdout reaches the flag of every experiment that names it.
        let holdout_item = format!("{}{holdout_id}/", holdouts_uri(&world));
        let (status, _) = send(
            &world,
            Method::PATCH,
            &holdout_item,
            json!({"filters": [{"properties": [], "rollout_percentage": 30}]}),
        )
        .await;
        assert_eq!(status, StatusCode::OK, "{name}");
        assert_eq!(
            flag_of(&world, &experiment).await["filters"]["holdout"],
            json!({"id": holdout_id, "exclusion_percentage": 30.0}),
            "{name}"
        );

        // Launched, the flag answers the holdout variant to the users hashed into it. PostHog's
        // holdout hash (sha1 of "holdout-" + id, reference 3.2): user-1 0.178 (in at 30 %),
        // user-2 0.928 (out).
        let (status, launched) =
            send(&world, Method::POST, &format!("{item}launch"), json!({})).await;
        assert_eq!(status, StatusCode::OK, "{name} {launched}");
        let token = world.bootstrap.project.api_token.clone();
        let flags = |distinct_id: String| {
            let body = json!({"api_key": token, "distinct_id": distinct_id}).to_string();
            let world = &world;
            async move {
                let request = axum::http::Request::post("/flags/?v=4")
                    .header("content-type", "application/json")
                    .body(axum::body::Body::from(body))
                    .unwrap();
                let (status, answer) = api_tests::respond(world.app.clone(), request).await;
                assert_eq!(status, StatusCode::OK, "{answer}");
                answer["flags"]["checkout-exp"].clone()
            }
        };
        let held = flags("user-1".into()).await;
        assert_eq!(held["enabled"], true, "{name} {held}");
        assert_eq!(
            held["variant"],
            json!(format!("holdout-{holdout_id}")),
            "{name} {held}"
        );
        assert_eq!(
            held["reason"]["code"], "holdout_condition_value",
            "{name} {held}"
        );
        let kept = flags("user-2".into()).await;
        assert!(
            ["control", "test"].contains(&kept["variant"].as_str().unwrap_or_default()),
            "{name} {kept}"
        );
        let mut in_holdout = 0;
        let total = 1000;
        for n in 0..total {
            let answer = flags(format!("person-{n}")).await;
            if answer["variant"] == json!(format!("holdout-{holdout_id}")) {
                in_holdout += 1;
            }
        }
        assert!(
            (240..=360).contains(&in_holdout),
            "{name}: {in_holdout} of {total} held out at 30 %"
        );
        // A running experiment's holdout is fixed.
        let (status, answer) =
            send(&world, Method::PATCH, &item, json!({"holdout_id": null})).await;
        let (detail, _) = refusal(status, &answer, &name);
        assert_eq!(
            detail, "Can't update holdout on running Experiment",
            "{name}"
        );

        // Deletes detach: the saved metric's link goes, the holdout leaves experiment and flag.
        let saved_item = format!("{}{}/", saved_metrics_uri(&world), secondary["id"]);
        let (status, _) = world
            .send(Method::DELETE, &saved_item, Some(world.admin_key()), None)
            .await;
        assert_eq!(status, StatusCode::NO_CONTENT, "{name}");
        let (status, _) = world
            .send(Method::DELETE, &holdout_item, Some(world.admin_key()), None)
            .await;
        assert_eq!(status, StatusCode::NO_CONTENT, "{name}");
        let (_, after) = world.get(&item, Some(world.admin_key())).await;
        assert_eq!(after["saved_metrics"], json!([]), "{name} {after}");
        assert_eq!(after["holdout"], Value::Null, "{name}");
        assert_eq!(after["holdout_id"], Value::Null, "{name}");
        assert!(
            flag_of(&world, &experiment).await["filters"]
                .get("holdout")
                .is_none(),
            "{name}"
        );
        let released = flags("user-1".into()).await;
        assert_ne!(released["variant"], held["variant"], "{name} {released}");
    }
}

#[tokio::test]
async fn a_saved_metric_computes_as_the_same_metric_inline() {
    for world in World::all().await {
        let name = world.name();
        let project = world.bootstrap.project.id;
        let holdout = created(&world, &holdouts_uri(&world), holdout_body("Global", 10.0)).await;
        let holdout_key = format!("holdout-{}", holdout["id"]);
        let saved = created(
            &world,
            &saved_metrics_uri(&world),
            json!({"name": "Purchases", "query": mean_metric("purchase")}),
        )
        .await;
        let start = Utc::now() - chrono::Duration::days(2);
        let experiment = world
            .create_experiment(json!({
                "name": "Checkout", "feature_flag_key": "checkout-exp",
                "start_date": start, "holdout_id": holdout["id"],
                "exposure_criteria": {"filterTestAccounts": false},
                "metrics": [mean_metric("purchase")],
                "saved_metrics_ids": [{"id": saved["id"], "metadata": {"type": "primary"}}],
            }))
            .await;

        let at = |minutes: i64| (start + chrono::Duration::minutes(minutes)).to_rfc3339();
        let exposure = |who: String, variant: &str| {
            json!({"event": "$feature_flag_called", "distinct_id": who, "timestamp": at(1),
                "properties": {"$feature_flag": "checkout-exp", "$feature_flag_response": variant}})
        };
        let purchase = |who: String| json!({"event": "purchase", "distinct_id": who, "timestamp": at(10), "properties": {}});
        let mut events = Vec::new();
        for (variant, people, buyers) in [
            ("control", 60, 10),
            ("test", 55, 20),
            (holdout_key.as_str(), 12, 3),
        ] {
            for n in 0..people {
                events.push(exposure(format!("{variant}-{n}"), variant));
            }
            for n in 0..buyers {
                events.push(purchase(format!("{variant}-{n}")));
            }
        }
        world.capture(events).await;
        lake::commit_all(&world.backend.state).await.unwrap();

        // Results are asked for with the metric in the node, as PostHog's app does for both.
        let key = world.key(&["query:read"], Some(vec![project])).await;
        let run = |metric: Value| {
            let body = json!({"query": {"kind": "ExperimentQuery",
                "experiment_id": experiment["id"], "metric": metric}})
            .to_string();
            let (world, key) = (&world, key.clone());
            async move {
                let (status, answer) = world
                    .send(
                        Method::POST,
                        &format!("/api/projects/{project}/query/"),
                        Some(&key),
                        Some(&body),
                    )
                    .await;
                assert_eq!(status, StatusCode::OK, "{answer}");
                answer
            }
        };
        let inline = run(experiment["metrics"][0].clone()).await;
        let shared = run(experiment["saved_metrics"][0]["query"].clone()).await;
        assert_eq!(shared["baseline"], inline["baseline"], "{name} {shared}");
        assert_eq!(
            shared["variant_results"], inline["variant_results"],
            "{name} {shared}"
        );
        assert_eq!(
            inline["baseline"]["number_of_samples"], 60,
            "{name} {inline}"
        );
        assert_eq!(
            inline["baseline"]["sum"].as_f64(),
            Some(10.0),
            "{name} {inline}"
        );
        // PostHog's runner reports the holdout as a variant of its own.
        let held = inline["variant_results"]
            .as_array()
            .unwrap()
            .iter()
            .find(|variant| variant["key"] == json!(holdout_key))
            .unwrap_or_else(|| panic!("{name}: no holdout arm in {inline}"));
        assert_eq!(held["number_of_samples"], 12, "{name} {held}");
        assert_eq!(held["sum"].as_f64(), Some(3.0), "{name} {held}");
    }
}
