//! Every non-2xx answer is `{"type","code","detail","attr"}`, as PostHog's drf-exceptions-hog renders it.
//!
//! A 5xx is logged exactly once, when it becomes a response (inside the request's span, so the line
//! carries the request id, method and route), with its whole chain of causes. Constructors never
//! log: an error that is mapped or retried before it reaches a response is not noise in the log.

use std::error::Error;
use std::fmt;
use std::sync::Arc;

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Serialize;

use crate::store::StoreError;

/// The `type` field of an error body.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorType {
    ValidationError,
    AuthenticationError,
    InvalidRequest,
    ThrottledError,
    ServerError,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ErrorBody {
    #[serde(rename = "type")]
    pub kind: ErrorType,
    pub code: String,
    pub detail: String,
    pub attr: Option<String>,
}

/// What went wrong on our side behind an error answer: for the log, never for the body.
pub type Cause = Arc<dyn Error + Send + Sync>;

/// An error that knows its HTTP status and its PostHog-shaped body.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{status} {}: {}", body.code, body.detail)]
pub struct ApiError {
    pub status: StatusCode,
    pub body: ErrorBody,
    /// Seconds for a `Retry-After` header (throttling).
    pub retry_after: Option<u64>,
    /// The typed cause (shared, so the error stays `Clone`).
    #[source]
    cause: Option<Cause>,
}

/// Two errors are equal when they answer the same; the cause is not part of the answer.
impl PartialEq for ApiError {
    fn eq(&self, other: &Self) -> bool {
        self.status == other.status
            && self.body == other.body
            && self.retry_after == other.retry_after
    }
}

impl Eq for ApiError {}

pub type ApiResult<T> = Result<T, ApiError>;

impl ApiError {
    pub fn new(status: StatusCode, kind: ErrorType, code: &str, detail: impl Into<String>) -> Self {
        Self {
            status,
            body: ErrorBody {
                kind,
                code: code.to_owned(),
                detail: detail.into(),
                attr: None,
            },
            retry_after: None,
            cause: None,
        }
    }

    /// Keeps `cause` for the log (a 5xx logs it with its own sources when it is answered).
    pub fn with_source(mut self, cause: impl Into<Box<dyn Error + Send + Sync>>) -> Self {
        self.cause = Some(Arc::from(cause.into()));
        self
    }

    /// [`Self::with_source`] for a cause that is already shared.
    pub fn with_shared_source(mut self, cause: Cause) -> Self {
        self.cause = Some(cause);
        self
    }

    pub fn with_attr(mut self, attr: impl Into<String>) -> Self {
        self.body.attr = Some(attr.into());
        self
    }

    /// 400 for a field that failed validation; `attr` names the field.
    pub fn validation(attr: impl Into<String>, detail: impl Into<String>) -> Self {
        Self::new(
            StatusCode::BAD_REQUEST,
            ErrorType::ValidationError,
            "invalid_input",
            detail,
        )
        .with_attr(attr)
    }

    /// 400 for a field, with DRF's specific code (`blank`, `max_length`, `invalid_choice`, ...).
    pub fn field(attr: impl Into<String>, code: &str, detail: impl Into<String>) -> Self {
        Self::new(
            StatusCode::BAD_REQUEST,
            ErrorType::ValidationError,
            code,
            detail,
        )
        .with_attr(attr)
    }

    /// 400 with a specific code and no field.
    pub fn bad_request(code: &str, detail: impl Into<String>) -> Self {
        Self::new(
            StatusCode::BAD_REQUEST,
            ErrorType::ValidationError,
            code,
            detail,
        )
    }

    pub fn required(attr: &str) -> Self {
        Self::new(
            StatusCode::BAD_REQUEST,
            ErrorType::ValidationError,
            "required",
            "This field is required.",
        )
        .with_attr(attr)
    }

    pub fn parse_error(detail: impl Into<String>) -> Self {
        Self::new(
            StatusCode::BAD_REQUEST,
            ErrorType::InvalidRequest,
            "parse_error",
            detail,
        )
    }

    pub fn not_authenticated() -> Self {
        Self::new(
            StatusCode::UNAUTHORIZED,
            ErrorType::AuthenticationError,
            "not_authenticated",
            "Authentication credentials were not provided.",
        )
    }

    pub fn authentication_failed(detail: impl Into<String>) -> Self {
        Self::new(
            StatusCode::UNAUTHORIZED,
            ErrorType::AuthenticationError,
            "authentication_failed",
            detail,
        )
    }

    pub fn permission_denied(detail: impl Into<String>) -> Self {
        Self::new(
            StatusCode::FORBIDDEN,
            ErrorType::AuthenticationError,
            "permission_denied",
            detail,
        )
    }

    pub fn not_found() -> Self {
        Self::not_found_detail("Not found.")
    }

