//! Saved metrics in the Store: a project's saved metrics live in its partition (`TEAM#<id>`)
//! under `EXPSAVEDMETRIC#<zero-padded id>`, ids from `COUNTER#EXPERIMENT_SAVED_METRIC` (a new
//! one is stored by `common::repository::create_numbered`). A delete also drops the
//! experiments' links to it (PostHog's through table cascades), in one transaction.
//!
//! PostHog logs a saved metric under the `Experiment` scope with `detail.type =
//! "shared_metric"`, so its history shows in the experiments' activity log; so does this.

use chrono::{DateTime, Utc};
use common::activity::{self, Actor};
use common::repository::{self as entities, Entity, Numbered, WriteError};
use common::store::Store;

use super::SavedMetric;

impl Entity for SavedMetric {
    const PREFIX: &'static str = "EXPSAVEDMETRIC#";
    const SCOPE: &'static str = crate::repository::SCOPE;
    const DETAIL_TYPE: Option<&'static str> = Some("shared_metric");

    fn display_name(&self) -> String {
        self.name.clone()
    }
}

impl Numbered for SavedMetric {
    const COUNTER: &'static str = "COUNTER#EXPERIMENT_SAVED_METRIC";
}

common::stamped!(SavedMetric, i64);
common::entity_reads! { SavedMetric, i64, Stored { saved_metric, item_version } }

/// Replaces `before` by `after` (read at its item version), logged `updated`.
pub async fn save(
    store: &dyn Store,
    team_id: i64,
    before: &Stored,
    mut after: SavedMetric,
    actor: &Actor,
    at: DateTime<Utc>,
) -> Result<SavedMetric, WriteError> {
    let ops = entities::plan_save(
        team_id,
        &before.saved_metric,
        before.item_version,
        &mut after,
        activity::UPDATED,
        actor,
        at,
    )?;
    entities::try_commit(store, ops).await?;
    Ok(after)
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
    let mut ops = entities::plan_delete(saved, before.item_version, actor, at)?;
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
    entities::try_commit(store, ops).await
}
