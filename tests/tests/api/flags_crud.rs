//! Feature-flag CRUD on both backends: create, list with filters, retrieve, partial update with
//! optimistic versions, soft delete and key reuse, validation 400s, scopes, and the activity log.

use api_tests::{World, error_shape};
use axum::http::{Method, StatusCode};
use serde_json::{Value, json};

async fn patch(world: &World, id: i64, body: Value) -> (StatusCode, Value) {
    world
        .send(
            Method::PATCH,
            &format!("{}{id}/", world.flags_uri()),
            Some(world.admin_key()),
            Some(&body.to_string()),
        )
        .await
}

fn simple(key: &str, rollout: f64) -> Value {
    json!({"key": key, "name": format!("About {key}"),
        "filters": {"groups": [{"properties": [], "rollout_percentage": rollout}]}})
}

fn multivariate(key: &str) -> Value {
    json!({"key": key, "filters": {"groups": [{"properties": [], "rollout_percentage": 100}],
        "multivariate": {"variants": [
            {"key": "control", "rollout_percentage": 50}, {"key": "test", "rollout_percentage": 50}]},
        "payloads": {"test": {"color": "blue"}}}})
}

#[tokio::test]
async fn create_read_update_soft_delete_and_reuse_the_key() {
    for world in World::all().await {
        let name = world.name();
        let key = Some(world.admin_key());
        let created = world.create_flag(simple("beta-feature", 37.0)).await;
        let id = created["id"].as_i64().unwrap();
        assert_eq!(created["key"], "beta-feature", "{name}");
        assert_eq!(created["name"], "About beta-feature", "{name}");
        assert_eq!(created["active"], true, "{name}");
        assert_eq!(created["deleted"], false, "{name}");
        assert_eq!(created["version"], 1, "{name}");
        assert_eq!(created["is_simple_flag"], true, "{name}");
        assert_eq!(created["rollout_percentage"], 37.0, "{name}");
        assert_eq!(created["evaluation_runtime"], "all", "{name}");
        assert_eq!(
            created["created_by"]["email"], world.bootstrap.user.email,
            "{name}"
        );
        assert_eq!(
            created["filters"]["groups"][0]["rollout_percentage"], 37.0,
            "{name}"
        );
        // Ids are per project and count up.
        let second = world.create_flag(multivariate("experiment-flag")).await;
        assert_eq!(second["id"].as_i64(), Some(id + 1), "{name}");
        assert_eq!(second["is_simple_flag"], true, "{name}");
        // Payloads are kept as JSON text, as PostHog stores them.
        assert_eq!(
            second["filters"]["payloads"]["test"], "{\"color\":\"blue\"}",
            "{name}"
        );

        let one = format!("{}{id}/", world.flags_uri());
        let (status, read) = world.get(&one, key).await;
        assert_eq!(status, StatusCode::OK, "{name}");
        assert_eq!(read, created, "{name}");

        // A partial update keeps what it does not name and bumps the version.
        let (status, updated) =
            patch(&world, id, json!({"name": "Renamed", "active": false})).await;
        assert_eq!(status, StatusCode::OK, "{name} {updated}");
        assert_eq!(updated["name"], "Renamed", "{name}");
        assert_eq!(updated["active"], false, "{name}");
        assert_eq!(updated["key"], "beta-feature", "{name}");
        assert_eq!(updated["filters"], created["filters"], "{name}");
        assert_eq!(updated["version"], 2, "{name}");
        // PUT is a partial update too, and the web app's read-only fields are accepted.
        let mut echoed = updated.clone();
        echoed["name"] = json!("Via PUT");
        let (status, put) = world
            .send(Method::PUT, &one, key, Some(&echoed.to_string()))
            .await;
        assert_eq!(status, StatusCode::OK, "{name} {put}");
        assert_eq!(
            (put["name"].as_str(), put["version"].as_i64()),
            (Some("Via PUT"), Some(3))
        );

        // DELETE is refused: soft delete is a PATCH.
        let (status, body) = world.send(Method::DELETE, &one, key, None).await;
        assert_eq!(status, StatusCode::METHOD_NOT_ALLOWED, "{name}");
        assert_eq!(error_shape(&body).0, "method_not_allowed", "{name}");
        let (status, _) = world.get(&one, key).await;
        assert_eq!(status, StatusCode::OK, "{name}");

        // The key is taken while the flag lives ...
        let (status, body) = world
            .send(
                Method::POST,
                &world.flags_uri(),
                key,
                Some(&simple("beta-feature", 10.0).to_string()),
            )
            .await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{name}");
        assert_eq!(
            body,
            json!({"type": "validation_error", "code": "unique",
                "detail": "There is already a feature flag with this key.", "attr": "key"}),
            "{name}"
        );
        // ... and by renaming onto it.
        let (status, body) = patch(&world, id + 1, json!({"key": "beta-feature"})).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{name}");
        assert_eq!(
            error_shape(&body),
            ("unique".into(), Some("key".into())),
            "{name}"
        );

        let (status, deleted) = patch(&world, id, json!({"deleted": true})).await;
        assert_eq!(status, StatusCode::OK, "{name}");
        assert_eq!(deleted["deleted"], true, "{name}");
        let (status, body) = world.get(&one, key).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{name} {body}");
        let (status, _) = patch(&world, id, json!({"name": "ghost"})).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{name}");
        let (_, page) = world.get(&world.flags_uri(), key).await;
        assert_eq!(page["count"], 1, "{name} {page}");

        // The key is free again after the soft delete.
        let reused = world.create_flag(simple("beta-feature", 5.0)).await;
        assert_eq!(reused["id"].as_i64(), Some(id + 2), "{name}");
        for missing in ["999", "abc"] {
            let (status, body) = world
                .get(&format!("{}{missing}/", world.flags_uri()), key)
                .await;
            assert_eq!(status, StatusCode::NOT_FOUND, "{name} {missing}");
            error_shape(&body);
        }
    }
}

