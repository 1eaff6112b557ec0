use axum::extract::{Path, State};
use common::models::{Membership, Organization, Project, Scope, User};
use common::{ApiError, ApiResult, AppState, Authenticated};
use serde_json::Value;
use uuid::Uuid;

use crate::payload;

const USER_READ: Scope = Scope::read("user");

/// `GET /api/users/:uuid/`: `@me`, the caller's own uuid, or (staff only) anyone's.
pub async fn retrieve(
    State(state): State<AppState>,
    auth: Authenticated,
    Path(uuid): Path<String>,
) -> ApiResult<axum::Json<Value>> {
    auth.require(USER_READ)?;
    let store = state.store.as_ref();
    let user = if uuid == "@me" || uuid == auth.user.uuid.to_string() {
        auth.user.clone()
    } else if !auth.user.is_staff {
        return Err(ApiError::permission_denied(
            "As a non-staff user you're only allowed to access the `@me` user instance.",
        ));
    } else {
        let uuid = Uuid::parse_str(&uuid).map_err(|_| ApiError::not_found())?;
        User::load(store, uuid)
            .await?
            .ok_or_else(ApiError::not_found)?
    };

    let mut organizations = Vec::new();
    for membership in Membership::of_user(store, user.uuid).await? {
        organizations.extend(Organization::load(store, membership.organization_id).await?);
    }
    let team = match user.current_team_id {
        Some(id) => Project::load(store, id).await?,
        None => None,
    };
    let organization = user
        .current_organization_id
        .and_then(|id| organizations.iter().find(|o| o.id == id));
    Ok(axum::Json(payload::user(
        &user,
        team.as_ref(),
        organization,
        &organizations,
    )))
}
