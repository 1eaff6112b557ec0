//! Every non-2xx answer is `{"type","code","detail","attr"}`, as PostHog's drf-exceptions-hog renders it.

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

/// An error that knows its HTTP status and its PostHog-shaped body.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{status} {}: {}", body.code, body.detail)]
pub struct ApiError {
    pub status: StatusCode,
    pub body: ErrorBody,
    /// Seconds for a `Retry-After` header (throttling).
    pub retry_after: Option<u64>,
}

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
        }
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

    /// 500 whose detail never carries internals; the cause goes to the log.
    pub fn internal(cause: impl std::fmt::Display) -> Self {
        tracing::error!(%cause, "internal error");
        Self::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            ErrorType::ServerError,
            "error",
            "A server error occurred.",
        )
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let mut response = (self.status, axum::Json(&self.body)).into_response();
        if let Some(seconds) = self.retry_after {
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(seconds));
        }
        response
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
