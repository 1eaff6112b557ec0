//! Flags in the Store. OWNER: CRUD helper.

use common::store::{Store, StoreError};

use crate::FeatureFlag;

/// Every flag of a project that is not deleted (active or not), in id order.
pub async fn list_live(store: &dyn Store, team_id: i64) -> Result<Vec<FeatureFlag>, StoreError> {
    let _ = (store, team_id);
    todo!("CRUD helper")
}
