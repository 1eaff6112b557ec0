//! Route family `capture`: what PostHog's SDKs send (`/e/`, `/i/v0/e/`, `/capture/`, `/batch/`,
//! `/track/`), validated whole, staged durably (an object on S3, the staging log's fsync
//! embedded), then answered `{"status": 1}`.

mod events;

pub use events::{distinct_id_fits, name_fits, normalize_one};

use axum::body::Bytes;
use axum::extract::{RawQuery, State};
use axum::http::HeaderMap;
use axum::routing::post;
use common::AppState;
use common::error::{ApiError, ApiResult};
use common::routes::Routes;
use serde_json::{Value, json};

pub const ROUTES: &[&str] = &["/i/v0/e", "/e", "/capture", "/batch", "/track"];

pub fn router() -> Routes {
    ROUTES.iter().fold(Routes::new(), |router, path| {
        router.route(path, post(capture).get(capture))
    })
}

async fn capture(
    State(state): State<AppState>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
    body: Bytes,
) -> ApiResult<axum::Json<Value>> {
    let limit = state.config.max_body_bytes;
    let document = common::sdk_body::document(&headers, query.as_deref(), &body, limit)?;
    let request = events::Request::parse(document)?;
    let project = common::project_tokens::project_for(&state, request.token.as_deref()).await?;
    let staged = request.into_staged(state.clock.now())?;
    common::staging::stage(&state, project, &staged)
        .await
        .map_err(ApiError::internal)?;
    Ok(axum::Json(json!({ "status": 1 })))
}
