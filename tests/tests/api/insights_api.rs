//! Structured nodes through the query API: they run on the same path as SQL (isolation, cache,
//! async, query log), and an invalid node is a 400 naming the field. Their numbers are checked
//! against DuckDB by the Python checks in tests/sdk.

use std::time::Duration;

use api_tests::{World, error_shape};
use axum::http::{Method, StatusCode};
use serde_json::{Value, json};

async fn post(world: &World, path: &str, key: &str, body: Value) -> (StatusCode, Value) {
    world
        .send(Method::POST, path, Some(key), Some(&body.to_string()))
        .await
}

async fn capture(world: &World, token: &str, events: &[(&str, &str, &str)]) {
    let batch: Vec<Value> = events
        .iter()
        .map(|(event, distinct_id, timestamp)| {
            json!({"event": event, "distinct_id": distinct_id, "timestamp": timestamp,
                   "properties": {"plan": "pro"}})
        })
        .collect();
    let (status, body) = world
        .send(
            Method::POST,
            "/batch/",
            None,
            Some(&json!({"api_key": token, "batch": batch}).to_string()),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
}

fn trend(event: &str) -> Value {
    json!({
        "kind": "TrendsQuery",
        "interval": "day",
        "dateRange": {"date_from": "2026-11-01", "date_to": "2026-11-03"},
        "series": [{"kind": "EventsNode", "event": event}],
    })
}

const EVENTS: &[(&str, &str, &str)] = &[
    ("$pageview", "a", "2026-11-01T10:00:00Z"),
    ("$pageview", "b", "2026-11-01T11:00:00Z"),
    ("$pageview", "a", "2026-11-03T09:00:00Z"),
    ("signed_up", "a", "2026-11-01T10:05:00Z"),
];

#[tokio::test]
async fn nodes_run_like_sql_and_see_only_their_project() {
    for world in World::all().await {
        let name = world.name();
        let store = world.backend.state.store.clone();
        let mine = world.bootstrap.project.clone();
        let other = common::provisioning::create_project(
            store.as_ref(),
            world.bootstrap.organization.id,
            "Other",
            "UTC",
        )
        .await
        .unwrap();
        capture(&world, &mine.api_token, EVENTS).await;
        capture(
            &world,
            &other.api_token,
            &[("$pageview", "x", "2026-11-02T10:00:00Z"); 7],
        )
        .await;
        lake::commit_all(&world.backend.state).await.unwrap();
        let key = world.key(&["query:read"], Some(vec![mine.id])).await;
        let path = format!("/api/projects/{}/query/", mine.id);

        let body = json!({"query": trend("$pageview")});
        let (status, first) = post(&world, &path, &key, body.clone()).await;
        assert_eq!(status, StatusCode::OK, "{name} {first}");
        assert_eq!(first["results"][0]["data"], json!([2, 0, 1]), "{name}");
        assert_eq!(first["results"][0]["count"], json!(3.0), "{name}");
        assert_eq!(first["is_cached"], json!(false), "{name}");
        assert!(first["hogql"].as_str().is_some_and(|h| !h.is_empty()));
        // The same node again: served from the cache (the events did not change).
        let (status, second) = post(&world, &path, &key, body).await;
        assert_eq!(status, StatusCode::OK, "{name} {second}");
        assert_eq!(second["is_cached"], json!(true), "{name}");
        assert_eq!(second["results"], first["results"], "{name}");

        // An old node is upgraded before it runs: version 3 series items had no `kind`.
        let mut old = trend("$pageview");
        old["version"] = json!(3);
        old["series"][0]
            .as_object_mut()
            .map(|item| item.remove("kind"));
        let (status, upgraded) = post(&world, &path, &key, json!({"query": old})).await;
        assert_eq!(status, StatusCode::OK, "{name} {upgraded}");
        assert_eq!(upgraded["results"][0]["data"], json!([2, 0, 1]), "{name}");

        // `refresh: async` answers a fresh cached result at once; `force_async` queues anyway.
        let (status, at_once) = post(
            &world,
            &path,
            &key,
            json!({"query": trend("$pageview"), "refresh": "async"}),
        )
        .await;
        assert_eq!(status, StatusCode::OK, "{name} {at_once}");
        assert_eq!(at_once["is_cached"], json!(true), "{name}");
        assert_eq!(at_once["results"], first["results"], "{name}");
        let (status, queued) = post(
            &world,
            &path,
            &key,
            json!({"query": trend("$pageview"), "refresh": "force_async"}),
        )
        .await;
        assert_eq!(status, StatusCode::ACCEPTED, "{name} {queued}");

        // Weeks start on the project's week_start_day (Nov 1, 2026 is a Sunday).
        let weekly = |node: Value| {
            let mut node = node;
            node["interval"] = json!("week");
            json!({"query": node})
        };
        let (status, sunday) = post(&world, &path, &key, weekly(trend("$pageview"))).await;
        assert_eq!(status, StatusCode::OK, "{name} {sunday}");
        assert_eq!(
            sunday["results"][0]["days"],
            json!(["2026-11-01"]),
            "{name}"
        );
        assert_eq!(sunday["results"][0]["data"], json!([3]), "{name}");
        for (day, expected) in [
            (json!(3), StatusCode::BAD_REQUEST),
            (json!(1), StatusCode::OK),
        ] {
            let (status, body) = world
                .send(
                    Method::PATCH,
                    &format!("/api/projects/{}/", mine.id),
                    Some(world.admin_key()),
                    Some(&json!({"week_start_day": day}).to_string()),
                )
                .await;
            assert_eq!(status, expected, "{name} {body}");
        }
        let (status, monday) = post(&world, &path, &key, weekly(trend("$pageview"))).await;
        assert_eq!(status, StatusCode::OK, "{name} {monday}");
        assert_eq!(
            monday["results"][0]["days"],
            json!(["2026-10-26", "2026-11-02"]),
            "{name}"
        );
        assert_eq!(monday["results"][0]["data"], json!([2, 1]), "{name}");

        // The other project's node sees its own 7 events only.
        let (status, theirs) = post(
            &world,
            &format!("/api/projects/{}/query/", other.id),
            world.admin_key(),
            json!({"query": trend("$pageview")}),
        )
        .await;
        assert_eq!(status, StatusCode::OK, "{name} {theirs}");
        assert_eq!(theirs["results"][0]["data"], json!([0, 7, 0]), "{name}");
        // And this key may not run anything there.
        let (status, _) = post(
            &world,
            &format!("/api/projects/{}/query/", other.id),
            &key,
            json!({"query": trend("$pageview")}),
        )
        .await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{name}");

        // Async: 202, then the status completes with the same results.
        let (status, queued) = post(
            &world,
            &path,
            &key,
            json!({"query": trend("signed_up"), "async": true, "client_query_id": "trend-async-1"}),
        )
        .await;
        assert_eq!(status, StatusCode::ACCEPTED, "{name} {queued}");
        let mut done = Value::Null;
        for _ in 0..200 {
            let (status, polled) = world
                .get(&format!("{path}trend-async-1/"), Some(&key))
                .await;
            if status == StatusCode::OK {
                done = polled;
                break;
            }
            assert_eq!(status, StatusCode::ACCEPTED, "{name} {polled}");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let results = &done["query_status"]["results"]["results"];
        assert_eq!(results[0]["data"], json!([1, 0, 0]), "{name} {done}");

        // Every run is in the query log, with the node's kind.
        let (status, log) = post(
            &world,
            &path,
            &key,
            json!({"query": {"kind": "HogQLQuery",
                             "query": "select query_id, query from query_log where query_id = 'trend-async-1'"},
                   "refresh": "force_blocking"}),
        )
        .await;
        assert_eq!(status, StatusCode::OK, "{name} {log}");
        let rows = log["results"].as_array().cloned().unwrap_or_default();
        assert_eq!(rows.len(), 1, "{name} {log}");
        assert!(
            rows[0][1]
                .as_str()
                .is_some_and(|q| q.contains("TrendsQuery")),
            "{name} {log}"
        );
    }
}

#[tokio::test]
async fn invalid_nodes_are_400s_naming_the_field() {
    let world = World::all().await.remove(0);
    let path = format!("/api/projects/{}/query/", world.bootstrap.project.id);
    let series = |extra: Value| {
        let mut node = json!({"kind": "EventsNode", "event": "$pageview"});
        if let (Value::Object(node), Value::Object(extra)) = (&mut node, extra) {
            node.extend(extra);
        }
        node
    };
    let cases = [
        (json!({"kind": "StickyQuery"}), "query.kind"),
        (
            json!({"kind": "TrendsQuery", "series": [series(json!({"math": "loudest"}))]}),
            "query.series[0].math",
        ),
        (
            json!({"kind": "TrendsQuery", "series": [series(json!({"math": "sum"}))]}),
            "query.series[0].math_property",
        ),
        (
            json!({"kind": "TrendsQuery", "series": [series(json!({}))],
                   "dateRange": {"date_from": "last tuesday"}}),
            "query.dateRange.date_from",
        ),
        (
            json!({"kind": "TrendsQuery", "series": [series(json!({}))], "interval": "fortnight"}),
            "query.interval",
        ),
        (
            json!({"kind": "FunnelsQuery", "series": [series(json!({}))]}),
            "query.series",
        ),
        (
            json!({"kind": "EventsQuery", "select": ["event"], "limit": -1}),
            "query.limit",
        ),
        (
            json!({"kind": "RetentionQuery", "retentionFilter": {"period": "Decade"}}),
            "query.retentionFilter.period",
        ),
        (
            json!({"kind": "TrendsQuery", "series": [series(json!({}))], "dateRage": {}}),
            "query.dateRage",
        ),
        (
            json!({"kind": "TrendsQuery", "series": [series(json!({"evnt": "x"}))]}),
            "query.series[0].evnt",
        ),
    ];
    for (node, attr) in cases {
        let (status, body) = post(
            &world,
            &path,
            world.admin_key(),
            json!({"query": node, "refresh": "force_blocking"}),
        )
        .await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{node}: {body}");
        let (_, found) = error_shape(&body);
        assert_eq!(body["type"], "validation_error", "{node}: {body}");
        assert_eq!(found.as_deref(), Some(attr), "{node}: {body}");
    }
    // An expression that tries to reach past its slot is refused, not run.
    let (status, body) = post(
        &world,
        &path,
        world.admin_key(),
        json!({"query": {"kind": "EventsQuery", "select": ["1) from persons where (1"]},
               "refresh": "force_blocking"}),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
}
