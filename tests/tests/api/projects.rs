//! Project routes: retrieve, list with pagination, update with validation, on both backends.

use api_tests::{World, error_shape};
use axum::http::{Method, StatusCode};

#[tokio::test]
async fn updates_persist_and_bad_values_are_400s() {
    for world in World::all().await {
        let name = world.name();
        let uri = format!("/api/projects/{}/", world.bootstrap.project.id);
        let key = Some(world.admin_key());

        let (status, body) = world
            .send(
                Method::PATCH,
                &uri,
                key,
                Some(r#"{"name": "  Renamed ", "timezone": "Europe/Paris"}"#),
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{name} {body}");
        assert_eq!(body["name"], "Renamed", "{name}");
        let (_, read) = world.get(&uri, key).await;
        assert_eq!(
            (read["name"].as_str(), read["timezone"].as_str()),
            (Some("Renamed"), Some("Europe/Paris")),
            "{name}"
        );

        let cases = [
            (
                r#"{"timezone": "Mars/Olympus"}"#,
                "invalid_choice",
                Some("timezone"),
            ),
            (r#"{"name": "   "}"#, "blank", Some("name")),
            (
                &format!(r#"{{"name": "{}"}}"#, "n".repeat(201)),
                "max_length",
                Some("name"),
            ),
            (r#"{"name": 5}"#, "invalid_input", Some("name")),
            (r#"{"color": "red"}"#, "invalid_input", Some("color")),
            (
                r#"{"path_cleaning_filters": [{"alias": "<id>", "regex": "(unclosed"}]}"#,
                "invalid_input",
                Some("path_cleaning_filters"),
            ),
            (
                r#"{"path_cleaning_filters": [{"regex": "/\\d+"}]}"#,
                "invalid_input",
                Some("path_cleaning_filters"),
            ),
            (r#"[1, 2]"#, "invalid_input", None),
        ];
        for (body_text, code, attr) in cases {
            let (status, body) = world.send(Method::PATCH, &uri, key, Some(body_text)).await;
            assert_eq!(status, StatusCode::BAD_REQUEST, "{name} {body_text}");
            let (got_code, got_attr) = error_shape(&body);
            assert_eq!(got_code, code, "{name} {body_text} {body}");
            assert_eq!(got_attr.as_deref(), attr, "{name} {body_text}");
        }
        // Nothing of the refused requests was stored.
        let (_, read) = world.get(&uri, key).await;
        assert_eq!(read["name"], "Renamed", "{name}");
        assert_eq!(
            read["path_cleaning_filters"],
            serde_json::json!([]),
            "{name}"
        );

        let rules = serde_json::json!([{"alias": "/users/<id>", "regex": "/users/\\d+"}]);
        let body = serde_json::json!({"path_cleaning_filters": rules}).to_string();
        let (status, body) = world.send(Method::PATCH, &uri, key, Some(&body)).await;
        assert_eq!(status, StatusCode::OK, "{name} {body}");
        let (_, read) = world.get(&uri, key).await;
        assert_eq!(read["path_cleaning_filters"], rules, "{name}");
    }
}

#[tokio::test]
async fn the_list_is_paginated_and_scoped() {
    for world in World::all().await {
        let name = world.name();
        let store = world.backend.state.store.as_ref();
        for i in 0..3 {
            common::provisioning::create_project(
                store,
                world.bootstrap.organization.id,
                &format!("P{i}"),
                "UTC",
            )
            .await
            .unwrap();
        }
        let (status, page) = world
            .get("/api/projects/?limit=2", Some(world.admin_key()))
            .await;
        assert_eq!(status, StatusCode::OK, "{name}");
        assert_eq!(page["count"], 4, "{name}");
        assert_eq!(page["results"].as_array().unwrap().len(), 2, "{name}");
        assert_eq!(page["previous"], serde_json::Value::Null, "{name}");
        let next = page["next"].as_str().unwrap();
        assert_eq!(
            next, "http://testserver/api/projects?limit=2&offset=2",
            "{name}"
        );
        let (_, second) = world
            .get("/api/projects/?limit=2&offset=2", Some(world.admin_key()))
            .await;
        assert_eq!(second["results"].as_array().unwrap().len(), 2, "{name}");
        assert_eq!(second["next"], serde_json::Value::Null, "{name}");

        // The foreign organization's project never shows; a scoped key sees only its project.
        let ids: Vec<i64> = page["results"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["id"].as_i64().unwrap())
            .collect();
        assert!(!ids.contains(&world.foreign_project), "{name}");
        let scoped = world
            .key(&["project:read"], Some(vec![world.bootstrap.project.id]))
            .await;
        let (_, only) = world.get("/api/projects/", Some(&scoped)).await;
        assert_eq!(only["count"], 1, "{name}");

        let (status, body) = world
            .get("/api/projects/?limit=zero", Some(world.admin_key()))
            .await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{name}");
        assert_eq!(error_shape(&body).1.as_deref(), Some("limit"), "{name}");
    }
}
