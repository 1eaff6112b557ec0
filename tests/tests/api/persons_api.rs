//! The persons API on both backends, over persons made by real ingestion (capture, then the
//! committer): list with search, e-mail, distinct id, uuid and property filters in cursor pages,
//! retrieve, `$set`/`$unset` edits, delete and bulk delete and their activity log, the deletion
//! of a deleted person's events by compaction, scopes, another organization's project, and
//! each 400.

use std::collections::BTreeSet;

use api_tests::{World, error_shape};
use axum::http::{Method, StatusCode};
use serde_json::{Value, json};

fn persons_uri(world: &World) -> String {
    format!("/api/projects/{}/persons/", world.bootstrap.project.id)
}

/// Five identified users (anonymous first, then identified with an e-mail and a plan), one
/// anonymous visitor, and a user with no properties; committed to the lake and the Store.
async fn ingest(world: &World) {
    let mut events = Vec::new();
    for (index, plan) in ["free", "pro", "pro", "team", "free"].iter().enumerate() {
        let anonymous = format!("0192f0a1-7c3e-7b2a-9d41-00000000000{index}");
        let user = format!("user-{index}");
        events.push(json!({"event": "$pageview", "distinct_id": anonymous,
            "timestamp": format!("2026-11-2{index}T10:00:00Z")}));
        events.push(json!({"event": "$identify", "distinct_id": user,
            "timestamp": format!("2026-11-2{index}T10:01:00Z"),
            "properties": {"$anon_distinct_id": anonymous,
                "$set": {"email": format!("{user}@example.com"), "plan": plan, "seats": index * 10}}}));
        events.push(json!({"event": "bought", "distinct_id": user,
            "timestamp": format!("2026-11-2{index}T10:02:00Z")}));
    }
    events.push(json!({"event": "$pageview", "distinct_id": "visitor",
        "timestamp": "2026-11-26T09:00:00Z", "properties": {"$set": {"name": "Grace"}}}));
    world.capture(events).await;
    lake::commit_team(&world.backend.state, world.bootstrap.project.id)
        .await
        .unwrap();
}

async fn list(world: &World, query: &str) -> (StatusCode, Value) {
    world
        .get(
            &format!("{}?{query}", persons_uri(world)),
            Some(world.admin_key()),
        )
        .await
}

fn names(page: &Value) -> BTreeSet<String> {
    page["results"]
        .as_array()
        .unwrap_or_else(|| panic!("no results: {page}"))
        .iter()
        .map(|person| person["name"].as_str().unwrap().to_owned())
        .collect()
}

fn set(names: &[&str]) -> BTreeSet<String> {
    names.iter().map(|name| (*name).to_owned()).collect()
}