    pub fn not_found_detail(detail: impl Into<String>) -> Self {
        Self::new(
            StatusCode::NOT_FOUND,
            ErrorType::InvalidRequest,
            "not_found",
            detail,
        )
    }

    pub fn method_not_allowed(method: &str) -> Self {
        Self::new(
            StatusCode::METHOD_NOT_ALLOWED,
            ErrorType::InvalidRequest,
            "method_not_allowed",
            format!("Method \"{method}\" not allowed."),
        )
    }

    pub fn unsupported_media_type(content_type: &str) -> Self {
        Self::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            ErrorType::InvalidRequest,
            "unsupported_media_type",
            format!("Unsupported media type \"{content_type}\" in request."),
        )
    }

    pub fn payload_too_large(limit_bytes: usize) -> Self {
        Self::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            ErrorType::InvalidRequest,
            "payload_too_large",
            format!("Request body is larger than {limit_bytes} bytes."),
        )
    }

    pub fn conflict(detail: impl Into<String>) -> Self {
        Self::new(
            StatusCode::CONFLICT,
            ErrorType::ServerError,
            "conflict",
            detail,
        )
    }

    pub fn throttled(retry_after_seconds: u64) -> Self {
        let mut error = Self::new(
            StatusCode::TOO_MANY_REQUESTS,
            ErrorType::ThrottledError,
            "throttled",
            format!("Request was throttled. Expected available in {retry_after_seconds} seconds."),
        );
        error.retry_after = Some(retry_after_seconds);
        error
    }

    /// 500 whose detail never carries internals. `cause` (a typed error, whose sources are kept,
    /// or a message) goes to the log when the response is made.
    pub fn internal(cause: impl Into<Box<dyn Error + Send + Sync>>) -> Self {
        Self::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            ErrorType::ServerError,
            "error",
            "A server error occurred.",
        )
        .with_source(cause)
    }

    /// The response without logging: for a failure that was already logged where it happened
    /// (a panic, by the panic hook).
    pub(crate) fn into_response_unlogged(self) -> Response {
        let mut response = (self.status, axum::Json(&self.body)).into_response();
        if let Some(seconds) = self.retry_after {
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(seconds));
        }
        response
    }

    /// The one log line of a 5xx: status, code and the cause chain (the detail when there is no
    /// cause). Method, route and request id come from the request's span.
    fn log(&self) {
        let cause = match &self.cause {
            Some(cause) => Chain(cause.as_ref()).to_string(),
            None => self.body.detail.clone(),
        };
        tracing::error!(
            status = self.status.as_u16(),
            code = %self.body.code,
            %cause,
            "server error"
        );
    }
}

/// An error and its sources on one line, `outer: inner: root`. Many errors (object_store's,
/// DataFusion's) already print their source in their own message: a cause whose text is already
/// on the line is not repeated.
pub struct Chain<'a>(pub &'a (dyn Error + 'static));

impl fmt::Display for Chain<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut line = self.0.to_string();
        let mut source = self.0.source();
        while let Some(cause) = source {
            let text = cause.to_string();
            if !line.contains(&text) {
                line.push_str(": ");
                line.push_str(&text);
            }
            source = cause.source();
        }
        f.write_str(&line)
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        if self.status.is_server_error() {
            self.log();
        }
        self.into_response_unlogged()
    }
}

impl From<StoreError> for ApiError {
    fn from(error: StoreError) -> Self {
        match error {
            StoreError::ConditionFailed => {
                Self::conflict("The object was changed by another request; retry.")
            }
            StoreError::InvalidCursor => Self::validation("cursor", "Invalid cursor."),
            other => Self::internal(other),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, thiserror::Error)]
    #[error("cannot save")]
    struct Outer(#[source] std::io::Error);

    #[test]
    fn an_internal_error_keeps_its_causes_and_shows_none() {
        let error = ApiError::internal(Outer(std::io::Error::other("disk full")));
        assert_eq!(error.body.detail, "A server error occurred.");
        let source = error.source().expect("the cause is kept");
        assert_eq!(Chain(source).to_string(), "cannot save: disk full");
        assert_eq!(
            Chain(&error).to_string(),
            "500 Internal Server Error error: A server error occurred.: cannot save: disk full"
        );
        // A cause that already prints its source is not repeated.
        #[derive(Debug, thiserror::Error)]
        #[error("cannot stage: {0}")]
        struct Verbose(#[source] std::io::Error);
        let error = ApiError::internal(Verbose(std::io::Error::other("not a directory")));
        let source = error.source().expect("the cause is kept");
        assert_eq!(Chain(source).to_string(), "cannot stage: not a directory");
        // Equal answers are equal errors, whatever caused them.
        assert_eq!(error, ApiError::internal("something else"));
        assert_ne!(error, ApiError::not_found());
    }
}
