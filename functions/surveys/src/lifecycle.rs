//! `POST /surveys/:id/launch` and `/stop` (reference 1.6): the dates move, the survey's flags
//! follow (active while running), and the activity log says `launched` / `stopped`.

use axum::extract::{Path, State};
use axum::response::{IntoResponse, Response};
use chrono::{DateTime, Utc};
use common::activity::Actor;
use common::error::{ApiError, ApiResult};
use common::{AppState, Authenticated};
use serde_json::json;
use survey_core::Survey;
use survey_core::repository::{LAUNCHED, STOPPED};
use survey_core::validate::{self, SurveyBody};

use crate::crud::change;
use crate::shared::{WRITE, render};

#[derive(Clone, Copy)]
enum Transition {
    Launch,
    Stop,
}

impl Transition {
    /// The body that moves `survey`'s dates at `at`, None when there is nothing to do, or the
    /// 400 PostHog answers.
    fn body(self, survey: &Survey, at: DateTime<Utc>) -> ApiResult<Option<SurveyBody>> {
        let ended = survey.end_date.is_some_and(|end| end <= at);
        let field = match self {
            Transition::Launch if survey.archived => {
                return Err(invalid(
                    "Cannot launch an archived survey. Unarchive it first.",
                ));
            }
            Transition::Launch if ended => {
                return Err(invalid(
                    "Cannot launch a survey with end_date in the past. Extend the end_date first.",
                ));
            }
            Transition::Launch if survey.start_date.is_some() => return Ok(None),
            Transition::Launch => "start_date",
            Transition::Stop if survey.archived => {
                return Err(invalid("Cannot stop an archived survey."));
            }
            Transition::Stop if ended => return Ok(None),
            Transition::Stop => "end_date",
        };
        serde_json::from_value(json!({ field: at }))
            .map(Some)
            .map_err(ApiError::internal)
    }

    fn activity(self) -> &'static str {
        match self {
            Transition::Launch => LAUNCHED,
            Transition::Stop => STOPPED,
        }
    }
}

/// Starts the survey now; a survey already started is answered as it is.
pub async fn launch(
    State(state): State<AppState>,
    auth: Authenticated,
    Path((project, id)): Path<(String, String)>,
) -> ApiResult<Response> {
    transition(&state, &auth, &project, &id, Transition::Launch).await
}

/// Ends the survey now; a survey already ended is answered as it is.
pub async fn stop(
    State(state): State<AppState>,
    auth: Authenticated,
    Path((project, id)): Path<(String, String)>,
) -> ApiResult<Response> {
    transition(&state, &auth, &project, &id, Transition::Stop).await
}

async fn transition(
    state: &AppState,
    auth: &Authenticated,
    project: &str,
    id: &str,
    transition: Transition,
) -> ApiResult<Response> {
    let store = state.store.as_ref();
    let project = auth.project(store, project, WRITE).await?;
    let actor = Actor::user(&auth.user);
    let survey = change(state, project.id, id, &actor, |before, at| async move {
        let Some(body) = transition.body(&before.survey, at)? else {
            return Ok(None);
        };
        // Through the update path, so derived fields (iteration dates) follow the new dates.
        let checked = validate::update(store, project.id, &before.survey, body, at).await?;
        Ok(Some((
            checked.survey,
            checked.targeting,
            transition.activity(),
        )))
    })
    .await?;
    Ok(axum::Json(render(store, &survey).await?).into_response())
}

fn invalid(detail: &str) -> ApiError {
    ApiError::bad_request("invalid_input", detail)
}
