//! Cohorts in the service: the cohorts a node's `cohort` filters name, read from the Store
//! (nested ones and static members included) only when the node names one, what of them goes
//! into the cache key, and the `cohort_calculation` job ([`calculation`]).

pub mod calculation;

use std::collections::BTreeSet;
use std::sync::Arc;

use common::AppState;
use common::store::StoreError;
use engine::sql::QueryError;
use insights::cohorts::{CohortSpec, Cohorts};

use crate::SqlNode;

/// Most cohorts one node may pull in, nested ones included.
const MAX_COHORTS: usize = 200;

/// The cohorts `node` names (its structured node and its HogQL filters), with the cohorts they
/// name in turn; nothing is read when it names none. An id that is not a live cohort is left
/// out: the compiler answers the 400 naming the field.
pub async fn for_node(
    state: &AppState,
    team_id: i64,
    node: &SqlNode,
) -> Result<Arc<Cohorts>, QueryError> {
    let mut ids: BTreeSet<i64> = BTreeSet::new();
    for part in [node.structured.as_ref(), node.filters.as_ref()]
        .into_iter()
        .flatten()
    {
        ids.extend(insights::cohorts::referenced(part));
    }
    if ids.is_empty() {
        return Ok(Arc::default());
    }
    load(state, team_id, ids)
        .await
        .map(Arc::new)
        .map_err(QueryError::internal)
}

/// `ids` and every cohort they name, directly or not, with static cohorts' members.
pub async fn load(
    state: &AppState,
    team_id: i64,
    ids: impl IntoIterator<Item = i64>,
) -> Result<Cohorts, StoreError> {
    let store = state.store.as_ref();
    let mut cohorts = Cohorts::new();
    let mut seen = BTreeSet::new();
    let mut todo: Vec<i64> = ids.into_iter().collect();
    while let Some(id) = todo.pop() {
        if !seen.insert(id) || seen.len() > MAX_COHORTS {
            continue;
        }
        let Some(cohort) = cohorts::repository::get_live(store, team_id, id).await? else {
            continue;
        };
        let members = match cohort.is_static {
            true => cohorts::members::list(store, team_id, id).await?,
            false => Vec::new(),
        };
        todo.extend(cohort.filters.iter().flat_map(cohorts::Filters::cohort_ids));
        cohorts.insert(id, CohortSpec { cohort, members });
    }
    Ok(cohorts)
}

/// What of the cohorts goes into a cache key: each one's version and member count (the SQL
/// holds the definitions and static members already; this keeps a changed cohort from ever
/// serving an old answer).
pub fn digest(cohorts: &Cohorts) -> String {
    cohorts
        .values()
        .map(|spec| {
            format!(
                "{}:{}:{}:{}",
                spec.cohort.id,
                spec.cohort.version,
                spec.cohort.count.unwrap_or(-1),
                spec.members.len()
            )
        })
        .collect::<Vec<_>>()
        .join(",")
}
