//! `endpoints/`: list (with `is_active` and `created_by`), create, retrieve, update (a new
//! version only when the query really changes; `?version=N` targets one version) and delete.

use std::collections::HashMap;

use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use common::activity::Actor;
use common::error::{ApiError, ApiResult};
use common::http::Json;
use common::models::Project;
use common::{AppState, Authenticated};
use endpoint_core::repository::{self, Change};
use endpoint_core::validate::{self, CreateBody, UpdateBody};
use endpoint_core::{Endpoint, Version};
use serde::Deserialize;
use serde_json::json;
use uuid::Uuid;

use crate::materialization::{self, Before};
use crate::shared::{READ, Site, WRITE, creator, load, project, render};

#[derive(Debug, Deserialize)]
pub struct ListParams {
    is_active: Option<String>,
    created_by: Option<String>,
}

/// `GET endpoints/`: `{"results": [...]}` (PostHog's shape here: not paginated), by name.
pub async fn list(
    State(state): State<AppState>,
    auth: Authenticated,
    site: Site,
    Path(project_id): Path<String>,
    Query(params): Query<ListParams>,
) -> ApiResult<Response> {
    let project = project(&state, &auth, &project_id, READ).await?;
    let mut endpoints = repository::list(state.store.as_ref(), project.id).await?;
    if let Some(active) = params.is_active.as_deref() {
        let active = match active.to_ascii_lowercase().as_str() {
            "true" | "1" => true,
            "false" | "0" => false,
            _ => {
                return Err(ApiError::validation(
                    "is_active",
                    "is_active must be true or false.",
                ));
            }
        };
        endpoints.retain(|e| e.is_active == active);
    }
    if let Some(created_by) = params.created_by.as_deref() {
        let uuid: Uuid = created_by
            .parse()
            .map_err(|_| ApiError::validation("created_by", "created_by must be a user's uuid."))?;
        endpoints.retain(|e| e.created_by == Some(uuid));
    }
    let mut results = Vec::with_capacity(endpoints.len());
    for endpoint in &endpoints {
        results.push(render(&state, &site, &project, endpoint).await?);
    }
    Ok(axum::Json(json!({ "results": results })).into_response())
}

/// `GET endpoints/:name/`.
pub async fn retrieve(
    State(state): State<AppState>,
    auth: Authenticated,
    site: Site,
    Path((project_id, name)): Path<(String, String)>,
) -> ApiResult<Response> {
    let project = project(&state, &auth, &project_id, READ).await?;
    let endpoint = load(state.store.as_ref(), project.id, &name).await?;
    Ok(axum::Json(render(&state, &site, &project, &endpoint).await?).into_response())
}

/// `POST endpoints/`: the query is upgraded and checked (parsed, planned) before anything is
/// stored; version 1 is made with the endpoint.
pub async fn create(
    State(state): State<AppState>,
    auth: Authenticated,
    site: Site,
    Path(project_id): Path<String>,
    Json(body): Json<CreateBody>,
) -> ApiResult<Response> {
    let project = project(&state, &auth, &project_id, WRITE).await?;
    let (name, query) = validate::check_create(&body)?;
    let is_active = body.is_active.unwrap_or(true);
    let materialize = body.is_materialized.unwrap_or(false);
    if !is_active && materialize {
        return Err(ApiError::field(
            "is_materialized",
            "invalid_input",
            "Cannot enable materialization on inactive endpoint.",
        ));
    }
    if !materialize && body.sync_frequency.is_some() {
        return Err(ApiError::field(
            "sync_frequency",
            "invalid_input",
            "Cannot set sync_frequency when disabling materialization.",
        ));
    }
    let checked = query_service::endpoints::check(&state, &project, query.clone()).await?;
    let variable = match materialize {
        true => Some(materialization::check(&state, &project, &checked.query).await?),
        false => None,
    };
    let now = state.clock.now();
    let endpoint = Endpoint {
        id: Uuid::now_v7(),
        team_id: project.id,
        name: name.to_owned(),
        is_active,
        current_version: 1,
        derived_from_insight: body.derived_from_insight.clone(),
        created_by: Some(auth.user.uuid),
        created_at: now,
        updated_at: now,
    };
    let version = Version {
        id: Uuid::now_v7(),
        endpoint_id: endpoint.id,
        version: 1,
        query: checked.query,
        description: body.description.clone().unwrap_or_default(),
        cache_age_seconds: body.cache_age_seconds,
        is_active: true,
        is_materialized: materialize,
        sync_frequency: materialize.then(|| body.sync_frequency.unwrap_or_default()),
        columns: checked.columns,
        created_at: now,
        created_by: Some(auth.user.uuid),
        updated_at: now,
    };
    repository::create(
        state.store.as_ref(),
        &endpoint,
        &version,
        &Actor::user(&auth.user),
    )
    .await?;
    if let Some(variable) = variable {
        materialization::start(&state, &endpoint, &version, Ok(variable)).await?;
    }
    let body = render(&state, &site, &project, &endpoint).await?;
    Ok((StatusCode::CREATED, axum::Json(body)).into_response())
}

