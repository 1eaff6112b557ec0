//! The experiment lifecycle on both backends (reference 2.5, 2.7): launch, pause, resume, end,
//! ship_variant (the flag rewritten and `/flags` answering the shipped variant), reset, archive,
//! duplicate, eligible flags, velocity stats, and the refused exposure cohort.

use api_tests::{World, error_shape, respond};
use axum::body::Body;
use axum::http::{Method, Request, StatusCode};
use serde_json::{Value, json};

async fn action(world: &World, id: &Value, name: &str, body: Value) -> (StatusCode, Value) {
    world
        .send(
            Method::POST,
            &format!("{}{id}/{name}/", world.experiments_uri()),
            Some(world.admin_key()),
            Some(&body.to_string()),
        )
        .await
}

/// The action must fail with exactly `expected`.
async fn refused(world: &World, id: &Value, name: &str, body: Value, expected: &str) {
    let (status, answer) = action(world, id, name, body).await;
    assert_eq!(
        status,
        StatusCode::BAD_REQUEST,
        "{} {name} {answer}",
        world.name()
    );
    error_shape(&answer);
    assert_eq!(answer["detail"], expected, "{} {name}", world.name());
}

async fn ok(world: &World, id: &Value, name: &str, body: Value) -> Value {
    let (status, answer) = action(world, id, name, body).await;
    assert_eq!(status, StatusCode::OK, "{} {name} {answer}", world.name());
    answer
}

/// The variant `/flags` gives `distinct_id` for `key` (null when the flag is off).
async fn served_variant(world: &World, key: &str, distinct_id: &str) -> Value {
    let body = json!({"api_key": world.bootstrap.project.api_token, "distinct_id": distinct_id});
    let request = Request::post("/flags/?v=4")
        .header("content-type", "application/json")
        .body(Body::from(body.to_string()))
        .unwrap();
    let (status, answer) = respond(world.app.clone(), request).await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    answer["flags"][key]["variant"].clone()
}

#[tokio::test]
async fn launch_pause_resume_end_reset_archive() {
    for world in World::all().await {
        let name = world.name();
        let created = world
            .create_experiment(json!({"name": "Life", "feature_flag_key": "life"}))
            .await;
        let id = &created["id"];
        refused(
            &world,
            id,
            "pause",
            json!({}),
            "Experiment has not been launched yet.",
        )
        .await;
        refused(
            &world,
            id,
            "reset",
            json!({}),
            "Experiment is already in draft state.",
        )
        .await;
        refused(
            &world,
            id,
            "archive",
            json!({}),
            "Experiment must be ended before it can be archived.",
        )
        .await;
        refused(
            &world,
            id,
            "unarchive",
            json!({}),
            "Experiment is not archived.",
        )
        .await;
        refused(
            &world,
            id,
            "ship_variant",
            json!({"variant_key": "test"}),
            "Experiment has not been launched yet.",
        )
        .await;

        let launched = ok(&world, id, "launch", json!({})).await;
        assert_eq!(launched["status"], "running", "{name}");
        assert!(launched["start_date"].is_string(), "{name}");
        assert_eq!(launched["feature_flag"]["active"], true, "{name}");
        refused(
            &world,
            id,
            "launch",
            json!({}),
            "Experiment has already been launched.",
        )
        .await;
        refused(&world, id, "resume", json!({}), "Experiment is not paused.").await;

        let paused = ok(&world, id, "pause", json!({})).await;
        assert_eq!(paused["status"], "paused", "{name}");
        assert_eq!(paused["feature_flag"]["active"], false, "{name}");
        refused(
            &world,
            id,
            "pause",
            json!({}),
            "Experiment is already paused.",
        )
        .await;
        let resumed = ok(&world, id, "resume", json!({})).await;
        assert_eq!(resumed["status"], "running", "{name}");

        let ended = ok(
            &world,
            id,
            "end",
            json!({"conclusion": "won", "conclusion_comment": "clear"}),
        )
        .await;
        assert_eq!(ended["status"], "stopped", "{name}");
        assert_eq!(ended["conclusion"], "won", "{name}");
        assert_eq!(
            ended["feature_flag"]["active"], true,
            "{name}: end leaves the flag"
        );
        refused(
            &world,
            id,
            "end",
            json!({}),
            "Experiment has already ended.",
        )
        .await;
        refused(
            &world,
            id,
            "pause",
            json!({}),
            "Experiment has already ended.",
        )
        .await;

        let archived = ok(&world, id, "archive", json!({"disable_feature_flag": true})).await;
        assert_eq!(archived["archived"], true, "{name}");
        assert_eq!(archived["feature_flag"]["active"], false, "{name}");
        refused(
            &world,
            id,
            "archive",
            json!({}),
            "Experiment is already archived.",
        )
        .await;
        let unarchived = ok(&world, id, "unarchive", json!({})).await;
        assert_eq!(unarchived["archived"], false, "{name}");

        let reset = ok(&world, id, "reset", json!({})).await;
        assert_eq!(reset["status"], "draft", "{name}");
        assert_eq!(reset["start_date"], Value::Null, "{name}");
        assert_eq!(reset["conclusion"], Value::Null, "{name}");

        // Every change is in the log, newest first.
        let (_, log) = world
            .get(
                &format!("{}{id}/activity/?limit=50", world.experiments_uri()),
                Some(world.admin_key()),
            )
            .await;
        assert_eq!(log["total_count"], 8, "{name} {log}");

        // Unknown ids and ids of no experiment.
        let (status, _) = action(&world, &json!(999), "launch", json!({})).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{name}");
        let (status, _) = action(&world, &json!("abc"), "launch", json!({})).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{name}");
    }
}

