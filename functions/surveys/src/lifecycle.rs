//! `POST /surveys/:id/launch` and `/stop` (reference 1.6): the dates move, the survey's flags
//! follow (active while running), and the activity log says `launched` / `stopped`.

use axum::extract::{Path, State};
use axum::response::{IntoResponse, Response};
use common::activity::Actor;
use common::error::{ApiError, ApiResult};
use common::{AppState, Authenticated};
use serde_json::json;
use survey_core::repository::{LAUNCHED, STOPPED};
use survey_core::validate::{self, SurveyBody};

use crate::crud::change;
use crate::shared::{WRITE, render};

/// Starts the survey now; a survey already started is answered as it is.
pub async fn launch(
    State(state): State<AppState>,
    auth: Authenticated,
    Path((project, id)): Path<(String, String)>,
) -> ApiResult<Response> {
    let store = state.store.as_ref();
    let project = auth.project(store, &project, WRITE).await?;
    let actor = Actor::user(&auth.user);
    let survey = change(&state, project.id, &id, &actor, |before, at| async move {
        let survey = &before.survey;
        if survey.archived {
            return Err(invalid(
                "Cannot launch an archived survey. Unarchive it first.",
            ));
        }
        if survey.end_date.is_some_and(|end| end <= at) {
            return Err(invalid(
                "Cannot launch a survey with end_date in the past. Extend the end_date first.",
            ));
        }
        if survey.start_date.is_some() {
            return Ok(None);
        }
        // Through the update path, so the iteration dates derive from the new start.
        let checked = validate::update(
            store,
            project.id,
            survey,
            dates(json!({"start_date": at}))?,
            at,
        )
        .await?;
        Ok(Some((checked.survey, checked.targeting, LAUNCHED)))
    })
    .await?;
    Ok(axum::Json(render(store, &survey).await?).into_response())
}

/// Ends the survey now; a survey already ended is answered as it is.
pub async fn stop(
    State(state): State<AppState>,
    auth: Authenticated,
    Path((project, id)): Path<(String, String)>,
) -> ApiResult<Response> {
    let store = state.store.as_ref();
    let project = auth.project(store, &project, WRITE).await?;
    let actor = Actor::user(&auth.user);
    let survey = change(&state, project.id, &id, &actor, |before, at| async move {
        let survey = &before.survey;
        if survey.archived {
            return Err(invalid("Cannot stop an archived survey."));
        }
        if survey.end_date.is_some_and(|end| end <= at) {
            return Ok(None);
        }
        let checked = validate::update(
            store,
            project.id,
            survey,
            dates(json!({"end_date": at}))?,
            at,
        )
        .await?;
        Ok(Some((checked.survey, checked.targeting, STOPPED)))
    })
    .await?;
    Ok(axum::Json(render(store, &survey).await?).into_response())
}

fn dates(body: serde_json::Value) -> ApiResult<SurveyBody> {
    serde_json::from_value(body).map_err(ApiError::internal)
}

fn invalid(detail: &str) -> ApiError {
    ApiError::bad_request("invalid_input", detail)
}
