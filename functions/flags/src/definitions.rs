//! Flag definitions for server SDKs' local evaluation. OWNER: SDK helper.

use axum::extract::{Path, State};
use axum::response::Response;
use common::AppState;
use common::error::{ApiError, ApiResult};

pub async fn for_token(State(_state): State<AppState>) -> ApiResult<Response> {
    Err(ApiError::not_found())
}
pub async fn for_project(
    State(_state): State<AppState>,
    Path(_project): Path<String>,
) -> ApiResult<Response> {
    Err(ApiError::not_found())
}
