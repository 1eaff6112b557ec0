//! Actions on both backends: create, list, retrieve, partial update, soft delete and restore,
//! the refused DELETE, every validation 400 with its `attr`, scopes, another organization's
//! project, the activity log, and nodes or SQL that name an action that does not exist.

use api_tests::{World, error_shape};
use axum::http::{Method, StatusCode};
use serde_json::{Value, json};

fn uri(world: &World) -> String {
    format!("/api/projects/{}/actions/", world.bootstrap.project.id)
}

async fn create(world: &World, body: Value) -> Value {
    let (status, answer) = world.send_json(Method::POST, &uri(world), body).await;
    assert_eq!(status, StatusCode::CREATED, "{} {answer}", world.name());
    answer
}

async fn patch(world: &World, id: i64, body: Value) -> (StatusCode, Value) {
    let one = format!("{}{id}/", uri(world));
    world.send_json(Method::PATCH, &one, body).await
}

fn signup() -> Value {
    json!({"name": "Signed up", "description": "Any sign-up", "tags": ["growth"],
        "steps": [
            {"event": "$pageview", "url": "/signup", "url_matching": "contains"},
            {"event": "$autocapture", "selector": "button.primary", "text": "Sign up",
             "text_matching": "exact", "href": "/welcome", "href_matching": "contains"},
            {"event": "signed_up", "properties": [
                {"key": "plan", "value": "pro", "operator": "exact", "type": "event"}]}]})
}

#[tokio::test]
async fn create_read_update_soft_delete_and_restore() {
    for world in World::all().await {
        let name = world.name();
        let key = Some(world.admin_key());
        let created = create(&world, signup()).await;
        let id = created["id"].as_i64().unwrap();
        assert_eq!(created["name"], "Signed up", "{name}");
        assert_eq!(created["description"], "Any sign-up", "{name}");
        assert_eq!(created["tags"], json!(["growth"]), "{name}");
        assert_eq!(created["deleted"], false, "{name}");
        assert_eq!(created["is_calculating"], false, "{name}");
        assert_eq!(created["post_to_slack"], false, "{name}");
        assert_eq!(created["team_id"], world.bootstrap.project.id, "{name}");
        assert_eq!(
            created["created_by"]["email"], world.bootstrap.user.email,
            "{name}"
        );
        assert!(created["last_calculated_at"].is_string(), "{name}");
        let steps = created["steps"].as_array().unwrap();
        assert_eq!(steps.len(), 3, "{name}");
        assert_eq!(steps[0]["url_matching"], "contains", "{name}");
        assert_eq!(steps[1]["selector"], "button.primary", "{name}");
        assert_eq!(
            steps[1]["selector_regex"], r"(^|;)button.*?\.primary[^;]*?($|;|:([^;^\s]*(;|$|\s)))",
            "{name}"
        );
        assert_eq!(steps[2]["properties"][0]["key"], "plan", "{name}");
        assert_eq!(steps[2]["url"], Value::Null, "{name}");
        // Ids are per project and count up.
        let second = create(
            &world,
            json!({"name": "Bought", "steps": [{"event": "purchase"}]}),
        )
        .await;
        assert_eq!(second["id"].as_i64(), Some(id + 1), "{name}");

        let one = format!("{}{id}/", uri(&world));
        let (status, read) = world.get(&one, key).await;
        assert_eq!((status, &read), (StatusCode::OK, &created), "{name}");
        let (status, list) = world.get(&uri(&world), key).await;
        assert_eq!(status, StatusCode::OK, "{name}");
        assert_eq!(list["count"], 2, "{name}");
        // PostHog's order: latest last_calculated_at first, then by name.
        let names: Vec<&str> = list["results"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["Bought", "Signed up"], "{name}");

        // A partial update keeps what it does not name; `steps` replaces every step. The web
        // app's read-only fields are accepted.
        let mut echoed = created.clone();
        echoed["name"] = json!("Signed up (v2)");
        echoed["steps"] = json!([{"event": "signed_up", "isNew": "x"}]);
        let (status, updated) = patch(&world, id, echoed).await;
        assert_eq!(status, StatusCode::OK, "{name} {updated}");
        assert_eq!(updated["name"], "Signed up (v2)", "{name}");
        assert_eq!(updated["description"], "Any sign-up", "{name}");
        assert_eq!(updated["steps"].as_array().unwrap().len(), 1, "{name}");
        let (status, put) = world
            .send_json(Method::PUT, &one, json!({"description": "via PUT"}))
            .await;
        assert_eq!(
            (status, &put["description"]),
            (StatusCode::OK, &json!("via PUT")),
            "{name}"
        );

        // DELETE is refused as PostHog's ForbidDestroyModel refuses it; PATCH soft-deletes.
        let (status, _) = world.send(Method::DELETE, &one, key, None).await;
        assert_eq!(status, StatusCode::METHOD_NOT_ALLOWED, "{name}");
        let (status, gone) = patch(&world, id, json!({"deleted": true})).await;
        assert_eq!(
            (status, &gone["deleted"]),
            (StatusCode::OK, &json!(true)),
            "{name}"
        );
        let (_, list) = world.get(&uri(&world), key).await;
        assert_eq!(list["count"], 1, "{name}");
        // Retrieved by id still, as PostHog answers it; its name is free again.
        let (status, read) = world.get(&one, key).await;
        assert_eq!(
            (status, &read["deleted"]),
            (StatusCode::OK, &json!(true)),
            "{name}"
        );
        create(&world, json!({"name": "Signed up (v2)"})).await;
        // Restoring it now collides with the new one.
        let (status, answer) = patch(&world, id, json!({"deleted": false})).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{name} {answer}");
        assert_eq!(
            error_shape(&answer),
            ("unique".into(), Some("name".into())),
            "{name}"
        );
        let (status, back) = patch(&world, id, json!({"deleted": false, "name": "Back"})).await;
        assert_eq!(
            (status, &back["deleted"]),
            (StatusCode::OK, &json!(false)),
            "{name}"
        );

        let (status, _) = world.get(&format!("{}999/", uri(&world)), key).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{name}");
        let (status, _) = world.get(&format!("{}abc/", uri(&world)), key).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{name}");
    }
}

