//! A survey's responses (reference 1.10): one row per submission, read from the lake by the
//! query service; archiving and unarchiving a response; the archived uuids.

use axum::extract::{Path, State};
use axum::response::{IntoResponse, Response};
use chrono::{DateTime, Utc};
use common::activity::Actor;
use common::error::{ApiError, ApiResult};
use common::{AppState, Authenticated};
use insights::surveys::responses::DEFAULT_LIMIT;
use query_service::Caller;
use query_service::surveys::ResponseFilters;
use serde::Deserialize;
use survey_core::archive;
use uuid::Uuid;

use crate::shared::{Params, QUERY_READ, READ, WRITE, load, truthy};

#[derive(Debug, Deserialize)]
pub struct ResponseParams {
    since: Option<String>,
    until: Option<String>,
    question_id: Option<String>,
    score_lte: Option<String>,
    score_gte: Option<String>,
    exclude_archived: Option<String>,
    limit: Option<String>,
    offset: Option<String>,
}

fn instant(attr: &str, raw: Option<&str>) -> ApiResult<Option<DateTime<Utc>>> {
    let Some(text) = raw.map(str::trim).filter(|s| !s.is_empty()) else {
        return Ok(None);
    };
    if let Ok(at) = DateTime::parse_from_rfc3339(&text.replace(' ', "T")) {
        return Ok(Some(at.with_timezone(&Utc)));
    }
    // A bare date or a naive time is UTC.
    common::dates::naive_datetime(text)
        .map(|naive| Some(naive.and_utc()))
        .ok_or_else(|| {
            ApiError::validation(attr, format!("{attr} must be an ISO 8601 date or time."))
        })
}

fn number<T: std::str::FromStr>(attr: &str, raw: Option<&str>) -> ApiResult<Option<T>> {
    raw.map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|text| {
            text.parse::<T>()
                .map_err(|_| ApiError::validation(attr, format!("{attr} must be a number.")))
        })
        .transpose()
}

/// The filters of the list as read (their ranges are checked against the survey).
fn filters(params: &ResponseParams) -> ApiResult<ResponseFilters> {
    Ok(ResponseFilters {
        since: instant("since", params.since.as_deref())?,
        until: instant("until", params.until.as_deref())?,
        question_id: params.question_id.clone().filter(|q| !q.is_empty()),
        score_lte: number::<f64>("score_lte", params.score_lte.as_deref())?,
        score_gte: number::<f64>("score_gte", params.score_gte.as_deref())?,
        limit: number::<usize>("limit", params.limit.as_deref())?.unwrap_or(DEFAULT_LIMIT),
        offset: number::<usize>("offset", params.offset.as_deref())?.unwrap_or(0),
    })
}

/// `GET /surveys/:id/responses/`: newest submission first, `has_more` past the page.
pub async fn list(
    State(state): State<AppState>,
    auth: Authenticated,
    Path((project, id)): Path<(String, String)>,
    Params(params): Params<ResponseParams>,
) -> ApiResult<Response> {
    let store = state.store.as_ref();
    let project = auth.project(store, &project, READ).await?;
    auth.require(QUERY_READ)?;
    let survey = load(store, project.id, &id).await?.survey;
    let filters = filters(&params)?;
    filters
        .check(&survey)
        .map_err(|invalid| ApiError::validation(invalid.attr, invalid.detail))?;
    let archived = if truthy(params.exclude_archived.as_deref()) {
        archive::list(store, project.id, survey.id).await?
    } else {
        Vec::new()
    };
    let page = query_service::surveys::responses(
        &state,
        &project,
        &survey,
        &filters,
        &archived,
        &Caller::of(&auth),
    )
    .await
    .map_err(|e| query_service::api_error(&e))?;
    Ok(axum::Json(page.to_json()).into_response())
}

fn response_uuid(raw: &str) -> ApiResult<Uuid> {
    raw.parse::<Uuid>()
        .map_err(|_| ApiError::bad_request("invalid_input", "Invalid UUID format"))
}

/// `POST /surveys/:id/responses/:uuid/archive/`: 200 with the body `200`, as PostHog answers.
pub async fn archive(
    State(state): State<AppState>,
    auth: Authenticated,
    Path(path): Path<(String, String, String)>,
) -> ApiResult<Response> {
    set_archived(&state, &auth, path, true).await
}

/// `POST /surveys/:id/responses/:uuid/unarchive/`: 200 with `200`, archived or not.
pub async fn unarchive(
    State(state): State<AppState>,
    auth: Authenticated,
    Path(path): Path<(String, String, String)>,
) -> ApiResult<Response> {
    set_archived(&state, &auth, path, false).await
}

async fn set_archived(
    state: &AppState,
    auth: &Authenticated,
    (project, id, response): (String, String, String),
    archived: bool,
) -> ApiResult<Response> {
    let store = state.store.as_ref();
    let project = auth.project(store, &project, WRITE).await?;
    let survey = load(store, project.id, &id).await?.survey;
    let response = response_uuid(&response)?;
    let actor = Actor::user(&auth.user);
    let at = state.clock.now();
    if archived {
        archive::archive(store, &survey, response, &actor, at).await?;
    } else {
        archive::unarchive(store, &survey, response, &actor, at).await?;
    }
    Ok(axum::Json(200).into_response())
}

/// `GET /surveys/:id/archived-response-uuids/`: a JSON array of uuids.
pub async fn archived_uuids(
    State(state): State<AppState>,
    auth: Authenticated,
    Path((project, id)): Path<(String, String)>,
) -> ApiResult<Response> {
    let store = state.store.as_ref();
    let project = auth.project(store, &project, READ).await?;
    let survey = load(store, project.id, &id).await?.survey;
    let uuids = archive::list(store, project.id, survey.id).await?;
    Ok(axum::Json(uuids).into_response())
}
