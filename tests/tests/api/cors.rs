//! CORS as a browser needs it: posthog-js posts from a page of another origin, so capture answers
//! preflights and carries `Access-Control-Allow-Origin` for any origin (with credentials), errors
//! included; `/api/` answers only the origins listed in `ANALYTICS_CORS_ORIGINS`.

use std::sync::Arc;

use api_tests::{World, error_shape};
use axum::body::Body;
use axum::http::{HeaderMap, Method, Request, StatusCode};
use common::http::App;
use common::testing::TestState;
use http_body_util::BodyExt;
use serde_json::{Value, json};
use tower::ServiceExt;

const PAGE: &str = "https://shop.example.org";
const DASHBOARD: &str = "https://app.example.com";

async fn call(app: &App, request: Request<Body>) -> (StatusCode, HeaderMap, Value) {
    let response = app.clone().oneshot(request).await.unwrap();
    let (parts, body) = response.into_parts();
    let bytes = body.collect().await.unwrap().to_bytes();
    let value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    (parts.status, parts.headers, value)
}

fn header<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers.get(name).and_then(|value| value.to_str().ok())
}

fn preflight(path: &str, origin: &str, method: &str) -> Request<Body> {
    Request::options(path)
        .header("origin", origin)
        .header("access-control-request-method", method)
        .header(
            "access-control-request-headers",
            "content-type,x-posthog-test",
        )
        .body(Body::empty())
        .unwrap()
}

/// The bootstrapped embedded world, with `/api/` open to `origins`.
async fn world_with_api_origins(origins: &[&str]) -> World {
    let mut world = World::on(TestState::embedded().await).await;
    let mut config = (*world.backend.state.config).clone();
    config.cors_origins = origins.iter().map(|origin| origin.to_string()).collect();
    let mut state = world.backend.state.clone();
    state.config = Arc::new(config);
    world.app = local::app(state);
    world
}

#[tokio::test]
async fn capture_preflights_mirror_any_origin_with_credentials() {
    let world = world_with_api_origins(&[]).await;
    for path in [
        "/e/",
        "/e",
        "/batch/",
        "/batch",
        "/i/v0/e/",
        "/capture/",
        "/track/",
    ] {
        let (status, headers, _) = call(&world.app, preflight(path, PAGE, "POST")).await;
        assert!(status.is_success(), "{path}: {status}");
        assert_eq!(
            header(&headers, "access-control-allow-origin"),
            Some(PAGE),
            "{path}"
        );
        assert_eq!(
            header(&headers, "access-control-allow-credentials"),
            Some("true"),
            "{path}"
        );
        assert_eq!(
            header(&headers, "access-control-allow-headers"),
            Some("content-type,x-posthog-test"),
            "{path}"
        );
        let methods = header(&headers, "access-control-allow-methods").unwrap_or("");
        assert!(
            methods.split(',').any(|method| method.trim() == "POST"),
            "{path}: {methods}"
        );
        // Caches between the page and us must key the answer on the origin.
        let vary: Vec<&str> = headers
            .get_all("vary")
            .iter()
            .filter_map(|value| value.to_str().ok())
            .collect();
        assert!(
            vary.iter().any(|value| value.contains("origin")),
            "{path}: {vary:?}"
        );
    }
}

