//! Dashboards: `DASHBOARD#<id>`, tiles inside. Deleting one hides it with its tiles (and, when
//! asked, deletes the insights only it showed); restoring it brings them back, as PostHog does.

use chrono::{DateTime, Utc};
use common::activity::Actor;
use common::repository::{self as entities, Entity, Numbered, put_over, team_pk};
use common::store::{self, Store, StoreError, WriteOp};

use super::{Writes, insights};
use crate::model::{Dashboard, Insight};

/// The activity log's scope (PostHog's model name).
pub const SCOPE: &str = "Dashboard";

impl Entity for Dashboard {
    const PREFIX: &'static str = "DASHBOARD#";
    const SCOPE: &'static str = SCOPE;

    fn display_name(&self) -> String {
        self.name.clone().unwrap_or_default()
    }
}

impl Numbered for Dashboard {
    const COUNTER: &'static str = "COUNTER#DASHBOARD";
}

common::stamped!(Dashboard, i64, soft_deleted);
common::entity_reads! { Dashboard, i64, Stored { dashboard, item_version }, live }

/// Every live dashboard of the project with the version a write must find, in id order (one
/// prefix query).
pub async fn list_live_stored(store: &dyn Store, team_id: i64) -> Result<Vec<Stored>, StoreError> {
    let items = store::query_prefix(store, &team_pk(team_id), Dashboard::PREFIX).await?;
    let mut live = Vec::with_capacity(items.len());
    for item in items {
        let dashboard: Dashboard = item.parse()?;
        if !dashboard.deleted {
            live.push(Stored {
                dashboard,
                item_version: item.version,
            });
        }
    }
    Ok(live)
}

/// The writes that store a new dashboard with the project's next id, and its `created` entry.
pub async fn plan_create(
    store: &dyn Store,
    dashboard: &mut Dashboard,
    actor: &Actor,
    at: DateTime<Utc>,
) -> Result<Vec<WriteOp>, StoreError> {
    let team_id = dashboard.team_id;
    entities::plan_numbered(store, dashboard, team_id, actor, at).await
}

/// The writes that replace `before` by `after`, logged `deleted`, `restored` or `updated`,
/// with `insights` (each as read and as it is to be written: deleted or restored with the
/// dashboard, ahead of it when they are too many for one transaction) and `counter` (the
/// claim of new text tiles' ids, with the dashboard).
pub fn plan_save(
    before: &Stored,
    after: &mut Dashboard,
    insights: &[(insights::Stored, Insight)],
    counter: Option<WriteOp>,
    actor: &Actor,
    at: DateTime<Utc>,
) -> Result<Writes, StoreError> {
    let old = &before.dashboard;
    let kind = entities::edit_activity(old, after);
    let mut last = entities::plan_save(
        old.team_id,
        old,
        before.item_version,
        after,
        kind,
        actor,
        at,
    )?;
    last.extend(counter);
    let ahead = insights
        .iter()
        .map(|(stored, insight)| put_over(insight, stored.item_version))
        .collect::<Result<_, _>>()?;
    Ok(Writes { ahead, last })
}

/// What deleting `dashboard` does besides hiding it and its tiles: with `delete_insights`,
/// each insight it shows that no other live dashboard shows is deleted too (`insights`: those
/// it shows, as read; `others`: the project's other live dashboards). Its tiles are kept as
/// they are, so a restore brings back exactly what it showed.
pub fn delete(
    dashboard: &Dashboard,
    delete_insights: bool,
    insights: &[insights::Stored],
    others: &[Dashboard],
) -> Vec<(insights::Stored, Insight)> {
    if !delete_insights {
        return Vec::new();
    }
    insights
        .iter()
        .filter(|stored| {
            let id = stored.insight.id;
            !stored.insight.deleted
                && dashboard.shows(id)
                && !others.iter().any(|other| other.shows(id))
        })
        .map(|stored| {
            let mut insight = stored.insight.clone();
            insight.deleted = true;
            (stored.clone(), insight)
        })
        .collect()
}

/// What restoring `dashboard` does: the deleted insights its tiles show come back
/// (`insights`: those its tiles name, as read).
pub fn restore(
    dashboard: &Dashboard,
    insights: &[insights::Stored],
) -> Vec<(insights::Stored, Insight)> {
    insights
        .iter()
        .filter(|stored| stored.insight.deleted && dashboard.shows(stored.insight.id))
        .map(|stored| {
            let mut insight = stored.insight.clone();
            insight.deleted = false;
            (stored.clone(), insight)
        })
        .collect()
}
