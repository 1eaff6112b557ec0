//! Saved metrics in the Store: a project's saved metrics live in its partition (`TEAM#<id>`)
//! under `EXPSAVEDMETRIC#<zero-padded id>`, ids from `COUNTER#EXPERIMENT_SAVED_METRIC`. A
//! delete also drops the experiments' links to it (PostHog's through table cascades), in one
//! transaction.
//!
//! PostHog logs a saved metric under the `Experiment` scope with `detail.type =
//! "shared_metric"`, so its history shows in the experiments' activity log; so does this.

use chrono::{DateTime, Utc};
use common::activity::{self, Actor};
use common::repository::{self as entities, Entity, team_pk};
use common::store::{self, Condition, Store, StoreError, WriteOp};

use super::SavedMetric;

const COUNTER_SK: &str = "COUNTER#EXPERIMENT_SAVED_METRIC";
/// `detail.type` of a saved metric's activity entries.
const DETAIL_TYPE: &str = "shared_metric";

impl Entity for SavedMetric {
    const PREFIX: &'static str = "EXPSAVEDMETRIC#";
    const SCOPE: &'static str = crate::repository::SCOPE;

    fn display_name(&self) -> String {
        self.name.clone()
    }
}

common::stamped!(SavedMetric, i64);
common::entity_reads! { SavedMetric, i64, Stored { saved_metric, item_version } }

#[derive(Debug, thiserror::Error)]
pub enum WriteError {
    /// The saved metric or a linking experiment changed since it was read; read again.
    #[error("the saved metric or a linked experiment changed since it was read")]
    Raced,
    #[error(transparent)]
    Store(#[from] StoreError),
}

fn entry_op(
    saved: &SavedMetric,
    actor: &Actor,
    kind: &str,
    before: Option<&SavedMetric>,
    at: DateTime<Utc>,
) -> Result<WriteOp, StoreError> {
    let after = entities::encode(saved)?;
    let before = before.map(entities::encode).transpose()?;
    let mut entry = entities::record(saved, actor, kind, before.as_ref(), &after, at).entry();
    entry.detail.kind = Some(DETAIL_TYPE.to_owned());
    entry.put_op(saved.team_id)
}

/// Stores `saved` with the project's next id and its `created` entry; a lost race on the
/// counter is retried.
pub async fn create(
    store: &dyn Store,
    team_id: i64,
    saved: SavedMetric,
    actor: &Actor,
    at: DateTime<Utc>,
) -> Result<SavedMetric, WriteError> {
    let pk = team_pk(team_id);
    for attempt in 0..store::UPDATE_ATTEMPTS {
        entities::pause_before(attempt).await;
        let mut saved = saved.clone();
        let (id, counter) = store::claim_next_id(store, &pk, COUNTER_SK).await?;
        saved.id = id;
        saved.team_id = team_id;
        let ops = vec![
            counter,
            entities::put_new(&saved)?,
            entry_op(&saved, actor, activity::CREATED, None, at)?,
        ];
        if entities::commit(store, ops).await? {
            return Ok(saved);
        }
    }
    Err(WriteError::Raced)
}

/// Replaces `before` by `after` (read at its item version), logged `updated`.
pub async fn save(
    store: &dyn Store,
    team_id: i64,
    before: &Stored,
    mut after: SavedMetric,
    actor: &Actor,
    at: DateTime<Utc>,
) -> Result<SavedMetric, WriteError> {
    let old = &before.saved_metric;
    let mut ops = entities::plan_save(
        team_id,
        old,
        before.item_version,
        &mut after,
        activity::UPDATED,
        actor,
        at,
    )?;
    // plan_save's entry lacks PostHog's `detail.type`: replace it.
    ops.pop();
    ops.push(entry_op(&after, actor, activity::UPDATED, Some(old), at)?);
    match entities::commit(store, ops).await? {
        true => Ok(after),
        false => Err(WriteError::Raced),
    }
}

/// Deletes the saved metric (PostHog's hard delete) with its `deleted` entry, and every
/// experiment's link to it.
pub async fn delete(
    store: &dyn Store,
    team_id: i64,
    before: &Stored,
    actor: &Actor,
    at: DateTime<Utc>,
) -> Result<(), WriteError> {
    let saved = &before.saved_metric;
    let mut ops = vec![
        WriteOp::Delete {
            pk: team_pk(team_id),
            sk: SavedMetric::sort_key(&saved.id),
            condition: Condition::VersionEquals(before.item_version),
        },
        entry_op(saved, actor, activity::DELETED, None, at)?,
    ];
    for experiment in crate::repository::list_all(store, team_id).await? {
        if !experiment
            .saved_metrics
            .iter()
            .any(|link| link.saved_metric_id == saved.id)
        {
            continue;
        }
        let Some(stored) = crate::repository::get(store, team_id, experiment.id).await? else {
            continue;
        };
        let mut unlinked = stored.experiment.clone();
        unlinked
            .saved_metrics
            .retain(|link| link.saved_metric_id != saved.id);
        ops.push(entities::put_over(&unlinked, stored.item_version)?);
    }
    match entities::commit(store, ops).await? {
        true => Ok(()),
        false => Err(WriteError::Raced),
    }
}
