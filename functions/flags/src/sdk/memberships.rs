//! The person's stored membership of the static and behavioural cohorts active flags reach,
//! read before evaluating (the flag matcher is synchronous): one Store read per cohort, made
//! concurrently, and none when no flag names such a cohort.

use std::collections::BTreeSet;

use common::store::{Store, StoreError};
use futures::future::try_join_all;
use uuid::Uuid;

/// Of `cohorts`, those `person` is a stored member of (none for a distinct id without a person).
pub async fn read(
    store: &dyn Store,
    team_id: i64,
    cohorts: &BTreeSet<i64>,
    person: Option<Uuid>,
) -> Result<BTreeSet<i64>, StoreError> {
    let Some(person) = person else {
        return Ok(BTreeSet::new());
    };
    let checks = cohorts.iter().map(|&id| async move {
        cohort_core::members::contains(store, team_id, id, person)
            .await
            .map(|member| member.then_some(id))
    });
    Ok(try_join_all(checks).await?.into_iter().flatten().collect())
}
