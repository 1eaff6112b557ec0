//! `GET /surveys/:id/stats/`, `GET /surveys/stats/` (reference 1.8) and
//! `GET /surveys/responses_count/` (1.9): SQL-dialect queries over the project's events, run by
//! the query service (its limits, cache and query log), never by scanning here.

use axum::extract::{Path, State};
use axum::response::{IntoResponse, Response};
use chrono::{DateTime, Utc};
use common::error::{ApiError, ApiResult};
use common::{AppState, Authenticated};
use query_service::Caller;
use query_service::surveys::Window;
use serde::Deserialize;
use survey_core::{Survey, archive, repository};
use uuid::Uuid;

use crate::shared::{Params, READ, load, truthy};

#[derive(Debug, Deserialize)]
pub struct StatsParams {
    date_from: Option<String>,
    date_to: Option<String>,
    exclude_archived: Option<String>,
    include_per_question_stats: Option<String>,
}

/// PostHog's words for a date it cannot read.
const BAD_DATE: &str = "Invalid date format. Please use ISO 8601 format with timezone info (e.g. 2024-01-01T00:00:00Z or 2024-01-01T00:00:00+00:00).";

/// `date_from` / `date_to` as instants; both must carry a time zone.
pub fn window(from: Option<&str>, to: Option<&str>) -> ApiResult<Window> {
    let parse = |attr: &str, raw: Option<&str>| -> ApiResult<Option<DateTime<Utc>>> {
        match raw.map(str::trim).filter(|s| !s.is_empty()) {
            None => Ok(None),
            Some(text) => DateTime::parse_from_rfc3339(&text.replace(' ', "T"))
                .map(|at| Some(at.with_timezone(&Utc)))
                .map_err(|_| ApiError::validation(attr, BAD_DATE)),
        }
    };
    let window = Window {
        from: parse("date_from", from)?,
        to: parse("date_to", to)?,
    };
    if let (Some(from), Some(to)) = (window.from, window.to)
        && from > to
    {
        return Err(ApiError::validation(
            "date_from",
            "date_from must be before date_to",
        ));
    }
    Ok(window)
}

/// One survey's stats, in its own window (its start, or creation, to its end).
pub async fn of_one(
    State(state): State<AppState>,
    auth: Authenticated,
    Path((project, id)): Path<(String, String)>,
    Params(params): Params<StatsParams>,
) -> ApiResult<Response> {
    let store = state.store.as_ref();
    let project = auth.project(store, &project, READ).await?;
    let window = window(params.date_from.as_deref(), params.date_to.as_deref())?;
    let survey = load(store, project.id, &id).await?.survey;
    let archived = if truthy(params.exclude_archived.as_deref()) {
        archive::list(store, project.id, survey.id).await?
    } else {
        Vec::new()
    };
    let per_question = truthy(params.include_per_question_stats.as_deref());
    let answer = query_service::surveys::survey_stats(
        &state,
        &project,
        &survey,
        &window,
        &archived,
        per_question,
        &Caller::of(&auth),
    )
    .await
    .map_err(|e| query_service::api_error(&e))?;
    Ok(axum::Json(answer).into_response())
}

/// Every non-archived survey of the project together, in the asked window.
pub async fn global(
    State(state): State<AppState>,
    auth: Authenticated,
    Path(project): Path<String>,
    Params(params): Params<StatsParams>,
) -> ApiResult<Response> {
    let store = state.store.as_ref();
    let project = auth.project(store, &project, READ).await?;
    let window = window(params.date_from.as_deref(), params.date_to.as_deref())?;
    let mut surveys = repository::list_all(store, project.id).await?;
    surveys.retain(|s| !s.archived);
    let surveys: Vec<&Survey> = surveys.iter().collect();
    let answer = query_service::surveys::global_stats(
        &state,
        &project,
        &surveys,
        &window,
        &Caller::of(&auth),
    )
    .await
    .map_err(|e| query_service::api_error(&e))?;
    Ok(axum::Json(answer).into_response())
}

#[derive(Debug, Deserialize)]
pub struct CountParams {
    exclude_archived: Option<String>,
    survey_ids: Option<String>,
}

/// `{"<survey id>": responses}` of the project's started surveys (the `survey_ids` ones).
pub async fn responses_count(
    State(state): State<AppState>,
    auth: Authenticated,
    Path(project): Path<String>,
    Params(params): Params<CountParams>,
) -> ApiResult<Response> {
    let store = state.store.as_ref();
    let project = auth.project(store, &project, READ).await?;
    let surveys = repository::list_all(store, project.id).await?;
    let only = match params
        .survey_ids
        .as_deref()
        .filter(|s| !s.trim().is_empty())
    {
        None => None,
        Some(ids) => {
            let mut wanted = Vec::new();
            for raw in ids.split(',').map(str::trim).filter(|s| !s.is_empty()) {
                wanted.push(raw.parse::<Uuid>().map_err(|_| {
                    ApiError::validation("survey_ids", format!("'{raw}' is not a valid UUID."))
                })?);
            }
            Some(wanted)
        }
    };
    let archived: Vec<Uuid> = if truthy(params.exclude_archived.as_deref()) {
        archive::list_all(store, project.id)
            .await?
            .into_iter()
            .filter(|a| only.as_ref().is_none_or(|ids| ids.contains(&a.survey_id)))
            .map(|a| a.response_uuid)
            .collect()
    } else {
        Vec::new()
    };
    let surveys: Vec<&Survey> = surveys.iter().collect();
    let answer = query_service::surveys::responses_count(
        &state,
        &project,
        &surveys,
        only.as_deref(),
        &archived,
        &Caller::of(&auth),
    )
    .await
    .map_err(|e| query_service::api_error(&e))?;
    Ok(axum::Json(answer).into_response())
}
