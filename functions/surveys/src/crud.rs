//! `/api/projects/:project_id/surveys/`: list (with `archived`, `type`, `ids` and `search`),
//! create, retrieve, update and delete, each change with its flags and activity entry in one
//! transaction; and `question_labels`.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use common::activity::{self, Actor};
use common::error::{ApiError, ApiResult};
use common::http::Json;
use common::pagination::Pagination;
use common::repository::{self as entities, retry};
use common::{AppState, Authenticated};
use serde::Deserialize;
use serde_json::{Value, json};
use survey_core::flags::{self, Owned};
use survey_core::repository::{self, WriteError};
use survey_core::validate::{self, SurveyBody, Targeting};
use survey_core::{Survey, archive};

use crate::search;
use crate::shared::{
    Params, READ, UPDATE_ATTEMPTS, WRITE, creator, load, render, render_written, truthy,
    write_error,
};

#[derive(Debug, Deserialize)]
pub struct ListParams {
    archived: Option<String>,
    #[serde(rename = "type")]
    kind: Option<String>,
    ids: Option<String>,
    search: Option<String>,
    // Read by the Pagination extractor.
    #[allow(dead_code)]
    limit: Option<String>,
    #[allow(dead_code)]
    offset: Option<String>,
}

/// `GET /surveys/`: newest first; with `search`, PostHog's matches (`search_match_type`, see
/// [`search`]).
pub async fn list(
    State(state): State<AppState>,
    auth: Authenticated,
    Path(project): Path<String>,
    Params(params): Params<ListParams>,
    pagination: Pagination,
) -> ApiResult<Response> {
    let store = state.store.as_ref();
    let project = auth.project(store, &project, READ).await?;
    let mut surveys = repository::list_all(store, project.id).await?;
    if let Some(archived) = params.archived.as_deref() {
        let archived = truthy(Some(archived));
        surveys.retain(|s| s.archived == archived);
    }
    if let Some(kind) = params.kind.as_deref().filter(|k| !k.is_empty()) {
        surveys.retain(|s| json!(s.kind) == kind);
    }
    if let Some(ids) = params.ids.as_deref() {
        let ids: Vec<&str> = ids.split(',').map(str::trim).collect();
        surveys.retain(|s| ids.contains(&s.id.to_string().as_str()));
    }
    surveys.sort_by(|a, b| b.created_at.cmp(&a.created_at).then(b.id.cmp(&a.id)));
    let matches: Vec<(Survey, Option<&'static str>)> =
        match params.search.as_deref().filter(|s| !s.trim().is_empty()) {
            None => surveys.into_iter().map(|s| (s, None)).collect(),
            Some(search) => {
                if search.chars().count() > search::MAX_SEARCH_CHARS {
                    return Err(ApiError::validation(
                        "search",
                        format!(
                            "Search query must be {} characters or fewer.",
                            search::MAX_SEARCH_CHARS
                        ),
                    ));
                }
                search::matches(surveys, search.trim())
                    .into_iter()
                    .map(|(s, kind)| (s, Some(kind)))
                    .collect()
            }
        };
    // One read of the project's flags, one per creator and one per named action serve the
    // whole page.
    let live = feature_flags::repository::list_live(store, project.id).await?;
    let page = pagination.window(&matches);
    let actions = crate::shared::actions(store, project.id, page.iter().map(|(s, _)| s)).await?;
    let mut creators = std::collections::HashMap::new();
    let mut rendered = Vec::new();
    for (survey, kind) in page {
        let made_by = match creators.get(&survey.created_by) {
            Some(known) => Value::clone(known),
            None => {
                let found = creator(store, survey).await?;
                creators.insert(survey.created_by, found.clone());
                found
            }
        };
        rendered.push(survey_core::render::searched(
            survey,
            &Owned::among(survey, &live),
            made_by,
            &actions.api(survey),
            *kind,
        ));
    }
    Ok(axum::Json(pagination.page_of(matches.len(), &rendered)).into_response())
}

/// `POST /surveys/`: 201 with the survey, its internal targeting flag (and the targeting and
/// sampling flags it asks for) created in the same transaction.
pub async fn create(
    State(state): State<AppState>,
    auth: Authenticated,
    Path(project): Path<String>,
    Json(body): Json<SurveyBody>,
) -> ApiResult<Response> {
    let store = state.store.as_ref();
    let project = auth.project(store, &project, WRITE).await?;
    let (team_id, user) = (project.id, auth.user.uuid);
    let (state, body, actor) = (&state, &body, &Actor::user(&auth.user));
    let failure = |error| write_error(error, false);
    // A lost race is the flag counter that moved: number again.
    let survey = retry(UPDATE_ATTEMPTS, failure, || async move {
        let at = state.clock.now();
        let checked = validate::create(store, team_id, body.clone(), at).await?;
        let mut survey = checked.survey;
        survey.team_id = team_id;
        survey.created_by = Some(user);
        let owned = Owned::default();
        let mut ops =
            flags::plan(store, &mut survey, &owned, &checked.targeting, actor, at).await?;
        ops.extend(repository::plan_create(&mut survey, actor)?);
        Ok(repository::commit(store, &survey, ops)
            .await
            .map(|()| survey))
    })
    .await?;
    feature_flags::cache::definitions_changed(state, team_id);
    let answer = render_written(store, &survey).await?;
    Ok((StatusCode::CREATED, axum::Json(answer)).into_response())
}

/// `GET /surveys/:id/`.
pub async fn retrieve(
    State(state): State<AppState>,
    auth: Authenticated,
    Path((project, id)): Path<(String, String)>,
) -> ApiResult<Response> {
    let store = state.store.as_ref();
    let project = auth.project(store, &project, READ).await?;
    let stored = load(store, project.id, &id).await?;
    Ok(axum::Json(render(store, &stored.survey).await?).into_response())
}

/// `PATCH` (and `PUT`) `/surveys/:id/`: a partial update; the survey's flags follow it.
pub async fn update(
    State(state): State<AppState>,
    auth: Authenticated,
    Path((project, id)): Path<(String, String)>,
    Json(body): Json<SurveyBody>,
) -> ApiResult<Response> {
    let store = state.store.as_ref();
    let project = auth.project(store, &project, WRITE).await?;
    let actor = Actor::user(&auth.user);
    let survey = change(&state, project.id, &id, &actor, |before, at| {
        let body = body.clone();
        async move {
            let checked = validate::update(store, project.id, &before.survey, body, at).await?;
            Ok(Some((checked.survey, checked.targeting, activity::UPDATED)))
        }
    })
    .await?;
    Ok(axum::Json(render_written(store, &survey).await?).into_response())
}

/// Reads the survey, asks `decide` for its new state (None: nothing to write), plans its flags
/// and commits, retrying when it changed meanwhile. Answers the survey as stored.
pub async fn change<F, Fut>(
    state: &AppState,
    team_id: i64,
    id: &str,
    actor: &Actor,
    decide: F,
) -> ApiResult<Survey>
where
    F: Fn(repository::Stored, chrono::DateTime<chrono::Utc>) -> Fut + Sync,
    Fut: std::future::Future<Output = ApiResult<Option<(Survey, Targeting, &'static str)>>>,
{
    let store = state.store.as_ref();
    let decide = &decide;
    let failure = |error| write_error(error, true);
    let (survey, written) = retry(UPDATE_ATTEMPTS, failure, || async move {
        let before = load(store, team_id, id).await?;
        let at = state.clock.now();
        let Some((mut survey, targeting, kind)) = decide(before.clone(), at).await? else {
            return Ok(Ok((before.survey, false)));
        };
        let owned = Owned::load(store, &before.survey).await?;
        let mut ops = flags::plan(store, &mut survey, &owned, &targeting, actor, at).await?;
        ops.extend(repository::plan_save(
            &before,
            &mut survey,
            kind,
            actor,
            at,
        )?);
        let committed = repository::commit(store, &survey, ops).await;
        Ok(committed.map(|()| (survey, true)))
    })
    .await?;
    if written {
        feature_flags::cache::definitions_changed(state, team_id);
    }
    Ok(survey)
}

/// `DELETE /surveys/:id/`: the survey, its own flags and its archived responses go; 204.
pub async fn destroy(
    State(state): State<AppState>,
    auth: Authenticated,
    Path((project, id)): Path<(String, String)>,
) -> ApiResult<Response> {
    let store = state.store.as_ref();
    let project = auth.project(store, &project, WRITE).await?;
    let team_id = project.id;
    let (state, id, actor) = (&state, &id, &Actor::user(&auth.user));
    let failure = |error| write_error(error, false);
    let deleted = retry(UPDATE_ATTEMPTS, failure, || async move {
        let before = load(store, team_id, id).await?;
        let at = state.clock.now();
        let owned = Owned::load(store, &before.survey).await?;
        let mut ops = flags::plan_delete(&before.survey, &owned, actor, at)?;
        ops.extend(repository::plan_delete(&before, actor, at)?);
        Ok(match entities::commit(store, ops).await? {
            true => Ok(before.survey),
            false => Err(WriteError::Raced),
        })
    })
    .await?;
    feature_flags::cache::definitions_changed(state, team_id);
    // Leftover archive items name a survey that is gone: harmless, but not kept.
    if let Err(error) = archive::remove_all(store, team_id, deleted.id).await {
        tracing::warn!(%error, "could not remove a deleted survey's archived responses");
    }
    Ok(StatusCode::NO_CONTENT.into_response())
}

/// `GET /surveys/question_labels/`: every question of the project's surveys, for pickers.
pub async fn question_labels(
    State(state): State<AppState>,
    auth: Authenticated,
    Path(project): Path<String>,
) -> ApiResult<Response> {
    let store = state.store.as_ref();
    let project = auth.project(store, &project, READ).await?;
    let mut surveys = repository::list_all(store, project.id).await?;
    surveys.sort_by_key(|s| std::cmp::Reverse(s.created_at));
    let labels: Vec<Value> = surveys
        .iter()
        .flat_map(|survey| {
            survey.questions.iter().enumerate().map(|(index, q)| {
                json!({
                    "question_id": q.id,
                    "question_text": q.question,
                    "question_index": index,
                    "survey_id": survey.id,
                    "survey_name": survey.name,
                })
            })
        })
        .collect();
    Ok(axum::Json(json!({ "labels": labels })).into_response())
}
