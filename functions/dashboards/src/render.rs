//! PostHog's InsightSerializer and DashboardSerializer shapes: the fields this service keeps,
//! the answer of the insight's node (`result`, `hasMore`, `columns`, ...), and the fixed answers
//! of features it does not have (access control, sharing, alerts).

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use common::models::User;
use common::store::{Store, StoreError};
use dashboard_core::{Dashboard, Insight, Tile};
use feature_flags::render::user_basic;
use serde_json::{Value, json};
use uuid::Uuid;

use crate::refresh::Outcome;

/// PostHog's access levels for a user who may edit (the only kind here).
const RESTRICTION_LEVEL: i64 = 21;
const PRIVILEGE_LEVEL: i64 = 37;

/// The users an answer names, each read once.
#[derive(Default)]
pub struct Users {
    users: HashMap<Uuid, Option<User>>,
}

impl Users {
    pub async fn load(store: &dyn Store, uuids: Vec<Option<Uuid>>) -> Result<Self, StoreError> {
        let mut users = HashMap::new();
        for uuid in uuids.into_iter().flatten() {
            if let std::collections::hash_map::Entry::Vacant(slot) = users.entry(uuid) {
                slot.insert(User::load(store, uuid).await?);
            }
        }
        Ok(Users { users })
    }

    /// The users of these insights (creators and last editors).
    pub async fn of_insights(store: &dyn Store, insights: &[&Insight]) -> Result<Self, StoreError> {
        let uuids = insights
            .iter()
            .flat_map(|insight| [insight.created_by, insight.last_modified_by])
            .collect();
        Self::load(store, uuids).await
    }

    fn basic(&self, uuid: Option<Uuid>) -> Value {
        uuid.and_then(|uuid| self.users.get(&uuid))
            .and_then(Option::as_ref)
            .map_or(Value::Null, user_basic)
    }
}

fn iso(at: DateTime<Utc>) -> String {
    at.to_rfc3339_opts(chrono::SecondsFormat::Micros, true)
}

/// An insight as InsightSerializer shows it; `dashboards` are the live dashboards that show
/// it (read off their tiles), `outcome` its node's answer.
pub fn insight(
    insight: &Insight,
    dashboards: &[&Dashboard],
    outcome: &Outcome,
    users: &Users,
    timezone: &str,
) -> Value {
    let response = outcome.response.as_ref();
    let field = |name: &str| {
        response
            .and_then(|r| r.get(name))
            .cloned()
            .unwrap_or(Value::Null)
    };
    let tiles: Vec<Value> = dashboards
        .iter()
        .flat_map(|dashboard| {
            dashboard
                .live_tiles()
                .filter(|tile| tile.insight == Some(insight.id))
                .map(|tile| json!({"id": tile.id, "dashboard_id": dashboard.id, "deleted": false}))
        })
        .collect();
    json!({
        "id": insight.id,
        "short_id": insight.short_id,
        "name": insight.name,
        "derived_name": insight.derived_name,
        "query": insight.query,
        "filters": {},
        "order": null,
        "deleted": insight.deleted,
        "dashboards": dashboards.iter().map(|d| d.id).collect::<Vec<_>>(),
        "dashboard_tiles": tiles,
        "result": field("results"),
        "hasMore": field("hasMore"),
        "columns": field("columns"),
        "types": field("types"),
        "hogql": field("hogql"),
        "resolved_date_range": field("resolved_date_range"),
        "last_refresh": field("last_refresh"),
        "next_allowed_client_refresh": field("next_allowed_client_refresh"),
        "cache_target_age": null,
        "is_cached": response.is_some_and(|r| r["is_cached"] == Value::Bool(true)),
        "query_status": outcome.query_status.clone().or_else(|| response.map(|r| r["query_status"].clone())),
        "timezone": response.and_then(|r| r.get("timezone")).cloned().unwrap_or_else(|| json!(timezone)),
        "created_at": iso(insight.created_at),
        "created_by": users.basic(insight.created_by),
        "description": insight.description,
        "updated_at": iso(insight.updated_at.unwrap_or(insight.created_at)),
        "tags": insight.tags,
        "favorited": insight.favorited,
        "saved": insight.saved,
        "last_modified_at": iso(insight.last_modified_at),
        "last_modified_by": users.basic(insight.last_modified_by),
        "is_sample": false,
        "effective_restriction_level": RESTRICTION_LEVEL,
        "effective_privilege_level": PRIVILEGE_LEVEL,
        "user_access_level": "editor",
        "alerts": [],
        "last_viewed_at": null,
    })
}

