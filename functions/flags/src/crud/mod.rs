//! `/api/projects/:project_id/feature_flags/`: CRUD (a hard delete is refused:
//! `common::repository::routes::refused_delete`). Every write is one Store transaction with its
//! activity entry, then tells the SDK cache that definitions changed.

mod body;
mod payload;

use axum::extract::rejection::QueryRejection;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use cohort_core::Cohort;
use common::activity::{self, Actor};
use common::error::{ApiError, ApiResult};
use common::http::Json;
use common::http::item_id;
use common::models::{Project, Scope};
use common::pagination::Pagination;
use common::repository::retry;
use common::repository::routes::query_string;
use common::store::Store;
use common::{AppState, Authenticated};
use feature_flags::model::{FlagFilters, FlagKind};
use feature_flags::repository::{self, NewFlag, Refusal, WriteError};
use feature_flags::{FeatureFlag, validate};
use serde::Deserialize;

use body::FlagBody;
use payload::Creators;

const FLAG_READ: Scope = Scope::read("feature_flag");
pub const FLAG_WRITE: Scope = Scope::write("feature_flag");
/// Tries of an update before it answers 409: generous, since an update without `version` must
/// not be lost to a burst of concurrent editors (each try is one read and one transaction).
const UPDATE_ATTEMPTS: u32 = 32;

fn key_taken() -> ApiError {
    ApiError::field(
        "key",
        "unique",
        "There is already a feature flag with this key.",
    )
}

fn write_error(error: WriteError) -> ApiError {
    error.answer("feature flag", |refusal| match refusal {
        Refusal::KeyTaken => key_taken(),
        Refusal::NotFound => ApiError::not_found(),
    })
}

/// The project's live cohorts when `filters` have a cohort condition (validation checks what
/// it names), else none.
async fn cohorts_for(
    store: &dyn Store,
    team_id: i64,
    filters: &FlagFilters,
) -> ApiResult<Vec<Cohort>> {
    if !validate::names_cohorts(filters) {
        return Ok(Vec::new());
    }
    Ok(cohort_core::repository::list_live(store, team_id).await?)
}

#[derive(Debug, Deserialize)]
pub struct ListParams {
    search: Option<String>,
    active: Option<String>,
    #[serde(rename = "type")]
    kind: Option<String>,
    key: Option<String>,
}

/// `GET /feature_flags/`: live flags, newest first, with `search`, `active`, `type`, `key`.
pub async fn list(
    State(state): State<AppState>,
    auth: Authenticated,
    Path(project): Path<String>,
    pagination: Pagination,
    params: Result<Query<ListParams>, QueryRejection>,
) -> ApiResult<Response> {
    let store = state.store.as_ref();
    let project = auth.project(store, &project, FLAG_READ).await?;
    let params = query_string(params)?;
    let active = match params.active.as_deref() {
        None => None,
        Some("true") => Some(true),
        Some("false") => Some(false),
        Some(other) => {
            return Err(ApiError::field(
                "active",
                "invalid_choice",
                format!("\"{other}\" is not a valid choice: true or false."),
            ));
        }
    };
    let kind = match params.kind.as_deref() {
        None => None,
        Some("boolean") => Some(FlagKind::Boolean),
        Some("multivariant") => Some(FlagKind::Multivariant),
        Some(other) => {
            return Err(ApiError::field(
                "type",
                "invalid_choice",
                format!("\"{other}\" is not a valid choice: boolean or multivariant."),
            ));
        }
    };
    let search = params.search.map(|text| text.to_lowercase());
    let mut flags = repository::list_live(store, project.id).await?;
    flags.retain(|flag| {
        active.is_none_or(|active| flag.active == active)
            && kind.is_none_or(|kind| flag.kind() == kind)
            && params.key.as_ref().is_none_or(|key| &flag.key == key)
            && search.as_ref().is_none_or(|needle| {
                flag.key.to_lowercase().contains(needle)
                    || flag.name.to_lowercase().contains(needle)
            })
    });
    // PostHog lists newest first.
    flags.reverse();
    let shown: Vec<&FeatureFlag> = pagination.window(&flags).iter().collect();
    let creators = Creators::of(store, &shown).await?;
    let rendered: Vec<serde_json::Value> = shown.iter().map(|flag| creators.render(flag)).collect();
    Ok(axum::Json(pagination.page_of(flags.len(), &rendered)).into_response())
}

