//! A project's job runs over HTTP: `GET /api/projects/:project_id/jobs/` (newest first, `?job=`
//! to narrow to one job) and `GET /api/projects/:project_id/jobs/:job/:run_id/`, scope
//! `project:read`, so whoever waits on background work (compaction, and the runs families
//! enqueue) can see where it is. Mounted by the family that owns `/api/projects/:id/`.

use axum::extract::{Path, Query, State};
use serde::Deserialize;
use serde_json::Value;
use uuid::Uuid;

use super::JobRun;
use crate::Authenticated;
use crate::error::{ApiError, ApiResult};
use crate::models::Scope;
use crate::pagination::{MAX_LIMIT, Pagination};
use crate::state::AppState;

const PROJECT_READ: Scope = Scope::read("project");

/// Other query pairs (`limit`, `offset`, `personal_api_key`) belong to other extractors.
#[derive(Debug, Deserialize)]
pub struct RunsQuery {
    job: Option<String>,
}

/// Job names are plain words; anything else could not name a job and would reach into the keys.
fn job_name(name: &str) -> ApiResult<&str> {
    let plain = !name.is_empty()
        && name.len() <= 64
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || b == b'-');
    if plain {
        Ok(name)
    } else {
        Err(ApiError::validation(
            "job",
            "A job name is made of lowercase letters, digits, `_` and `-`.",
        ))
    }
}

pub async fn list(
    State(state): State<AppState>,
    auth: Authenticated,
    Path(project_id): Path<String>,
    Query(query): Query<RunsQuery>,
    pagination: Pagination,
) -> ApiResult<axum::Json<Value>> {
    let project = auth
        .project(state.store.as_ref(), &project_id, PROJECT_READ)
        .await?;
    let job = query.job.as_deref().map(job_name).transpose()?;
    let runs = JobRun::list(state.store.as_ref(), Some(project.id), job, MAX_LIMIT).await?;
    Ok(axum::Json(pagination.page(&runs)))
}

pub async fn retrieve(
    State(state): State<AppState>,
    auth: Authenticated,
    Path((project_id, job, run_id)): Path<(String, String, String)>,
) -> ApiResult<axum::Json<JobRun>> {
    let project = auth
        .project(state.store.as_ref(), &project_id, PROJECT_READ)
        .await?;
    let not_found = || ApiError::not_found_detail("Job run not found.");
    let job = job_name(&job).map_err(|_| not_found())?;
    let run_id = Uuid::parse_str(&run_id).map_err(|_| not_found())?;
    let run = JobRun::load(state.store.as_ref(), Some(project.id), job, run_id)
        .await?
        .ok_or_else(not_found)?;
    Ok(axum::Json(run))
}
