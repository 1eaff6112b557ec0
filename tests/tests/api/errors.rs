//! Every failure answers in the error shape: unknown routes, wrong methods, content types,
//! malformed and oversized bodies, panics.

use api_tests::{World, error_shape, respond};
use axum::body::Body;
use axum::http::{Method, Request, StatusCode};
use axum::routing::get;
use common::testing::TestState;

#[tokio::test]
async fn routing_and_body_errors_use_the_error_shape() {
    for world in World::all().await {
        let name = world.name();
        let key = Some(world.admin_key());
        let project = format!("/api/projects/{}/", world.bootstrap.project.id);

        let (status, body) = world.get("/api/nothing/here/", key).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{name}");
        assert_eq!(error_shape(&body).0, "not_found", "{name}");

        let (status, body) = world
            .send(Method::DELETE, "/api/users/@me/", key, None)
            .await;
        assert_eq!(status, StatusCode::METHOD_NOT_ALLOWED, "{name}");
        assert_eq!(error_shape(&body).0, "method_not_allowed", "{name}");

        let request = Request::patch(&project)
            .header("authorization", format!("Bearer {}", world.admin_key()))
            .header("content-type", "text/plain")
            .body(Body::from("name=x"))
            .unwrap();
        let (status, body) = respond(world.app.clone(), request).await;
        assert_eq!(status, StatusCode::UNSUPPORTED_MEDIA_TYPE, "{name}");
        assert_eq!(error_shape(&body).0, "unsupported_media_type", "{name}");

        for malformed in ["{", "", "{\"name\": \"x\"} extra", "\u{0}"] {
            let (status, body) = world
                .send(Method::PATCH, &project, key, Some(malformed))
                .await;
            assert_eq!(status, StatusCode::BAD_REQUEST, "{name} {malformed:?}");
            assert_eq!(error_shape(&body).0, "parse_error", "{name} {malformed:?}");
        }

        let (status, body) = world.get("/_health", None).await;
        assert_eq!(
            (status, body["status"].as_str()),
            (StatusCode::OK, Some("ok")),
            "{name}"
        );
    }
}

#[tokio::test]
async fn oversized_bodies_are_413() {
    let mut backend = TestState::embedded().await;
    let mut config = (*backend.state.config).clone();
    config.max_body_bytes = 1024;
    backend.state.config = std::sync::Arc::new(config);
    let world = World::on(backend).await;
    let big = format!(r#"{{"name": "{}"}}"#, "x".repeat(4096));
    let project = format!("/api/projects/{}/", world.bootstrap.project.id);
    let (status, body) = world
        .send(Method::PATCH, &project, Some(world.admin_key()), Some(&big))
        .await;
    assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE);
    assert_eq!(error_shape(&body).0, "payload_too_large");
}

async fn boom() -> &'static str {
    panic!("boom")
}

#[tokio::test]
async fn a_panicking_handler_answers_500_in_the_error_shape() {
    let backend = TestState::embedded().await;
    let routes = axum::Router::new().route("/boom", get(boom));
    let app = common::http::finish(routes, backend.state.clone());
    let (status, body) = respond(app, Request::get("/boom").body(Body::empty()).unwrap()).await;
    assert_eq!(status, StatusCode::INTERNAL_SERVER_ERROR);
    assert_eq!(body["type"], "server_error");
    assert!(
        !body["detail"].as_str().unwrap().contains("boom"),
        "internals stay in the log"
    );
}

#[tokio::test]
async fn extractor_rejections_use_the_error_shape_too() {
    for world in World::all().await {
        let name = world.name();
        // A path segment that is not UTF-8 once decoded: axum's own rejection, rewritten.
        let (status, body) = world
            .get("/api/projects/%FF%FE/", Some(world.admin_key()))
            .await;
        assert!(status.is_client_error(), "{name} {status}");
        error_shape(&body);
    }
}