#[tokio::test]
async fn every_invalid_field_is_a_400_naming_it() {
    for world in World::all().await {
        let name = world.name();
        create(&world, json!({"name": "Taken"})).await;
        let long = "x".repeat(401);
        let cases = [
            (json!({"steps": []}), "required", "name"),
            (json!({"name": " "}), "blank", "name"),
            (json!({"name": long}), "max_length", "name"),
            (json!({"name": "Taken"}), "unique", "name"),
            (json!({"name": "a", "colour": 1}), "invalid_input", "colour"),
            (json!({"name": "a", "steps": "x"}), "invalid_input", "steps"),
            (
                json!({"name": "a", "tags": [1]}),
                "invalid_input",
                "tags[0]",
            ),
            (
                json!({"name": "a", "post_to_slack": "yes"}),
                "invalid_input",
                "post_to_slack",
            ),
            (
                json!({"name": "a", "steps": [{"url": "x", "url_matching": "fuzzy"}]}),
                "invalid_input",
                "steps[0].url_matching",
            ),
            (
                json!({"name": "a", "steps": [{}, {"text": "x", "text_matching": "sometimes"}]}),
                "invalid_input",
                "steps[1].text_matching",
            ),
            (
                json!({"name": "a", "steps": [{"href": "(", "href_matching": "regex"}]}),
                "invalid_input",
                "steps[0].href",
            ),
            (
                json!({"name": "a", "steps": [{"url": "[", "url_matching": "regex"}]}),
                "invalid_input",
                "steps[0].url",
            ),
            (
                json!({"name": "a", "steps": [{"event": long}]}),
                "max_length",
                "steps[0].event",
            ),
            (
                json!({"name": "a", "steps": [{"tag_name": "a;b"}]}),
                "invalid_input",
                "steps[0].tag_name",
            ),
            (
                json!({"name": "a", "steps": [{"properties": [{"value": 1}]}]}),
                "invalid_input",
                "steps[0].properties[0]",
            ),
            (
                json!({"name": "a", "steps": [{"properties": "plan"}]}),
                "invalid_input",
                "steps[0].properties",
            ),
            (
                json!({"name": "a", "steps": [{"colour": "red"}]}),
                "invalid_input",
                "steps[0].colour",
            ),
        ];
        for (body, code, attr) in cases {
            let (status, answer) = world
                .send_json(Method::POST, &uri(&world), body.clone())
                .await;
            assert_eq!(status, StatusCode::BAD_REQUEST, "{name} {body} {answer}");
            let (got_code, got_attr) = error_shape(&answer);
            assert_eq!(
                (got_code.as_str(), got_attr.as_deref()),
                (code, Some(attr)),
                "{name} {body}"
            );
        }
        // An update is checked the same way, and a body must be an object.
        let (status, answer) = patch(&world, 1, json!({"steps": [{"url_matching": "x"}]})).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{name}");
        assert_eq!(
            error_shape(&answer).1.as_deref(),
            Some("steps[0].url_matching"),
            "{name}"
        );
        let (status, _) = world
            .send(
                Method::POST,
                &uri(&world),
                Some(world.admin_key()),
                Some("[1]"),
            )
            .await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{name}");
    }
}

