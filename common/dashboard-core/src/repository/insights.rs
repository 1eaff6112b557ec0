//! Insights: `INSIGHT#<id>` with the claim `INSIGHTSHORT#<short_id>` of its short id, written
//! with the dashboards whose tiles move and the activity entry in one transaction.

use chrono::{DateTime, Utc};
use common::activity::{self, Actor, Detail};
use common::repository::{
    self as entities, Entity, Numbered, Stamped, Stamps, encode, entry_op, put_new, put_over,
    team_pk,
};
use common::store::{Condition, Item, Store, StoreError, WriteOp};
use serde::{Deserialize, Serialize};

use super::{Retiling, Writes, with_dashboards};
use crate::model::Insight;

/// The activity log's scope (PostHog's model name).
pub const SCOPE: &str = "Insight";
const SHORT_ID_PREFIX: &str = "INSIGHTSHORT#";

/// Bookkeeping, not changes worth a log line.
const IGNORED_IN_DIFFS: [&str; 8] =
    entities::bookkeeping_and(&["last_modified_at", "last_modified_by"]);

impl Entity for Insight {
    const PREFIX: &'static str = "INSIGHT#";
    const SCOPE: &'static str = SCOPE;
    const IGNORED_IN_DIFFS: &'static [&'static str] = &IGNORED_IN_DIFFS;

    fn display_name(&self) -> String {
        Insight::display_name(self)
    }

    /// PostHog's log names an insight's short id.
    fn annotate(&self, detail: &mut Detail) {
        detail.short_id = Some(self.short_id.clone());
    }
}

impl Numbered for Insight {
    const COUNTER: &'static str = "COUNTER#INSIGHT";
}

common::stamped!(Insight, i64, soft_deleted);
common::entity_reads! { Insight, i64, Stored { insight, item_version }, live }

#[derive(Serialize, Deserialize)]
struct ShortIdClaim {
    insight_id: i64,
}

fn short_id_sk(short_id: &str) -> String {
    format!("{SHORT_ID_PREFIX}{short_id}")
}

/// The id of the insight holding `short_id` in the project, if any.
pub async fn id_of_short(
    store: &dyn Store,
    team_id: i64,
    short_id: &str,
) -> Result<Option<i64>, StoreError> {
    match store.get(&team_pk(team_id), &short_id_sk(short_id)).await? {
        Some(item) => Ok(Some(item.parse::<ShortIdClaim>()?.insight_id)),
        None => Ok(None),
    }
}

/// The writes that store a new insight (its `short_id`, `created_by` and `team_id` set) with
/// the project's next id and its short id's claim, placed on `wanted` among `live` (the
/// project's live dashboards), and its `created` entry. The transaction fails if the id or
/// the short id was taken meanwhile.
pub async fn plan_create(
    store: &dyn Store,
    insight: &mut Insight,
    wanted: &[i64],
    live: &[super::dashboards::Stored],
    actor: &Actor,
    at: DateTime<Utc>,
) -> Result<Vec<WriteOp>, StoreError> {
    let team_id = insight.team_id;
    let counter = entities::number(store, team_id, insight).await?;
    let id = insight.id;
    insight.set_stamps(Stamps {
        team_id,
        version: 1,
        created_at: at,
        updated_at: Some(at),
        ..insight.stamps()
    });
    insight.last_modified_at = at;
    let retiling = Retiling::plan(store, team_id, id, Some(wanted), live).await?;
    let after = with_dashboards(encode(insight)?, &retiling.after);
    let mut ops = vec![
        counter,
        put_new(insight)?,
        WriteOp::Put {
            item: Item::of(
                team_pk(team_id),
                short_id_sk(&insight.short_id),
                &ShortIdClaim { insight_id: id },
            )?,
            condition: Condition::NotExists,
        },
        entry_op(insight, actor, activity::CREATED, None, &after, at)?,
    ];
    ops.extend(retiling.ops()?);
    Ok(ops)
}

/// The writes that replace `before` by `after` (its tiles moved by `retiling`, ahead of it
/// when they are too many for one transaction), logged `deleted`, `restored` or `updated`:
/// bumps `version` and `updated_at`.
pub fn plan_save(
    before: &Stored,
    after: &mut Insight,
    retiling: &Retiling,
    actor: &Actor,
    at: DateTime<Utc>,
) -> Result<Writes, StoreError> {
    let old = &before.insight;
    after.set_stamps(Stamps {
        version: old.version + 1,
        updated_at: Some(at),
        ..old.stamps()
    });
    let kind = entities::edit_activity(old, after);
    let before_value = with_dashboards(encode(old)?, &retiling.before);
    let after_value = with_dashboards(encode(after)?, &retiling.after);
    Ok(Writes {
        ahead: retiling.ops()?,
        last: vec![
            put_over(after, before.item_version)?,
            entry_op(after, actor, kind, Some(&before_value), &after_value, at)?,
        ],
    })
}
