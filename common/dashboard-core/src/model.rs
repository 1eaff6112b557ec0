//! A saved insight and a dashboard as stored. Fields PostHog derives (an insight's `dashboards`
//! and `dashboard_tiles`, its `result`) are computed when rendering.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use uuid::Uuid;

/// A saved insight (PostHog's `Insight`): a named query node.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Insight {
    pub id: i64,
    pub team_id: i64,
    /// 8 letters and digits, unique in the project (claimed in the Store).
    pub short_id: String,
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub derived_name: Option<String>,
    #[serde(default)]
    pub description: Option<String>,
    /// The query node, upgraded to the latest versions and checked when saved.
    #[serde(default)]
    pub query: Option<Value>,
    #[serde(default)]
    pub favorited: bool,
    #[serde(default)]
    pub saved: bool,
    #[serde(default)]
    pub tags: Vec<String>,
    #[serde(default)]
    pub deleted: bool,
    pub created_at: DateTime<Utc>,
    #[serde(default)]
    pub created_by: Option<Uuid>,
    #[serde(default)]
    pub updated_at: Option<DateTime<Utc>>,
    /// Moved only by a change to what the insight shows (PostHog's MATERIAL_INSIGHT_FIELDS).
    pub last_modified_at: DateTime<Utc>,
    #[serde(default)]
    pub last_modified_by: Option<Uuid>,
    #[serde(default)]
    pub version: u64,
}

impl Insight {
    /// The name PostHog shows: the given one, else the derived one.
    pub fn display_name(&self) -> String {
        self.name
            .clone()
            .filter(|name| !name.is_empty())
            .or_else(|| self.derived_name.clone())
            .unwrap_or_default()
    }
}

/// A dashboard with its tiles.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Dashboard {
    pub id: i64,
    pub team_id: i64,
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub description: String,
    #[serde(default)]
    pub pinned: bool,
    #[serde(default)]
    pub tags: Vec<String>,
    #[serde(default)]
    pub filters: DashboardFilters,
    /// Every tile ever placed, deleted ones kept (a dashboard restored brings them back).
    #[serde(default)]
    pub tiles: Vec<Tile>,
    #[serde(default)]
    pub deleted: bool,
    pub created_at: DateTime<Utc>,
    #[serde(default)]
    pub created_by: Option<Uuid>,
    #[serde(default)]
    pub updated_at: Option<DateTime<Utc>>,
    #[serde(default)]
    pub version: u64,
}

impl Dashboard {
    /// The tiles a reader sees.
    pub fn live_tiles(&self) -> impl Iterator<Item = &Tile> {
        self.tiles.iter().filter(|tile| !tile.deleted)
    }

    /// Whether a live tile of this dashboard shows `insight`.
    pub fn shows(&self, insight: i64) -> bool {
        self.live_tiles().any(|tile| tile.insight == Some(insight))
    }
}

/// PostHog's DashboardFilter: what a dashboard lays over every tile's query.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DashboardFilters {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub date_from: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub date_to: Option<String>,
    /// Property filters, ANDed with each tile's own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub properties: Option<Vec<Map<String, Value>>>,
    #[serde(
        default,
        rename = "explicitDate",
        skip_serializing_if = "Option::is_none"
    )]
    pub explicit_date: Option<bool>,
}

impl DashboardFilters {
    /// Whether the filters set a date bound.
    pub fn has_dates(&self) -> bool {
        self.date_from.is_some() || self.date_to.is_some()
    }

    /// The property filters, when there are any.
    pub fn property_filters(&self) -> Option<&[Map<String, Value>]> {
        self.properties.as_deref().filter(|list| !list.is_empty())
    }

    pub fn is_empty(&self) -> bool {
        !self.has_dates() && self.property_filters().is_none()
    }
}

/// One tile of a dashboard: an insight or a text, placed by `layouts`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Tile {
    /// Unique in the project.
    pub id: i64,
    #[serde(default)]
    pub insight: Option<i64>,
    #[serde(default)]
    pub text: Option<Text>,
    /// PostHog's react-grid-layout positions per breakpoint (`{"sm": {"x", "y", "w", "h"}}`).
    #[serde(default)]
    pub layouts: Map<String, Value>,
    #[serde(default)]
    pub color: Option<String>,
    #[serde(default)]
    pub deleted: bool,
}

/// A text tile's body (PostHog's `Text`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Text {
    pub body: String,
    #[serde(default)]
    pub created_by: Option<Uuid>,
    pub last_modified_at: DateTime<Utc>,
    #[serde(default)]
    pub last_modified_by: Option<Uuid>,
}

/// The letters and digits of a short id.
const SHORT_ID_ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
pub const SHORT_ID_LENGTH: usize = 8;

/// A random short id (PostHog's `generate_short_id`): 8 characters from 62, drawn from a v4
/// uuid's random bytes.
pub fn new_short_id() -> String {
    Uuid::new_v4()
        .as_bytes()
        .iter()
        .take(SHORT_ID_LENGTH)
        .map(|byte| char::from(SHORT_ID_ALPHABET[usize::from(*byte) % SHORT_ID_ALPHABET.len()]))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_ids_are_eight_alphanumerics() {
        let id = new_short_id();
        assert_eq!(id.len(), SHORT_ID_LENGTH);
        assert!(id.chars().all(|c| c.is_ascii_alphanumeric()));
        assert_ne!(new_short_id(), new_short_id());
    }

    #[test]
    fn filters_read_posthog_names_and_refuse_others() {
        let filters: DashboardFilters = serde_json::from_value(serde_json::json!({
            "date_from": "-7d", "explicitDate": true, "properties": [{"key": "a", "value": 1}]
        }))
        .unwrap();
        assert!(filters.has_dates() && filters.property_filters().is_some());
        let unknown = serde_json::from_value::<DashboardFilters>(serde_json::json!({"x": 1}));
        assert!(unknown.is_err());
        assert!(DashboardFilters::default().is_empty());
    }
}
