//! `/api/projects/:project_id/feature_flags/`: CRUD and the activity log. OWNER: CRUD helper.

use axum::extract::{Path, State};
use axum::response::Response;
use common::AppState;
use common::error::{ApiError, ApiResult};

pub async fn list(
    State(_state): State<AppState>,
    Path(_project): Path<String>,
) -> ApiResult<Response> {
    Err(ApiError::not_found())
}
pub async fn create(
    State(_state): State<AppState>,
    Path(_project): Path<String>,
) -> ApiResult<Response> {
    Err(ApiError::not_found())
}
pub async fn retrieve(
    State(_state): State<AppState>,
    Path(_p): Path<(String, String)>,
) -> ApiResult<Response> {
    Err(ApiError::not_found())
}
pub async fn update(
    State(_state): State<AppState>,
    Path(_p): Path<(String, String)>,
) -> ApiResult<Response> {
    Err(ApiError::not_found())
}
pub async fn destroy(
    State(_state): State<AppState>,
    Path(_p): Path<(String, String)>,
) -> ApiResult<Response> {
    Err(ApiError::not_found())
}
pub async fn activity_of_all(
    State(_state): State<AppState>,
    Path(_project): Path<String>,
) -> ApiResult<Response> {
    Err(ApiError::not_found())
}
pub async fn activity_of_one(
    State(_state): State<AppState>,
    Path(_p): Path<(String, String)>,
) -> ApiResult<Response> {
    Err(ApiError::not_found())
}
