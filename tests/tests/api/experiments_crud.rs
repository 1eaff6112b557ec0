//! Experiment CRUD on both backends (reference 2.2–2.4, 2.7): create with a new or reused flag,
//! `parameters` with `split_percent`, every create/update validation message, PATCH rules,
//! soft delete and restore, the 405 of DELETE, list filters/order/pagination, scopes, activity.

use api_tests::{World, error_shape};
use axum::http::{Method, StatusCode};
use serde_json::{Value, json};

async fn post(world: &World, uri: &str, body: Value) -> (StatusCode, Value) {
    world
        .send(
            Method::POST,
            uri,
            Some(world.admin_key()),
            Some(&body.to_string()),
        )
        .await
}

async fn patch(world: &World, id: &Value, body: Value) -> (StatusCode, Value) {
    world
        .send(
            Method::PATCH,
            &format!("{}{id}/", world.experiments_uri()),
            Some(world.admin_key()),
            Some(&body.to_string()),
        )
        .await
}

fn mean_metric(event: &str) -> Value {
    json!({"kind": "ExperimentMetric", "metric_type": "mean",
        "source": {"kind": "EventsNode", "event": event}})
}

/// The 400's detail, after checking the error shape.
fn detail(status: StatusCode, body: &Value, name: &str) -> String {
    assert_eq!(status, StatusCode::BAD_REQUEST, "{name} {body}");
    error_shape(body);
    body["detail"].as_str().unwrap_or_default().to_owned()
}