#[tokio::test]
async fn list_filters_and_pages_persons_made_by_ingestion() {
    for world in World::all().await {
        let name = world.name();
        ingest(&world).await;

        let (status, all) = list(&world, "").await;
        assert_eq!(status, StatusCode::OK, "{name} {all}");
        assert_eq!(all["previous"], Value::Null);
        assert_eq!(all["next"], Value::Null, "{name}");
        assert_eq!(
            names(&all),
            set(&[
                "user-0@example.com",
                "user-1@example.com",
                "user-2@example.com",
                "user-3@example.com",
                "user-4@example.com",
                "Grace"
            ]),
            "{name} {all}"
        );
        // PostHog's shape, identified distinct ids before anonymous ones.
        let user1 = all["results"]
            .as_array()
            .unwrap()
            .iter()
            .find(|person| person["name"] == "user-1@example.com")
            .unwrap()
            .clone();
        let mut keys: Vec<&str> = user1
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        keys.sort();
        assert_eq!(
            keys,
            [
                "created_at",
                "distinct_ids",
                "id",
                "name",
                "properties",
                "uuid"
            ]
        );
        assert_eq!(
            user1["distinct_ids"],
            json!(["user-1", "0192f0a1-7c3e-7b2a-9d41-000000000001"]),
            "{name}"
        );
        assert_eq!(user1["properties"]["plan"], "pro");
        assert_eq!(user1["id"], user1["uuid"]);

        // Filters.
        let cases = [
            ("distinct_id=user-2", vec!["user-2@example.com"]),
            (
                "distinct_id=0192f0a1-7c3e-7b2a-9d41-000000000003",
                vec!["user-3@example.com"],
            ),
            ("email=user-4%40example.com", vec!["user-4@example.com"]),
            ("search=USER-0", vec!["user-0@example.com"]),
            ("search=grace", vec!["Grace"]),
            ("search=visitor", vec!["Grace"]),
            ("search=nobody", vec![]),
            (
                "properties=%5B%7B%22key%22%3A%22plan%22%2C%22value%22%3A%5B%22pro%22%5D%2C%22operator%22%3A%22exact%22%2C%22type%22%3A%22person%22%7D%5D",
                vec!["user-1@example.com", "user-2@example.com"],
            ),
            (
                "properties=%5B%7B%22key%22%3A%22seats%22%2C%22value%22%3A15%2C%22operator%22%3A%22gt%22%2C%22type%22%3A%22person%22%7D%5D",
                vec![
                    "user-2@example.com",
                    "user-3@example.com",
                    "user-4@example.com",
                ],
            ),
            (
                "properties=%5B%7B%22key%22%3A%22email%22%2C%22operator%22%3A%22is_not_set%22%2C%22type%22%3A%22person%22%7D%5D",
                vec!["Grace"],
            ),
        ];
        for (query, expected) in cases {
            let (status, page) = list(&world, query).await;
            assert_eq!(status, StatusCode::OK, "{name} {query} {page}");
            assert_eq!(names(&page), set(&expected), "{name} {query}");
        }
        let uuids = format!(
            "uuid={},{}",
            user1["uuid"].as_str().unwrap(),
            user1["uuid"].as_str().unwrap()
        );
        let (_, page) = list(&world, &uuids).await;
        assert_eq!(names(&page), set(&["user-1@example.com"]), "{name}");

        // Cursor pages: every person exactly once, newest first, `next` keeps the filters.
        let mut seen = Vec::new();
        let mut uri = format!("{}?limit=2&search=example.com", persons_uri(&world));
        loop {
            let (status, page) = world.get(&uri, Some(world.admin_key())).await;
            assert_eq!(status, StatusCode::OK, "{name} {page}");
            assert!(page["results"].as_array().unwrap().len() <= 2);
            seen.extend(names(&page));
            match page["next"].as_str() {
                Some(next) => {
                    assert!(next.contains("search=example.com"), "{next}");
                    uri = next.trim_start_matches("http://testserver").to_owned();
                }
                None => break,
            }
        }
        assert_eq!(seen.len(), 5, "{name} {seen:?}");
        assert_eq!(seen.iter().collect::<BTreeSet<_>>().len(), 5, "{name}");

        // Each 400 names its parameter.
        for (query, attr) in [
            ("limit=0", "limit"),
            ("limit=1001", "limit"),
            ("limit=x", "limit"),
            ("uuid=nope", "uuid"),
            ("properties=%7B", "properties"),
            (
                "properties=%5B%7B%22key%22%3A%22x%22%2C%22type%22%3A%22cohort%22%2C%22value%22%3A1%7D%5D",
                "properties[0].type",
            ),
            ("cursor=garbage", "cursor"),
        ] {
            let (status, body) = list(&world, query).await;
            assert_eq!(status, StatusCode::BAD_REQUEST, "{name} {query} {body}");
            assert_eq!(
                error_shape(&body).1.as_deref(),
                Some(attr),
                "{name} {query}"
            );
        }
    }
}