/// DashboardBasicSerializer: a dashboard without its tiles (lists).
pub fn dashboard_basic(dashboard: &Dashboard, users: &Users) -> Value {
    json!({
        "id": dashboard.id,
        "name": dashboard.name,
        "description": dashboard.description,
        "pinned": dashboard.pinned,
        "created_at": iso(dashboard.created_at),
        "created_by": users.basic(dashboard.created_by),
        "last_accessed_at": null,
        "last_viewed_at": null,
        "is_shared": false,
        "deleted": dashboard.deleted,
        "creation_mode": "default",
        "tags": dashboard.tags,
        "restriction_level": RESTRICTION_LEVEL,
        "effective_restriction_level": RESTRICTION_LEVEL,
        "effective_privilege_level": PRIVILEGE_LEVEL,
        "user_access_level": "editor",
        "access_control_version": "v2",
        "team_id": dashboard.team_id,
    })
}

/// DashboardSerializer: the basic fields, the filters and the rendered `tiles`.
pub fn dashboard(dashboard: &Dashboard, tiles: Vec<Value>, users: &Users) -> Value {
    let mut answer = dashboard_basic(dashboard, users);
    let filters = serde_json::to_value(&dashboard.filters).unwrap_or_else(|_| json!({}));
    let persisted = match dashboard.filters.is_empty() && dashboard.filters.explicit_date.is_none()
    {
        true => Value::Null,
        false => filters.clone(),
    };
    let last_refresh = tiles
        .iter()
        .filter_map(|tile| tile["last_refresh"].as_str())
        .max()
        .map(str::to_owned);
    if let Value::Object(fields) = &mut answer {
        fields.insert("filters".into(), filters);
        fields.insert("persisted_filters".into(), persisted);
        fields.insert("variables".into(), json!({}));
        fields.insert("persisted_variables".into(), Value::Null);
        fields.insert("breakdown_colors".into(), json!([]));
        fields.insert("data_color_theme_id".into(), Value::Null);
        fields.insert("last_refresh".into(), json!(last_refresh));
        fields.insert("tiles".into(), Value::Array(tiles));
    }
    answer
}

/// A tile in the order PostHog computes and shows them: by the small layout's row, then column
/// (unplaced tiles last), then creation.
pub fn ordered(tiles: &[Tile]) -> Vec<&Tile> {
    let mut live: Vec<&Tile> = tiles.iter().filter(|tile| !tile.deleted).collect();
    let place = |tile: &Tile, axis: &str| {
        tile.layouts
            .get("sm")
            .and_then(|sm| sm.get(axis))
            .and_then(Value::as_i64)
            .unwrap_or(100)
    };
    live.sort_by_key(|tile| (place(tile, "y"), place(tile, "x"), tile.id));
    live
}

/// A tile as DashboardTileSerializer shows it: its insight (rendered) or its text.
pub fn tile(
    tile: &Tile,
    order: usize,
    insight: Option<Value>,
    users: &Users,
    team_id: i64,
) -> Value {
    let text = tile.text.as_ref().map(|text| {
        json!({
            "id": tile.id,
            "body": text.body,
            "created_by": users.basic(text.created_by),
            "last_modified_by": users.basic(text.last_modified_by),
            "last_modified_at": iso(text.last_modified_at),
            "team": team_id,
        })
    });
    let is_cached = insight
        .as_ref()
        .is_some_and(|i| i["is_cached"] == Value::Bool(true));
    let last_refresh = insight
        .as_ref()
        .map_or(Value::Null, |i| i["last_refresh"].clone());
    json!({
        "id": tile.id,
        "layouts": tile.layouts,
        "color": tile.color,
        "insight": insight,
        "text": text,
        "deleted": tile.deleted,
        "order": order,
        "is_cached": is_cached,
        "last_refresh": last_refresh,
        "filters_overrides": {},
        "show_description": null,
        "transparent_background": null,
    })
}
