//! axum glue shared by every route family: the JSON extractor, fallbacks, panic guard, health,
//! request ids and tracing.

use std::any::Any;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, FromRequest, MatchedPath, Request};
use axum::http::{Method, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use serde::de::DeserializeOwned;
use tower::Layer;
use tower::util::MapRequestLayer;
use tower_http::LatencyUnit;
use tower_http::catch_panic::CatchPanicLayer;
use tower_http::normalize_path::{NormalizePath, NormalizePathLayer};
use tower_http::request_id::{MakeRequestUuid, PropagateRequestIdLayer, SetRequestIdLayer};
use tower_http::trace::{DefaultOnResponse, TraceLayer};
use tracing::{Level, Span};

use crate::error::ApiError;
use crate::state::AppState;

/// A JSON request body whose every failure answers in the error shape:
/// 415 for another content type, 413 over the size limit, 400 naming the field that does not fit.
#[derive(Debug, Clone)]
pub struct Json<T>(pub T);

impl<T, S> FromRequest<S> for Json<T>
where
    T: DeserializeOwned,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request(request: Request, state: &S) -> Result<Self, ApiError> {
        let content_type = request
            .headers()
            .get(header::CONTENT_TYPE)
            .and_then(|value| value.to_str().ok())
            .unwrap_or("")
            .to_owned();
        let essence = content_type
            .split(';')
            .next()
            .unwrap_or("")
            .trim()
            .to_ascii_lowercase();
        if essence != "application/json" && !essence.ends_with("+json") {
            return Err(ApiError::unsupported_media_type(&content_type));
        }
        let limit = request
            .extensions()
            .get::<BodyLimit>()
            .map(|limit| limit.0)
            .unwrap_or(usize::MAX);
        let bytes = Bytes::from_request(request, state)
            .await
            .map_err(|rejection| {
                if rejection.status() == axum::http::StatusCode::PAYLOAD_TOO_LARGE {
                    ApiError::payload_too_large(limit)
                } else {
                    ApiError::parse_error(format!("Could not read the request body: {rejection}"))
                }
            })?;
        expect_object(&bytes)?;
        parse_json(&bytes).map(Json)
    }
}

/// Request bodies are JSON objects (DRF: "Expected a dictionary"); anything else is refused whole.
fn expect_object(bytes: &[u8]) -> Result<(), ApiError> {
    let first = bytes.iter().find(|b| !b.is_ascii_whitespace());
    if first == Some(&b'{') {
        return Ok(());
    }
    let value: serde_json::Value = parse_json(bytes)?;
    let kind = match value {
        serde_json::Value::Array(_) => "list",
        serde_json::Value::String(_) => "str",
        serde_json::Value::Number(_) => "number",
        serde_json::Value::Bool(_) => "bool",
        serde_json::Value::Null => "null",
        serde_json::Value::Object(_) => return Ok(()),
    };
    Err(ApiError::bad_request(
        "invalid_input",
        format!("Invalid data. Expected a dictionary, but got {kind}."),
    ))
}

/// An item's integer id from its path (`/experiments/7/`); anything else names no item: 404, as
/// PostHog's router answers.
pub fn item_id(raw: &str) -> Result<i64, ApiError> {
    raw.parse::<i64>().map_err(|_| ApiError::not_found())
}

/// Parses a JSON document into `T`; syntax errors are parse errors, shape errors name the field.
pub fn parse_json<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, ApiError> {
    let mut deserializer = serde_json::Deserializer::from_slice(bytes);
    let value: T = serde_path_to_error::deserialize(&mut deserializer).map_err(|error| {
        let path = error.path().to_string();
        let inner = error.into_inner();
        if inner.is_syntax() || inner.is_eof() {
            return ApiError::parse_error(format!("JSON parse error - {inner}"));
        }
        let attr = if path == "." {
            None
        } else {
            Some(path.replace('.', "__"))
        };
        let message = inner.to_string();
        let detail = message
            .split(" at line ")
            .next()
            .unwrap_or(&message)
            .to_owned();
        match attr {
            Some(attr) if detail.starts_with("missing field") => ApiError::required(&attr),
            Some(attr) => ApiError::validation(attr, detail),
            None => match detail
                .strip_prefix("missing field `")
                .and_then(|rest| rest.split('`').next())
            {
                Some(field) => ApiError::required(field),
                None => ApiError::bad_request("invalid_input", detail),
            },
        }
    })?;
    deserializer
        .end()
        .map_err(|error| ApiError::parse_error(format!("JSON parse error - {error}")))?;
    Ok(value)
}

/// The header that carries a request's id, in and out.
pub const REQUEST_ID: &str = "x-request-id";

/// The configured body limit, so the 413 can say it.
#[derive(Debug, Clone, Copy)]
struct BodyLimit(usize);

/// The app every entry point serves: a family's routes plus health, error-shaped fallbacks,
/// a body limit, a panic guard, CORS, request ids and a span per request, and optional trailing
/// slashes (PostHog routes end in `/?`).
pub type App = NormalizePath<Router>;