#[tokio::test]
async fn capture_answers_carry_the_origin_errors_included() {
    let world = world_with_api_origins(&[]).await;
    let token = world.bootstrap.project.api_token.clone();
    let event =
        json!({"event": "$pageview", "distinct_id": "anon-1", "properties": {"token": token}});
    let request = Request::post("/e/")
        .header("origin", PAGE)
        .header("content-type", "application/json")
        .body(Body::from(event.to_string()))
        .unwrap();
    let (status, headers, body) = call(&world.app, request).await;
    assert_eq!((status, body), (StatusCode::OK, json!({"status": 1})));
    assert_eq!(header(&headers, "access-control-allow-origin"), Some(PAGE));
    assert_eq!(
        header(&headers, "access-control-allow-credentials"),
        Some("true")
    );

    // A 400 the page must be able to read.
    let request = Request::post("/batch")
        .header("origin", PAGE)
        .header("content-type", "application/json")
        .body(Body::from("{not json"))
        .unwrap();
    let (status, headers, body) = call(&world.app, request).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    error_shape(&body);
    assert_eq!(header(&headers, "access-control-allow-origin"), Some(PAGE));

    // A 405 from the method fallback, too.
    let request = Request::delete("/e/")
        .header("origin", PAGE)
        .body(Body::empty())
        .unwrap();
    let (status, headers, body) = call(&world.app, request).await;
    assert_eq!(status, StatusCode::METHOD_NOT_ALLOWED);
    error_shape(&body);
    assert_eq!(header(&headers, "access-control-allow-origin"), Some(PAGE));

    // Without an `Origin` (a server-side SDK), nothing to allow.
    let request = Request::post("/e/")
        .header("content-type", "application/json")
        .body(Body::from(event.to_string()))
        .unwrap();
    let (status, headers, _) = call(&world.app, request).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(header(&headers, "access-control-allow-origin"), None);
}

#[tokio::test]
async fn api_routes_allow_only_the_configured_origins() {
    let get = |key: &str, origin: &str| {
        Request::get("/api/projects/@current/")
            .header("origin", origin)
            .header("authorization", format!("Bearer {key}"))
            .body(Body::empty())
            .unwrap()
    };

    // Unset: no page may call the API.
    let closed = world_with_api_origins(&[]).await;
    for origin in [PAGE, DASHBOARD] {
        let (status, headers, _) = call(&closed.app, get(closed.admin_key(), origin)).await;
        assert_eq!(status, StatusCode::OK, "{origin}");
        assert_eq!(
            header(&headers, "access-control-allow-origin"),
            None,
            "{origin}"
        );
        let (_, headers, _) =
            call(&closed.app, preflight("/api/projects/1/", origin, "PATCH")).await;
        assert_eq!(
            header(&headers, "access-control-allow-origin"),
            None,
            "{origin}"
        );
    }

    // Listed: that origin, and only that one.
    let open = world_with_api_origins(&[DASHBOARD]).await;
    let (status, headers, _) = call(&open.app, get(open.admin_key(), DASHBOARD)).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        header(&headers, "access-control-allow-origin"),
        Some(DASHBOARD)
    );
    assert_eq!(
        header(&headers, "access-control-allow-credentials"),
        Some("true")
    );
    let (status, headers, _) =
        call(&open.app, preflight("/api/projects/1/", DASHBOARD, "PATCH")).await;
    assert!(status.is_success(), "{status}");
    assert_eq!(
        header(&headers, "access-control-allow-origin"),
        Some(DASHBOARD)
    );
    let methods = header(&headers, "access-control-allow-methods").unwrap_or("");
    assert!(methods.contains("PATCH"), "{methods}");
    let (_, headers, _) = call(&open.app, get(open.admin_key(), PAGE)).await;
    assert_eq!(header(&headers, "access-control-allow-origin"), None);
    // An error answer from /api/ carries it too (a 401 the dashboard must be able to read).
    let request = Request::get("/api/projects/@current/")
        .header("origin", DASHBOARD)
        .body(Body::empty())
        .unwrap();
    let (status, headers, body) = call(&open.app, request).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    error_shape(&body);
    assert_eq!(
        header(&headers, "access-control-allow-origin"),
        Some(DASHBOARD)
    );
    // Capture stays open to every origin whatever the list says.
    let (_, headers, _) = call(&open.app, preflight("/e/", PAGE, "POST")).await;
    assert_eq!(header(&headers, "access-control-allow-origin"), Some(PAGE));
}

#[tokio::test]
async fn a_plain_options_without_preflight_headers_is_not_a_405() {
    // Some clients probe with a bare OPTIONS; it must not reach the 405 fallback either.
    let world = world_with_api_origins(&[]).await;
    let request = Request::builder()
        .method(Method::OPTIONS)
        .uri("/i/v0/e/")
        .header("origin", PAGE)
        .body(Body::empty())
        .unwrap();
    let (status, headers, _) = call(&world.app, request).await;
    assert!(status.is_success(), "{status}");
    assert_eq!(header(&headers, "access-control-allow-origin"), Some(PAGE));
}
