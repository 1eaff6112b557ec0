//! Materialization as the routes drive it: refused with a reason when the query cannot be
//! materialized, started (a run queued now) when a version turns materialized, stopped (its
//! stored results removed) when it turns off, moves to a new version, or the endpoint goes; and
//! `GET endpoints/:name/materialization_status/`.

use std::collections::HashMap;

use axum::extract::{Path, State};
use axum::response::{IntoResponse, Response};
use common::error::{ApiError, ApiResult};
use common::models::Project;
use common::{AppState, Authenticated};
use endpoint_core::repository::{self, Updated};
use endpoint_core::{Endpoint, Materialization, MaterializationStatus, SyncFrequency, Version};
use query_service::endpoints::materialization as job;
use serde_json::Value;

use crate::shared::{READ, load, project};

/// Refuses to turn materialization on for a query that cannot be materialized; answers the
/// variable its result is stored by.
pub async fn check(
    state: &AppState,
    project: &Project,
    query: &Value,
) -> ApiResult<Option<String>> {
    query_service::endpoints::can_materialize(state, project, query)
        .await
        .map_err(|reason| ApiError::field("is_materialized", "invalid_input", reason))
}

/// Materializes `version` from now on, every `sync_frequency`, by the variable `can` names; a
/// query that cannot be (`can` is why: a new version's, after the materialization moved to it)
/// is recorded as failed, with the reason.
pub async fn start(
    state: &AppState,
    endpoint: &Endpoint,
    version: &Version,
    can: Result<Option<String>, String>,
) -> ApiResult<()> {
    let sync = version.sync_frequency.unwrap_or_default();
    match can {
        Ok(variable) => job::enable(state, endpoint, version, sync, variable)
            .await
            .map_err(ApiError::internal),
        Err(reason) => {
            let now = state.clock.now();
            let failed = Materialization {
                endpoint_id: endpoint.id,
                endpoint_name: endpoint.name.clone(),
                version: version.version,
                status: MaterializationStatus::Failed,
                sync_frequency: sync,
                last_materialized_at: None,
                next_run_at: now + sync.interval(),
                error: reason,
                object: None,
                variable: None,
                rows: 0,
                updated_at: now,
            };
            repository::put_materialization(state.store.as_ref(), endpoint.team_id, &failed)
                .await?;
            Ok(())
        }
    }
}

/// Each version's materialization settings before an update.
#[derive(Debug, Default)]
pub struct Before(HashMap<u32, (bool, Option<SyncFrequency>)>);

impl Before {
    pub fn of(versions: &[Version]) -> Self {
        Self(
            versions
                .iter()
                .map(|v| (v.version, (v.is_materialized, v.sync_frequency)))
                .collect(),
        )
    }
}

/// Starts and stops materializations as an update changed the versions' settings.
pub async fn apply(
    state: &AppState,
    project: &Project,
    updated: &Updated,
    before: &Before,
) -> ApiResult<()> {
    for version in updated
        .changed_versions
        .iter()
        .chain(updated.new_version.as_ref())
    {
        let was = before.0.get(&version.version).copied().unwrap_or_default();
        if (version.is_materialized, version.sync_frequency) == was {
            continue;
        }
        match version.is_materialized {
            true => {
                let can =
                    query_service::endpoints::can_materialize(state, project, &version.query).await;
                start(state, &updated.endpoint, version, can).await?
            }
            false => job::disable(state, &updated.endpoint, version.version).await?,
        }
    }
    Ok(())
}

/// Stops every materialization of a deleted endpoint.
pub async fn stop_all(state: &AppState, endpoint: &Endpoint) -> ApiResult<()> {
    let items =
        repository::materializations_of(state.store.as_ref(), endpoint.team_id, endpoint.id)
            .await?;
    for item in items {
        job::disable(state, endpoint, item.version).await?;
    }
    Ok(())
}

/// `GET endpoints/:name/materialization_status/`: the current version's.
pub async fn status(
    State(state): State<AppState>,
    auth: Authenticated,
    Path((project_id, name)): Path<(String, String)>,
) -> ApiResult<Response> {
    let project = project(&state, &auth, &project_id, READ).await?;
    let endpoint = load(state.store.as_ref(), project.id, &name).await?;
    let current = repository::current(state.store.as_ref(), project.id, &endpoint).await?;
    let body = crate::shared::materialization(&state, &project, &endpoint, &current).await?;
    Ok(axum::Json(body).into_response())
}