#[derive(Debug, Deserialize)]
pub struct UpdateParams {
    version: Option<String>,
}

/// `PUT/PATCH endpoints/:name/` (`?version=N` targets that version's settings).
pub async fn update(
    State(state): State<AppState>,
    auth: Authenticated,
    site: Site,
    Path((project_id, name)): Path<(String, String)>,
    Query(params): Query<UpdateParams>,
    Json(body): Json<UpdateBody>,
) -> ApiResult<Response> {
    let project = project(&state, &auth, &project_id, WRITE).await?;
    let store = state.store.as_ref();
    let actor = Actor::user(&auth.user);
    if let Some(raw) = params.version.as_deref() {
        return update_version(&state, &project, &name, raw, &body, &actor).await;
    }
    // What needs the engine is checked before the change: the new query, and whether the query
    // the current version will hold can be materialized.
    let existing = load(store, project.id, &name).await?;
    let checked = match body.query.clone() {
        Some(query) => Some(query_service::endpoints::check(&state, &project, query).await?),
        None => None,
    };
    if body.is_materialized == Some(true) {
        let query = match &checked {
            Some(checked) => checked.query.clone(),
            None => {
                repository::current(store, project.id, &existing)
                    .await?
                    .query
            }
        };
        materialization::check(&state, &project, &query).await?;
    }
    let now = state.clock.now();
    let user = auth.user.uuid;
    let mut before = Before::default();
    let updated =
        repository::update_with_versions(store, project.id, &name, &actor, |endpoint, versions| {
            before = Before::of(versions);
            change(endpoint, versions, &body, checked.as_ref(), now, user)
        })
        .await?;
    materialization::apply(&state, &project, &updated, &before).await?;
    Ok(axum::Json(render(&state, &site, &project, &updated.endpoint).await?).into_response())
}

/// The endpoint after `body`, from the endpoint and its versions as read.
fn change(
    endpoint: &Endpoint,
    versions: &[Version],
    body: &UpdateBody,
    checked: Option<&query_service::endpoints::Checked>,
    now: chrono::DateTime<chrono::Utc>,
    user: Uuid,
) -> Result<Change, ApiError> {
    let current = versions
        .iter()
        .find(|v| v.version == endpoint.current_version)
        .ok_or_else(|| ApiError::internal("the endpoint's current version is missing"))?;
    let active_after = body.is_active.unwrap_or(endpoint.is_active);
    validate::check_update(body, active_after)?;
    let mut after = endpoint.clone();
    after.is_active = active_after;
    if let Some(insight) = &body.derived_from_insight {
        after.derived_from_insight = insight.clone();
    }
    let mut changed: HashMap<u32, Version> = HashMap::new();
    let mut target = match checked {
        Some(checked) if !validate::same_query(&checked.query, &current.query) => {
            after.current_version = versions.iter().map(|v| v.version).max().unwrap_or(0) + 1;
            // The materialization moves to the new version.
            if current.is_materialized {
                let mut old = current.clone();
                old.is_materialized = false;
                old.sync_frequency = None;
                old.updated_at = now;
                changed.insert(old.version, old);
            }
            Version {
                id: Uuid::now_v7(),
                endpoint_id: endpoint.id,
                version: after.current_version,
                query: checked.query.clone(),
                description: current.description.clone(),
                cache_age_seconds: current.cache_age_seconds,
                is_active: true,
                is_materialized: current.is_materialized,
                sync_frequency: current.sync_frequency,
                columns: checked.columns.clone(),
                created_at: now,
                created_by: Some(user),
                updated_at: now,
            }
        }
        _ => current.clone(),
    };
    if let Some(description) = &body.description {
        target.description = description.clone();
    }
    if let Some(age) = body.cache_age_seconds {
        target.cache_age_seconds = age;
    }
    match body.is_materialized {
        Some(true) => {
            target.is_materialized = true;
            target.sync_frequency = Some(
                body.sync_frequency
                    .or(target.sync_frequency)
                    .unwrap_or_default(),
            );
        }
        Some(false) => {
            target.is_materialized = false;
            target.sync_frequency = None;
        }
        None => {
            if let Some(sync) = body.sync_frequency {
                if !target.is_materialized {
                    return Err(ApiError::field(
                        "sync_frequency",
                        "invalid_input",
                        "Cannot set sync_frequency on an endpoint that is not materialized.",
                    ));
                }
                target.sync_frequency = Some(sync);
            }
        }
    }
    // An inactive endpoint materializes nothing, on any version.
    if !after.is_active {
        for version in versions.iter().filter(|v| v.is_materialized) {
            let mut off = changed
                .remove(&version.version)
                .unwrap_or_else(|| version.clone());
            off.is_materialized = false;
            off.sync_frequency = None;
            off.updated_at = now;
            changed.insert(off.version, off);
        }
        target.is_materialized = false;
        target.sync_frequency = None;
    }
    let new_version = (target.version != current.version).then_some(target.clone());
    if new_version.is_none() && target != *current {
        target.updated_at = now;
        changed.insert(target.version, target);
    }
    let mut changed_versions: Vec<Version> = changed.into_values().collect();
    changed_versions.sort_by_key(|v| v.version);
    if after != *endpoint || new_version.is_some() || !changed_versions.is_empty() {
        after.updated_at = now;
    }
    Ok(Change {
        endpoint: after,
        new_version,
        changed_versions,
    })
}

