//! Person overrides: a merged-away person's rows keep the id they were written with, and queries
//! read them as the person they were merged into (PostHog's person overrides). The lake's writer
//! records them when persons merge and compaction squashes them into the rows; the SQL dialect
//! reads them. Also the index every person of a project is listed under.

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use common::store::{
    self, Condition, Index, Item, MAX_TRANSACTION_ITEMS, Store, StoreError, WriteOp,
};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// A merged-away person's rows keep the id they were written with; queries read them as the
/// person they were merged into, through these overrides (PostHog's person overrides).
/// Compaction squashes them into the rows (the `lake` crate's `squash`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct PersonOverride {
    pub old: Uuid,
    pub new: Uuid,
    /// When the merge happened (absent on overrides made before this was recorded).
    #[serde(default)]
    pub at: Option<DateTime<Utc>>,
}

fn override_pk(team_id: i64, old: Uuid) -> String {
    format!("POVERRIDE#{team_id}#{old}")
}

/// The Store item recording that `old` was merged into `new` at `at`.
pub fn override_item(
    team_id: i64,
    old: Uuid,
    new: Uuid,
    at: DateTime<Utc>,
) -> Result<Item, StoreError> {
    let merged = PersonOverride {
        old,
        new,
        at: Some(at),
    };
    Ok(Item::of(override_pk(team_id, old), "OVERRIDE", &merged)?
        .with_gsi1(format!("POVERRIDES#{team_id}"), old.to_string()))
}

/// Every override of a project, as recorded.
pub async fn override_list(
    store: &dyn Store,
    team_id: i64,
) -> Result<Vec<PersonOverride>, StoreError> {
    store::query_all(store, &format!("POVERRIDES#{team_id}"), Index::Gsi1)
        .await?
        .iter()
        .map(Item::parse)
        .collect()
}

/// Drops overrides whose rows were rewritten (by compaction).
pub async fn delete_overrides(
    store: &dyn Store,
    team_id: i64,
    olds: &[Uuid],
) -> Result<(), StoreError> {
    let writes = olds
        .chunks(MAX_TRANSACTION_ITEMS)
        .map(|group| {
            group
                .iter()
                .map(|old| WriteOp::Delete {
                    pk: override_pk(team_id, *old),
                    sk: "OVERRIDE".into(),
                    condition: Condition::None,
                })
                .collect()
        })
        .collect::<Vec<_>>();
    if !writes.is_empty() {
        store.transact_write_each(writes).await?;
    }
    Ok(())
}

/// Every override of a project, each resolved to the person at the end of its chain (a person
/// merged into one that was merged in turn).
pub async fn overrides(store: &dyn Store, team_id: i64) -> Result<HashMap<Uuid, Uuid>, StoreError> {
    Ok(resolve_chains(&override_list(store, team_id).await?))
}

/// Each override's old person mapped to the person at the end of its chain.
pub fn resolve_chains(list: &[PersonOverride]) -> HashMap<Uuid, Uuid> {
    let direct: HashMap<Uuid, Uuid> = list.iter().map(|o| (o.old, o.new)).collect();
    direct
        .keys()
        .map(|old| {
            let mut target = direct[old];
            // Bounded: a cycle (which merges cannot make) would otherwise never end.
            for _ in 0..direct.len() {
                match direct.get(&target) {
                    Some(next) if next != old => target = *next,
                    _ => break,
                }
            }
            (*old, target)
        })
        .collect()
}

pub use common::models::person::persons_index;
