//! `GET /api/projects/:project_id/groups_types/`: the project's group types, which the
//! committer records from ingested events (`common::models::GroupTypes`).

use axum::extract::{Path, State};
use common::models::{GroupTypes, Scope};
use common::{ApiResult, AppState, Authenticated};
use serde::Serialize;

const GROUP_READ: Scope = Scope::read("group");

/// One group type as PostHog lists it.
#[derive(Debug, Serialize)]
pub struct GroupType {
    group_type: String,
    group_type_index: i64,
    /// PostHog's display names; nothing sets them here yet.
    name_singular: Option<String>,
    name_plural: Option<String>,
}

/// The project's group types in index order (a plain list, as PostHog answers).
pub async fn list(
    State(state): State<AppState>,
    auth: Authenticated,
    Path(project_id): Path<String>,
) -> ApiResult<axum::Json<Vec<GroupType>>> {
    let store = state.store.as_ref();
    let project = auth.project(store, &project_id, GROUP_READ).await?;
    let types = GroupTypes::load(store, project.id).await?;
    Ok(axum::Json(
        types
            .iter()
            .map(|(index, name)| GroupType {
                group_type: name.to_owned(),
                group_type_index: index,
                name_singular: None,
                name_plural: None,
            })
            .collect(),
    ))
}
