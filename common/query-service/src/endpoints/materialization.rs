//! An endpoint version's materialization: its whole result run as one query (a variable turned
//! into a column), stored as one Parquet object under
//! `materialized/team_id=<id>/endpoint=<name>/v=<n>/<run>.parquet`, and served to runs while
//! fresh.
//!
//! A run writes a new object, then points the Store's [`Materialization`] item at it, then
//! removes the object before: a reader finds the old result or the new one, never half of one
//! (and a reader that lost the race with the removal runs the query instead). The
//! `endpoint_materialization` job runs one version (payload [`Request`]); its schedule's run (no
//! payload: EventBridge in AWS, a timer embedded) queues every version that is due.

use std::sync::Arc;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use common::AppState;
use common::jobs::{Job, JobContext, JobError};
use common::models::Project;
use common::store::StoreError;
use endpoint_core::repository;
use endpoint_core::{Endpoint, Materialization, MaterializationStatus, SyncFrequency, Version};
use engine::materialize::{self, Slice};
use engine::{Output, QueryError};
use futures::TryStreamExt;
use object_store::ObjectStoreExt;
use object_store::path::Path;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use uuid::Uuid;

use crate::errors::exposed_message;
use crate::{Overrides, SqlNode, runner};

pub const JOB: &str = "endpoint_materialization";

/// A run that has not finished in this long is taken to have died (a Lambda timed out).
const STUCK_AFTER: chrono::Duration = chrono::Duration::minutes(15);

/// One version to materialize.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Request {
    pub team_id: i64,
    pub endpoint_id: Uuid,
    pub version: u32,
}

fn prefix(team_id: i64, endpoint: &str, version: u32) -> Path {
    Path::from(format!(
        "materialized/team_id={team_id}/endpoint={endpoint}/v={version}"
    ))
}

/// Starts materializing `version` of `endpoint` every `sync`: its item says Pending and a run is
/// queued now.
pub async fn enable(
    state: &AppState,
    endpoint: &Endpoint,
    version: &Version,
    sync: SyncFrequency,
    variable: Option<String>,
) -> Result<(), JobError> {
    let now = state.clock.now();
    let previous = repository::get_materialization(
        state.store.as_ref(),
        endpoint.team_id,
        endpoint.id,
        version.version,
    )
    .await?;
    let materialization = Materialization {
        endpoint_id: endpoint.id,
        endpoint_name: endpoint.name.clone(),
        version: version.version,
        status: MaterializationStatus::Pending,
        sync_frequency: sync,
        last_materialized_at: previous.as_ref().and_then(|p| p.last_materialized_at),
        next_run_at: now,
        error: String::new(),
        object: previous.as_ref().and_then(|p| p.object.clone()),
        variable,
        rows: previous.as_ref().map_or(0, |p| p.rows),
        updated_at: now,
    };
    repository::put_materialization(state.store.as_ref(), endpoint.team_id, &materialization)
        .await?;
    queue(state, endpoint.team_id, endpoint.id, version.version).await
}

async fn queue(
    state: &AppState,
    team_id: i64,
    endpoint_id: Uuid,
    version: u32,
) -> Result<(), JobError> {
    let request = Request {
        team_id,
        endpoint_id,
        version,
    };
    state
        .jobs
        .enqueue(
            state,
            Arc::new(EndpointMaterializationJob),
            Some(team_id),
            json!(request),
        )
        .await?;
    Ok(())
}

/// Stops materializing `version` of `endpoint` and removes its stored results.
pub async fn disable(
    state: &AppState,
    endpoint: &Endpoint,
    version: u32,
) -> Result<(), StoreError> {
    repository::delete_materialization(
        state.store.as_ref(),
        endpoint.team_id,
        endpoint.id,
        version,
    )
    .await?;
    remove_objects(
        state,
        &prefix(endpoint.team_id, &endpoint.name, version),
        None,
    )
    .await;
    Ok(())
}

/// Removes what is stored under `prefix`, but `keep`; a failure is logged (an orphan object is
/// never read: the Store's item names the current one).
async fn remove_objects(state: &AppState, prefix: &Path, keep: Option<&str>) {
    let listed: Result<Vec<_>, _> = state.objects.list(Some(prefix)).try_collect().await;
    let objects = match listed {
        Ok(objects) => objects,
        Err(error) => {
            tracing::warn!(%error, %prefix, "cannot list materialized results to remove");
            return;
        }
    };
    for object in objects {
        if Some(object.location.as_ref()) == keep {
            continue;
        }
        if let Err(error) = state.objects.delete(&object.location).await {
            tracing::warn!(%error, location = %object.location, "cannot remove a materialized result");
        }
    }
}

