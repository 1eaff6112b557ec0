//! `/flags/` and `/decide/`: evaluation for PostHog's SDKs, authenticated by the project token.
//!
//! posthog-python 7.x posts `/flags/?v=4` (JSON, gzip optional); posthog-js posts `/flags/?v=2`
//! (gzip as text/plain, or a base64 form) with `flag_keys`; old SDKs post `/decide/?v=3`. The
//! shapes per route and `v` follow PostHog's flags service ([`response::Shape`]).
//!
//! On a warm cache a request makes no Store call, unless a flag has a person-property condition
//! (the stored person is read once; request properties win over it), names a static or
//! behavioural cohort (the person's membership of each is read, see [`memberships`]) or asks for
//! experience continuity (its hash-key overrides are read, see [`continuity`]).

mod continuity;
mod memberships;
mod request;
mod response;

use std::collections::BTreeMap;
use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, Method, Uri, header};
use axum::response::{IntoResponse, Response};
use common::AppState;
use common::error::{ApiError, ApiResult};
use common::models::person;
use common::project_tokens::{self, TokenError};
use feature_flags::cache::{self, ProjectFlags};
use feature_flags::{Evaluation, EvaluationError, Subject};
use serde_json::Map;
use uuid::Uuid;

use request::{Body, Query};
use response::{Answer, Config, Shape};

/// Which route was called: the shapes differ.
#[derive(Debug, Clone, Copy)]
enum Route {
    Flags,
    Decide,
}

pub async fn flags(
    State(state): State<AppState>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> ApiResult<Response> {
    answer(&state, Route::Flags, &method, &uri, &headers, &body).await
}

pub async fn decide(
    State(state): State<AppState>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> ApiResult<Response> {
    answer(&state, Route::Decide, &method, &uri, &headers, &body).await
}

async fn answer(
    state: &AppState,
    route: Route,
    method: &Method,
    uri: &Uri,
    headers: &HeaderMap,
    body: &[u8],
) -> ApiResult<Response> {
    let query = Query::parse(uri);
    let (shape, with_config) = match route {
        // PostHog answers a `/flags` that names neither `v` nor `config` as v2 with the config.
        Route::Flags => match (query.version, query.config) {
            (None, None) => (Shape::Flags, true),
            (version, config) => (
                Shape::for_flags(version.unwrap_or(1)),
                config.unwrap_or(false),
            ),
        },
        Route::Decide => (
            Shape::for_decide(query.version),
            query.config.unwrap_or(true),
        ),
    };
    let request_id = request_id(headers);
    let evaluated_at = state.clock.now().timestamp_millis();
    // A GET evaluates nothing (PostHog answers it with no flags and the config).
    if method == Method::GET || method == Method::HEAD {
        let answer = Answer {
            project: None,
            results: BTreeMap::new(),
            request_id,
            evaluated_at,
            config: Some(Config::new(false, false)),
        };
        return json(answer.render(shape));
    }

    let body = Body::decode(headers, uri.query(), body, state.config.max_body_bytes)?;
    let token = body.token.as_deref().or(query.token.as_deref());
    let team_id = project_tokens::lookup(state, token)
        .await?
        .map_err(token_error)?;
    let distinct_id = body.distinct_id()?;
    let project = cache::project_flags(state, team_id)
        .await
        .map_err(ApiError::from)?;

    let results = if body.disable_flags == Some(true) {
        BTreeMap::new()
    } else {
        evaluate(state, team_id, &project, &body, &distinct_id).await?
    };
    let answer = Answer {
        project: Some(&project),
        results,
        request_id,
        evaluated_at,
        config: with_config
            .then(|| Config::new(project.any_active(), project.any_running_survey())),
    };
    json(answer.render(shape))
}

/// PostHog's flags service's 401s, in the error shape.
fn token_error(error: TokenError) -> ApiError {
    project_tokens::invalid_api_key(match error {
        TokenError::Missing => {
            "No API token provided. Please include a valid API token in your request."
        }
        TokenError::Unknown => {
            "The provided API key is invalid or has expired. Please check your API key and try again."
        }
    })
}

async fn evaluate(
    state: &AppState,
    team_id: i64,
    project: &Arc<ProjectFlags>,
    body: &Body,
    distinct_id: &str,
) -> ApiResult<BTreeMap<String, Result<Evaluation, EvaluationError>>> {
    let empty = Map::new();
    let request_properties = body.person_properties.as_ref().unwrap_or(&empty);
    // The stored person only when a condition may read it, its cohort memberships only when a
    // flag names a static or behavioural cohort; request values win over stored ones.
    let store = state.store.as_ref();
    let needs_person = project.flags.needs_stored_person(request_properties);
    let stored_cohorts = project.flags.stored_cohorts();
    let person_id = if needs_person || !stored_cohorts.is_empty() {
        person::person_id_of(store, team_id, distinct_id).await?
    } else {
        None
    };
    let (stored, memberships) = tokio::try_join!(
        async {
            match person_id {
                Some(uuid) if needs_person => person::load(store, team_id, uuid).await,
                _ => Ok(None),
            }
        },
        async {
            if stored_cohorts.is_empty() {
                return Ok(None);
            }
            memberships::read(store, team_id, stored_cohorts, person_id)
                .await
                .map(Some)
        },
    )?;
    let merged;
    let person_properties = match stored {
        Some(stored) => {
            let mut properties = stored.properties;
            properties.extend(
                request_properties
                    .iter()
                    .map(|(key, value)| (key.clone(), value.clone())),
            );
            merged = properties;
            &merged
        }
        None => request_properties,
    };
    let overrides = continuity::overrides(
        state,
        team_id,
        project,
        distinct_id,
        body.anon_distinct_id.as_deref(),
    )
    .await?;
    let subject = Subject {
        distinct_id,
        device_id: body.device_id.as_deref(),
        groups: body.groups.as_ref().unwrap_or(&empty),
        person_properties,
        group_properties: body.group_properties.as_ref().unwrap_or(&empty),
        group_types: &project.group_types,
        hash_key_overrides: overrides.as_ref(),
        cohort_memberships: memberships.as_ref(),
        now: state.clock.now(),
    };
    Ok(project.flags.evaluate(&subject, body.flag_keys.as_deref()))
}

/// The caller's request id when it is a UUID (PostHog echoes `X-Request-Id`), else a new one.
fn request_id(headers: &HeaderMap) -> Uuid {
    headers
        .get(common::http::REQUEST_ID)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.parse().ok())
        .unwrap_or_else(Uuid::new_v4)
}

fn json(body: Result<Vec<u8>, serde_json::Error>) -> ApiResult<Response> {
    let body = body.map_err(ApiError::internal)?;
    Ok(([(header::CONTENT_TYPE, "application/json")], body).into_response())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decide_and_flags_pick_their_shapes() {
        assert_eq!(Shape::for_decide(None), Shape::DecideV1);
        assert_eq!(Shape::for_decide(Some(2)), Shape::DecideV2);
        assert_eq!(Shape::for_decide(Some(3)), Shape::Legacy);
        assert_eq!(Shape::for_decide(Some(4)), Shape::Flags);
        assert_eq!(Shape::for_flags(1), Shape::Legacy);
        assert_eq!(Shape::for_flags(2), Shape::Flags);
        assert_eq!(Shape::for_flags(4), Shape::Flags);
    }
}
