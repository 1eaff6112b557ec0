//! posthog-js's remote config: `GET /array/:token/config.js` (a script that sets
//! `window._POSTHOG_REMOTE_CONFIG[token]`, what the SDK loads first) and `GET /array/:token/config`
//! (the same config as JSON, its fallback). After applying it posthog-js calls `/flags` unless
//! `hasFeatureFlags` is `false`, and fetches `/api/surveys/` when `surveys` is on.
//!
//! The keys are PostHog's `RemoteConfig`'s; what this service does not have (session recording,
//! heatmaps, dead clicks, exception autocapture, site apps) is off, so the SDK asks for nothing
//! that would fail. Authenticated by the token in the path, as PostHog's CDN copy is public.

use axum::extract::{Path, State};
use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};
use common::AppState;
use common::error::{ApiError, ApiResult};
use common::project_tokens::{self, TokenError};
use feature_flags::cache;
use serde::Serialize;

/// Browsers and CDNs may keep the config this long: a flag made now reaches pages within it.
const CACHE_CONTROL: &str = "public, max-age=60";

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct RemoteConfig<'a> {
    token: &'a str,
    supported_compression: [&'static str; 2],
    has_feature_flags: bool,
    capture_dead_clicks: bool,
    capture_performance: bool,
    /// PostHog spells this one in snake case.
    #[serde(rename = "autocapture_opt_out")]
    autocapture_opt_out: bool,
    autocapture_exceptions: bool,
    analytics: Analytics,
    /// Autocapture sends `$elements_chain` as PostHog's string, which capture stores as is.
    elements_chain_as_string: bool,
    session_recording: bool,
    heatmaps: bool,
    surveys: bool,
    default_identified_only: bool,
    site_apps: [(); 0],
}

#[derive(Debug, Serialize)]
struct Analytics {
    endpoint: &'static str,
}

/// `GET /array/:token/config`.
pub async fn json(State(state): State<AppState>, Path(token): Path<String>) -> ApiResult<Response> {
    let body = serde_json::to_string(&config(&state, &token).await?).map_err(ApiError::internal)?;
    Ok(respond("application/json", body))
}

/// `GET /array/:token/config.js`.
pub async fn script(
    State(state): State<AppState>,
    Path(token): Path<String>,
) -> ApiResult<Response> {
    let config =
        serde_json::to_string(&config(&state, &token).await?).map_err(ApiError::internal)?;
    // Both strings are JSON, so nothing in them can end the script early but `</script>`,
    // which JSON may carry: escape `<` as JSON allows.
    let key = serde_json::to_string(&token)
        .map_err(ApiError::internal)?
        .replace('<', "\\u003c");
    let config = config.replace('<', "\\u003c");
    let body = format!(
        "(function() {{\n  window._POSTHOG_REMOTE_CONFIG = window._POSTHOG_REMOTE_CONFIG || {{}};\n  \
         window._POSTHOG_REMOTE_CONFIG[{key}] = {{\n    config: {config},\n    siteApps: []\n  }};\n}})();\n"
    );
    Ok(respond("application/javascript", body))
}

async fn config<'a>(state: &AppState, token: &'a str) -> ApiResult<RemoteConfig<'a>> {
    let team_id = match project_tokens::lookup(state, Some(token)).await? {
        Ok(team_id) => team_id,
        Err(TokenError::Missing | TokenError::Unknown) => {
            return Err(ApiError::not_found_detail("No project has this token."));
        }
    };
    let project = cache::project_flags(state, team_id)
        .await
        .map_err(ApiError::from)?;
    Ok(RemoteConfig {
        token,
        supported_compression: ["gzip", "gzip-js"],
        has_feature_flags: project.any_active(),
        capture_dead_clicks: false,
        capture_performance: false,
        autocapture_opt_out: false,
        autocapture_exceptions: false,
        analytics: Analytics {
            endpoint: "/i/v0/e/",
        },
        elements_chain_as_string: true,
        session_recording: false,
        heatmaps: false,
        surveys: project.any_running_survey(),
        default_identified_only: true,
        site_apps: [],
    })
}

fn respond(content_type: &'static str, body: String) -> Response {
    let mut response = body.into_response();
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    headers.insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static(CACHE_CONTROL),
    );
    response
}