/// `POST /feature_flags/`
pub async fn create(
    State(state): State<AppState>,
    auth: Authenticated,
    Path(project): Path<String>,
    Json(body): Json<FlagBody>,
) -> ApiResult<Response> {
    let store = state.store.as_ref();
    let project = auth.project(store, &project, FLAG_WRITE).await?;
    body.check_unsupported()?;
    let Some(key) = body.key.clone() else {
        return Err(ApiError::required("key"));
    };
    validate::key(&key)?;
    if repository::key_holder(store, project.id, &key)
        .await?
        .is_some()
    {
        return Err(key_taken());
    }
    let mut filters = body.filters.clone().unwrap_or_default();
    if body.filters.is_some() {
        let flags = repository::list_live(store, project.id).await?;
        let cohorts = cohorts_for(store, project.id, &filters).await?;
        let context = validate::Context {
            flags: &flags,
            id: None,
            key: &key,
            creating: true,
            cohorts: &cohorts,
        };
        validate::filters(&mut filters, &context)?;
    }
    let new = NewFlag {
        key,
        name: body.name.clone().unwrap_or_default(),
        filters,
        active: body.active.unwrap_or(true),
        ensure_experience_continuity: body.ensure_experience_continuity.unwrap_or(false),
        evaluation_runtime: body.evaluation_runtime.unwrap_or_default(),
        evaluation_tags: body.evaluation_tags.clone().unwrap_or_default(),
        created_by: Some(auth.user.uuid),
    };
    let at = state.clock.now();
    let flag = repository::create(store, project.id, new, &Actor::user(&auth.user), at)
        .await
        .map_err(write_error)?;
    feature_flags::cache::definitions_changed(&state, project.id);
    let answer = payload::flag(&flag, Some(&auth.user));
    Ok((StatusCode::CREATED, axum::Json(answer)).into_response())
}

/// `GET /feature_flags/:id/`: 404 for a deleted or unknown flag.
pub async fn retrieve(
    State(state): State<AppState>,
    auth: Authenticated,
    Path((project, id)): Path<(String, String)>,
) -> ApiResult<Response> {
    let store = state.store.as_ref();
    let project = auth.project(store, &project, FLAG_READ).await?;
    let flag = repository::found(store, project.id, item_id(&id)?, false)
        .await?
        .flag;
    let creators = Creators::of(store, &[&flag]).await?;
    Ok(axum::Json(creators.render(&flag)).into_response())
}

/// `PATCH` (and `PUT`) `/feature_flags/:id/`: a partial update; `deleted: true` soft-deletes.
/// A `version` other than the stored one is a 409; without one, concurrent writers are retried
/// so that no update is lost.
pub async fn update(
    State(state): State<AppState>,
    auth: Authenticated,
    Path((project, id)): Path<(String, String)>,
    Json(body): Json<FlagBody>,
) -> ApiResult<Response> {
    let store = state.store.as_ref();
    let project = auth.project(store, &project, FLAG_WRITE).await?;
    let (team_id, id) = (project.id, item_id(&id)?);
    body.check_unsupported()?;
    if let Some(key) = &body.key {
        validate::key(key)?;
    }
    let (state, body, project) = (&state, &body, &project);
    let actor = &Actor::user(&auth.user);
    // A request that carried a version reads again after a lost race and sees it is stale.
    let saved = retry(UPDATE_ATTEMPTS, write_error, || async move {
        let stored = repository::found(store, team_id, id, false).await?;
        if let Some(version) = body.version
            && version != stored.flag.version
        {
            return Err(stale_version(store, project, id).await);
        }
        let mut next = body.apply_to(&stored.flag);
        if next.key != stored.flag.key
            && let Some(holder) = repository::key_holder(store, team_id, &next.key).await?
            && holder != id
        {
            return Err(key_taken());
        }
        if body.filters.is_some() {
            let flags = repository::list_live(store, team_id).await?;
            let cohorts = cohorts_for(store, team_id, &next.filters).await?;
            let context = validate::Context {
                flags: &flags,
                id: Some(id),
                key: &next.key,
                creating: false,
                cohorts: &cohorts,
            };
            validate::filters(&mut next.filters, &context)?;
        }
        let at = state.clock.now();
        Ok(repository::save(store, team_id, &stored, next, actor, at).await)
    })
    .await?;
    feature_flags::cache::definitions_changed(state, team_id);
    let creators = Creators::of(store, &[&saved]).await?;
    Ok(axum::Json(creators.render(&saved)).into_response())
}

/// PostHog's answer to an edit of a flag someone else changed meanwhile.
async fn stale_version(store: &dyn Store, project: &Project, id: i64) -> ApiError {
    let by = match activity::latest(store, project.id, repository::SCOPE, &id.to_string()).await {
        Ok(Some(entry)) => entry.user.email,
        // The 409 stands without the name; the lookup's failure is not the caller's problem.
        Ok(None) => None,
        Err(error) => {
            tracing::warn!(%error, "could not read who last changed the flag");
            None
        }
    };
    ApiError::conflict(format!(
        "The feature flag was updated by {} since you started editing it. Please refresh and try again.",
        by.as_deref().unwrap_or("another user")
    ))
}
