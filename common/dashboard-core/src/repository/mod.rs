//! Insights and dashboards in the Store, in the project's partition (`TEAM#<id>`):
//!
//! - `INSIGHT#<id>`: an insight; `INSIGHTSHORT#<short_id>`: the claim of its short id;
//! - `DASHBOARD#<id>`: a dashboard with its tiles;
//! - `COUNTER#INSIGHT`, `COUNTER#DASHBOARD`, `COUNTER#TILE`: the project's next ids.
//!
//! Tiles live in their dashboard, so an insight's `dashboards` are read off the dashboards and
//! can never disagree with them. A change that moves tiles (an insight's `dashboards`, its
//! deletion, a dashboard's deletion with its insights) writes every item it touches under the
//! version that was read, with its activity entry, in one transaction when they fit in one
//! ([`MAX_TRANSACTION_ITEMS`]); past that, in several ([`Writes`]).

pub mod dashboards;
pub mod insights;

use common::repository::{self as entities, WriteError, team_pk, try_commit};
use common::store::{self, MAX_TRANSACTION_ITEMS, Store, StoreError, WriteOp};
use serde_json::Value;

use crate::model::{Dashboard, Tile};

pub const TILE_COUNTER: &str = "COUNTER#TILE";
/// Dashboards a new insight may be placed on: its creation is one transaction (its tiles must
/// never name an insight id that was not taken), each dashboard one item of it.
pub const MAX_DASHBOARDS_PER_WRITE: usize = MAX_TRANSACTION_ITEMS - 10;

/// The writes of a change to an existing item that may move more items than one transaction
/// holds (an insight on many dashboards, a dashboard with many insights).
///
/// `last` is the item the change is about (under the version read) with its activity entry:
/// it is committed last, so the change is logged once and a lost race on the item itself
/// moves nothing more. `ahead` are the other items it moves, each under the version read and
/// each valid on its own: an insight's tile on one dashboard, an insight deleted or restored
/// with its dashboard (any subset of them leaves a state the API can show). When everything
/// fits in one transaction it is one; otherwise `ahead` goes first, in transactions of its
/// own in order (so a tile-id claim at its front commits with the first of them), and what
/// fits beside `last` goes with it. A transaction that loses a race answers
/// [`WriteError::Raced`] with the ones before it committed: read again and plan again, and
/// the moves already made are no longer to make.
#[derive(Debug, Clone, Default)]
pub struct Writes {
    pub ahead: Vec<WriteOp>,
    pub last: Vec<WriteOp>,
}

impl Writes {
    /// How many writes in all.
    pub fn len(&self) -> usize {
        self.ahead.len() + self.last.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether it is committed in more than one transaction.
    pub fn is_split(&self) -> bool {
        self.len() > MAX_TRANSACTION_ITEMS
    }

    /// Commits the writes, in one transaction when they fit.
    pub async fn commit(self, store: &dyn Store) -> Result<(), WriteError> {
        let Writes { mut ahead, last } = self;
        let room = MAX_TRANSACTION_ITEMS.saturating_sub(last.len());
        let beside = ahead.split_off(ahead.len().saturating_sub(room));
        for part in ahead.chunks(MAX_TRANSACTION_ITEMS) {
            try_commit(store, part.to_vec()).await?;
        }
        try_commit(store, [beside, last].concat()).await
    }
}

/// The tiles to add or delete so that an insight is on exactly some dashboards, planned over
/// the live dashboards as read.
#[derive(Debug, Default)]
pub struct Retiling {
    /// Each changed dashboard as read, and as it is to be written.
    pub changed: Vec<(dashboards::Stored, Dashboard)>,
    /// The claim of the new tiles' ids, when there are new tiles.
    pub counter: Option<WriteOp>,
    /// The insight's dashboards before and after, for the activity log.
    pub before: Vec<i64>,
    pub after: Vec<i64>,
}

impl Retiling {
    /// Places insight `insight` on exactly `wanted` (`None`: where it is) among `live`, the
    /// project's live dashboards: a dashboard that had a deleted tile of it gets that tile back
    /// (as PostHog's get_or_create over soft-deleted tiles), another a new tile.
    pub async fn plan(
        store: &dyn Store,
        team_id: i64,
        insight: i64,
        wanted: Option<&[i64]>,
        live: &[dashboards::Stored],
    ) -> Result<Self, StoreError> {
        let before: Vec<i64> = live
            .iter()
            .filter(|stored| stored.dashboard.shows(insight))
            .map(|stored| stored.dashboard.id)
            .collect();
        let Some(wanted) = wanted else {
            return Ok(Retiling {
                after: before.clone(),
                before,
                ..Default::default()
            });
        };
        let needs_tile = |dashboard: &Dashboard| {
            !dashboard.shows(insight)
                && !dashboard
                    .tiles
                    .iter()
                    .any(|tile| tile.insight == Some(insight))
        };
        let fresh = live
            .iter()
            .filter(|stored| wanted.contains(&stored.dashboard.id) && needs_tile(&stored.dashboard))
            .count();
        let (mut next_id, counter) = match fresh {
            0 => (0, None),
            n => {
                let (first, op) =
                    store::claim_next_ids(store, &team_pk(team_id), TILE_COUNTER, n as i64).await?;
                (first, Some(op))
            }
        };
        let mut changed = Vec::new();
        for stored in live {
            let mut dashboard = stored.dashboard.clone();
            let on = wanted.contains(&dashboard.id);
            if on == dashboard.shows(insight) {
                continue;
            }
            if on {
                match dashboard
                    .tiles
                    .iter_mut()
                    .find(|tile| tile.insight == Some(insight))
                {
                    Some(tile) => tile.deleted = false,
                    None => {
                        dashboard.tiles.push(Tile {
                            id: next_id,
                            insight: Some(insight),
                            text: None,
                            layouts: Default::default(),
                            color: None,
                            deleted: false,
                        });
                        next_id += 1;
                    }
                }
            } else {
                for tile in &mut dashboard.tiles {
                    if tile.insight == Some(insight) {
                        tile.deleted = true;
                    }
                }
            }
            changed.push((stored.clone(), dashboard));
        }
        let after = live
            .iter()
            .map(|stored| stored.dashboard.id)
            .filter(|id| wanted.contains(id))
            .collect();
        Ok(Retiling {
            changed,
            counter,
            before,
            after,
        })
    }

    /// The writes: each changed dashboard over the version read (no activity entry of its
    /// own: the insight's entry logs the move), and the tile ids' claim.
    pub fn ops(&self) -> Result<Vec<WriteOp>, StoreError> {
        let mut ops = Vec::with_capacity(self.changed.len() + 1);
        ops.extend(self.counter.clone());
        for (stored, dashboard) in &self.changed {
            ops.push(entities::put_over(dashboard, stored.item_version)?);
        }
        Ok(ops)
    }
}

/// `value` (an entity as encoded) with its `dashboards`, as the insight's log shows them.
fn with_dashboards(mut value: Value, dashboards: &[i64]) -> Value {
    if let Value::Object(fields) = &mut value {
        fields.insert("dashboards".into(), serde_json::json!(dashboards));
    }
    value
}
