//! `GET /api/surveys/?token=phc_...`: the surveys posthog-js may show (PostHog's
//! SurveyAPISerializer), read with the project token like `/flags`, from any origin.

use axum::extract::State;
use axum::response::{IntoResponse, Response};
use common::AppState;
use common::error::{ApiError, ApiResult};
use common::project_tokens;
use serde::Deserialize;
use serde_json::{Value, json};
use survey_core::actions::Actions;
use survey_core::flags::Owned;
use survey_core::repository;

use crate::shared::Params;

#[derive(Debug, Deserialize)]
pub struct PublicParams {
    token: Option<String>,
    api_key: Option<String>,
}

/// Non-archived surveys with their flag keys and conditions (the actions they name as
/// `{id, name, steps}`, for posthog-js to match events against); posthog-js decides which of them
/// run now (it reads `start_date` / `end_date` itself) and which the person may see (the flags).
pub async fn surveys(
    State(state): State<AppState>,
    Params(params): Params<PublicParams>,
) -> ApiResult<Response> {
    let token = params.token.as_deref().or(params.api_key.as_deref());
    let team_id = project_tokens::project_for(&state, token).await?;
    let store = state.store.as_ref();
    let mut surveys = repository::list_all(store, team_id).await?;
    surveys.retain(|survey| !survey.archived);
    surveys.sort_by_key(|s| std::cmp::Reverse(s.created_at));
    // Every page load of posthog-js asks: the flags come from this process's copy of the
    // project's flags (the one `/flags` reads), not from a Store read per survey.
    let flags = feature_flags::cache::project_flags(&state, team_id)
        .await
        .map_err(ApiError::from)?;
    let live = flags.flags.flags();
    // The actions their conditions name, as they are now: Store reads only for the surveys
    // that name some.
    let actions = Actions::load(store, team_id, &surveys).await?;
    let rendered: Vec<Value> = surveys
        .iter()
        .map(|survey| {
            survey_core::render::sdk(survey, &Owned::among(survey, live), &actions.sdk(survey))
        })
        .collect();
    Ok(axum::Json(json!({"surveys": rendered, "survey_config": null})).into_response())
}
