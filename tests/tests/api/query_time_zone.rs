//! SQL over a project in another time zone: date functions and naive date literals follow the
//! project's calendar (as in PostHog), results are rendered in it.

use api_tests::World;
use axum::http::{Method, StatusCode};
use serde_json::{Value, json};

async fn query(world: &World, text: &str) -> Value {
    let path = format!("/api/projects/{}/query/", world.bootstrap.project.id);
    let body = json!({"query": {"kind": "HogQLQuery", "query": text}, "refresh": "force_blocking"});
    let (status, body) = world
        .send(
            Method::POST,
            &path,
            Some(world.admin_key()),
            Some(&body.to_string()),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{text}: {body}");
    body["results"].clone()
}

#[tokio::test]
async fn dates_follow_the_projects_time_zone() {
    for world in World::all().await {
        let name = world.name();
        let project = world.bootstrap.project.id;
        let (status, body) = world
            .send(
                Method::PATCH,
                &format!("/api/projects/{project}/"),
                Some(world.admin_key()),
                Some(&json!({"timezone": "America/New_York"}).to_string()),
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{name} {body}");
        // 02:00 UTC on Nov 2 is 21:00 on Nov 1 in New York (EST since that morning: midnight was
        // still EDT).
        let batch = json!({"api_key": world.bootstrap.project.api_token, "batch": [
            {"event": "late", "distinct_id": "a", "timestamp": "2026-11-02T02:00:00Z"},
            {"event": "early", "distinct_id": "a", "timestamp": "2026-11-02T05:00:00Z"},
        ]});
        let (status, body) = world
            .send(Method::POST, "/batch/", None, Some(&batch.to_string()))
            .await;
        assert_eq!(status, StatusCode::OK, "{name} {body}");
        lake::commit_all(&world.backend.state).await.unwrap();

        let rows = query(
            &world,
            "select event, timestamp, toStartOfDay(timestamp), toDate(timestamp) from events order by timestamp",
        )
        .await;
        assert_eq!(
            rows,
            json!([
                [
                    "late",
                    "2026-11-01T21:00:00-05:00",
                    "2026-11-01T00:00:00-04:00",
                    "2026-11-01"
                ],
                [
                    "early",
                    "2026-11-02T00:00:00-05:00",
                    "2026-11-02T00:00:00-05:00",
                    "2026-11-02"
                ],
            ]),
            "{name}"
        );
        // A naive literal is a New York time: 2026-11-02 00:00 local is 05:00 UTC.
        let rows = query(
            &world,
            "select count() from events where timestamp >= '2026-11-02 00:00:00'",
        )
        .await;
        assert_eq!(rows, json!([[1]]), "{name}");
    }
}
