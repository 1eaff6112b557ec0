//! Engine errors as PostHog answers them.

use axum::http::StatusCode;
use common::ApiError;
use common::error::ErrorType;
use engine::QueryError;

pub fn api_error(error: &QueryError) -> ApiError {
    match error {
        QueryError::Syntax(message) | QueryError::Query(message) => ApiError::new(
            StatusCode::BAD_REQUEST,
            ErrorType::ValidationError,
            error.code(),
            message.clone(),
        ),
        QueryError::Invalid { attr, detail } => {
            ApiError::field(format!("query.{attr}"), "invalid_input", detail.clone())
        }
        QueryError::Timeout | QueryError::Memory => ApiError::new(
            StatusCode::GATEWAY_TIMEOUT,
            ErrorType::ServerError,
            "error",
            error.to_string(),
        ),
        QueryError::Cancelled => ApiError::new(
            StatusCode::BAD_REQUEST,
            ErrorType::ValidationError,
            "query_cancelled",
            error.to_string(),
        ),
        QueryError::ClusterUnavailable(_) => ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            ErrorType::ServerError,
            "cluster_unavailable",
            error.to_string(),
        ),
        QueryError::Internal(cause) => ApiError::internal(cause.clone()),
    }
}

/// Whether the message may be shown to the caller (everything but internal failures).
pub fn exposed_message(error: &QueryError) -> Option<String> {
    match error {
        QueryError::Internal(_) => None,
        other => Some(other.to_string()),
    }
}

/// ClickHouse-style status and exception name for the query log.
pub fn log_exception(error: &QueryError, before_start: bool) -> (&'static str, &'static str, i64) {
    let status = if before_start {
        "ExceptionBeforeStart"
    } else {
        "ExceptionWhileProcessing"
    };
    let (name, code) = match error {
        QueryError::Syntax(_) => ("SYNTAX_ERROR", 62),
        QueryError::Query(_) | QueryError::Invalid { .. } => ("BAD_ARGUMENTS", 36),
        QueryError::Timeout => ("TIMEOUT_EXCEEDED", 159),
        QueryError::Memory => ("MEMORY_LIMIT_EXCEEDED", 241),
        QueryError::Cancelled => ("QUERY_WAS_CANCELLED", 394),
        QueryError::ClusterUnavailable(_) => ("ALL_CONNECTION_TRIES_FAILED", 279),
        QueryError::Internal(_) => ("LOGICAL_ERROR", 49),
    };
    (status, name, code)
}
