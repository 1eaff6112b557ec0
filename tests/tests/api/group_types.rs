//! A project's group types on both backends: the committer records them from ingested events
//! (`$groups` keys, `$groupidentify`'s `$group_type`) in order of first appearance, at most
//! five; `groups_types` lists them; group-aggregated flags and the local-evaluation
//! definitions use them.

use api_tests::{World, error_shape};
use axum::http::{Method, StatusCode};
use serde_json::{Value, json};

fn event(name: &str, distinct_id: &str, properties: Value) -> Value {
    json!({"event": name, "distinct_id": distinct_id, "properties": properties,
        "timestamp": "2026-11-22T10:00:00Z"})
}

fn groups_uri(world: &World) -> String {
    format!("/api/projects/{}/groups_types/", world.bootstrap.project.id)
}

/// `(index, name)` as the route lists them.
async fn listed(world: &World) -> Vec<(i64, String)> {
    let (status, answer) = world.get(&groups_uri(world), Some(world.admin_key())).await;
    assert_eq!(status, StatusCode::OK, "{} {answer}", world.name());
    answer
        .as_array()
        .unwrap()
        .iter()
        .map(|row| {
            assert_eq!(row["name_singular"], Value::Null);
            assert_eq!(row["name_plural"], Value::Null);
            (
                row["group_type_index"].as_i64().unwrap(),
                row["group_type"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

fn pairs(names: &[(i64, &str)]) -> Vec<(i64, String)> {
    names
        .iter()
        .map(|(index, name)| (*index, (*name).to_owned()))
        .collect()
}

#[tokio::test]
async fn committed_events_record_group_types_in_first_seen_order() {
    for world in World::all().await {
        let name = world.name();
        assert!(
            listed(&world).await.is_empty(),
            "{name}: none before any event"
        );

        world
            .capture(vec![
                event("$pageview", "u1", json!({"$current_url": "/"})),
                event("$pageview", "u1", json!({"$groups": {"company": "acme"}})),
                event(
                    "$groupidentify",
                    "u1",
                    json!({"$group_type": "project", "$group_key": "p1",
                        "$group_set": {"name": "P"}}),
                ),
                // Bad values are ignored, and do not stop the commit.
                event("$pageview", "u2", json!({"$groups": "company"})),
                event("$groupidentify", "u2", json!({"$group_type": 7})),
            ])
            .await;
        let report = lake::commit_team(&world.backend.state, world.bootstrap.project.id)
            .await
            .unwrap();
        assert_eq!(report.events, 5, "{name}");
        assert_eq!(
            listed(&world).await,
            pairs(&[(0, "company"), (1, "project")]),
            "{name}"
        );

        // Later batches add after them; a sixth type is ignored.
        world
            .capture(vec![event(
                "$pageview",
                "u3",
                json!({"$groups": {"company": "acme", "team": "t"}}),
            )])
            .await;
        lake::commit_all(&world.backend.state).await.unwrap();
        world
            .capture(vec![
                event("$pageview", "u3", json!({"$groups": {"org": "o"}})),
                event("$pageview", "u3", json!({"$groups": {"unit": "u"}})),
                event("$pageview", "u3", json!({"$groups": {"sixth": "s"}})),
            ])
            .await;
        let report = lake::commit_all(&world.backend.state).await.unwrap();
        assert_eq!(report.iter().map(|r| r.events).sum::<usize>(), 3, "{name}");
        let expected = pairs(&[
            (0, "company"),
            (1, "project"),
            (2, "team"),
            (3, "org"),
            (4, "unit"),
        ]);
        assert_eq!(listed(&world).await, expected, "{name}");
        // Other projects keep their own (empty) mapping.
        let (status, answer) = world
            .get(
                &format!("/api/projects/{}/groups_types/", world.foreign_project),
                Some(world.admin_key()),
            )
            .await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{name} {answer}");
    }
}

#[tokio::test]
async fn the_route_needs_group_read() {
    for world in World::all().await {
        let name = world.name();
        let uri = groups_uri(&world);
        let (status, answer) = world.get(&uri, None).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED, "{name} {answer}");
        let other = world.key(&["feature_flag:read"], None).await;
        let (status, answer) = world.get(&uri, Some(&other)).await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{name} {answer}");
        assert_eq!(
            error_shape(&answer).0,
            "permission_denied",
            "{name} {answer}"
        );
        assert_eq!(
            answer["detail"], "API key missing required scope 'group:read'",
            "{name}"
        );
        let reader = world.key(&["group:read"], None).await;
        let (status, answer) = world.get(&uri, Some(&reader)).await;
        assert_eq!(status, StatusCode::OK, "{name} {answer}");
        assert_eq!(answer, json!([]), "{name}");
        let (status, _) = world
            .send(Method::POST, &uri, Some(world.admin_key()), Some("{}"))
            .await;
        assert_eq!(status, StatusCode::METHOD_NOT_ALLOWED, "{name}");
    }
}

#[tokio::test]
async fn group_aggregated_flags_use_the_recorded_types() {
    for world in World::all().await {
        let name = world.name();
        let token = world.bootstrap.project.api_token.clone();
        world
            .capture(vec![event(
                "$groupidentify",
                "u1",
                json!({"$group_type": "company", "$group_key": "acme", "$group_set": {}}),
            )])
            .await;
        lake::commit_all(&world.backend.state).await.unwrap();
        // Created after the commit: the flags cache (5 s) has nothing older to serve.
        world
            .create_flag(
                json!({"key": "companies", "filters": {"aggregation_group_type_index": 0,
                "groups": [{"properties": [], "rollout_percentage": 100}]}}),
            )
            .await;

        let body = json!({"token": token, "distinct_id": "u1", "groups": {"company": "acme"}});
        let (status, answer) = world
            .send(Method::POST, "/flags/?v=4", None, Some(&body.to_string()))
            .await;
        assert_eq!(status, StatusCode::OK, "{name} {answer}");
        assert_eq!(
            answer["flags"]["companies"]["enabled"], true,
            "{name} {answer}"
        );
        // Without the group the flag cannot bucket.
        let body = json!({"token": token, "distinct_id": "u1"});
        let (_, answer) = world
            .send(Method::POST, "/flags/?v=4", None, Some(&body.to_string()))
            .await;
        assert_eq!(
            answer["flags"]["companies"]["enabled"], false,
            "{name} {answer}"
        );

        let (status, answer) = world
            .get(
                &format!("/flags/definitions?token={token}"),
                Some(world.admin_key()),
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{name} {answer}");
        assert_eq!(
            answer["group_type_mapping"],
            json!({"0": "company"}),
            "{name}"
        );
    }
}