/// Runs the materialization of one version now; its item records how it went.
pub async fn materialize(state: &AppState, request: &Request) -> Result<Value, JobError> {
    let store = state.store.as_ref();
    let Some(mut item) = repository::get_materialization(
        store,
        request.team_id,
        request.endpoint_id,
        request.version,
    )
    .await?
    else {
        return Ok(json!({"ran": false, "reason": "not materialized"}));
    };
    let Some(version) =
        repository::version(store, request.team_id, request.endpoint_id, request.version).await?
    else {
        return Ok(json!({"ran": false, "reason": "no such version"}));
    };
    let Some(project) = Project::load(store, request.team_id).await? else {
        return Ok(json!({"ran": false, "reason": "no such project"}));
    };
    item.status = MaterializationStatus::Running;
    item.updated_at = state.clock.now();
    repository::put_materialization(store, request.team_id, &item).await?;
    let started = state.clock.now();
    let location = Path::from(format!(
        "{}/{}.parquet",
        prefix(request.team_id, &item.endpoint_name, request.version),
        Uuid::now_v7().simple()
    ));
    let outcome = run(
        state,
        &project,
        &version,
        item.variable.as_deref(),
        &location,
    )
    .await;
    // The endpoint may have been turned off (or deleted) meanwhile: then this result is not
    // wanted, and the item stays gone.
    let Some(mut current) = repository::get_materialization(
        store,
        request.team_id,
        request.endpoint_id,
        request.version,
    )
    .await?
    else {
        remove_objects(state, &location, None).await;
        return Ok(json!({"ran": true, "kept": false}));
    };
    let now = state.clock.now();
    current.updated_at = now;
    current.next_run_at = started + current.sync_frequency.interval();
    let output = match outcome {
        Ok(rows) => {
            current.status = MaterializationStatus::Completed;
            current.last_materialized_at = Some(started);
            current.object = Some(location.to_string());
            current.rows = rows;
            current.error = String::new();
            json!({"ran": true, "rows": rows, "object": location.to_string()})
        }
        Err(error) => {
            if let QueryError::Internal(cause) = &error {
                tracing::error!(%cause, endpoint = %current.endpoint_name, "materialization failed");
            }
            current.status = MaterializationStatus::Failed;
            current.error = exposed_message(&error).unwrap_or_else(|| "Internal error".into());
            remove_objects(state, &location, None).await;
            json!({"ran": true, "error": current.error})
        }
    };
    repository::put_materialization(store, request.team_id, &current).await?;
    if current.status == MaterializationStatus::Completed {
        remove_objects(
            state,
            &prefix(request.team_id, &current.endpoint_name, request.version),
            current.object.as_deref(),
        )
        .await;
    }
    Ok(output)
}

async fn run(
    state: &AppState,
    project: &Project,
    version: &Version,
    variable: Option<&str>,
    location: &Path,
) -> Result<u64, QueryError> {
    let node = SqlNode::from_query(&version.query, Overrides::default())
        .map_err(|error| QueryError::Query(error.body.detail))?;
    let plan = runner::materialization_plan(state, project, &node, variable).await?;
    let (schema, batches) = runner::collect(state, project, &plan).await?;
    materialize::write(state.objects.as_ref(), location, schema, batches).await
}

/// The stored result of `materialization` as its query answers it for `value` (the variable's,
/// when it has one), cut to `slice`.
pub async fn serve(
    state: &AppState,
    project: &Project,
    materialization: &Materialization,
    value: Option<&Value>,
    slice: Slice,
) -> Result<Output, QueryError> {
    let Some(object) = &materialization.object else {
        return Err(QueryError::internal(
            "the materialization has no stored result",
        ));
    };
    let zone = project.timezone.parse().unwrap_or(chrono_tz::UTC);
    materialize::serve(
        state.objects.as_ref(),
        &Path::from(object.as_str()),
        value,
        slice,
        zone,
    )
    .await
}

/// Queues a run of every materialization that is due (or stuck) in the projects with events.
async fn queue_due(state: &AppState) -> Result<Value, JobError> {
    let now = state.clock.now();
    let teams = lake_core::table::teams_with_tables(state)
        .await
        .map_err(JobError::failed)?;
    let mut queued = Vec::new();
    for team_id in teams {
        for item in repository::list_materializations(state.store.as_ref(), team_id).await? {
            if !due(&item, now) {
                continue;
            }
            queue(state, team_id, item.endpoint_id, item.version).await?;
            queued.push(json!({"team_id": team_id, "endpoint": item.endpoint_name, "version": item.version}));
        }
    }
    Ok(json!({"queued": queued}))
}

fn due(item: &Materialization, now: DateTime<Utc>) -> bool {
    match item.status {
        MaterializationStatus::Running => item.updated_at + STUCK_AFTER <= now,
        _ => item.next_run_at <= now,
    }
}

/// Materializes endpoint versions by name ([`JOB`]).
pub struct EndpointMaterializationJob;

#[async_trait]
impl Job for EndpointMaterializationJob {
    fn name(&self) -> &'static str {
        JOB
    }

    fn max_attempts(&self) -> u32 {
        3
    }

    async fn run(&self, state: &AppState, run: &JobContext) -> Result<Value, JobError> {
        if run.team_id.is_none() && run.payload.is_null() {
            return queue_due(state).await;
        }
        let request: Request = run.payload(self.name())?;
        if run.team_id.is_some_and(|team| team != request.team_id) {
            return Err(JobError::permanent(
                "the payload's team_id is not the run's project",
            ));
        }
        materialize(state, &request).await
    }
}

pub fn register(state: &AppState) {
    state.jobs.register(Arc::new(EndpointMaterializationJob));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_is_due_at_its_time_and_a_stuck_one_after_a_while() {
        let now: DateTime<Utc> = "2026-11-28T10:00:00Z".parse().expect("an instant");
        let mut item = Materialization {
            endpoint_id: Uuid::nil(),
            endpoint_name: "e".into(),
            version: 1,
            status: MaterializationStatus::Completed,
            sync_frequency: SyncFrequency::default(),
            last_materialized_at: None,
            next_run_at: now + chrono::Duration::minutes(1),
            error: String::new(),
            object: None,
            variable: None,
            rows: 0,
            updated_at: now,
        };
        assert!(!due(&item, now));
        item.next_run_at = now;
        assert!(due(&item, now));
        item.status = MaterializationStatus::Running;
        assert!(!due(&item, now));
        assert!(due(&item, now + STUCK_AFTER));
    }
}