#[tokio::test]
async fn create_makes_the_flag_and_reads_back_in_the_serializer_shape() {
    for world in World::all().await {
        let name = world.name();
        let created = world
            .create_experiment(
                json!({"name": "Checkout", "feature_flag_key": "checkout-exp",
                "description": "Does the new checkout convert?",
                "metrics": [mean_metric("purchase")]}),
            )
            .await;
        assert_eq!(created["name"], "Checkout", "{name}");
        assert_eq!(created["status"], "draft", "{name}");
        assert_eq!(created["feature_flag_key"], "checkout-exp", "{name}");
        assert_eq!(created["user_access_level"], "editor", "{name}");
        assert_eq!(created["type"], "product", "{name}");
        assert_eq!(created["archived"], false, "{name}");
        assert_eq!(created["stats_config"]["method"], "bayesian", "{name}");
        assert_eq!(
            created["exposure_criteria"]["filterTestAccounts"], true,
            "{name}"
        );
        assert_eq!(
            created["created_by"]["email"], world.bootstrap.user.email,
            "{name}"
        );
        let metric = &created["metrics"][0];
        let uuid = metric["uuid"].as_str().unwrap();
        assert_eq!(metric["fingerprint"].as_str().unwrap().len(), 64, "{name}");
        assert_eq!(
            created["primary_metrics_ordered_uuids"],
            json!([uuid]),
            "{name}"
        );
        // The new flag: PostHog's name, 50/50 control/test, inactive while a draft.
        let flag = &created["feature_flag"];
        assert_eq!(flag["key"], "checkout-exp", "{name}");
        assert_eq!(
            flag["name"], "Feature Flag for Experiment Checkout",
            "{name}"
        );
        assert_eq!(flag["active"], false, "{name}");
        assert_eq!(
            flag["filters"]["multivariate"]["variants"],
            json!([{"key": "control", "name": "Control Group", "rollout_percentage": 50.0},
                   {"key": "test", "name": "Test Variant", "rollout_percentage": 50.0}]),
            "{name}"
        );
        assert_eq!(
            flag["filters"]["groups"][0]["rollout_percentage"], 100.0,
            "{name}"
        );
        // It is a real flag of the project.
        let (status, listed) = world
            .get(
                &format!("{}{}/", world.flags_uri(), flag["id"]),
                Some(world.admin_key()),
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{name}");
        assert_eq!(listed["key"], "checkout-exp", "{name}");

        let (status, read) = world
            .get(
                &format!("{}{}/", world.experiments_uri(), created["id"]),
                Some(world.admin_key()),
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{name}");
        assert_eq!(read, created, "{name}: retrieve answers what create did");
    }
}

#[tokio::test]
async fn parameters_round_trip_with_split_percent_and_a_reused_flag() {
    for world in World::all().await {
        let name = world.name();
        let created = world
            .create_experiment(json!({"name": "Split", "feature_flag_key": "split-exp",
                "parameters": {"feature_flag_variants": [
                    {"key": "Control", "split_percent": 34},
                    {"key": "a", "split_percent": 33},
                    {"key": "b", "rollout_percentage": 33}],
                    "minimum_detectable_effect": 5}}))
            .await;
        let variants = &created["parameters"]["feature_flag_variants"];
        assert_eq!(variants[0]["key"], "control", "{name}: Control normalised");
        assert_eq!(variants[0]["split_percent"], 34, "{name}");
        assert_eq!(variants[0]["rollout_percentage"], 34, "{name}");
        assert_eq!(variants[2]["split_percent"], 33, "{name}");
        assert_eq!(
            created["parameters"]["minimum_detectable_effect"], 5,
            "{name}"
        );
        let flag_variants = &created["feature_flag"]["filters"]["multivariate"]["variants"];
        assert_eq!(flag_variants.as_array().unwrap().len(), 3, "{name}");
        assert_eq!(flag_variants[1]["rollout_percentage"], 33.0, "{name}");

        // An existing multivariate flag is reused, and lends its variants.
        let flag = world
            .create_flag(json!({"key": "existing-mv", "filters": {
                "groups": [{"properties": [], "rollout_percentage": 100}],
                "multivariate": {"variants": [
                    {"key": "control", "rollout_percentage": 70},
                    {"key": "test", "rollout_percentage": 30}]}}}))
            .await;
        let reused = world
            .create_experiment(json!({"name": "Reuse", "feature_flag_key": "existing-mv"}))
            .await;
        assert_eq!(reused["feature_flag"]["id"], flag["id"], "{name}");
        assert_eq!(reused["feature_flag"]["active"], true, "{name}: untouched");
        assert_eq!(
            reused["parameters"]["feature_flag_variants"][0]["split_percent"], 70.0,
            "{name}"
        );
        // A boolean flag cannot run an experiment; nor one without control.
        world
            .create_flag(json!({"key": "boolean-flag", "filters": {"groups": [{"rollout_percentage": 100}]}}))
            .await;
        let (status, body) = post(
            &world,
            &world.experiments_uri(),
            json!({"name": "x", "feature_flag_key": "boolean-flag"}),
        )
        .await;
        assert_eq!(
            detail(status, &body, &name),
            "Feature flag must have at least 2 variants (control and at least one test variant)"
        );
        world
            .create_flag(json!({"key": "no-control", "filters": {"groups": [{"rollout_percentage": 100}],
                "multivariate": {"variants": [{"key": "a", "rollout_percentage": 50}, {"key": "b", "rollout_percentage": 50}]}}}))
            .await;
        let (status, body) = post(
            &world,
            &world.experiments_uri(),
            json!({"name": "x", "feature_flag_key": "no-control"}),
        )
        .await;
        assert_eq!(
            detail(status, &body, &name),
            "Feature flag must have a variant with key 'control'"
        );
    }
}

#[tokio::test]
async fn every_create_validation_message() {
    for world in World::all().await {
        let name = world.name();
        let uri = world.experiments_uri();
        let with = |extra: Value| {
            let mut body = json!({"name": "V", "feature_flag_key": "v-exp"});
            for (key, value) in extra.as_object().unwrap() {
                body[key] = value.clone();
            }
            body
        };
        let variants = |list: Value| with(json!({"parameters": {"feature_flag_variants": list}}));
        let twenty_one: Vec<Value> = (0..21)
            .map(|i| json!({"key": if i == 0 { "control".to_owned() } else { format!("v{i}") }, "split_percent": 1}))
            .collect();
        let cases: Vec<(Value, String)> = vec![
            (variants(json!(["control"])), "Feature flag variant at index 0 must be an object".into()),
            (variants(json!([{"key": "control", "split_percent": 50}, {"name": "x"}])),
                "Feature flag variant at index 1 must have a 'key' field".into()),
            (variants(json!([{"key": "control"}, {"key": "test", "split_percent": 50}])),
                "Each variant must include split_percent (recommended) or rollout_percentage (deprecated).".into()),
            (variants(Value::from(twenty_one)), "Feature flag variants must be less than 21".into()),
            (variants(json!([{"key": "control", "split_percent": 100}])),
                "Feature flag must have at least 2 variants (control and at least one test variant)".into()),
            (variants(json!([{"key": "a", "split_percent": 50}, {"key": "b", "split_percent": 50}])),
                "Feature flag variants must contain a variant with key 'control' (lowercase, exactly). Got keys: ['a', 'b']. Rename the baseline variant's 'key' to 'control'.".into()),
            // The new flag is refused as the flag routes refuse it (PostHog's flag serializer).
            (variants(json!([{"key": "control", "split_percent": 50}, {"key": "test", "split_percent": 40}])),
                "Invalid variant definitions: Variant rollout percentages must sum to 100.".into()),
            (with(json!({"parameters": {"excluded_variants": ["holdout-1"]}})),
                "cannot exclude holdout pseudo-variants: ['holdout-1']".into()),
            (with(json!({"parameters": {"excluded_variants": ["control"]}})),
                "baseline variant cannot be excluded ('control')".into()),
            (with(json!({"parameters": {"excluded_variants": ["nope"]}})),
                "unknown variants for this experiment: ['nope']".into()),
            (with(json!({"parameters": {"excluded_variants": ["test"]}})),
                "at least one test variant must remain in analysis".into()),
            (with(json!({"metrics": [{"kind": "ExperimentTrendsQuery"}]})),
                "Invalid metric at index 0: legacy metric kind 'ExperimentTrendsQuery' is no longer supported for new experiments. Use 'ExperimentMetric' instead.".into()),
            (with(json!({"metrics": [{"metric_type": "mean"}]})),
                "Invalid metric at index 0: metric kind must be 'ExperimentMetric'".into()),
            (with(json!({"metrics": [{"kind": "ExperimentMetric", "metric_type": "funnel", "series": []}]})),
                "Invalid metric at index 0: funnel metrics require at least one step. The experiment exposure event is added as the initial step automatically.".into()),
            (with(json!({"saved_metrics_ids": [{"id": 1}]})),
                "Saved metric does not exist or does not belong to this project".into()),
            (with(json!({"saved_metrics_ids": [{"id": 1, "metadata": {}}]})),
                "Metadata must have a type key".into()),
            (with(json!({"start_date": "2025-02-01T00:00:00Z", "end_date": "2025-01-01T00:00:00Z"})),
                "End date must be after start date".into()),
            (with(json!({"stats_config": {"method": "magic"}})),
                "Invalid stats method: 'magic'. Must be one of: bayesian, frequentist".into()),
            (with(json!({"stats_config": {"baseline_variant_key": "zzz"}})),
                "Invalid baseline_variant_key: 'zzz'. Must be one of: control, test".into()),
            (with(json!({"filters": {"properties": [{"key": "a", "value": 1}]}})),
                "Experiments do not support global filter properties".into()),
        ];
        for (body, expected) in cases {
            let (status, answer) = post(&world, &uri, body.clone()).await;
            assert_eq!(detail(status, &answer, &name), expected, "{name} {body}");
        }
        // Field errors carry their attr.
        let (status, answer) = post(&world, &uri, json!({"feature_flag_key": "k"})).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{name}");
        assert_eq!(
            error_shape(&answer),
            ("required".into(), Some("name".into()))
        );
        let (_, answer) = post(&world, &uri, json!({"name": "n"})).await;
        assert_eq!(
            error_shape(&answer),
            ("required".into(), Some("feature_flag_key".into()))
        );
        let (_, answer) = post(
            &world,
            &uri,
            json!({"name": "n", "feature_flag_key": "k", "bogus": 1}),
        )
        .await;
        assert_eq!(error_shape(&answer).0, "invalid_input", "{name} {answer}");
        let (_, answer) = post(
            &world,
            &uri,
            json!({"name": "n", "feature_flag_key": "k", "type": "nope"}),
        )
        .await;
        assert_eq!(
            error_shape(&answer).1.as_deref(),
            Some("type"),
            "{name} {answer}"
        );
        let (_, answer) = post(
            &world,
            &uri,
            json!({"name": "n", "feature_flag_key": "bad key!"}),
        )
        .await;
        assert_eq!(
            error_shape(&answer).1.as_deref(),
            Some("feature_flag_key"),
            "{name} {answer}"
        );
        // Nothing was created by any of these.
        let (_, list) = world.get(&uri, Some(world.admin_key())).await;
        assert_eq!(list["count"], 0, "{name}");
        let (_, flags) = world.get(&world.flags_uri(), Some(world.admin_key())).await;
        assert_eq!(flags["count"], 0, "{name}: no flag without its experiment");
    }
}

#[tokio::test]
async fn patch_rules_soft_delete_restore_and_the_405() {
    for world in World::all().await {
        let name = world.name();
        let created = world
            .create_experiment(json!({"name": "Patchy", "feature_flag_key": "patchy"}))
            .await;
        let id = created["id"].clone();

        let (status, body) = patch(
            &world,
            &id,
            json!({"type": "web", "feature_flag_key": "other"}),
        )
        .await;
        assert_eq!(
            detail(status, &body, &name),
            "Can't update keys: feature_flag_key, type on Experiment"
        );
        // An unchanged key is fine; a draft's parameters rewrite its flag.
        let (status, body) = patch(
            &world,
            &id,
            json!({"feature_flag_key": "patchy", "description": "d",
            "parameters": {"feature_flag_variants": [
                {"key": "control", "split_percent": 20}, {"key": "test", "split_percent": 80}],
                "rollout_percentage": 40}}),
        )
        .await;
        assert_eq!(status, StatusCode::OK, "{name} {body}");
        assert_eq!(body["description"], "d", "{name}");
        assert_eq!(
            body["feature_flag"]["filters"]["multivariate"]["variants"][1]["rollout_percentage"],
            80.0,
            "{name}"
        );
        assert_eq!(
            body["feature_flag"]["filters"]["groups"][0]["rollout_percentage"], 40.0,
            "{name}"
        );
        assert_eq!(
            body["parameters"]["feature_flag_variants"][1]["split_percent"], 80,
            "{name}"
        );

        // Launch by PATCH: the flag goes active.
        let (status, body) =
            patch(&world, &id, json!({"start_date": "2025-01-01T00:00:00Z"})).await;
        assert_eq!(status, StatusCode::OK, "{name} {body}");
        assert_eq!(body["status"], "running", "{name}");
        assert_eq!(body["feature_flag"]["active"], true, "{name}");
        // Running: variants and holdout are fixed.
        let (status, body) = patch(
            &world,
            &id,
            json!({"parameters": {"feature_flag_variants": [
                {"key": "control", "split_percent": 50}, {"key": "other", "split_percent": 50}]}}),
        )
        .await;
        assert_eq!(
            detail(status, &body, &name),
            "Can't update feature_flag_variants on Experiment"
        );
        let (status, body) = patch(&world, &id, json!({"holdout_id": 3})).await;
        assert_eq!(
            detail(status, &body, &name),
            "Can't update holdout on running Experiment"
        );
        let (status, body) = patch(&world, &id, json!({"end_date": "2024-01-01T00:00:00Z"})).await;
        assert_eq!(
            detail(status, &body, &name),
            "End date must be after start date"
        );
        let metric = mean_metric("signup");
        let (status, body) = patch(
            &world,
            &id,
            json!({"metrics": [metric], "primary_metrics_ordered_uuids": []}),
        )
        .await;
        assert!(
            detail(status, &body, &name)
                .starts_with("primary_metrics_ordered_uuids is missing UUIDs: ['"),
            "{name} {body}"
        );

        // DELETE is refused with an empty body; soft delete is a PATCH.
        let (status, body) = world
            .send(
                Method::DELETE,
                &format!("{}{id}/", world.experiments_uri()),
                Some(world.admin_key()),
                None,
            )
            .await;
        assert_eq!(
            (status, body),
            (StatusCode::METHOD_NOT_ALLOWED, Value::Null),
            "{name}"
        );
        let (status, _) = patch(&world, &id, json!({"deleted": true})).await;
        assert_eq!(status, StatusCode::OK, "{name}");
        let one = format!("{}{id}/", world.experiments_uri());
        let (status, _) = world.get(&one, Some(world.admin_key())).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{name}");
        let (status, _) = patch(&world, &id, json!({"name": "ghost"})).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{name}: deleted is 404");
        let (status, _) = post(&world, &format!("{one}launch/"), json!({})).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{name}");
        let (_, list) = world
            .get(&world.experiments_uri(), Some(world.admin_key()))
            .await;
        assert_eq!(list["count"], 0, "{name}");
        // Restore works while the flag lives...
        let (status, body) = patch(&world, &id, json!({"deleted": false})).await;
        assert_eq!(status, StatusCode::OK, "{name} {body}");
        assert_eq!(body["deleted"], false, "{name}");
        // ...and not once the flag is deleted.
        patch(&world, &id, json!({"deleted": true})).await;
        let flag_uri = format!("{}{}/", world.flags_uri(), created["feature_flag"]["id"]);
        let (status, _) = world
            .send(
                Method::PATCH,
                &flag_uri,
                Some(world.admin_key()),
                Some(&json!({"deleted": true}).to_string()),
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{name}");
        let (status, body) = patch(&world, &id, json!({"deleted": false})).await;
        assert!(
            detail(status, &body, &name).starts_with(
                "Cannot restore experiment: the linked feature flag has been deleted."
            ),
            "{name}"
        );
    }
}

async fn get(world: &World, uri: &str, query: &str) -> (StatusCode, Value) {
    world
        .get(&format!("{uri}?{query}"), Some(world.admin_key()))
        .await
}

#[tokio::test]
async fn list_filters_order_and_pagination() {
    for world in World::all().await {
        let name = world.name();
        let uri = world.experiments_uri();
        let a = world
            .create_experiment(json!({"name": "Alpha", "feature_flag_key": "alpha"}))
            .await;
        let b = world
            .create_experiment(json!({"name": "Beta", "feature_flag_key": "beta",
                "start_date": "2025-01-01T00:00:00Z"}))
            .await;
        let c = world
            .create_experiment(json!({"name": "Gamma", "feature_flag_key": "gamma",
                "start_date": "2025-01-01T00:00:00Z", "end_date": "2025-02-01T00:00:00Z"}))
            .await;
        let ids = |body: &Value| -> Vec<i64> {
            body["results"]
                .as_array()
                .unwrap()
                .iter()
                .map(|e| e["id"].as_i64().unwrap())
                .collect()
        };
        let (status, all) = world.get(&uri, Some(world.admin_key())).await;
        assert_eq!(status, StatusCode::OK, "{name}");
        assert_eq!(all["count"], 3, "{name}");
        assert_eq!(
            ids(&all),
            [
                c["id"].as_i64().unwrap(),
                b["id"].as_i64().unwrap(),
                a["id"].as_i64().unwrap()
            ],
            "{name}: newest first"
        );
        assert!(
            all["results"][0].get("metrics").is_none(),
            "{name}: basic serializer"
        );
        assert_eq!(
            ids(&get(&world, &uri, "status=draft").await.1),
            [a["id"].as_i64().unwrap()],
            "{name}"
        );
        assert_eq!(
            ids(&get(&world, &uri, "status=running").await.1),
            [b["id"].as_i64().unwrap()],
            "{name}"
        );
        assert_eq!(
            ids(&get(&world, &uri, "status=complete").await.1),
            [c["id"].as_i64().unwrap()],
            "{name}"
        );
        assert_eq!(
            ids(&get(&world, &uri, "search=ETA").await.1),
            [b["id"].as_i64().unwrap()],
            "{name}"
        );
        assert_eq!(
            ids(&get(
                &world,
                &uri,
                &format!("feature_flag_id={}", a["feature_flag"]["id"])
            )
            .await
            .1),
            [a["id"].as_i64().unwrap()],
            "{name}"
        );
        assert_eq!(
            ids(&get(&world, &uri, "order=name").await.1),
            [
                a["id"].as_i64().unwrap(),
                b["id"].as_i64().unwrap(),
                c["id"].as_i64().unwrap()
            ],
            "{name}"
        );
        let (status, page) = get(&world, &uri, "order=name&limit=1&offset=1").await;
        assert_eq!(status, StatusCode::OK, "{name}");
        assert_eq!(page["count"], 3, "{name}");
        assert_eq!(ids(&page), [b["id"].as_i64().unwrap()], "{name}");
        assert!(
            page["next"].as_str().unwrap().contains("offset=2"),
            "{name}"
        );
        let (status, body) = get(&world, &uri, "order=bogus").await;
        assert_eq!(detail(status, &body, &name), "Invalid order field: 'bogus'");
        let (status, body) = get(&world, &uri, "feature_flag_id=abc").await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{name}");
        assert_eq!(error_shape(&body).1.as_deref(), Some("feature_flag_id"));
        // Archived ones are hidden unless asked for.
        let (status, _) = post(&world, &format!("{uri}{}/archive/", c["id"]), json!({})).await;
        assert_eq!(status, StatusCode::OK, "{name}");
        assert_eq!(get(&world, &uri, "").await.1["count"], 2, "{name}");
        assert_eq!(
            ids(&get(&world, &uri, "archived=true").await.1),
            [c["id"].as_i64().unwrap()],
            "{name}"
        );
    }
}

#[tokio::test]
async fn scopes_projects_and_activity() {
    for world in World::all().await {
        let name = world.name();
        let uri = world.experiments_uri();
        let read_only = world.key(&["experiment:read"], None).await;
        let body = json!({"name": "Scoped", "feature_flag_key": "scoped"}).to_string();
        let (status, _) = world
            .send(Method::POST, &uri, Some(&read_only), Some(&body))
            .await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{name}");
        let (status, _) = world.get(&uri, Some(&read_only)).await;
        assert_eq!(status, StatusCode::OK, "{name}");
        let (status, _) = world
            .get(
                &format!("/api/projects/{}/experiments/", world.foreign_project),
                Some(world.admin_key()),
            )
            .await;
        assert!(
            status == StatusCode::FORBIDDEN || status == StatusCode::NOT_FOUND,
            "{name} {status}"
        );
        let (status, _) = world.get(&uri, None).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED, "{name}");

        let created = world
            .create_experiment(json!({"name": "Logged", "feature_flag_key": "logged"}))
            .await;
        let id = &created["id"];
        patch(&world, id, json!({"name": "Logged 2"})).await;
        post(&world, &format!("{uri}{id}/launch/"), json!({})).await;
        let (status, log) = world
            .get(&format!("{uri}{id}/activity/"), Some(world.admin_key()))
            .await;
        assert_eq!(status, StatusCode::OK, "{name} {log}");
        let kinds: Vec<&str> = log["results"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["activity"].as_str().unwrap())
            .collect();
        assert_eq!(kinds, ["updated", "updated", "created"], "{name}");
        let rename = &log["results"][1]["detail"]["changes"][0];
        assert_eq!(
            (&rename["field"], &rename["before"], &rename["after"]),
            (&json!("name"), &json!("Logged"), &json!("Logged 2")),
            "{name}"
        );
        assert_eq!(log["results"][0]["scope"], "Experiment", "{name}");
        let (_, all) = world
            .get(&format!("{uri}activity/"), Some(world.admin_key()))
            .await;
        assert_eq!(all["total_count"], 3, "{name}");
        // The flag logs its own creation and activation.
        let (_, flag_log) = world
            .get(
                &format!(
                    "{}{}/activity/",
                    world.flags_uri(),
                    created["feature_flag"]["id"]
                ),
                Some(world.admin_key()),
            )
            .await;
        assert_eq!(flag_log["total_count"], 2, "{name} {flag_log}");
        let no_activity = world.key(&["experiment:read"], None).await;
        let (status, _) = world
            .get(&format!("{uri}activity/"), Some(&no_activity))
            .await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{name}");
    }
}
