//! What every route of the family shares: scopes, ids, loading and rendering a cohort.

use cohort_core::Cohort;
use cohort_core::repository::{self, Stored, WriteError};
use common::error::{ApiError, ApiResult};
use common::models::{Scope, User};
use common::store::Store;
use serde_json::Value;

pub const READ: Scope = Scope::read("cohort");
pub const WRITE: Scope = Scope::write("cohort");
pub const PERSON_READ: Scope = Scope::read("person");

/// Tries of a change before it answers 409 (each try is one read and one transaction).
pub const UPDATE_ATTEMPTS: u32 = 16;

/// The cohort `id`; 404 when it does not exist or is deleted (unless `deleted_too`).
pub async fn load(
    store: &dyn Store,
    team_id: i64,
    id: i64,
    deleted_too: bool,
) -> ApiResult<Stored> {
    repository::get(store, team_id, id)
        .await?
        .filter(|stored| deleted_too || !stored.cohort.deleted)
        .ok_or_else(ApiError::not_found)
}

pub fn write_error(error: WriteError) -> ApiError {
    match error {
        WriteError::Raced => {
            ApiError::conflict("The cohort kept changing under this request; retry.")
        }
        WriteError::Store(error) => error.into(),
    }
}

/// CohortSerializer's JSON, with the creator read from the Store.
pub async fn render(store: &dyn Store, cohort: &Cohort) -> ApiResult<Value> {
    let creator = match cohort.created_by {
        Some(uuid) => User::load(store, uuid).await?,
        None => None,
    };
    Ok(cohort_core::render::cohort(
        cohort,
        creator
            .as_ref()
            .map_or(Value::Null, feature_flags::render::user_basic),
    ))
}
