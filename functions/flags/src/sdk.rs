//! `/flags/` and `/decide/`: evaluation for PostHog's SDKs. OWNER: SDK helper.

use axum::extract::State;
use axum::response::Response;
use common::AppState;
use common::error::{ApiError, ApiResult};

pub async fn flags(State(_state): State<AppState>) -> ApiResult<Response> {
    Err(ApiError::not_found())
}
pub async fn decide(State(_state): State<AppState>) -> ApiResult<Response> {
    Err(ApiError::not_found())
}
