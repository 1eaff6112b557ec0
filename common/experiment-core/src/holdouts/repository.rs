//! Holdouts in the Store: a project's holdouts live in its partition (`TEAM#<id>`) under
//! `EXPHOLDOUT#<zero-padded id>`, ids from `COUNTER#EXPERIMENT_HOLDOUT` (a new one is stored by
//! `common::repository::create_numbered`, its groups named as it takes its id). A change of a
//! holdout's size rewrites the flags of the experiments that name it, and a delete detaches it
//! from them, in the holdout's own transaction (PostHog does both in one `transaction.atomic`).
//!
//! PostHog logs a holdout under the `Experiment` scope with `detail.type = "holdout"`, so its
//! history shows in the experiments' activity log; so does this.

use chrono::{DateTime, Utc};
use common::activity::{self, Actor};
use common::repository::{self as entities, Entity, Numbered, WriteError};
use common::store::{Store, StoreError, WriteOp};
use feature_flags::repository as flags;

use super::Holdout;
use crate::Experiment;

impl Entity for Holdout {
    const PREFIX: &'static str = "EXPHOLDOUT#";
    const SCOPE: &'static str = crate::repository::SCOPE;
    const DETAIL_TYPE: Option<&'static str> = Some("holdout");

    fn display_name(&self) -> String {
        self.name.clone()
    }
}

impl Numbered for Holdout {
    const COUNTER: &'static str = "COUNTER#EXPERIMENT_HOLDOUT";

    /// Its groups get `holdout-<id>`.
    fn take_id(&mut self, id: i64) {
        self.id = id;
        self.stamp_variant();
    }
}

common::stamped!(Holdout, i64);
common::entity_reads! { Holdout, i64, Stored { holdout, item_version } }

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
    entities::try_commit(store, ops).await?;
    Ok((after, flags_changed))
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
    let mut ops = entities::plan_delete(holdout, before.item_version, actor, at)?;
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
    entities::try_commit(store, ops).await?;
    Ok(flags_changed)
}
