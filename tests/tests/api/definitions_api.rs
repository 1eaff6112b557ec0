//! Event and property definitions on both backends, as ingestion keeps them: names, first and
//! last seen, volume, property types inferred as PostHog infers them, which events carry which
//! properties; the lists' filters, ordering and 400s, retrieve and delete, scopes.

use api_tests::{World, error_shape};
use axum::http::{Method, StatusCode};
use serde_json::{Value, json};

async fn ingest(world: &World, events: Vec<Value>) {
    world.capture(events).await;
    lake::commit_team(&world.backend.state, world.bootstrap.project.id)
        .await
        .unwrap();
}

async fn get(world: &World, path: &str) -> (StatusCode, Value) {
    world
        .get(
            &format!("/api/projects/{}/{path}", world.bootstrap.project.id),
            Some(world.admin_key()),
        )
        .await
}

fn names(page: &Value) -> Vec<String> {
    page["results"]
        .as_array()
        .unwrap_or_else(|| panic!("no results: {page}"))
        .iter()
        .map(|row| row["name"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test]
async fn ingestion_keeps_definitions_and_the_lists_filter_them() {
    for world in World::all().await {
        let name = world.name();
        ingest(
            &world,
            vec![
                json!({"event": "$pageview", "distinct_id": "a", "timestamp": "2026-11-20T10:00:00Z",
                    "properties": {"$current_url": "https://shop.example/", "$browser": "Firefox"}}),
                json!({"event": "bought", "distinct_id": "a", "timestamp": "2026-11-21T10:00:00Z",
                    "properties": {"price": 9.5, "paid": true, "coupon": null, "shipped_on": "2026-11-22",
                        "$feature/beta": "test", "utm_source": "news",
                        "$set": {"email": "a@example.com", "age": 31}}}),
                json!({"event": "bought", "distinct_id": "b", "timestamp": "2026-11-23T10:00:00Z",
                    "properties": {"price": "cheap", "coupon": "XMAS"}}),
            ],
        )
        .await;
        ingest(
            &world,
            vec![
                json!({"event": "bought", "distinct_id": "c", "timestamp": "2026-11-22T10:00:00Z",
                "properties": {"price": 3}}),
            ],
        )
        .await;

        let (status, events) = get(&world, "event_definitions/").await;
        assert_eq!(status, StatusCode::OK, "{name} {events}");
        assert_eq!(names(&events), ["$pageview", "bought"], "{name}");
        assert_eq!(events["count"], 2);
        let bought = events["results"][1].clone();
        // Volumes add up over commits; last seen is the latest event time.
        assert_eq!(bought["volume"], 3, "{name} {bought}");
        assert_eq!(bought["last_seen_at"], "2026-11-23T10:00:00Z", "{name}");
        for (query, expected) in [
            ("search=BOU", vec!["bought"]),
            ("search=page%20view", vec!["$pageview"]),
            ("search=page%20buy", vec![]),
            ("event_type=event_custom", vec!["bought"]),
            ("event_type=event_posthog", vec!["$pageview"]),
            ("ordering=-volume", vec!["bought", "$pageview"]),
            ("ordering=-name", vec!["bought", "$pageview"]),
            ("limit=1&offset=1", vec!["bought"]),
        ] {
            let (status, page) = get(&world, &format!("event_definitions/?{query}")).await;
            assert_eq!(status, StatusCode::OK, "{name} {query} {page}");
            assert_eq!(names(&page), expected, "{name} {query}");
        }

        // Property types: the first typed value decides (price was a number first).
        let (_, properties) = get(&world, "property_definitions/").await;
        let by_name: std::collections::BTreeMap<String, Value> = properties["results"]
            .as_array()
            .unwrap()
            .iter()
            .map(|row| (row["name"].as_str().unwrap().to_owned(), row.clone()))
            .collect();
        let types: Vec<(&str, Value)> = by_name
            .iter()
            .map(|(key, row)| (key.as_str(), row["property_type"].clone()))
            .collect();
        assert_eq!(
            types,
            [
                ("$browser", json!("String")),
                ("$current_url", json!("String")),
                ("$feature/beta", json!("String")),
                ("coupon", json!("String")),
                ("paid", json!("Boolean")),
                ("price", json!("Numeric")),
                ("shipped_on", json!("DateTime")),
                ("utm_source", json!("String")),
            ],
            "{name} {properties}"
        );
        assert_eq!(by_name["price"]["is_numerical"], true);
        assert_eq!(by_name["price"]["type"], 1);
        assert!(by_name["price"]["is_seen_on_filtered_events"].is_null());

        let (_, persons) = get(&world, "property_definitions/?type=person").await;
        assert_eq!(names(&persons), ["age", "email"], "{name} {persons}");
        assert_eq!(persons["results"][0]["property_type"], "Numeric");
        assert_eq!(persons["results"][0]["type"], 2);

        let seen_on = "property_definitions/?event_names=%5B%22%24pageview%22%5D";
        let (_, page) = get(&world, seen_on).await;
        let first_two: Vec<(String, Value)> = page["results"]
            .as_array()
            .unwrap()
            .iter()
            .take(3)
            .map(|row| {
                (
                    row["name"].as_str().unwrap().to_owned(),
                    row["is_seen_on_filtered_events"].clone(),
                )
            })
            .collect();
        assert_eq!(
            first_two,
            [
                ("$browser".to_owned(), json!(true)),
                ("$current_url".to_owned(), json!(true)),
                ("$feature/beta".to_owned(), json!(false)),
            ],
            "{name}: seen ones first"
        );
        for (query, expected) in [
            (
                format!("{seen_on}&filter_by_event_names=true"),
                vec!["$browser", "$current_url"],
            ),
            (
                "property_definitions/?is_numerical=true".to_owned(),
                vec!["price"],
            ),
            (
                "property_definitions/?is_feature_flag=true".to_owned(),
                vec!["$feature/beta"],
            ),
            (
                "property_definitions/?search=pri".to_owned(),
                vec!["price"],
            ),
            (
                "property_definitions/?properties=paid,coupon".to_owned(),
                vec!["coupon", "paid"],
            ),
            (
                "property_definitions/?search=u&excluded_properties=%5B%22%24current_url%22%2C%22coupon%22%5D"
                    .to_owned(),
                vec!["$feature/beta", "utm_source"],
            ),
        ] {
            let (status, page) = get(&world, &query).await;
            assert_eq!(status, StatusCode::OK, "{name} {query} {page}");
            assert_eq!(names(&page), expected, "{name} {query}");
        }

        for (query, attr) in [
            ("event_definitions/?event_type=x", "event_type"),
            ("event_definitions/?ordering=size", "ordering"),
            ("event_definitions/?limit=0", "limit"),
            ("property_definitions/?type=group", "type"),
            ("property_definitions/?is_numerical=maybe", "is_numerical"),
            (
                "property_definitions/?event_names=%24pageview",
                "event_names",
            ),
        ] {
            let (status, body) = get(&world, query).await;
            assert_eq!(status, StatusCode::BAD_REQUEST, "{name} {query} {body}");
            assert_eq!(
                error_shape(&body).1.as_deref(),
                Some(attr),
                "{name} {query}"
            );
        }

        // Retrieve and delete by id; ingestion makes a deleted definition again.
        let id = bought["id"].as_str().unwrap();
        let (status, one) = get(&world, &format!("event_definitions/{id}/")).await;
        assert_eq!((status, &one["name"]), (StatusCode::OK, &json!("bought")));
        let price = by_name["price"]["id"].as_str().unwrap();
        let (status, one) = get(&world, &format!("property_definitions/{price}/")).await;
        assert_eq!((status, &one["name"]), (StatusCode::OK, &json!("price")));
        let (status, _) = get(&world, "event_definitions/nope/").await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{name}");

        let reader = world
            .key(&["event_definition:read", "property_definition:read"], None)
            .await;
        let uri = format!(
            "/api/projects/{}/event_definitions/{id}/",
            world.bootstrap.project.id
        );
        let (status, _) = world.send(Method::DELETE, &uri, Some(&reader), None).await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{name}");
        let (status, _) = world.get(&uri, Some(&reader)).await;
        assert_eq!(status, StatusCode::OK, "{name}");
        let (status, _) = world
            .send(Method::DELETE, &uri, Some(world.admin_key()), None)
            .await;
        assert_eq!(status, StatusCode::NO_CONTENT, "{name}");
        let (_, events) = get(&world, "event_definitions/").await;
        assert_eq!(names(&events), ["$pageview"], "{name}");
        let property_uri = format!(
            "/api/projects/{}/property_definitions/{price}/",
            world.bootstrap.project.id
        );
        let (status, _) = world
            .send(Method::DELETE, &property_uri, Some(world.admin_key()), None)
            .await;
        assert_eq!(status, StatusCode::NO_CONTENT, "{name}");
        let (status, _) = world.get(&property_uri, Some(world.admin_key())).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{name}");

        ingest(
            &world,
            vec![
                json!({"event": "bought", "distinct_id": "d", "timestamp": "2026-11-24T10:00:00Z"}),
            ],
        )
        .await;
        let (_, events) = get(&world, "event_definitions/").await;
        assert_eq!(names(&events), ["$pageview", "bought"], "{name}");

        let foreign = format!("/api/projects/{}/event_definitions/", world.foreign_project);
        let (status, _) = world.get(&foreign, Some(world.admin_key())).await;
        assert!(status.is_client_error(), "{name}");
    }
}

#[tokio::test]
async fn property_values_for_pickers_come_from_the_last_week_of_events() {
    for world in World::all().await {
        let name = world.name();
        // The test clock is real time: events of the last days count, older ones do not.
        let now = chrono::Utc::now();
        let at = |days: i64| (now - chrono::Duration::days(days)).to_rfc3339();
        let mut events = Vec::new();
        for (browser, times) in [("Firefox", 3), ("Chrome", 5), ("Chromium 100%", 1)] {
            for _ in 0..times {
                events.push(
                    json!({"event": "$pageview", "distinct_id": "a", "timestamp": at(1),
                    "properties": {"$browser": browser}}),
                );
            }
        }
        events.push(
            json!({"event": "clicked", "distinct_id": "a", "timestamp": at(2),
            "properties": {"$browser": "Safari"}}),
        );
        events.push(
            json!({"event": "$pageview", "distinct_id": "a", "timestamp": at(30),
            "properties": {"$browser": "Opera"}}),
        );
        ingest(&world, events).await;

        let (status, values) = get(&world, "events/values/?key=%24browser").await;
        assert_eq!(status, StatusCode::OK, "{name} {values}");
        assert_eq!(
            values,
            json!([{"name": "Chrome", "count": 5}, {"name": "Firefox", "count": 3},
                {"name": "Chromium 100%", "count": 1}, {"name": "Safari", "count": 1}]),
            "{name}"
        );
        let (_, values) = get(&world, "events/values/?key=%24browser&value=chrom").await;
        assert_eq!(
            values,
            json!([{"name": "Chrome", "count": 5}, {"name": "Chromium 100%", "count": 1}]),
            "{name}"
        );
        // `%` is the text's, not a wildcard.
        let (_, values) = get(&world, "events/values/?key=%24browser&value=0%25").await;
        assert_eq!(
            values,
            json!([{"name": "Chromium 100%", "count": 1}]),
            "{name}"
        );
        let (_, values) = get(&world, "events/values/?key=%24browser&event_name=clicked").await;
        assert_eq!(values, json!([{"name": "Safari", "count": 1}]), "{name}");
        let (status, body) = get(&world, "events/values/").await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{name} {body}");
        assert_eq!(error_shape(&body).1.as_deref(), Some("key"));
    }
}

#[tokio::test]
async fn the_30_day_volume_counts_events_of_the_last_30_days() {
    for world in World::all().await {
        let name = world.name();
        // Ingestion runs on real time; the answer is read on a clock set where the test wants.
        let now = chrono::Utc::now();
        let at = |days: i64| (now - chrono::Duration::days(days)).to_rfc3339();
        let events = [2, 10, 10, 45]
            .map(|days| json!({"event": "ordered", "distinct_id": "a", "timestamp": at(days)}));
        ingest(&world, events.to_vec()).await;
        let volumes = |days_later: i64| {
            let mut state = world.backend.state.clone();
            state.clock = std::sync::Arc::new(common::clock::ManualClock::at(
                now + chrono::Duration::days(days_later),
            ));
            let request = axum::http::Request::get(format!(
                "/api/projects/{}/event_definitions/?search=ordered",
                world.bootstrap.project.id
            ))
            .header("authorization", format!("Bearer {}", world.admin_key()))
            .body(axum::body::Body::empty())
            .unwrap();
            async move {
                let (status, page) = api_tests::respond(local::app(state), request).await;
                assert_eq!(status, StatusCode::OK, "{page}");
                let row = &page["results"][0];
                (row["volume"].clone(), row["volume_30_day"].clone())
            }
        };
        assert_eq!(volumes(0).await, (json!(4), json!(3)), "{name}");
        // 25 days on, only the event of 2 days ago is within 30 days.
        assert_eq!(volumes(25).await, (json!(4), json!(1)), "{name}");
        let (status, body) = get(&world, "event_definitions/?ordering=-volume_30_day").await;
        assert_eq!(status, StatusCode::OK, "{name} {body}");
        let (status, body) = get(&world, "event_definitions/?ordering=size").await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{name} {body}");
        assert_eq!(error_shape(&body).1.as_deref(), Some("ordering"), "{name}");
    }
}