#[tokio::test]
async fn retrieve_edit_and_delete_with_scopes() {
    for world in World::all().await {
        let name = world.name();
        ingest(&world).await;
        let (_, page) = list(&world, "distinct_id=user-3").await;
        let person = page["results"][0].clone();
        let uri = format!(
            "{}{}/",
            persons_uri(&world),
            person["uuid"].as_str().unwrap()
        );

        let (status, read) = world.get(&uri, Some(world.admin_key())).await;
        assert_eq!((status, &read), (StatusCode::OK, &person), "{name}");
        for (id, code) in [
            ("user-3", StatusCode::BAD_REQUEST),
            (
                "0192f0a1-0000-7000-8000-000000000000",
                StatusCode::NOT_FOUND,
            ),
        ] {
            let (status, body) = world
                .get(
                    &format!("{}{id}/", persons_uri(&world)),
                    Some(world.admin_key()),
                )
                .await;
            assert_eq!(status, code, "{name} {id} {body}");
            error_shape(&body);
        }

        // PATCH sets (keys not named stay), update_property sets one, delete_property unsets.
        let (status, updated) = world
            .send_json(
                Method::PATCH,
                &uri,
                json!({"properties": {"plan": "enterprise", "vip": true}}),
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{name} {updated}");
        assert_eq!(updated["properties"]["plan"], "enterprise");
        assert_eq!(updated["properties"]["vip"], true);
        assert_eq!(updated["properties"]["email"], "user-3@example.com");
        let (status, _) = world
            .send_json(
                Method::POST,
                &format!("{uri}update_property/"),
                json!({"key": "seats", "value": 99}),
            )
            .await;
        assert_eq!(status, StatusCode::ACCEPTED, "{name}");
        let (status, answer) = world
            .send_json(
                Method::POST,
                &format!("{uri}delete_property/"),
                json!({"$unset": "vip"}),
            )
            .await;
        assert_eq!(
            (status, answer),
            (StatusCode::CREATED, json!({"success": true})),
            "{name}"
        );
        let (_, read) = world.get(&uri, Some(world.admin_key())).await;
        assert_eq!(read["properties"]["seats"], 99, "{name} {read}");
        assert_eq!(read["properties"]["plan"], "enterprise");
        assert!(read["properties"].get("vip").is_none(), "{name} {read}");
        // The flags service reads the same stored person.
        let stored = common::models::person::person_of(
            world.backend.state.store.as_ref(),
            world.bootstrap.project.id,
            "user-3",
        )
        .await
        .unwrap()
        .unwrap();
        assert_eq!(stored.properties["seats"], 99);

        for (path, body, attr) in [
            ("", json!({}), "properties"),
            ("update_property/", json!({"key": "a"}), "value"),
            ("update_property/", json!({"value": 1}), "key"),
            ("update_property/", json!({"key": 3, "value": 1}), "key"),
            ("delete_property/", json!({}), "$unset"),
            ("delete_property/", json!({"$unset": ["a"]}), "$unset"),
        ] {
            let method = if path.is_empty() {
                Method::PATCH
            } else {
                Method::POST
            };
            let (status, answer) = world
                .send_json(method, &format!("{uri}{path}"), body.clone())
                .await;
            assert_eq!(
                status,
                StatusCode::BAD_REQUEST,
                "{name} {path} {body} {answer}"
            );
            assert_eq!(
                error_shape(&answer).1.as_deref(),
                Some(attr),
                "{name} {path}"
            );
        }

        // Scopes: person:read reads, and cannot write.
        let reader = world.key(&["person:read"], None).await;
        let (status, _) = world.get(&uri, Some(&reader)).await;
        assert_eq!(status, StatusCode::OK, "{name}");
        let (status, _) = world
            .send(
                Method::PATCH,
                &uri,
                Some(&reader),
                Some(&json!({"properties": {"a": 1}}).to_string()),
            )
            .await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{name}");
        let flags_only = world.key(&["feature_flag:read"], None).await;
        let (status, _) = world.get(&persons_uri(&world), Some(&flags_only)).await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{name}");
        // Another organization's project is out of reach.
        let foreign = format!("/api/projects/{}/persons/", world.foreign_project);
        let (status, _) = world.get(&foreign, Some(world.admin_key())).await;
        assert!(status.is_client_error(), "{name} {status}");

        // Delete: 202, then gone, its distinct ids free; a later event makes a new person.
        let (status, _) = world
            .send(Method::DELETE, &uri, Some(world.admin_key()), None)
            .await;
        assert_eq!(status, StatusCode::ACCEPTED, "{name}");
        let (status, _) = world.get(&uri, Some(world.admin_key())).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{name}");
        let (_, page) = list(&world, "distinct_id=user-3").await;
        assert_eq!(page["results"], json!([]), "{name}");

        // Bulk delete by distinct ids (two ids of one person count once) and by ids.
        let (_, one) = list(&world, "distinct_id=user-1").await;
        let (status, _) = world
            .send_json(
                Method::POST,
                &format!("{}bulk_delete/", persons_uri(&world)),
                json!({"distinct_ids": ["user-0", "0192f0a1-7c3e-7b2a-9d41-000000000000"]}),
            )
            .await;
        assert_eq!(status, StatusCode::ACCEPTED, "{name}");
        let (status, _) = world
            .send_json(
                Method::POST,
                &format!("{}bulk_delete/", persons_uri(&world)),
                json!({"ids": [one["results"][0]["uuid"]]}),
            )
            .await;
        assert_eq!(status, StatusCode::ACCEPTED, "{name}");
        let (_, left) = list(&world, "").await;
        assert_eq!(
            names(&left),
            set(&["user-2@example.com", "user-4@example.com", "Grace"]),
            "{name}"
        );
        let (status, body) = world
            .send_json(
                Method::POST,
                &format!("{}bulk_delete/", persons_uri(&world)),
                json!({}),
            )
            .await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{name} {body}");
        let (status, body) = world
            .send_json(
                Method::POST,
                &format!("{}bulk_delete/", persons_uri(&world)),
                json!({"ids": ["nope"]}),
            )
            .await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{name} {body}");
        assert_eq!(error_shape(&body).1.as_deref(), Some("ids[0]"));
    }
}

/// The `activity` of each entry of a page, newest first.
fn activities(page: &Value) -> Vec<String> {
    page["results"]
        .as_array()
        .unwrap_or_else(|| panic!("no results: {page}"))
        .iter()
        .map(|entry| entry["activity"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test]
async fn edits_and_deletes_are_in_the_activity_log() {
    for world in World::all().await {
        let name = world.name();
        ingest(&world).await;
        let uuid_of = |page: &Value| page["results"][0]["uuid"].as_str().unwrap().to_owned();
        let (_, page) = list(&world, "distinct_id=user-3").await;
        let uuid = uuid_of(&page);
        let uri = format!("{}{uuid}/", persons_uri(&world));
        let history = format!("{uri}activity/");
        let all = format!("{}activity/", persons_uri(&world));

        // Nothing logged yet: ingestion is not an edit.
        let (status, empty) = world.get(&history, Some(world.admin_key())).await;
        assert_eq!(status, StatusCode::OK, "{name} {empty}");
        assert_eq!(empty["results"], json!([]), "{name}");

        world
            .send_json(
                Method::PATCH,
                &uri,
                json!({"properties": {"plan": "enterprise", "vip": true}}),
            )
            .await;
        world
            .send_json(
                Method::POST,
                &format!("{uri}update_property/"),
                json!({"key": "seats", "value": 99}),
            )
            .await;
        world
            .send_json(
                Method::POST,
                &format!("{uri}delete_property/"),
                json!({"$unset": "vip"}),
            )
            .await;
        // A refused edit logs nothing.
        let (status, _) = world
            .send_json(Method::PATCH, &uri, json!({"properties": 3}))
            .await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{name}");

        let (status, page) = world.get(&history, Some(world.admin_key())).await;
        assert_eq!(status, StatusCode::OK, "{name} {page}");
        assert_eq!(
            activities(&page),
            ["delete_property", "updated", "updated"],
            "{name} {page}"
        );
        assert_eq!(page["total_count"], 3, "{name}");
        let patch = &page["results"][2];
        assert_eq!(patch["scope"], "Person", "{name}");
        assert_eq!(patch["item_id"], uuid.as_str(), "{name}");
        assert_eq!(patch["user"]["email"], world.bootstrap.user.email, "{name}");
        assert_eq!(
            patch["detail"]["changes"],
            json!([{"type": "Person", "action": "changed", "field": "properties",
                "before": {"plan": "team", "vip": null},
                "after": {"plan": "enterprise", "vip": true}}]),
            "{name} {patch}"
        );
        assert_eq!(
            page["results"][1]["detail"]["changes"][0]["after"],
            json!({"seats": 99}),
            "{name}"
        );
        let unset = &page["results"][0]["detail"]["changes"][0];
        assert_eq!(
            (&unset["before"], &unset["after"]),
            (&json!({"vip": true}), &json!({"vip": null})),
            "{name}"
        );

        // The log needs `activity_log:read`; `person:read` alone is not enough.
        let reader = world.key(&["person:read"], None).await;
        let (status, _) = world.get(&history, Some(&reader)).await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{name}");
        let auditor = world.key(&["activity_log:read"], None).await;
        let (status, _) = world.get(&all, Some(&auditor)).await;
        assert_eq!(status, StatusCode::OK, "{name}");

        // A bad flag is a 400 naming it, and deletes nothing.
        let (status, body) = world
            .send(
                Method::DELETE,
                &format!("{uri}?delete_events=maybe"),
                Some(world.admin_key()),
                None,
            )
            .await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{name} {body}");
        assert_eq!(error_shape(&body).1.as_deref(), Some("delete_events"));

        // Deletes (one, then a bulk one) are logged `deleted`; a deleted person's own history
        // is a 404, the scope's history keeps it.
        let (status, _) = world
            .send(Method::DELETE, &uri, Some(world.admin_key()), None)
            .await;
        assert_eq!(status, StatusCode::ACCEPTED, "{name}");
        let (status, _) = world.get(&history, Some(world.admin_key())).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{name}");
        let (_, one) = list(&world, "distinct_id=user-1").await;
        let bulk = uuid_of(&one);
        world
            .send_json(
                Method::POST,
                &format!("{}bulk_delete/", persons_uri(&world)),
                json!({"ids": [bulk]}),
            )
            .await;
        let (status, page) = world.get(&all, Some(world.admin_key())).await;
        assert_eq!(status, StatusCode::OK, "{name} {page}");
        assert_eq!(
            activities(&page),
            [
                "deleted",
                "deleted",
                "delete_property",
                "updated",
                "updated"
            ],
            "{name} {page}"
        );
        assert_eq!(page["results"][0]["item_id"], bulk.as_str(), "{name}");
        assert_eq!(page["results"][1]["item_id"], uuid.as_str(), "{name}");
        assert_eq!(
            page["results"][1]["detail"]["name"],
            uuid.as_str(),
            "{name}"
        );
        let (_, second) = world
            .get(&format!("{all}?limit=2&page=2"), Some(world.admin_key()))
            .await;
        assert_eq!(
            activities(&second),
            ["delete_property", "updated"],
            "{name}"
        );
    }
}

#[tokio::test]
async fn deleting_with_events_removes_their_rows_at_compaction() {
    for world in World::all().await {
        let name = world.name();
        ingest(&world).await;
        let state = world.backend.state.clone();
        let team = world.bootstrap.project.id;
        let (_, page) = list(&world, "distinct_id=user-2").await;
        let doomed = page["results"][0]["uuid"].as_str().unwrap().to_owned();
        let rows_of = |rows: &[lake::table::EventRow], person: &str| {
            rows.iter()
                .filter(|row| row.person_id.as_deref() == Some(person))
                .count()
        };
        let before = lake::table::scan(&state, team).await.unwrap();
        assert_eq!(rows_of(&before, &doomed), 3, "{name}");

        let uri = format!("{}{doomed}/?delete_events=true", persons_uri(&world));
        let (status, _) = world
            .send(Method::DELETE, &uri, Some(world.admin_key()), None)
            .await;
        assert_eq!(status, StatusCode::ACCEPTED, "{name}");
        // The events stay until compaction, as PostHog's batched deletions do.
        let still = lake::table::scan(&state, team).await.unwrap();
        assert_eq!(rows_of(&still, &doomed), 3, "{name}");

        let report = lake::compaction::compact_team(&state, team).await.unwrap();
        assert_eq!(
            (report.persons_erased, report.rows_erased),
            (1, 3),
            "{name} {report:?}"
        );
        let after = lake::table::scan(&state, team).await.unwrap();
        assert_eq!(rows_of(&after, &doomed), 0, "{name}");
        assert_eq!(after.len(), before.len() - 3, "{name}: nobody else's rows");
        // The request is done: the next compaction deletes nothing.
        let again = lake::compaction::compact_team(&state, team).await.unwrap();
        assert_eq!(again.persons_erased, 0, "{name}");
    }
}

#[tokio::test]
async fn person_property_values_for_pickers() {
    for world in World::all().await {
        let name = world.name();
        ingest(&world).await;
        let values_uri = |query: &str| format!("{}values/?{query}", persons_uri(&world));
        let (status, values) = world
            .get(&values_uri("key=plan"), Some(world.admin_key()))
            .await;
        assert_eq!(status, StatusCode::OK, "{name} {values}");
        assert_eq!(
            values,
            json!([{"name": "free", "count": 2}, {"name": "pro", "count": 2},
                {"name": "team", "count": 1}]),
            "{name}"
        );
        let (_, values) = world
            .get(&values_uri("key=plan&value=PR"), Some(world.admin_key()))
            .await;
        assert_eq!(values, json!([{"name": "pro", "count": 2}]), "{name}");
        let (_, values) = world
            .get(&values_uri("key=seats&value=4"), Some(world.admin_key()))
            .await;
        assert_eq!(values, json!([{"name": 40, "count": 1}]), "{name}");
        let (status, body) = world.get(&values_uri(""), Some(world.admin_key())).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{name} {body}");
        assert_eq!(error_shape(&body).1.as_deref(), Some("key"));
    }
}