/// `?version=N`: that version's `is_active`, description and cache age (its query never
/// changes); answers the version.
async fn update_version(
    state: &AppState,
    project: &Project,
    name: &str,
    raw: &str,
    body: &UpdateBody,
    actor: &Actor,
) -> ApiResult<Response> {
    let number: u32 = raw.parse().map_err(|_| {
        ApiError::validation("version", format!("Invalid version parameter: {raw}"))
    })?;
    if body.query.is_some() {
        return Err(ApiError::field(
            "query",
            "invalid_input",
            "Cannot change query when targeting a specific version. Update without ?version to create a new version.",
        ));
    }
    if body.is_materialized.is_some() || body.sync_frequency.is_some() {
        return Err(ApiError::field(
            "is_materialized",
            "invalid_input",
            "Materialization is set on the endpoint's current version; update without ?version.",
        ));
    }
    validate::check_cache_age(body.cache_age_seconds.flatten())?;
    let store = state.store.as_ref();
    let now = state.clock.now();
    let updated =
        repository::update_with_versions(store, project.id, name, actor, |endpoint, versions| {
            let Some(version) = versions.iter().find(|v| v.version == number) else {
                return Err(ApiError::not_found_detail(format!(
                    "Version {number} not found"
                )));
            };
            let mut after = version.clone();
            if let Some(active) = body.is_active {
                after.is_active = active;
            }
            if let Some(description) = &body.description {
                after.description = description.clone();
            }
            if let Some(age) = body.cache_age_seconds {
                after.cache_age_seconds = age;
            }
            let changed_versions = match after != *version {
                true => {
                    after.updated_at = now;
                    vec![after]
                }
                false => Vec::new(),
            };
            Ok(Change {
                endpoint: endpoint.clone(),
                new_version: None,
                changed_versions,
            })
        })
        .await?;
    let version = match updated.changed_versions.first() {
        Some(version) => version.clone(),
        None => repository::version(store, project.id, updated.endpoint.id, number)
            .await?
            .ok_or_else(|| ApiError::not_found_detail(format!("Version {number} not found")))?,
    };
    let creator = creator(store, version.created_by).await?;
    Ok(axum::Json(endpoint_core::render::version(&version, creator)).into_response())
}

/// `DELETE endpoints/:name/`: a soft delete (the name is free again); its materializations
/// stop and their stored results are removed.
pub async fn destroy(
    State(state): State<AppState>,
    auth: Authenticated,
    Path((project_id, name)): Path<(String, String)>,
) -> ApiResult<Response> {
    let project = project(&state, &auth, &project_id, WRITE).await?;
    let store = state.store.as_ref();
    let actor = Actor::user(&auth.user);
    let Some(endpoint) =
        repository::delete(store, project.id, &name, &actor, state.clock.now()).await?
    else {
        return Err(ApiError::not_found_detail(format!(
            "Endpoint '{name}' not found."
        )));
    };
    materialization::stop_all(&state, &endpoint).await?;
    Ok(StatusCode::NO_CONTENT.into_response())
}
