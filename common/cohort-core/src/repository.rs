//! Cohorts in the Store: a project's cohorts live in its partition (`TEAM#<id>`) under
//! `COHORT#<zero-padded id>`, ids from the project's `COUNTER#COHORT` item. A cohort, its
//! activity entry and whatever the caller links to it (an experiment naming it as its exposure
//! cohort) are written in one transaction.

use std::collections::BTreeSet;

use chrono::{DateTime, Utc};
use common::activity::Actor;
use common::repository::{self as entities, Entity, Numbered, WriteError, team_pk};
use common::store::{self, Store, StoreError, WriteOp};

use crate::definition::DefinitionError;
use crate::{Cohort, Filters};

/// The activity log's scope for cohorts (PostHog's model name).
pub const SCOPE: &str = "Cohort";

/// How deep cohorts may name cohorts that name cohorts.
const MAX_NESTING: usize = 10;

/// Top-level fields that are bookkeeping, not changes worth a log line.
const IGNORED_IN_DIFFS: [&str; 11] = entities::bookkeeping_and(&[
    "count",
    "is_calculating",
    "last_calculation",
    "errors_calculating",
    "last_error_at",
]);

impl Entity for Cohort {
    const PREFIX: &'static str = "COHORT#";
    const SCOPE: &'static str = SCOPE;
    const IGNORED_IN_DIFFS: &'static [&'static str] = &IGNORED_IN_DIFFS;

    fn display_name(&self) -> String {
        self.name.clone()
    }
}

impl Numbered for Cohort {
    const COUNTER: &'static str = "COUNTER#COHORT";
}

common::stamped!(Cohort, i64, soft_deleted);
common::entity_reads! { Cohort, i64, Stored { cohort, item_version }, live }

/// Stores `cohort` with the project's next id and its `created` entry, plus the writes `link`
/// makes for the cohort as it will be stored (its id known), in one transaction. A lost race on
/// the counter is retried; a failed condition of `link`'s writes is [`WriteError::Raced`].
pub async fn create<F>(
    store: &dyn Store,
    team_id: i64,
    cohort: Cohort,
    actor: &Actor,
    at: DateTime<Utc>,
    link: F,
) -> Result<Cohort, WriteError>
where
    F: Fn(&Cohort) -> Result<Vec<WriteOp>, StoreError> + Sync,
{
    entities::create_linked(store, team_id, cohort, actor, at, link).await
}

/// Replaces `before` (as read) by `after`: bumps `version` and `updated_at` and logs `updated`
/// (or `deleted`, or `restored`). [`WriteError::Raced`] when the cohort changed since it was read.
pub use entities::save_edit as save;

/// Bookkeeping that is not a user's change (count, calculation state): written under the
/// item's version without an activity entry. `change` may run more than once.
pub async fn update_bookkeeping<F>(
    store: &dyn Store,
    team_id: i64,
    id: i64,
    change: F,
) -> Result<Cohort, StoreError>
where
    F: FnMut(Cohort) -> Result<Cohort, StoreError>,
{
    store::update(store, &team_pk(team_id), &Cohort::sort_key(&id), change).await
}

/// The cohorts `filters` names must be live cohorts of the project, and no chain of them may lead
/// back to `own_id` (the cohort being written) or nest deeper than [`MAX_NESTING`].
pub async fn check_references(
    store: &dyn Store,
    team_id: i64,
    own_id: Option<i64>,
    filters: &Filters,
    attr: &str,
) -> Result<(), ReferenceError> {
    let mut frontier: Vec<i64> = filters.cohort_ids();
    let mut seen = BTreeSet::new();
    for _ in 0..=MAX_NESTING {
        if frontier.is_empty() {
            return Ok(());
        }
        let mut next = Vec::new();
        for id in frontier {
            if Some(id) == own_id {
                return Err(ReferenceError::Invalid(DefinitionError::new(
                    attr,
                    "A cohort cannot contain itself, directly or through other cohorts.",
                )));
            }
            if !seen.insert(id) {
                continue;
            }
            let Some(cohort) = get_live(store, team_id, id).await? else {
                return Err(ReferenceError::Invalid(DefinitionError::new(
                    attr,
                    format!("Cohort with id {id} does not exist"),
                )));
            };
            next.extend(cohort.filters.iter().flat_map(Filters::cohort_ids));
        }
        frontier = next;
    }
    Err(ReferenceError::Invalid(DefinitionError::new(
        attr,
        format!("Cohorts may name other cohorts at most {MAX_NESTING} levels deep."),
    )))
}

#[derive(Debug, thiserror::Error)]
pub enum ReferenceError {
    #[error(transparent)]
    Invalid(DefinitionError),
    #[error(transparent)]
    Store(#[from] StoreError),
}

#[cfg(test)]
mod tests {
    use chrono::TimeZone;
    use common::activity;
    use serde_json::{Value, json};

    use super::*;

    fn cohort(name: &str, filters: Option<Value>) -> Cohort {
        serde_json::from_value(json!({
            "id": 0, "team_id": 0, "name": name, "filters": filters,
            "created_at": "2025-01-01T00:00:00Z"}))
        .unwrap()
    }

    fn naming(ids: &[i64]) -> Filters {
        let values: Vec<Value> = ids
            .iter()
            .map(|id| json!({"type": "cohort", "key": "id", "value": id}))
            .collect();
        Filters::parse(
            &json!({"properties": {"type": "OR", "values": values}}),
            "filters",
        )
        .unwrap()
    }

    #[tokio::test]
    async fn ids_count_up_saves_are_guarded_and_references_checked() {
        let store = common::testing::memory_store();
        let actor = Actor::system();
        let at = Utc.with_ymd_and_hms(2025, 1, 2, 3, 4, 5).unwrap();
        let (a, b) = tokio::join!(
            create(&store, 1, cohort("a", None), &actor, at, |_| Ok(vec![])),
            create(&store, 1, cohort("b", None), &actor, at, |_| Ok(vec![])),
        );
        let mut ids = [a.unwrap().id, b.unwrap().id];
        ids.sort_unstable();
        assert_eq!(ids, [1, 2]);

        let stored = get(&store, 1, 1).await.unwrap().unwrap();
        let mut renamed = stored.cohort.clone();
        renamed.filters = Some(naming(&[2]));
        save(&store, 1, &stored, renamed.clone(), &actor, at)
            .await
            .unwrap();
        assert!(matches!(
            save(&store, 1, &stored, renamed, &actor, at).await,
            Err(WriteError::Raced)
        ));

        // 2 -> 1 -> 2 is a cycle; 3 does not exist; 2 -> 1 alone is fine for a new cohort.
        let cycle = check_references(&store, 1, Some(2), &naming(&[1]), "filters").await;
        assert!(matches!(cycle, Err(ReferenceError::Invalid(e)) if e.detail.contains("itself")));
        let missing = check_references(&store, 1, None, &naming(&[3]), "filters").await;
        assert!(
            matches!(missing, Err(ReferenceError::Invalid(e)) if e.detail == "Cohort with id 3 does not exist")
        );
        check_references(&store, 1, None, &naming(&[1, 2]), "filters")
            .await
            .unwrap();
        let history = activity::list(&store, 1, SCOPE, Some("1")).await.unwrap();
        assert_eq!(history.len(), 2);
    }
}
