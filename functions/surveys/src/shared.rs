//! What every route of the family shares: scopes, ids, loading and rendering a survey, and the
//! commit loop of a change.

use common::error::{ApiError, ApiResult};
use common::models::{Scope, User};
use common::store::Store;
use serde_json::Value;
use survey_core::Survey;
use survey_core::actions::Actions;
use survey_core::flags::Owned;
use survey_core::repository::{self, NameTaken, Stored, WriteError};
use uuid::Uuid;

pub const READ: Scope = Scope::read("survey");
pub const WRITE: Scope = Scope::write("survey");
pub const QUERY_READ: Scope = Scope::read("query");

/// Tries of a change before it answers 409 (each try is one read and one transaction).
pub const UPDATE_ATTEMPTS: u32 = 16;

/// A survey id from the path; 404 when it is not a uuid.
pub fn survey_id(raw: &str) -> ApiResult<Uuid> {
    raw.parse::<Uuid>().map_err(|_| ApiError::not_found())
}

/// The survey `id` of the project; 404 when it does not exist.
pub async fn load(store: &dyn Store, team_id: i64, id: &str) -> ApiResult<Stored> {
    repository::found(store, team_id, survey_id(id)?, false).await
}

/// A failed write as the API answers it; `renaming` picks PostHog's message for a taken name.
pub fn write_error(error: WriteError, renaming: bool) -> ApiError {
    error.answer("survey", |NameTaken| {
        ApiError::field(
            "name",
            "unique",
            if renaming {
                "There is already another survey with this name."
            } else {
                "There is already a survey with this name."
            },
        )
    })
}

/// The creator's UserBasic JSON, or null.
pub async fn creator(store: &dyn Store, survey: &Survey) -> ApiResult<Value> {
    let user = match survey.created_by {
        Some(uuid) => User::load(store, uuid).await?,
        None => None,
    };
    Ok(user
        .as_ref()
        .map_or(Value::Null, feature_flags::render::user_basic))
}

/// The actions some surveys' conditions name, with their creators, as the API shows them.
pub async fn actions<'a>(
    store: &dyn Store,
    team_id: i64,
    surveys: impl IntoIterator<Item = &'a Survey>,
) -> ApiResult<Actions> {
    Ok(Actions::load(store, team_id, surveys)
        .await?
        .with_creators(store)
        .await?)
}

/// SurveySerializer's JSON (list and retrieve), its flags, creator and the actions its
/// conditions name read from the Store.
pub async fn render(store: &dyn Store, survey: &Survey) -> ApiResult<Value> {
    let owned = Owned::load(store, survey).await?;
    let actions = actions(store, survey.team_id, [survey]).await?;
    Ok(survey_core::render::survey(
        survey,
        &owned.as_flags(),
        creator(store, survey).await?,
        &actions.api(survey),
    ))
}

/// The create/update serializer's JSON.
pub async fn render_written(store: &dyn Store, survey: &Survey) -> ApiResult<Value> {
    let owned = Owned::load(store, survey).await?;
    let actions = actions(store, survey.team_id, [survey]).await?;
    Ok(survey_core::render::written(
        survey,
        &owned.as_flags(),
        creator(store, survey).await?,
        &actions.api(survey),
    ))
}

/// A route's query string read into `T`; a value of the wrong shape is a 400 naming it.
pub struct Params<T>(pub T);

impl<T, S> axum::extract::FromRequestParts<S> for Params<T>
where
    T: serde::de::DeserializeOwned,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request_parts(
        parts: &mut axum::http::request::Parts,
        state: &S,
    ) -> Result<Self, ApiError> {
        match axum::extract::Query::<T>::from_request_parts(parts, state).await {
            Ok(axum::extract::Query(value)) => Ok(Params(value)),
            Err(rejection) => Err(ApiError::bad_request(
                "invalid_input",
                rejection.body_text(),
            )),
        }
    }
}

/// A `true`/`false` query flag as DRF reads it (`true`, `1`, `yes`; anything else is false).
pub fn truthy(value: Option<&str>) -> bool {
    matches!(
        value.map(|v| v.trim().to_ascii_lowercase()).as_deref(),
        Some("true" | "1" | "yes" | "on")
    )
}
