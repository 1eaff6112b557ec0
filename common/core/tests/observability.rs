//! Request ids, the request span on every log line, and server errors logged once where they
//! are answered, through the app every entry point serves (`common::http::finish`) and the
//! JSON format Lambda logs in (`common::telemetry::json`).

use std::io;
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::body::Body;
use axum::http::{Request, StatusCode};
use axum::routing::get;
use common::ApiError;
use common::testing::TestState;
use serde_json::Value;
use tower::ServiceExt;
use tracing_subscriber::EnvFilter;
use tracing_subscriber::fmt::MakeWriter;

/// Log lines written into memory.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl Captured {
    fn lines(&self) -> Vec<Value> {
        let bytes = self.0.lock().expect("log buffer").clone();
        String::from_utf8(bytes)
            .expect("utf-8 log")
            .lines()
            .map(|line| serde_json::from_str(line).expect("a JSON log line"))
            .collect()
    }
}

impl io::Write for Captured {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        self.0.lock().expect("log buffer").extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl<'a> MakeWriter<'a> for Captured {
    type Writer = Captured;

    fn make_writer(&'a self) -> Self::Writer {
        self.clone()
    }
}

/// A cause with a cause, as a storage failure would come.
#[derive(Debug, thiserror::Error)]
#[error("cannot read the widget")]
struct WidgetError(#[source] io::Error);

async fn broken() -> Result<String, ApiError> {
    tracing::warn!("about to fail");
    Err(ApiError::internal(WidgetError(io::Error::other(
        "disk on fire",
    ))))
}

async fn panics() -> String {
    panic!("the handler gave up")
}

async fn app() -> (common::http::App, TestState) {
    let test = TestState::embedded().await;
    let routes = Router::new()
        .route("/widgets/{id}", get(broken))
        .route("/panics", get(panics));
    (common::http::finish(routes, test.state.clone()), test)
}

async fn send(
    app: &common::http::App,
    uri: &str,
    id: Option<&str>,
) -> (StatusCode, Option<String>, Value) {
    let mut request = Request::get(uri);
    if let Some(id) = id {
        request = request.header("x-request-id", id);
    }
    let response = app
        .clone()
        .oneshot(request.body(Body::empty()).expect("request"))
        .await
        .expect("infallible");
    let status = response.status();
    let id = response
        .headers()
        .get("x-request-id")
        .map(|value| value.to_str().expect("ascii id").to_owned());
    let body = axum::body::to_bytes(response.into_body(), usize::MAX)
        .await
        .expect("body");
    let body = serde_json::from_slice(&body).unwrap_or(Value::Null);
    (status, id, body)
}

/// The request span's fields on a JSON line.
fn request_span(line: &Value) -> &Value {
    line["spans"]
        .as_array()
        .and_then(|spans| spans.iter().find(|span| span["name"] == "request"))
        .unwrap_or_else(|| panic!("no request span on {line}"))
}

fn errors(lines: &[Value]) -> Vec<&Value> {
    lines
        .iter()
        .filter(|line| line["level"] == "ERROR")
        .collect()
}

#[tokio::test]
async fn every_response_carries_a_request_id_and_a_given_one_is_kept() {
    let (app, _test) = app().await;
    let (status, id, _) = send(&app, "/_health", None).await;
    assert_eq!(status, StatusCode::OK);
    let id = id.expect("a generated x-request-id");
    assert!(uuid::Uuid::parse_str(&id).is_ok(), "{id} is not a UUID");

    let (_, again, _) = send(&app, "/_health", None).await;
    assert_ne!(again.as_deref(), Some(id.as_str()), "ids are per request");

    let (_, kept, _) = send(&app, "/_health", Some("client-chosen-42")).await;
    assert_eq!(kept.as_deref(), Some("client-chosen-42"));

    // One too long to put on every log line is replaced.
    let long = "x".repeat(500);
    let (_, replaced, _) = send(&app, "/_health", Some(&long)).await;
    let replaced = replaced.expect("an x-request-id");
    assert!(uuid::Uuid::parse_str(&replaced).is_ok(), "{replaced}");

    // Fallbacks and error answers carry it too.
    let (status, id, body) = send(&app, "/nowhere", Some("lost-1")).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(body["code"], "not_found");
    assert_eq!(id.as_deref(), Some("lost-1"));
}

#[tokio::test]
async fn a_server_error_is_logged_once_with_its_request_route_and_causes() {
    let (app, _test) = app().await;
    let captured = Captured::default();
    let subscriber = common::telemetry::json(EnvFilter::new("info"), captured.clone());
    let _guard = tracing::subscriber::set_default(subscriber);

    let (status, id, body) = send(&app, "/widgets/7/", Some("req-500")).await;
    assert_eq!(status, StatusCode::INTERNAL_SERVER_ERROR);
    assert_eq!(id.as_deref(), Some("req-500"));
    // The caller sees the error shape and nothing of the cause.
    assert_eq!(body["type"], "server_error");
    assert_eq!(body["detail"], "A server error occurred.");
    assert!(!body.to_string().contains("fire"), "{body}");

    let lines = captured.lines();
    let errors = errors(&lines);
    assert_eq!(errors.len(), 1, "one error line: {lines:#?}");
    let error = errors[0];
    assert_eq!(
        error["fields"]["cause"],
        "cannot read the widget: disk on fire"
    );
    assert_eq!(error["fields"]["status"], 500);
    let span = request_span(error);
    assert_eq!(span["request_id"], "req-500");
    assert_eq!(span["method"], "GET");
    assert_eq!(span["route"], "/widgets/{id}");

    // Every line of the request carries the span: the handler's own and the access line.
    let warning = lines
        .iter()
        .find(|line| line["fields"]["message"] == "about to fail")
        .expect("the handler's line");
    assert_eq!(request_span(warning)["request_id"], "req-500");
    let finished = lines
        .iter()
        .find(|line| line["fields"]["message"] == "finished processing request")
        .expect("the access line");
    assert_eq!(finished["fields"]["status"], 500);
    assert_eq!(request_span(finished)["route"], "/widgets/{id}");
}

#[tokio::test]
async fn a_panic_is_logged_once_in_its_request_span_and_answers_500() {
    let (app, _test) = app().await;
    common::telemetry::log_panics();
    let captured = Captured::default();
    let subscriber = common::telemetry::json(EnvFilter::new("info"), captured.clone());
    let _guard = tracing::subscriber::set_default(subscriber);

    let (status, id, body) = send(&app, "/panics", Some("req-panic")).await;
    assert_eq!(status, StatusCode::INTERNAL_SERVER_ERROR);
    assert_eq!(id.as_deref(), Some("req-panic"));
    assert_eq!(body["code"], "error");
    assert!(!body.to_string().contains("gave up"), "{body}");

    let lines = captured.lines();
    let errors = errors(&lines);
    assert_eq!(errors.len(), 1, "one error line: {lines:#?}");
    let error = errors[0];
    assert_eq!(error["fields"]["panic"], "the handler gave up");
    assert!(
        error["fields"]["location"]
            .as_str()
            .is_some_and(|location| location.contains("observability.rs")),
        "{error}"
    );
    let span = request_span(error);
    assert_eq!(span["request_id"], "req-panic");
    assert_eq!(span["route"], "/panics");
}