pub fn finish(routes: impl Into<Router<AppState>>, state: AppState) -> App {
    let limit = state.config.max_body_bytes;
    let routes: Router<AppState> = routes.into();
    let router = routes
        .route("/_health", get(health))
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .layer(axum::middleware::map_response(error_shape))
        .layer(DefaultBodyLimit::max(limit))
        .layer(axum::Extension(BodyLimit(limit)))
        .layer(CatchPanicLayer::custom(panic_response))
        .layer(crate::cors::layer(&state.config.cors_origins))
        // Outside the others, so preflights and fallbacks are traced too (router layers run after
        // routing, so the matched route is known): an id on every request (the caller's
        // `x-request-id` if it sent a usable one), a span per request that every log line inside
        // it carries, and the id echoed on the response.
        .layer(
            TraceLayer::new_for_http()
                .make_span_with(request_span)
                .on_response(
                    DefaultOnResponse::new()
                        .level(Level::INFO)
                        .latency_unit(LatencyUnit::Millis),
                )
                // A 5xx is logged once, by the ApiError that makes it, with its cause.
                .on_failure(()),
        )
        .layer(PropagateRequestIdLayer::x_request_id())
        .layer(SetRequestIdLayer::x_request_id(MakeRequestUuid))
        .layer(MapRequestLayer::new(drop_unusable_request_id))
        .with_state(state);
    NormalizePathLayer::trim_trailing_slash().layer(router)
}

/// The longest caller-chosen request id kept (it is on every log line of the request).
const MAX_REQUEST_ID: usize = 128;

/// A caller's `x-request-id` that is too long or not printable text is dropped, so one is made.
fn drop_unusable_request_id(mut request: Request) -> Request {
    let usable = request.headers().get(REQUEST_ID).map(|value| {
        value.len() <= MAX_REQUEST_ID
            && value
                .to_str()
                .is_ok_and(|id| !id.is_empty() && id.chars().all(|c| c.is_ascii_graphic()))
    });
    if usable == Some(false) {
        request.headers_mut().remove(REQUEST_ID);
    }
    request
}

/// The span of one request: its id, method and matched route (empty for a fallback).
///
/// At ERROR level so that no filter that keeps a request's error lines drops their context.
fn request_span(request: &Request) -> Span {
    let id = request
        .headers()
        .get(REQUEST_ID)
        .and_then(|value| value.to_str().ok())
        .unwrap_or("");
    let route = request
        .extensions()
        .get::<MatchedPath>()
        .map(MatchedPath::as_str);
    tracing::error_span!(
        "request",
        request_id = %id,
        method = %request.method(),
        route,
    )
}

/// Rejections axum produces itself (a path segment that is not UTF-8, a malformed query string)
/// come as plain text; rewrite them into the error shape so clients see one format.
async fn error_shape(response: Response) -> Response {
    let status = response.status();
    let is_json = response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|value| value.starts_with("application/json"));
    if !(status.is_client_error() || status.is_server_error()) || is_json {
        return response;
    }
    let body = axum::body::to_bytes(response.into_body(), 4096)
        .await
        .unwrap_or_default();
    let detail = String::from_utf8_lossy(&body).trim().to_owned();
    let kind = if status.is_server_error() {
        crate::error::ErrorType::ServerError
    } else {
        crate::error::ErrorType::InvalidRequest
    };
    let code = if status == axum::http::StatusCode::NOT_FOUND {
        "not_found"
    } else {
        "invalid_request"
    };
    let detail = if detail.is_empty() {
        status.canonical_reason().unwrap_or("Error").to_owned()
    } else {
        detail
    };
    ApiError::new(status, kind, code, detail).into_response()
}

async fn health() -> impl IntoResponse {
    axum::Json(serde_json::json!({ "status": "ok" }))
}

async fn not_found() -> ApiError {
    ApiError::not_found()
}

async fn method_not_allowed(method: Method) -> ApiError {
    ApiError::method_not_allowed(method.as_str())
}

fn panic_response(panic: Box<dyn Any + Send + 'static>) -> Response {
    let message = panic
        .downcast_ref::<String>()
        .map(String::as_str)
        .or_else(|| panic.downcast_ref::<&str>().copied())
        .unwrap_or("unknown panic");
    // The panic itself was logged where it happened (the hook `telemetry` installs, or Rust's
    // default one), with its location and inside the request's span: not again here.
    ApiError::internal(format!("handler panicked: {message}")).into_response_unlogged()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[derive(Debug, Deserialize)]
    #[allow(dead_code)]
    struct Body {
        name: String,
        nested: Option<Nested>,
    }

    #[derive(Debug, Deserialize)]
    #[allow(dead_code)]
    struct Nested {
        count: u32,
    }

    #[test]
    fn json_errors_name_the_field() {
        let error = parse_json::<Body>(b"{").unwrap_err();
        assert_eq!(error.body.code, "parse_error");
        let error = parse_json::<Body>(b"{}").unwrap_err();
        assert_eq!(
            (error.body.code.as_str(), error.body.attr.as_deref()),
            ("required", Some("name"))
        );
        let error = parse_json::<Body>(br#"{"name": 3}"#).unwrap_err();
        assert_eq!(error.body.attr.as_deref(), Some("name"));
        let error = parse_json::<Body>(br#"{"name": "a", "nested": {"count": -1}}"#).unwrap_err();
        assert_eq!(error.body.attr.as_deref(), Some("nested__count"));
        let error = parse_json::<Body>(br#"{"name": "a"} trailing"#).unwrap_err();
        assert_eq!(error.body.code, "parse_error");
        assert!(parse_json::<Body>(br#"{"name": "a"}"#).is_ok());
    }
}
