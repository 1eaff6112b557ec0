//! `filterTestAccounts` on both backends: a new project gets PostHog's default test-account
//! filter (local hosts), every insight node and HogQLFilters leave those events out when asked,
//! and a PATCHed `test_account_filters` takes effect at once.

use api_tests::{World, error_shape};
use axum::http::{Method, StatusCode};
use serde_json::{Value, json};

async fn query(world: &World, node: Value) -> (StatusCode, Value) {
    world
        .send_json(
            Method::POST,
            &format!("/api/projects/{}/query/", world.bootstrap.project.id),
            json!({"query": node, "refresh": "force_blocking"}),
        )
        .await
}

/// The total of a one-series trend.
async fn total(world: &World, filter_test_accounts: bool) -> f64 {
    let node = json!({"kind": "TrendsQuery", "dateRange": {"date_from": "-7d"},
        "filterTestAccounts": filter_test_accounts,
        "series": [{"kind": "EventsNode", "event": "$pageview", "math": "total"}]});
    let (status, body) = query(world, node).await;
    assert_eq!(status, StatusCode::OK, "{} {body}", world.name());
    body["results"][0]["count"].as_f64().unwrap()
}

#[tokio::test]
async fn test_accounts_are_left_out_when_asked() {
    for world in World::all().await {
        let name = world.name();
        let project_uri = format!("/api/projects/{}/", world.bootstrap.project.id);
        let (_, project) = world.get(&project_uri, Some(world.admin_key())).await;
        assert_eq!(
            project["test_account_filters"],
            json!([{"key": "$host", "operator": "not_regex",
                "value": "^(localhost|127\\.0\\.0\\.1)($|:)", "type": "event"}]),
            "{name}: PostHog's default"
        );

        let at = (chrono::Utc::now() - chrono::Duration::hours(2)).to_rfc3339();
        let mut events = Vec::new();
        for (host, distinct_id, times) in [
            ("shop.example", "customer", 3),
            ("localhost:3000", "developer", 2),
            ("127.0.0.1", "developer", 1),
        ] {
            for _ in 0..times {
                events.push(json!({"event": "$pageview", "distinct_id": distinct_id,
                    "timestamp": at, "properties": {"$host": host}}));
            }
        }
        // No `$host` at all: kept, as PostHog's negative filters keep a missing property.
        events.push(json!({"event": "$pageview", "distinct_id": "server", "timestamp": at}));
        events.push(
            json!({"event": "$identify", "distinct_id": "customer", "timestamp": at,
            "properties": {"$set": {"email": "ada@customer.example"}}}),
        );
        world.capture(events).await;
        lake::commit_team(&world.backend.state, world.bootstrap.project.id)
            .await
            .unwrap();

        assert_eq!(total(&world, false).await, 7.0, "{name}");
        assert_eq!(total(&world, true).await, 4.0, "{name}");

        // Other nodes and HogQLFilters take it too.
        let funnel = json!({"kind": "FunnelsQuery", "dateRange": {"date_from": "-7d"},
            "filterTestAccounts": true,
            "series": [{"kind": "EventsNode", "event": "$pageview"},
                {"kind": "EventsNode", "event": "$identify"}]});
        let (status, body) = query(&world, funnel).await;
        assert_eq!(status, StatusCode::OK, "{name} {body}");
        assert_eq!(
            body["results"][0]["count"], 2,
            "{name}: customer and server"
        );
        let sql = json!({"kind": "HogQLQuery",
            "query": "select count() from events where event = '$pageview' and {filters}",
            "filters": {"filterTestAccounts": true}});
        let (status, body) = query(&world, sql).await;
        assert_eq!(status, StatusCode::OK, "{name} {body}");
        assert_eq!(body["results"], json!([[4]]), "{name}");

        // A project's own filters, PATCHed: the customer's company is internal now.
        let (status, _) = world
            .send_json(
                Method::PATCH,
                &project_uri,
                json!({"test_account_filters": [{"key": "email", "operator": "not_icontains",
                    "value": "@customer.example", "type": "person"}]}),
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{name}");
        // The host filter is replaced; the customer's pageviews came before their e-mail.
        assert_eq!(
            total(&world, true).await,
            7.0,
            "{name}: person properties as of each event"
        );
        let node = json!({"kind": "TrendsQuery", "dateRange": {"date_from": "-7d"},
            "filterTestAccounts": true,
            "series": [{"kind": "EventsNode", "event": "$identify", "math": "total"}]});
        let (_, body) = query(&world, node).await;
        assert_eq!(
            body["results"][0]["count"], 0.0,
            "{name}: the identified customer is out"
        );

        let node = json!({"kind": "TrendsQuery", "filterTestAccounts": "yes",
            "series": [{"kind": "EventsNode", "event": "$pageview"}]});
        let (status, body) = query(&world, node).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{name} {body}");
        assert_eq!(
            error_shape(&body).1.as_deref(),
            Some("query.filterTestAccounts"),
            "{name}"
        );
    }
}
