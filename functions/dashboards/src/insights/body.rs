//! The body of POST, PATCH and PUT `/insights/`: the fields a client may write, and the
//! read-only fields of InsightSerializer that PostHog's clients send back (accepted, ignored).

use chrono::{DateTime, Utc};
use common::ApiError;
use dashboard_core::Insight;
use dashboard_core::validate::{self, MAX_NAME_CHARS};
use serde::de::IgnoredAny;
use serde::{Deserialize, Deserializer};
use serde_json::Value;
use uuid::Uuid;

/// A field that may be sent as `null`: `Some(None)` then, `None` when absent.
pub fn present<'de, D: Deserializer<'de>, T: Deserialize<'de>>(
    deserializer: D,
) -> Result<Option<T>, D::Error> {
    T::deserialize(deserializer).map(Some)
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InsightBody {
    #[serde(default, deserialize_with = "present")]
    pub name: Option<Option<String>>,
    #[serde(default, deserialize_with = "present")]
    pub derived_name: Option<Option<String>>,
    #[serde(default, deserialize_with = "present")]
    pub description: Option<Option<String>>,
    /// A query node (checked by `dashboard_core::query`); `null` clears it.
    #[serde(default, deserialize_with = "present")]
    pub query: Option<Option<Value>>,
    pub favorited: Option<bool>,
    pub saved: Option<bool>,
    pub deleted: Option<bool>,
    pub tags: Option<Vec<String>>,
    /// The dashboards to show the insight on: exactly these, tiles added and removed.
    pub dashboards: Option<Vec<i64>>,
    /// PostHog's legacy `filters` insights: only an empty value is accepted.
    #[serde(default)]
    pub filters: Option<Value>,

    // Read-only fields of InsightSerializer: accepted and ignored.
    #[serde(rename = "id")]
    _id: Option<IgnoredAny>,
    #[serde(rename = "short_id")]
    _short_id: Option<IgnoredAny>,
    #[serde(rename = "order")]
    _order: Option<IgnoredAny>,
    #[serde(rename = "dashboard_tiles")]
    _dashboard_tiles: Option<IgnoredAny>,
    #[serde(rename = "result")]
    _result: Option<IgnoredAny>,
    #[serde(rename = "hasMore")]
    _has_more: Option<IgnoredAny>,
    #[serde(rename = "columns")]
    _columns: Option<IgnoredAny>,
    #[serde(rename = "types")]
    _types: Option<IgnoredAny>,
    #[serde(rename = "hogql")]
    _hogql: Option<IgnoredAny>,
    #[serde(rename = "resolved_date_range")]
    _resolved_date_range: Option<IgnoredAny>,
    #[serde(rename = "last_refresh")]
    _last_refresh: Option<IgnoredAny>,
    #[serde(rename = "next_allowed_client_refresh")]
    _next_allowed_client_refresh: Option<IgnoredAny>,
    #[serde(rename = "cache_target_age")]
    _cache_target_age: Option<IgnoredAny>,
    #[serde(rename = "is_cached")]
    _is_cached: Option<IgnoredAny>,
    #[serde(rename = "query_status")]
    _query_status: Option<IgnoredAny>,
    #[serde(rename = "timezone")]
    _timezone: Option<IgnoredAny>,
    #[serde(rename = "created_at")]
    _created_at: Option<IgnoredAny>,
    #[serde(rename = "created_by")]
    _created_by: Option<IgnoredAny>,
    #[serde(rename = "updated_at")]
    _updated_at: Option<IgnoredAny>,
    #[serde(rename = "last_modified_at")]
    _last_modified_at: Option<IgnoredAny>,
    #[serde(rename = "last_modified_by")]
    _last_modified_by: Option<IgnoredAny>,
    #[serde(rename = "last_viewed_at")]
    _last_viewed_at: Option<IgnoredAny>,
    #[serde(rename = "is_sample")]
    _is_sample: Option<IgnoredAny>,
    #[serde(rename = "effective_restriction_level")]
    _effective_restriction_level: Option<IgnoredAny>,
    #[serde(rename = "effective_privilege_level")]
    _effective_privilege_level: Option<IgnoredAny>,
    #[serde(rename = "user_access_level")]
    _user_access_level: Option<IgnoredAny>,
    #[serde(rename = "alerts")]
    _alerts: Option<IgnoredAny>,
    #[serde(rename = "_create_in_folder")]
    _create_in_folder: Option<IgnoredAny>,
}

/// Dashboards a new insight may be placed on (its creation is one transaction); a PATCH places
/// an existing one on any number.
const MAX_DASHBOARDS: usize = dashboard_core::repository::MAX_DASHBOARDS_PER_WRITE;

impl InsightBody {
    /// The checks of the insight's own fields (the query is checked on its own).
    pub fn check(&self) -> Result<(), ApiError> {
        let text = |field: &Option<Option<String>>| field.clone().flatten();
        validate::length("name", text(&self.name).as_deref(), MAX_NAME_CHARS)?;
        validate::length(
            "derived_name",
            text(&self.derived_name).as_deref(),
            MAX_NAME_CHARS,
        )?;
        validate::length(
            "description",
            text(&self.description).as_deref(),
            MAX_NAME_CHARS,
        )?;
        match &self.filters {
            None | Some(Value::Null) => {}
            Some(Value::Object(fields)) if fields.is_empty() => {}
            Some(_) => {
                return Err(ApiError::validation(
                    "filters",
                    "Legacy insight filters are not supported; describe the insight with `query`.",
                ));
            }
        }
        Ok(())
    }

    /// The bound on a new insight's `dashboards`.
    pub fn check_new_dashboards(&self) -> Result<(), ApiError> {
        match &self.dashboards {
            Some(dashboards) if dashboards.len() > MAX_DASHBOARDS => Err(ApiError::validation(
                "dashboards",
                format!(
                    "A new insight can be put on at most {MAX_DASHBOARDS} dashboards; add it to \
                     more with a PATCH once it exists."
                ),
            )),
            _ => Ok(()),
        }
    }

    /// A new insight from this body (its query already prepared).
    pub fn new_insight(
        &self,
        team_id: i64,
        query: Option<Value>,
        by: Uuid,
        at: DateTime<Utc>,
    ) -> Result<Insight, ApiError> {
        Ok(Insight {
            id: 0,
            team_id,
            short_id: dashboard_core::model::new_short_id(),
            name: self.name.clone().flatten(),
            derived_name: self.derived_name.clone().flatten(),
            description: self.description.clone().flatten(),
            query,
            favorited: self.favorited.unwrap_or(false),
            saved: self.saved.unwrap_or(false),
            tags: validate::tags(self.tags.as_deref().unwrap_or_default())?,
            deleted: self.deleted.unwrap_or(false),
            created_at: at,
            created_by: Some(by),
            updated_at: Some(at),
            last_modified_at: at,
            last_modified_by: Some(by),
            version: 0,
        })
    }

    /// `current` with this body's fields over it (a partial update); `query` is the prepared
    /// query when the body sent one. What PostHog counts as a material change moves
    /// `last_modified_at`.
    pub fn apply_to(
        &self,
        current: &Insight,
        query: Option<Option<Value>>,
        by: Uuid,
        at: DateTime<Utc>,
    ) -> Result<Insight, ApiError> {
        let mut next = current.clone();
        if let Some(name) = &self.name {
            next.name = name.clone();
        }
        if let Some(derived) = &self.derived_name {
            next.derived_name = derived.clone();
        }
        if let Some(description) = &self.description {
            next.description = description.clone();
        }
        if let Some(query) = query {
            next.query = query;
        }
        if let Some(favorited) = self.favorited {
            next.favorited = favorited;
        }
        if let Some(deleted) = self.deleted {
            next.deleted = deleted;
        }
        if let Some(tags) = &self.tags {
            next.tags = validate::tags(tags)?;
        }
        // PostHog sets `saved` on every update: it is a vestige older records must not keep.
        next.saved = self.saved.unwrap_or(true);
        let material = next.name != current.name
            || next.description != current.description
            || next.query != current.query
            || next.derived_name != current.derived_name
            || self.dashboards.is_some();
        if material {
            next.last_modified_at = at;
            next.last_modified_by = Some(by);
        }
        Ok(next)
    }
}
