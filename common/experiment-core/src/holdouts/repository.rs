//! Holdouts in the Store: a project's holdouts live in its partition (`TEAM#<id>`) under
//! `EXPHOLDOUT#<zero-padded id>`, ids from `COUNTER#EXPERIMENT_HOLDOUT`. A change of a holdout's
//! size rewrites the flags of the experiments that name it, and a delete detaches it from them,
//! in the holdout's own transaction (PostHog does both in one `transaction.atomic`).
//!
//! PostHog logs a holdout under the `Experiment` scope with `detail.type = "holdout"`, so its
//! history shows in the experiments' activity log; so does this.

use chrono::{DateTime, Utc};
use common::activity::{self, Actor};
use common::repository::{self as entities, Entity, team_pk};
use common::store::{self, Condition, Store, StoreError, WriteOp};
use feature_flags::repository as flags;

use super::Holdout;
use crate::Experiment;

const COUNTER_SK: &str = "COUNTER#EXPERIMENT_HOLDOUT";
/// `detail.type` of a holdout's activity entries.
const DETAIL_TYPE: &str = "holdout";

impl Entity for Holdout {
    const PREFIX: &'static str = "EXPHOLDOUT#";
    const SCOPE: &'static str = crate::repository::SCOPE;

    fn display_name(&self) -> String {
        self.name.clone()
    }
}

common::stamped!(Holdout, i64);
common::entity_reads! { Holdout, i64, Stored { holdout, item_version } }

#[derive(Debug, thiserror::Error)]
pub enum WriteError {
    /// The holdout, an experiment or a flag changed since it was read; read again.
    #[error("the holdout or a linked experiment changed since it was read")]
    Raced,
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// A holdout's activity entry, typed as PostHog types it.
fn entry_op(
    holdout: &Holdout,
    actor: &Actor,
    kind: &str,
    before: Option<&Holdout>,
    at: DateTime<Utc>,
) -> Result<WriteOp, StoreError> {
    let after = entities::encode(holdout)?;
    let before = before.map(entities::encode).transpose()?;
    let mut entry = entities::record(holdout, actor, kind, before.as_ref(), &after, at).entry();
    entry.detail.kind = Some(DETAIL_TYPE.to_owned());
    entry.put_op(holdout.team_id)
}

/// Stores `holdout` with the project's next id (its groups then get `holdout-<id>`) and its
/// `created` entry; a lost race on the counter is retried.
pub async fn create(
    store: &dyn Store,
    team_id: i64,
    holdout: Holdout,
    actor: &Actor,
    at: DateTime<Utc>,
) -> Result<Holdout, WriteError> {
    let pk = team_pk(team_id);
    for attempt in 0..store::UPDATE_ATTEMPTS {
        entities::pause_before(attempt).await;
        let mut holdout = holdout.clone();
        let (id, counter) = store::claim_next_id(store, &pk, COUNTER_SK).await?;
        holdout.id = id;
        holdout.team_id = team_id;
        holdout.stamp_variant();
        let ops = vec![
            counter,
            entities::put_new(&holdout)?,
            entry_op(&holdout, actor, activity::CREATED, None, at)?,
        ];
        if entities::commit(store, ops).await? {
            return Ok(holdout);
        }
    }
    Err(WriteError::Raced)
}

/// The experiments of the project (deleted ones too, as PostHog's `experiment_set`) that name
/// holdout `id`, as read.
async fn linked(
    store: &dyn Store,
    team_id: i64,
    id: i64,
) -> Result<Vec<crate::repository::Stored>, StoreError> {
    let mut found = Vec::new();
    for experiment in crate::repository::list_all(store, team_id).await? {
        if experiment.holdout_id == Some(id)
            && let Some(stored) = crate::repository::get(store, team_id, experiment.id).await?
        {
            found.push(stored);
        }
    }
    Ok(found)
}

/// The writes that set (or clear) the holdout in the flag of `experiment`.
async fn flag_ops(
    store: &dyn Store,
    team_id: i64,
    experiment: &Experiment,
    holdout: Option<feature_flags::model::Holdout>,
    actor: &Actor,
    at: DateTime<Utc>,
) -> Result<Vec<WriteOp>, StoreError> {
    let Some(before) = flags::get(store, team_id, experiment.feature_flag_id).await? else {
        return Ok(Vec::new());
    };
    if before.flag.filters.holdout == holdout {
        return Ok(Vec::new());
    }
    let mut after = before.flag.clone();
    after.filters.holdout = holdout;
    Ok(flags::plan_save(team_id, &before, after, actor, at)?.ops)
}

/// Replaces `before` by `after` (read at `item_version`), logged `updated`; when the first
/// group's percentage changed, the linked experiments' flags take it in the same transaction.
/// Answers the holdout and whether any flag changed.
pub async fn save(
    store: &dyn Store,
    team_id: i64,
    before: &Stored,
    mut after: Holdout,
    actor: &Actor,
    at: DateTime<Utc>,
) -> Result<(Holdout, bool), WriteError> {
    let old = &before.holdout;
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
    let mut flags_changed = false;
    if after.flag_holdout() != old.flag_holdout() {
        let mut seen = std::collections::HashSet::new();
        for experiment in linked(store, team_id, after.id).await? {
            // Duplicated experiments can share one flag: write it once.
            if !seen.insert(experiment.experiment.feature_flag_id) {
                continue;
            }
            let more = flag_ops(
                store,
                team_id,
                &experiment.experiment,
                after.flag_holdout(),
                actor,
                at,
            )
            .await?;
            flags_changed |= !more.is_empty();
            ops.extend(more);
        }
    }
    match entities::commit(store, ops).await? {
        true => Ok((after, flags_changed)),
        false => Err(WriteError::Raced),
    }
}

/// Deletes the holdout (PostHog's hard delete) with its `deleted` entry; the experiments that
/// named it lose it (the FK's `SET_NULL`) and their flags drop `filters.holdout`. Answers
/// whether any flag changed.
pub async fn delete(
    store: &dyn Store,
    team_id: i64,
    before: &Stored,
    actor: &Actor,
    at: DateTime<Utc>,
) -> Result<bool, WriteError> {
    let holdout = &before.holdout;
    let mut ops = vec![
        WriteOp::Delete {
            pk: team_pk(team_id),
            sk: Holdout::sort_key(&holdout.id),
            condition: Condition::VersionEquals(before.item_version),
        },
        entry_op(holdout, actor, activity::DELETED, None, at)?,
    ];
    let mut flags_changed = false;
    let mut seen = std::collections::HashSet::new();
    for stored in linked(store, team_id, holdout.id).await? {
        if seen.insert(stored.experiment.feature_flag_id) {
            let more = flag_ops(store, team_id, &stored.experiment, None, actor, at).await?;
            flags_changed |= !more.is_empty();
            ops.extend(more);
        }
        let mut detached = stored.experiment.clone();
        detached.holdout_id = None;
        ops.push(entities::put_over(&detached, stored.item_version)?);
    }
    match entities::commit(store, ops).await? {
        true => Ok(flags_changed),
        false => Err(WriteError::Raced),
    }
}
