//! Project API token (`phc_...`) to project id, cached briefly: capture is the hottest path.

use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use common::AppState;
use common::error::{ApiError, ApiResult};
use common::models::Project;

const CACHE_FOR: Duration = Duration::from_secs(30);
const CACHE_ENTRIES: usize = 10_000;

fn cache() -> &'static Mutex<HashMap<String, (i64, Instant)>> {
    static CACHE: OnceLock<Mutex<HashMap<String, (i64, Instant)>>> = OnceLock::new();
    CACHE.get_or_init(Default::default)
}

fn invalid(detail: &str) -> ApiError {
    ApiError::new(
        axum::http::StatusCode::UNAUTHORIZED,
        common::error::ErrorType::AuthenticationError,
        "invalid_api_key",
        detail,
    )
}

/// The project id a token names; 401 in PostHog's words when it names none.
pub async fn project_for(state: &AppState, token: Option<&str>) -> ApiResult<i64> {
    let Some(token) = token.map(str::trim).filter(|t| !t.is_empty()) else {
        return Err(invalid(
            "API key not provided. You can find your project API key in your project settings.",
        ));
    };
    if let Ok(cache) = cache().lock()
        && let Some((id, at)) = cache.get(token)
        && at.elapsed() < CACHE_FOR
    {
        return Ok(*id);
    }
    let Some(project) = Project::by_api_token(state.store.as_ref(), token).await? else {
        return Err(invalid(
            "Project API key invalid. You can find your project API key in your project settings.",
        ));
    };
    if let Ok(mut cache) = cache().lock() {
        if cache.len() >= CACHE_ENTRIES {
            cache.clear();
        }
        cache.insert(token.to_owned(), (project.id, Instant::now()));
    }
    Ok(project.id)
}