#[tokio::test]
async fn every_invalid_write_is_a_400_naming_its_field() {
    for world in World::all().await {
        let name = world.name();
        let dependency = world.create_flag(simple("base", 100.0)).await["id"]
            .as_i64()
            .unwrap();
        let group = json!({"properties": [], "rollout_percentage": 50});
        let with_property = |property: Value| json!({"key": "p", "filters": {"groups": [{"properties": [property]}]}});
        let cases: Vec<(Value, &str, &str)> = vec![
            (json!({"name": "no key"}), "required", "key"),
            (json!({"key": ""}), "blank", "key"),
            (json!({"key": "has space"}), "invalid_key", "key"),
            (json!({"key": "k".repeat(401)}), "max_length", "key"),
            (json!({"key": 5}), "invalid_input", "key"),
            (json!({"key": "x", "name": ["n"]}), "invalid_input", "name"),
            (
                json!({"key": "x", "colour": "red"}),
                "invalid_input",
                "colour",
            ),
            (
                json!({"key": "x", "filters": {"groups": [], "extra": 1}}),
                "invalid_input",
                "filters__extra",
            ),
            (
                json!({"key": "x", "filters": {"groups": []}}),
                "invalid_input",
                "filters",
            ),
            (
                json!({"key": "x", "filters": {"groups": [{"rollout_percentage": 150}]}}),
                "invalid_input",
                "filters",
            ),
            (
                json!({"key": "x", "filters": {"groups": [{"rollout_percentage": "half"}]}}),
                "invalid_input",
                "filters__groups[0]__rollout_percentage",
            ),
            (
                json!({"key": "x", "filters": {"groups": [group], "multivariate": {"variants": [
                    {"key": "a", "rollout_percentage": 60}, {"key": "b", "rollout_percentage": 30}]}}}),
                "invalid_input",
                "filters",
            ),
            (
                json!({"key": "x", "filters": {"groups": [group], "multivariate": {"variants": [
                    {"key": "", "rollout_percentage": 100}]}}}),
                "invalid_input",
                "filters",
            ),
            (
                json!({"key": "x", "filters": {"groups": [{"variant": "c"}], "multivariate": {"variants": [
                    {"key": "a", "rollout_percentage": 50}, {"key": "b", "rollout_percentage": 50}]}}}),
                "invalid_input",
                "filters",
            ),
            (
                json!({"key": "x", "filters": {"groups": [group], "payloads": {"a": "1"}}}),
                "invalid_input",
                "filters",
            ),
            (
                json!({"key": "x", "filters": {"groups": [group], "holdout": {"id": 1, "exclusion_percentage": -1}}}),
                "invalid_input",
                "filters",
            ),
            (
                with_property(json!({"key": "email", "value": "a", "operator": "looks_like"})),
                "invalid_input",
                "filters__groups[0]__properties[0]__operator",
            ),
            (
                with_property(json!({"key": "1", "type": "cohort", "value": 1, "operator": "in"})),
                "cohort_does_not_exist",
                "filters",
            ),
            (
                with_property(
                    json!({"key": "404", "type": "flag", "value": true, "operator": "flag_evaluates_to"}),
                ),
                "invalid_input",
                "filters",
            ),
            (
                with_property(json!({"key": "email", "value": "(", "operator": "regex"})),
                "invalid_input",
                "filters",
            ),
            (
                json!({"key": "x", "evaluation_runtime": "edge"}),
                "invalid_input",
                "evaluation_runtime",
            ),
            (
                json!({"key": "x", "active": "yes"}),
                "invalid_input",
                "active",
            ),
            (
                json!({"key": "x", "is_remote_configuration": true}),
                "invalid_input",
                "is_remote_configuration",
            ),
        ];
        for (body, code, attr) in cases {
            let (status, answer) = world
                .send(
                    Method::POST,
                    &world.flags_uri(),
                    Some(world.admin_key()),
                    Some(&body.to_string()),
                )
                .await;
            assert_eq!(status, StatusCode::BAD_REQUEST, "{name} {body} {answer}");
            let (got_code, got_attr) = error_shape(&answer);
            assert_eq!(
                (got_code.as_str(), got_attr.as_deref()),
                (code, Some(attr)),
                "{name} {body} {answer}"
            );
        }
        let (_, answer) = world
            .send(
                Method::POST,
                &world.flags_uri(),
                Some(world.admin_key()),
                Some(
                    &json!({"key": "x", "filters": {"groups": [group], "multivariate": {"variants": [
                    {"key": "a", "rollout_percentage": 60}, {"key": "b", "rollout_percentage": 30}]}}})
                    .to_string(),
                ))
            .await;
        assert_eq!(
            answer["detail"],
            "Invalid variant definitions: Variant rollout percentages must sum to 100.",
            "{name}"
        );

        // Flag dependencies: an existing flag is fine; a cycle back to the edited flag is not.
        let on = |id: i64| {
            json!({"groups": [{"properties": [
            {"key": id.to_string(), "type": "flag", "value": true, "operator": "flag_evaluates_to"}]}]})
        };
        let dependent = world
            .create_flag(json!({"key": "dependent", "filters": on(dependency)}))
            .await;
        let dependent_id = dependent["id"].as_i64().unwrap();
        let (status, answer) =
            patch(&world, dependency, json!({"filters": on(dependent_id)})).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{name} {answer}");
        assert_eq!(
            answer["detail"], "Circular dependency detected: base → dependent → base",
            "{name}"
        );
        // Nothing refused was stored.
        let (_, page) = world.get(&world.flags_uri(), Some(world.admin_key())).await;
        assert_eq!(page["count"], 2, "{name} {page}");
        let (_, base) = world
            .get(
                &format!("{}{dependency}/", world.flags_uri()),
                Some(world.admin_key()),
            )
            .await;
        assert_eq!(base["version"], 1, "{name}");
    }
}