#[tokio::test]
async fn scopes_and_projects_guard_every_route() {
    for world in World::all().await {
        let name = world.name();
        let id = create(&world, json!({"name": "Guarded"})).await["id"]
            .as_i64()
            .unwrap();
        let one = format!("{}{id}/", uri(&world));
        let reader = world.key(&["action:read"], None).await;
        let (status, _) = world.get(&uri(&world), Some(&reader)).await;
        assert_eq!(status, StatusCode::OK, "{name}");
        let (status, _) = world.get(&one, Some(&reader)).await;
        assert_eq!(status, StatusCode::OK, "{name}");
        let body = json!({"name": "x"}).to_string();
        let (status, _) = world
            .send(Method::POST, &uri(&world), Some(&reader), Some(&body))
            .await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{name}");
        let (status, _) = world
            .send(Method::PATCH, &one, Some(&reader), Some(&body))
            .await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{name}");
        let writer = world.key(&["action:write"], None).await;
        let (status, _) = world
            .send(Method::PATCH, &one, Some(&writer), Some(&body))
            .await;
        assert_eq!(status, StatusCode::OK, "{name}");
        let other = world.key(&["feature_flag:read"], None).await;
        let (status, _) = world.get(&uri(&world), Some(&other)).await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{name}");
        let (status, _) = world.get(&uri(&world), None).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED, "{name}");
        // The activity log has its own scope.
        let (status, _) = world
            .get(&format!("{uri}activity/", uri = uri(&world)), Some(&reader))
            .await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{name}");
        let auditor = world.key(&["activity_log:read"], None).await;
        let (status, _) = world.get(&format!("{one}activity/"), Some(&auditor)).await;
        assert_eq!(status, StatusCode::OK, "{name}");
        // Another organization's project: 403 on every route, even for the admin key.
        let foreign = format!("/api/projects/{}/actions/", world.foreign_project);
        let (status, _) = world.get(&foreign, Some(world.admin_key())).await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{name}");
        let (status, _) = world
            .send(Method::POST, &foreign, Some(world.admin_key()), Some(&body))
            .await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{name}");
        let (status, _) = world
            .get(&format!("{foreign}{id}/"), Some(world.admin_key()))
            .await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{name}");
    }
}