#[tokio::test]
async fn ship_variant_rewrites_the_flag_that_flags_then_serves() {
    for world in World::all().await {
        let name = world.name();
        let created = world
            .create_experiment(json!({"name": "Ship", "feature_flag_key": "ship-it",
                "parameters": {"feature_flag_variants": [
                    {"key": "control", "split_percent": 50}, {"key": "test", "split_percent": 50}],
                    "feature_flag_payloads": {"test": "{\"x\": 1}"}}}))
            .await;
        let id = &created["id"];
        ok(&world, id, "launch", json!({})).await;
        refused(
            &world,
            id,
            "ship_variant",
            json!({"variant_key": "nope"}),
            "Variant 'nope' not found on feature flag.",
        )
        .await;
        let shipped = ok(
            &world,
            id,
            "ship_variant",
            json!({"variant_key": "test", "release_to_everyone": true, "conclusion": "won"}),
        )
        .await;
        assert_eq!(shipped["status"], "stopped", "{name}");
        assert_eq!(shipped["conclusion"], "won", "{name}");
        let filters = &shipped["feature_flag"]["filters"];
        assert_eq!(
            filters["multivariate"]["variants"],
            json!([{"key": "control", "rollout_percentage": 0.0}, {"key": "test", "rollout_percentage": 100.0}]),
            "{name}"
        );
        assert_eq!(
            filters["groups"][0]["description"],
            "Added automatically when the experiment was ended to keep only one variant.",
            "{name}"
        );
        assert_eq!(
            filters["payloads"]["test"], "{\"x\": 1}",
            "{name}: payloads kept"
        );
        for user in ["user-1", "user-2", "someone-else"] {
            assert_eq!(
                served_variant(&world, "ship-it", user).await,
                "test",
                "{name} {user}"
            );
        }
    }
}