#[tokio::test]
async fn scopes_and_projects_guard_every_route() {
    for world in World::all().await {
        let name = world.name();
        let id = world.create_flag(simple("guarded", 50.0)).await["id"]
            .as_i64()
            .unwrap();
        let uri = world.flags_uri();
        let one = format!("{uri}{id}/");
        let reader = world.key(&["feature_flag:read"], None).await;
        let (status, _) = world.get(&uri, Some(&reader)).await;
        assert_eq!(status, StatusCode::OK, "{name}");
        let (status, _) = world.get(&one, Some(&reader)).await;
        assert_eq!(status, StatusCode::OK, "{name}");
        let body = simple("other", 1.0).to_string();
        let (status, answer) = world
            .send(Method::POST, &uri, Some(&reader), Some(&body))
            .await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{name} {answer}");
        assert_eq!(
            answer["detail"], "API key missing required scope 'feature_flag:write'",
            "{name}"
        );
        let (status, _) = world
            .send(Method::PATCH, &one, Some(&reader), Some(r#"{"name": "x"}"#))
            .await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{name}");
        // The activity log has its own scope.
        let (status, _) = world.get(&format!("{uri}activity/"), Some(&reader)).await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{name}");
        let auditor = world.key(&["activity_log:read"], None).await;
        let (status, _) = world.get(&format!("{uri}activity/"), Some(&auditor)).await;
        assert_eq!(status, StatusCode::OK, "{name}");
        let (status, _) = world.get(&format!("{one}activity/"), Some(&auditor)).await;
        assert_eq!(status, StatusCode::OK, "{name}");
        let (status, _) = world.get(&uri, Some(&auditor)).await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{name}");

        let (status, _) = world.get(&uri, None).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED, "{name}");
        let foreign = format!("/api/projects/{}/feature_flags/", world.foreign_project);
        let (status, _) = world.get(&foreign, Some(world.admin_key())).await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{name}");
        let (status, _) = world
            .send(Method::POST, &foreign, Some(world.admin_key()), Some(&body))
            .await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{name}");
        // A member of the organization may use the project's flags.
        let (status, _) = world.get(&one, Some(&world.member_key)).await;
        assert_eq!(status, StatusCode::OK, "{name}");
    }
}

#[tokio::test]
async fn the_list_filters_and_pages() {
    for world in World::all().await {
        let name = world.name();
        let key = Some(world.admin_key());
        world.create_flag(simple("alpha-one", 10.0)).await;
        world.create_flag(multivariate("beta-two")).await;
        let third = world
            .create_flag(json!({"key": "gamma", "name": "Checkout ALPHA test",
            "filters": {"groups": [{"rollout_percentage": 1}]}}))
            .await;
        patch(
            &world,
            third["id"].as_i64().unwrap(),
            json!({"active": false}),
        )
        .await;
        let uri = world.flags_uri();
        let keys = |page: &Value| -> Vec<String> {
            page["results"]
                .as_array()
                .unwrap()
                .iter()
                .map(|flag| flag["key"].as_str().unwrap().to_owned())
                .collect()
        };
        let cases = [
            ("", vec!["gamma", "beta-two", "alpha-one"]),
            ("search=alpha", vec!["gamma", "alpha-one"]),
            ("search=BETA", vec!["beta-two"]),
            ("active=false", vec!["gamma"]),
            ("active=true", vec!["beta-two", "alpha-one"]),
            ("type=multivariant", vec!["beta-two"]),
            ("type=boolean&active=true", vec!["alpha-one"]),
            ("key=gamma", vec!["gamma"]),
            ("key=gam", vec![]),
        ];
        for (query, expected) in cases {
            let (status, page) = world.get(&format!("{uri}?{query}"), key).await;
            assert_eq!(status, StatusCode::OK, "{name} {query} {page}");
            assert_eq!(keys(&page), expected, "{name} {query}");
            assert_eq!(page["count"], expected.len(), "{name} {query}");
        }
        let (_, first) = world.get(&format!("{uri}?limit=2"), key).await;
        assert_eq!(keys(&first), ["gamma", "beta-two"], "{name}");
        assert_eq!(first["count"], 3, "{name}");
        let next = first["next"].as_str().unwrap();
        let path = next.strip_prefix("http://testserver").unwrap();
        let (_, second) = world.get(path, key).await;
        assert_eq!(keys(&second), ["alpha-one"], "{name}");
        assert_eq!(second["next"], Value::Null, "{name}");
        for bad in ["active=maybe", "type=experiment", "limit=0"] {
            let (status, body) = world.get(&format!("{uri}?{bad}"), key).await;
            assert_eq!(status, StatusCode::BAD_REQUEST, "{name} {bad}");
            error_shape(&body);
        }
    }
}

#[tokio::test]
async fn a_stale_version_is_a_409_and_concurrent_edits_never_lose_one() {
    for world in World::all().await {
        let name = world.name();
        let id = world.create_flag(simple("contended", 50.0)).await["id"]
            .as_i64()
            .unwrap();
        let (status, _) = patch(&world, id, json!({"name": "first", "version": 1})).await;
        assert_eq!(status, StatusCode::OK, "{name}");
        let (status, body) = patch(&world, id, json!({"name": "stale", "version": 1})).await;
        assert_eq!(status, StatusCode::CONFLICT, "{name} {body}");
        assert_eq!(error_shape(&body).0, "conflict", "{name}");
        assert_eq!(
            body["detail"],
            format!(
                "The feature flag was updated by {} since you started editing it. Please refresh and try again.",
                world.bootstrap.user.email
            ),
            "{name}"
        );

        // Eight editors who all read version 2: exactly one wins.
        let attempts = (0..8).map(|i| {
            patch(
                &world,
                id,
                json!({"name": format!("editor {i}"), "version": 2}),
            )
        });
        let answers = futures::future::join_all(attempts).await;
        let won: Vec<&Value> = answers
            .iter()
            .filter(|(status, _)| *status == StatusCode::OK)
            .map(|(_, body)| body)
            .collect();
        let conflicts = answers
            .iter()
            .filter(|(status, _)| *status == StatusCode::CONFLICT)
            .count();
        assert_eq!((won.len(), conflicts), (1, 7), "{name} {answers:?}");
        assert_eq!(won[0]["version"], 3, "{name}");

        // Without a version, concurrent edits are retried: every one lands.
        let attempts =
            (0..8).map(|i| patch(&world, id, json!({"evaluation_tags": [format!("t{i}")]})));
        let answers = futures::future::join_all(attempts).await;
        assert!(
            answers.iter().all(|(status, _)| *status == StatusCode::OK),
            "{name} {answers:?}"
        );
        let (_, read) = world
            .get(
                &format!("{}{id}/", world.flags_uri()),
                Some(world.admin_key()),
            )
            .await;
        assert_eq!(read["version"], 11, "{name}");
        let (_, log) = world
            .get(
                &format!("{}{id}/activity/?limit=100", world.flags_uri()),
                Some(world.admin_key()),
            )
            .await;
        assert_eq!(log["total_count"], 11, "{name}");
    }
}

#[tokio::test]
async fn every_change_is_in_the_activity_log_with_its_diff() {
    for world in World::all().await {
        let name = world.name();
        let key = Some(world.admin_key());
        let id = world.create_flag(simple("logged", 20.0)).await["id"]
            .as_i64()
            .unwrap();
        let other = world.create_flag(simple("other", 20.0)).await["id"]
            .as_i64()
            .unwrap();
        patch(
            &world,
            id,
            json!({"name": "Logged", "filters": {"groups": [{"rollout_percentage": 30}]}}),
        )
        .await;
        patch(&world, id, json!({"deleted": true})).await;

        let uri = format!("{}{id}/activity/", world.flags_uri());
        let (status, log) = world.get(&uri, key).await;
        assert_eq!(status, StatusCode::OK, "{name} {log}");
        assert_eq!(log["total_count"], 3, "{name}");
        let entries = log["results"].as_array().unwrap();
        let activities: Vec<&str> = entries
            .iter()
            .map(|e| e["activity"].as_str().unwrap())
            .collect();
        assert_eq!(activities, ["deleted", "updated", "created"], "{name}");
        for entry in entries {
            assert_eq!(entry["scope"], "FeatureFlag", "{name}");
            assert_eq!(entry["item_id"], id.to_string(), "{name}");
            assert_eq!(entry["detail"]["name"], "logged", "{name}");
            assert_eq!(
                entry["user"],
                json!({"first_name": world.bootstrap.user.first_name, "email": world.bootstrap.user.email}),
                "{name}"
            );
            assert!(
                entry["id"].is_string() && entry["created_at"].is_string(),
                "{name}"
            );
        }
        assert_eq!(entries[2]["detail"]["changes"], Value::Null, "{name}");
        let updated = entries[1]["detail"]["changes"].as_array().unwrap();
        let fields: Vec<&str> = updated
            .iter()
            .map(|c| c["field"].as_str().unwrap())
            .collect();
        assert_eq!(fields, ["filters", "name"], "{name} {updated:?}");
        assert_eq!(updated[1]["before"], "About logged", "{name}");
        assert_eq!(updated[1]["after"], "Logged", "{name}");
        assert_eq!(updated[1]["action"], "changed", "{name}");
        assert_eq!(updated[1]["type"], "FeatureFlag", "{name}");
        assert_eq!(
            updated[0]["after"]["groups"][0]["rollout_percentage"], 30.0,
            "{name}"
        );
        assert_eq!(
            entries[0]["detail"]["changes"],
            json!([{"type": "FeatureFlag", "action": "changed", "field": "deleted", "before": false, "after": true}]),
            "{name}"
        );

        // The whole resource's log holds both flags, paged by `page`/`limit`.
        let all = format!("{}activity/", world.flags_uri());
        let (_, first) = world.get(&format!("{all}?limit=2"), key).await;
        assert_eq!(first["total_count"], 4, "{name}");
        assert_eq!(first["results"].as_array().unwrap().len(), 2, "{name}");
        assert_eq!(first["previous"], Value::Null, "{name}");
        let next = first["next"].as_str().unwrap();
        assert!(
            next.ends_with("activity/?page=2&limit=2") || next.ends_with("activity?page=2&limit=2"),
            "{next}"
        );
        let (_, second) = world.get(&format!("{all}?limit=2&page=2"), key).await;
        let items: Vec<&str> = second["results"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["item_id"].as_str().unwrap())
            .collect();
        assert_eq!(items, [other.to_string(), id.to_string()], "{name}");
        assert_eq!(second["next"], Value::Null, "{name}");
        let (status, _) = world
            .get(&format!("{}999/activity/", world.flags_uri()), key)
            .await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{name}");
        let (status, _) = world.get(&format!("{all}?page=0"), key).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{name}");
    }
}
