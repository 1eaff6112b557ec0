//! Project API token (`phc_...`) to project id, cached briefly in the state's cache: capture and
//! `/flags` are the hottest paths, and a token names the same project for its whole life (a
//! rotated token stops working here within [`CACHE_FOR`]).

use std::sync::Arc;

use axum::http::StatusCode;
use chrono::Duration;

use crate::error::{ApiError, ApiResult, ErrorType};
use crate::models::Project;
use crate::state::AppState;

pub const CACHE_FOR: Duration = Duration::seconds(30);
const KIND: &str = "project_token";

/// Why a token names no project.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenError {
    Missing,
    Unknown,
}

impl TokenError {
    /// Capture's 401, in PostHog's words.
    pub fn into_api_error(self) -> ApiError {
        let detail = match self {
            TokenError::Missing => {
                "API key not provided. You can find your project API key in your project settings."
            }
            TokenError::Unknown => {
                "Project API key invalid. You can find your project API key in your project settings."
            }
        };
        invalid_api_key(detail)
    }
}

/// A 401 `invalid_api_key` with `detail`.
pub fn invalid_api_key(detail: &str) -> ApiError {
    ApiError::new(
        StatusCode::UNAUTHORIZED,
        ErrorType::AuthenticationError,
        "invalid_api_key",
        detail,
    )
}

/// The project id a token names. The outer error is the Store's, the inner one the token's.
pub async fn lookup(state: &AppState, token: Option<&str>) -> ApiResult<Result<i64, TokenError>> {
    let Some(token) = token.map(str::trim).filter(|t| !t.is_empty()) else {
        return Ok(Err(TokenError::Missing));
    };
    let now = state.clock.now();
    if let Some(id) = state.cache.get::<i64>(KIND, token, now) {
        return Ok(Ok(*id));
    }
    // Unknown tokens are not cached: a project made a moment later must work at once.
    let Some(project) = Project::by_api_token(state.store.as_ref(), token).await? else {
        return Ok(Err(TokenError::Unknown));
    };
    state
        .cache
        .insert(KIND, token, Arc::new(project.id), CACHE_FOR, now);
    Ok(Ok(project.id))
}

/// The project id a token names; capture's 401 in PostHog's words when it names none.
pub async fn project_for(state: &AppState, token: Option<&str>) -> ApiResult<i64> {
    lookup(state, token)
        .await?
        .map_err(TokenError::into_api_error)
}
