//! Flag definitions for server SDKs' local evaluation: `GET /api/feature_flag/local_evaluation/`
//! and `GET /flags/definitions` (what posthog-python 7.x polls, with `?token=` and an ETag), and
//! `GET /api/projects/:id/feature_flags/local_evaluation/`. A personal API key with
//! `feature_flag:read` whose user belongs to the project's organization.
//!
//! The answer holds every non-deleted flag, active or not, as PostHog's `local_evaluation` does (an
//! inactive flag evaluates to false locally, and flag dependencies can name it). `cohorts` holds
//! the definitions of the person-property cohorts the flags name (nested ones included), keyed
//! by id, as posthog-python's `match_cohort` reads them; static and behavioural cohorts are left
//! out, so an SDK meeting one asks `/flags` (`RequiresServerEvaluation`) instead of guessing.

use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use cohort_core::definition::Node;
use common::error::{ApiError, ApiResult};
use common::models::{Project, Scope};
use common::project_tokens::{self, TokenError};
use common::{AppState, Authenticated};
use feature_flags::cache::{self, ProjectFlags};
use feature_flags::matching::PROPERTY_MATCHING_VERSION;
use feature_flags::model::{EvaluationRuntime, FlagFilters};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;

/// The query string SDKs send (`?token=phc_...&send_cohorts`); other parameters are ignored.
#[derive(Deserialize)]
pub struct DefinitionsQuery {
    #[serde(default)]
    token: Option<String>,
}

/// The project a `?token=` names (else the caller's current project).
pub async fn for_token(
    State(state): State<AppState>,
    auth: Authenticated,
    Query(query): Query<DefinitionsQuery>,
    headers: HeaderMap,
) -> ApiResult<Response> {
    let scope = Scope::read("feature_flag");
    auth.require(scope)?;
    let token = query.token.filter(|token| !token.is_empty());
    let raw_id = match token {
        Some(token) => project_tokens::lookup(&state, Some(&token))
            .await?
            .map_err(TokenError::into_api_error)?
            .to_string(),
        None => "@current".to_owned(),
    };
    let project = auth.project(state.store.as_ref(), &raw_id, scope).await?;
    answer(&state, &project, &headers).await
}

pub async fn for_project(
    State(state): State<AppState>,
    auth: Authenticated,
    Path(project): Path<String>,
    headers: HeaderMap,
) -> ApiResult<Response> {
    let project = auth
        .project(state.store.as_ref(), &project, Scope::read("feature_flag"))
        .await?;
    answer(&state, &project, &headers).await
}

/// One flag as the SDKs' local matchers read it (PostHog's `MinimalFeatureFlagSerializer`).
#[derive(Serialize)]
struct LocalFlag<'a> {
    id: i64,
    team_id: i64,
    name: &'a str,
    key: &'a str,
    filters: &'a FlagFilters,
    deleted: bool,
    active: bool,
    ensure_experience_continuity: bool,
    /// Payloads are stored as given, never encrypted here.
    has_encrypted_payloads: bool,
    version: u64,
    evaluation_runtime: EvaluationRuntime,
    evaluation_tags: &'a [String],
}

#[derive(Serialize)]
struct Definitions<'a> {
    flags: Vec<LocalFlag<'a>>,
    group_type_mapping: &'a BTreeMap<i64, String>,
    cohorts: BTreeMap<String, &'a Node>,
    property_matching_version: u8,
}

fn render(project: &ProjectFlags) -> Result<Vec<u8>, serde_json::Error> {
    serde_json::to_vec(&Definitions {
        flags: project
            .flags
            .flags()
            .iter()
            .filter(|flag| !flag.is_survey_flag())
            .map(|flag| LocalFlag {
                id: flag.id,
                team_id: flag.team_id,
                name: &flag.name,
                key: &flag.key,
                filters: &flag.filters,
                deleted: flag.deleted,
                active: flag.active,
                ensure_experience_continuity: flag.ensure_experience_continuity,
                has_encrypted_payloads: false,
                version: flag.version,
                evaluation_runtime: flag.evaluation_runtime,
                evaluation_tags: &flag.evaluation_tags,
            })
            .collect(),
        group_type_mapping: &project.group_types,
        cohorts: project.flags.local_cohorts(),
        property_matching_version: PROPERTY_MATCHING_VERSION,
    })
}

/// A strong ETag of the body: equal bodies, equal tags, in every process and build.
fn etag(body: &[u8]) -> String {
    format!("\"{}\"", hex::encode(&Sha256::digest(body)[..16]))
}

/// Whether `If-None-Match` names `tag` (or `*`); weak tags compare by their value.
fn matches(headers: &HeaderMap, tag: &str) -> bool {
    headers
        .get_all(header::IF_NONE_MATCH)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(','))
        .map(|candidate| candidate.trim().trim_start_matches("W/"))
        .any(|candidate| candidate == "*" || candidate == tag)
}

async fn answer(state: &AppState, project: &Project, headers: &HeaderMap) -> ApiResult<Response> {
    let flags = cache::project_flags(state, project.id).await?;
    let body = render(&flags).map_err(ApiError::internal)?;
    let tag = etag(&body);
    if matches(headers, &tag) {
        return Ok((StatusCode::NOT_MODIFIED, [(header::ETAG, tag)]).into_response());
    }
    Ok((
        [
            (header::CONTENT_TYPE, "application/json".to_owned()),
            (header::ETAG, tag),
        ],
        body,
    )
        .into_response())
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    #[test]
    fn if_none_match_compares_tags() {
        let tag = etag(b"{}");
        assert_eq!(tag, etag(b"{}"));
        assert_ne!(tag, etag(b"{ }"));
        let mut headers = HeaderMap::new();
        assert!(!matches(&headers, &tag));
        headers.insert(
            header::IF_NONE_MATCH,
            HeaderValue::from_str(&format!("\"other\", W/{tag}")).unwrap(),
        );
        assert!(matches(&headers, &tag));
    }
}
