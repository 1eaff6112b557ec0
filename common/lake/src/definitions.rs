//! Event and property definitions recorded as batches are written (the model and its Store
//! writes are `common::models::definitions`). Each writer remembers the definitions it knows
//! exist, so an ordinary batch writes only its events' volumes and last-seen times.

use std::collections::{BTreeSet, HashMap};

use chrono::{DateTime, Utc};
use common::models::definitions::{self, Observed};
use common::store::{Store, StoreError};

/// Keys remembered per project at most; past it the memory starts over (costing one
/// conditional write per definition seen again).
const MAX_KNOWN_PER_TEAM: usize = 50_000;
/// How long a writer trusts its memory: a definition deleted through the API is made again
/// by the next batch that shows it after this long.
const FORGET_AFTER: chrono::Duration = chrono::Duration::minutes(10);

#[derive(Debug, Default)]
pub struct KnownDefinitions {
    by_team: HashMap<i64, (DateTime<Utc>, BTreeSet<String>)>,
}

impl KnownDefinitions {
    pub async fn record(
        &mut self,
        store: &dyn Store,
        team_id: i64,
        observed: &Observed,
        now: DateTime<Utc>,
    ) -> Result<(), StoreError> {
        if observed.is_empty() {
            return Ok(());
        }
        let (since, known) = self
            .by_team
            .entry(team_id)
            .or_insert_with(|| (now, BTreeSet::new()));
        if known.len() > MAX_KNOWN_PER_TEAM || now - *since > FORGET_AFTER {
            known.clear();
            *since = now;
        }
        definitions::record(store, team_id, observed, known, now).await
    }
}