#[tokio::test]
async fn duplicate_eligible_flags_stats_and_exposure_cohort() {
    for world in World::all().await {
        let name = world.name();
        let uri = world.experiments_uri();
        let created = world
            .create_experiment(json!({"name": "Orig", "feature_flag_key": "orig",
                "metrics": [{"kind": "ExperimentMetric", "metric_type": "mean",
                    "source": {"kind": "EventsNode", "event": "buy"}}]}))
            .await;
        let id = &created["id"];
        let (status, copy) = action(&world, id, "duplicate", json!({})).await;
        assert_eq!(status, StatusCode::CREATED, "{name} {copy}");
        assert_eq!(copy["name"], "Orig (Copy)", "{name}");
        assert_eq!(
            copy["feature_flag"]["id"], created["feature_flag"]["id"],
            "{name}: flag shared"
        );
        assert_ne!(
            copy["metrics"][0]["uuid"], created["metrics"][0]["uuid"],
            "{name}"
        );
        assert_eq!(
            copy["primary_metrics_ordered_uuids"],
            json!([copy["metrics"][0]["uuid"]]),
            "{name}"
        );
        let (_, again) = action(&world, id, "duplicate", json!({})).await;
        assert_eq!(again["name"], "Orig (Copy) 1", "{name}");
        let (status, other) = action(
            &world,
            id,
            "duplicate",
            json!({"feature_flag_key": "orig-2", "name": "Own"}),
        )
        .await;
        assert_eq!(status, StatusCode::CREATED, "{name} {other}");
        assert_eq!(other["feature_flag"]["key"], "orig-2", "{name}");
        assert_eq!(other["status"], "draft", "{name}");

        // Eligible: multivariate, >= 2 variants, control first.
        world.create_flag(json!({"key": "control-second", "filters": {"groups": [{"rollout_percentage": 100}],
            "multivariate": {"variants": [{"key": "test", "rollout_percentage": 50}, {"key": "control", "rollout_percentage": 50}]}}})).await;
        world
            .create_flag(
                json!({"key": "plain", "filters": {"groups": [{"rollout_percentage": 100}]}}),
            )
            .await;
        let (status, eligible) = world
            .get(
                &format!("{uri}eligible_feature_flags/?order=key"),
                Some(world.admin_key()),
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{name} {eligible}");
        let keys: Vec<&str> = eligible["results"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f["key"].as_str().unwrap())
            .collect();
        assert_eq!(keys, ["orig", "orig-2"], "{name}");
        assert_eq!(eligible["count"], 2, "{name}");
        let (status, body) = world
            .get(
                &format!("{uri}eligible_feature_flags/?limit=x"),
                Some(world.admin_key()),
            )
            .await;
        assert_eq!(
            (status, body),
            (
                StatusCode::BAD_REQUEST,
                json!({"error": "Invalid limit or offset"})
            ),
            "{name}"
        );

        // Velocity: one launched now, one of them active.
        action(&world, id, "launch", json!({})).await;
        let (status, stats) = world
            .get(&format!("{uri}stats/"), Some(world.admin_key()))
            .await;
        assert_eq!(status, StatusCode::OK, "{name}");
        assert_eq!(
            stats,
            json!({"launched_last_30d": 1, "launched_previous_30d": 0,
            "percent_change": 100.0, "active_experiments": 1, "completed_last_30d": 0}),
            "{name}"
        );

        let (status, body) = action(
            &world,
            id,
            "create_exposure_cohort_for_experiment",
            json!({}),
        )
        .await;
        // The exposure cohort itself is covered by `cohorts_api`.
        assert_eq!(status, StatusCode::CREATED, "{name} {body}");
        assert_eq!(body["cohort"]["experiment_set"], json!([id]), "{name}");
    }
}

#[tokio::test]
async fn copy_to_project_makes_a_draft_on_the_target_projects_flag() {
    for world in World::all().await {
        let name = world.name();
        let store = world.backend.state.store.clone();
        let target = common::provisioning::create_project(
            store.as_ref(),
            world.bootstrap.organization.id,
            "Target",
            "UTC",
        )
        .await
        .unwrap();
        let created = world
            .create_experiment(json!({"name": "Portable", "feature_flag_key": "portable",
                "start_date": "2025-01-01T00:00:00Z",
                "metrics": [{"kind": "ExperimentMetric", "metric_type": "mean",
                    "source": {"kind": "EventsNode", "event": "buy"}}]}))
            .await;
        let id = &created["id"];
        let (status, copy) = action(
            &world,
            id,
            "copy_to_project",
            json!({"target_team_id": target.id}),
        )
        .await;
        assert_eq!(status, StatusCode::CREATED, "{name} {copy}");
        assert_eq!(copy["name"], "Portable", "{name}");
        assert_eq!(copy["status"], "draft", "{name}");
        assert_eq!(copy["feature_flag"]["key"], "portable", "{name}");
        assert_eq!(copy["feature_flag"]["team_id"], target.id, "{name}");
        assert_ne!(
            copy["metrics"][0]["uuid"], created["metrics"][0]["uuid"],
            "{name}"
        );
        let (status, read) = world
            .get(
                &format!("/api/projects/{}/experiments/{}/", target.id, copy["id"]),
                Some(world.admin_key()),
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{name} {read}");

        let (status, body) = action(
            &world,
            id,
            "copy_to_project",
            json!({"target_team_id": 987_654}),
        )
        .await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{name}");
        assert_eq!(body["detail"], "Target team not found.", "{name}");
        let (status, _) = action(
            &world,
            id,
            "copy_to_project",
            json!({"target_team_id": world.foreign_project}),
        )
        .await;
        assert!(
            status == StatusCode::NOT_FOUND || status == StatusCode::FORBIDDEN,
            "{name} {status}"
        );
    }
}

/// The keys of the eligible flags `query` selects (ordered by key), and the count.
async fn eligible_keys(world: &World, query: &str) -> Vec<String> {
    let uri = format!(
        "{}eligible_feature_flags/?order=key&{query}",
        world.experiments_uri()
    );
    let (status, eligible) = world.get(&uri, Some(world.admin_key())).await;
    assert_eq!(
        status,
        StatusCode::OK,
        "{} {query} {eligible}",
        world.name()
    );
    let keys: Vec<String> = eligible["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|flag| flag["key"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(eligible["count"], keys.len(), "{} {query}", world.name());
    keys
}

/// `created_by_id` is a user's integer id (the `id` of `created_by` and of the user payload; a
/// uuid is taken too), `has_evaluation_tags` keeps flags with or without evaluation tags as
/// PostHog reads it; the experiments list takes the same integer id.
#[tokio::test]
async fn eligible_flags_by_creator_id_and_evaluation_tags() {
    for world in World::all().await {
        let name = world.name();
        let flag = |key: &str, tags: Value| {
            json!({"key": key, "evaluation_tags": tags, "filters": {
                "groups": [{"rollout_percentage": 100}],
                "multivariate": {"variants": [{"key": "control", "rollout_percentage": 50},
                    {"key": "test", "rollout_percentage": 50}]}}})
        };
        let admin_tagged = world
            .create_flag(flag("admin-tagged", json!(["app"])))
            .await;
        world.create_flag(flag("admin-plain", json!([]))).await;
        let (status, member_tagged) = world
            .send(
                Method::POST,
                &world.flags_uri(),
                Some(&world.member_key),
                Some(&flag("member-tagged", json!(["web"])).to_string()),
            )
            .await;
        assert_eq!(status, StatusCode::CREATED, "{name} {member_tagged}");

        // The integer ids users are shown with, the same in `created_by` and `@me`.
        let admin_id = admin_tagged["created_by"]["id"].as_i64().unwrap();
        let member_id = member_tagged["created_by"]["id"].as_i64().unwrap();
        assert_ne!(admin_id, member_id, "{name}");
        assert!(admin_id > 0 && admin_id < 1 << 53, "{name} {admin_id}");
        let (status, me) = world.get("/api/users/@me/", Some(&world.member_key)).await;
        assert_eq!(status, StatusCode::OK, "{name} {me}");
        assert_eq!(me["id"], member_id, "{name}");
        assert_eq!(me["uuid"], world.member.uuid.to_string(), "{name}");

        assert_eq!(
            eligible_keys(&world, "").await,
            ["admin-plain", "admin-tagged", "member-tagged"],
            "{name}"
        );
        assert_eq!(
            eligible_keys(&world, &format!("created_by_id={member_id}")).await,
            ["member-tagged"],
            "{name}"
        );
        assert_eq!(
            eligible_keys(&world, &format!("created_by_id={admin_id}")).await,
            ["admin-plain", "admin-tagged"],
            "{name}"
        );
        assert_eq!(
            eligible_keys(&world, &format!("created_by_id={}", world.member.uuid)).await,
            ["member-tagged"],
            "{name}: a uuid names the user too"
        );
        let nobody = if admin_id == 1 || member_id == 1 {
            2
        } else {
            1
        };
        assert!(
            eligible_keys(&world, &format!("created_by_id={nobody}"))
                .await
                .is_empty(),
            "{name}"
        );
        assert_eq!(
            eligible_keys(&world, "created_by_id=").await.len(),
            3,
            "{name}: empty is no filter"
        );
        for truthy in ["true", "True", "1", "yes"] {
            assert_eq!(
                eligible_keys(&world, &format!("has_evaluation_tags={truthy}")).await,
                ["admin-tagged", "member-tagged"],
                "{name} {truthy}"
            );
        }
        for falsy in ["false", "0", "no"] {
            assert_eq!(
                eligible_keys(&world, &format!("has_evaluation_tags={falsy}")).await,
                ["admin-plain"],
                "{name} {falsy}"
            );
        }
        assert_eq!(
            eligible_keys(
                &world,
                &format!("created_by_id={admin_id}&has_evaluation_tags=true")
            )
            .await,
            ["admin-tagged"],
            "{name}"
        );
        let (status, body) = world
            .get(
                &format!(
                    "{}eligible_feature_flags/?created_by_id=someone",
                    world.experiments_uri()
                ),
                Some(world.admin_key()),
            )
            .await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{name} {body}");
        let (_, attr) = error_shape(&body);
        assert_eq!(attr.as_deref(), Some("created_by_id"), "{name}");

        // The experiments list takes the same integer id.
        world
            .create_experiment(json!({"name": "Mine", "feature_flag_key": "mine"}))
            .await;
        let list = |query: String| {
            let world = &world;
            async move {
                let (status, body) = world
                    .get(
                        &format!("{}?{query}", world.experiments_uri()),
                        Some(world.admin_key()),
                    )
                    .await;
                assert_eq!(status, StatusCode::OK, "{} {body}", world.name());
                body["count"].as_u64().unwrap()
            }
        };
        assert_eq!(list(format!("created_by_id={admin_id}")).await, 1, "{name}");
        assert_eq!(
            list(format!("created_by_id={member_id}")).await,
            0,
            "{name}"
        );
        let (status, _) = world
            .get(
                &format!("{}?created_by_id=someone", world.experiments_uri()),
                Some(world.admin_key()),
            )
            .await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{name}");
    }
}