#[tokio::test]
async fn every_change_is_in_the_activity_log() {
    for world in World::all().await {
        let name = world.name();
        let key = Some(world.admin_key());
        let id = create(&world, signup()).await["id"].as_i64().unwrap();
        patch(&world, id, json!({"name": "Renamed", "steps": []})).await;
        patch(&world, id, json!({"deleted": true})).await;
        patch(&world, id, json!({"deleted": false})).await;
        let (status, log) = world
            .get(&format!("{}{id}/activity/", uri(&world)), key)
            .await;
        assert_eq!(status, StatusCode::OK, "{name} {log}");
        let entries = log["results"].as_array().unwrap();
        let activities: Vec<&str> = entries
            .iter()
            .map(|e| e["activity"].as_str().unwrap())
            .collect();
        assert_eq!(
            activities,
            ["restored", "deleted", "updated", "created"],
            "{name}"
        );
        for entry in entries {
            assert_eq!(entry["scope"], "Action", "{name}");
            assert_eq!(entry["item_id"], id.to_string(), "{name}");
        }
        let changes = entries[2]["detail"]["changes"].as_array().unwrap();
        let mut fields: Vec<&str> = changes
            .iter()
            .map(|c| c["field"].as_str().unwrap())
            .collect();
        fields.sort();
        assert_eq!(fields, ["name", "steps"], "{name}");
        let (status, all) = world.get(&format!("{}activity/", uri(&world)), key).await;
        assert_eq!(status, StatusCode::OK, "{name}");
        assert_eq!(all["results"].as_array().unwrap().len(), 4, "{name}");
    }
}

#[tokio::test]
async fn queries_naming_an_unknown_action_are_400s() {
    for world in World::all().await {
        let name = world.name();
        let query = format!("/api/projects/{}/query/", world.bootstrap.project.id);
        let known = create(&world, json!({"name": "Known", "steps": [{"event": "x"}]})).await;
        let known = known["id"].as_i64().unwrap();
        let trends = |id: i64| {
            json!({"query": {"kind": "TrendsQuery",
            "series": [{"kind": "EventsNode", "event": "a"}, {"kind": "ActionsNode", "id": id}]}})
        };
        let (status, answer) = world
            .send_json(Method::POST, &query, trends(known + 100))
            .await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{name} {answer}");
        assert_eq!(
            error_shape(&answer).1.as_deref(),
            Some("query.series[1].id"),
            "{name}"
        );
        let funnel = json!({"query": {"kind": "FunnelsQuery", "series": [
            {"kind": "ActionsNode", "id": known}, {"kind": "ActionsNode", "id": -1}]}});
        let (status, answer) = world.send_json(Method::POST, &query, funnel).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{name} {answer}");
        assert_eq!(
            error_shape(&answer).1.as_deref(),
            Some("query.series[1].id"),
            "{name}"
        );
        let sql = json!({"query": {"kind": "HogQLQuery",
            "query": "select count() from events where matchesAction('Nope')"}});
        let (status, answer) = world.send_json(Method::POST, &query, sql).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{name} {answer}");
        assert!(
            answer["detail"]
                .as_str()
                .unwrap()
                .contains("Could not find an action with the name 'Nope'"),
            "{name} {answer}"
        );
    }
}

#[tokio::test]
async fn experiment_metrics_must_name_an_action_of_the_project() {
    for world in World::all().await {
        let name = world.name();
        let action = create(&world, signup()).await;
        let metric = |id: Value| {
            json!({"kind": "ExperimentMetric", "metric_type": "mean",
                "source": {"kind": "ActionsNode", "id": id}})
        };
        let created = world
            .create_experiment(
                json!({"name": "With an action", "feature_flag_key": "with-action",
                "metrics": [metric(action["id"].clone())]}),
            )
            .await;
        assert_eq!(
            created["metrics"][0]["source"]["id"], action["id"],
            "{name}"
        );

        let experiments = world.experiments_uri();
        let (status, body) = world
            .send_json(
                Method::POST,
                &experiments,
                json!({"name": "Unknown action", "feature_flag_key": "unknown-action",
                    "metrics_secondary": [metric(json!(987_654))]}),
            )
            .await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{name} {body}");
        assert_eq!(
            error_shape(&body).1.as_deref(),
            Some("metrics_secondary[0].source.id"),
            "{name}"
        );
        let (status, body) = world
            .send_json(
                Method::PATCH,
                &format!("{experiments}{}/", created["id"]),
                json!({"metrics": [metric(json!("signup"))]}),
            )
            .await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{name} {body}");
        assert_eq!(
            error_shape(&body).1.as_deref(),
            Some("metrics[0].source.id"),
            "{name}"
        );
    }
}
