//! What every route of the family shares: scopes, the answer to a failed write, rendering a
//! cohort.

use cohort_core::Cohort;
use common::error::{ApiError, ApiResult};
use common::models::{Scope, User};
use common::repository::WriteError;
use common::store::Store;
use serde_json::Value;

pub const READ: Scope = Scope::read("cohort");
pub const WRITE: Scope = Scope::write("cohort");
pub const PERSON_READ: Scope = Scope::read("person");

/// Tries of a change before it answers 409 (each try is one read and one transaction).
pub const UPDATE_ATTEMPTS: u32 = 16;

pub fn write_error(error: WriteError) -> ApiError {
    error.answer_plain("cohort")
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
