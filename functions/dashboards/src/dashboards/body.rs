//! The body of POST, PATCH and PUT `/dashboards/`: the fields a client may write, PostHog's
//! tile edits (`tiles: [{id, layouts | color | deleted | text}]`), and the read-only fields of
//! DashboardSerializer that clients send back (accepted, ignored).

use chrono::{DateTime, Utc};
use common::ApiError;
use dashboard_core::validate::{self, MAX_NAME_CHARS, MAX_TEXT_CHARS};
use dashboard_core::{Dashboard, DashboardFilters, Text, Tile};
use serde::Deserialize;
use serde::de::IgnoredAny;
use serde_json::{Map, Value};
use uuid::Uuid;

use crate::insights::present;

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DashboardBody {
    #[serde(default, deserialize_with = "present")]
    pub name: Option<Option<String>>,
    #[serde(default, deserialize_with = "present")]
    pub description: Option<Option<String>>,
    pub pinned: Option<bool>,
    pub tags: Option<Vec<String>>,
    /// Replaces the dashboard's filters (see [`DashboardBody::new_filters`]).
    #[serde(default, deserialize_with = "present")]
    pub filters: Option<Option<DashboardFilters>>,
    pub deleted: Option<bool>,
    /// With `deleted: true`: delete the insights no other dashboard shows.
    #[serde(default)]
    pub delete_insights: bool,
    pub tiles: Option<Vec<TileBody>>,
    // PostHog features this service does not have: only their empty value.
    use_template: Option<String>,
    #[serde(default, deserialize_with = "present")]
    use_dashboard: Option<Option<i64>>,
    variables: Option<Value>,

    // Read-only fields of DashboardSerializer: accepted and ignored.
    #[serde(rename = "id")]
    _id: Option<IgnoredAny>,
    #[serde(rename = "created_at")]
    _created_at: Option<IgnoredAny>,
    #[serde(rename = "created_by")]
    _created_by: Option<IgnoredAny>,
    #[serde(rename = "is_shared")]
    _is_shared: Option<IgnoredAny>,
    #[serde(rename = "creation_mode")]
    _creation_mode: Option<IgnoredAny>,
    #[serde(rename = "restriction_level")]
    _restriction_level: Option<IgnoredAny>,
    #[serde(rename = "effective_restriction_level")]
    _effective_restriction_level: Option<IgnoredAny>,
    #[serde(rename = "effective_privilege_level")]
    _effective_privilege_level: Option<IgnoredAny>,
    #[serde(rename = "user_access_level")]
    _user_access_level: Option<IgnoredAny>,
    #[serde(rename = "access_control_version")]
    _access_control_version: Option<IgnoredAny>,
    #[serde(rename = "last_accessed_at")]
    _last_accessed_at: Option<IgnoredAny>,
    #[serde(rename = "last_viewed_at")]
    _last_viewed_at: Option<IgnoredAny>,
    #[serde(rename = "last_refresh")]
    _last_refresh: Option<IgnoredAny>,
    #[serde(rename = "persisted_filters")]
    _persisted_filters: Option<IgnoredAny>,
    #[serde(rename = "persisted_variables")]
    _persisted_variables: Option<IgnoredAny>,
    #[serde(rename = "team_id")]
    _team_id: Option<IgnoredAny>,
    #[serde(rename = "breakdown_colors")]
    _breakdown_colors: Option<IgnoredAny>,
    #[serde(rename = "data_color_theme_id")]
    _data_color_theme_id: Option<IgnoredAny>,
    #[serde(rename = "_create_in_folder")]
    _create_in_folder: Option<IgnoredAny>,
}

/// One tile edit: a text tile created (no `id`) or edited, or a tile's place, colour or
/// deletion. Insight tiles come and go through the insight's `dashboards` (or `deleted`
/// here); their `insight` is never changed from a dashboard, as in PostHog.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TileBody {
    pub id: Option<i64>,
    #[serde(default, deserialize_with = "present")]
    pub text: Option<Option<TextBody>>,
    pub layouts: Option<Map<String, Value>>,
    #[serde(default, deserialize_with = "present")]
    pub color: Option<Option<String>>,
    pub deleted: Option<bool>,
    #[serde(rename = "insight")]
    _insight: Option<IgnoredAny>,
    #[serde(rename = "is_cached")]
    _is_cached: Option<IgnoredAny>,
    #[serde(rename = "order")]
    _order: Option<IgnoredAny>,
    #[serde(rename = "last_refresh")]
    _last_refresh: Option<IgnoredAny>,
    #[serde(rename = "filters_overrides")]
    _filters_overrides: Option<IgnoredAny>,
    #[serde(rename = "show_description")]
    _show_description: Option<IgnoredAny>,
    #[serde(rename = "transparent_background")]
    _transparent_background: Option<IgnoredAny>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TextBody {
    pub body: Option<String>,
    #[serde(rename = "id")]
    _id: Option<IgnoredAny>,
    #[serde(rename = "created_by")]
    _created_by: Option<IgnoredAny>,
    #[serde(rename = "last_modified_by")]
    _last_modified_by: Option<IgnoredAny>,
    #[serde(rename = "last_modified_at")]
    _last_modified_at: Option<IgnoredAny>,
    #[serde(rename = "team")]
    _team: Option<IgnoredAny>,
}

impl DashboardBody {
    /// The checks of the dashboard's own fields (its filters are checked by the compiler).
    pub fn check(&self) -> Result<(), ApiError> {
        let name = self.name.clone().flatten();
        validate::length("name", name.as_deref(), MAX_NAME_CHARS)?;
        let description = self.description.clone().flatten();
        validate::length("description", description.as_deref(), MAX_TEXT_CHARS)?;
        if self.use_template.as_deref().is_some_and(|t| !t.is_empty()) {
            return Err(ApiError::validation(
                "use_template",
                "Dashboard templates are not supported by this service.",
            ));
        }
        if matches!(self.use_dashboard, Some(Some(_))) {
            return Err(ApiError::validation(
                "use_dashboard",
                "Duplicating a dashboard is not supported by this service.",
            ));
        }
        match &self.variables {
            None | Some(Value::Null) => {}
            Some(Value::Object(fields)) if fields.is_empty() => {}
            Some(_) => {
                return Err(ApiError::validation(
                    "variables",
                    "Dashboard variables are not supported by this service.",
                ));
            }
        }
        for (index, tile) in self.tiles.iter().flatten().enumerate() {
            if let Some(Some(text)) = &tile.text {
                let attr = format!("tiles[{index}].text.body");
                validate::length(&attr, text.body.as_deref(), MAX_TEXT_CHARS)?;
            }
            if let Some(Some(color)) = &tile.color {
                validate::length(
                    &format!("tiles[{index}].color"),
                    Some(color),
                    MAX_NAME_CHARS,
                )?;
            }
        }
        Ok(())
    }

    /// The filters this body sets: an object replaces them (`{}` clears them; PostHog ignores
    /// an empty one, which left no way to clear them), `null` leaves them.
    pub fn new_filters(&self) -> Option<&DashboardFilters> {
        self.filters.as_ref().and_then(Option::as_ref)
    }

    /// How many new text tiles the body adds (each needs an id).
    pub fn new_text_tiles(&self) -> usize {
        self.tiles
            .iter()
            .flatten()
            .filter(|tile| tile.id.is_none() && matches!(tile.text, Some(Some(_))))
            .count()
    }

    /// A new dashboard from this body (PostHog's create ignores `tiles`).
    pub fn new_dashboard(
        &self,
        team_id: i64,
        by: Uuid,
        at: DateTime<Utc>,
    ) -> Result<Dashboard, ApiError> {
        Ok(Dashboard {
            id: 0,
            team_id,
            name: self.name.clone().flatten(),
            description: self.description.clone().flatten().unwrap_or_default(),
            pinned: self.pinned.unwrap_or(false),
            tags: validate::tags(self.tags.as_deref().unwrap_or_default())?,
            filters: self.new_filters().cloned().unwrap_or_default(),
            tiles: Vec::new(),
            deleted: self.deleted.unwrap_or(false),
            created_at: at,
            created_by: Some(by),
            updated_at: Some(at),
            version: 0,
        })
    }

    /// `current` with this body over it; new text tiles take ids from `next_tile_id` on.
    pub fn apply_to(
        &self,
        current: &Dashboard,
        mut next_tile_id: i64,
        by: Uuid,
        at: DateTime<Utc>,
    ) -> Result<Dashboard, ApiError> {
        let mut next = current.clone();
        if let Some(name) = &self.name {
            next.name = name.clone();
        }
        if let Some(description) = &self.description {
            next.description = description.clone().unwrap_or_default();
        }
        if let Some(pinned) = self.pinned {
            next.pinned = pinned;
        }
        if let Some(tags) = &self.tags {
            next.tags = validate::tags(tags)?;
        }
        if let Some(filters) = self.new_filters() {
            next.filters = filters.clone();
        }
        if let Some(deleted) = self.deleted {
            next.deleted = deleted;
        }
        for (index, edit) in self.tiles.iter().flatten().enumerate() {
            let text = match &edit.text {
                Some(Some(text)) => Some(text),
                _ => None,
            };
            let tile = match edit.id {
                Some(id) => next
                    .tiles
                    .iter_mut()
                    .find(|tile| tile.id == id)
                    .ok_or_else(|| {
                        ApiError::field(
                            format!("tiles[{index}].id"),
                            "does_not_exist",
                            format!("Tile {id} is not on this dashboard."),
                        )
                    })?,
                None => {
                    let Some(text) = text else {
                        return Err(ApiError::field(
                            format!("tiles[{index}].text"),
                            "required",
                            "A new tile is a text tile: send its text.",
                        ));
                    };
                    next.tiles.push(Tile {
                        id: next_tile_id,
                        insight: None,
                        text: Some(Text {
                            body: required_body(text, index)?,
                            created_by: Some(by),
                            last_modified_at: at,
                            last_modified_by: None,
                        }),
                        layouts: Map::new(),
                        color: None,
                        deleted: false,
                    });
                    next_tile_id += 1;
                    next.tiles
                        .last_mut()
                        .ok_or_else(|| ApiError::internal("no tile"))?
                }
            };
            if let (Some(text), Some(id)) = (text, edit.id) {
                let Some(stored) = &mut tile.text else {
                    return Err(ApiError::validation(
                        format!("tiles[{index}].text"),
                        format!("Tile {id} shows an insight, not a text."),
                    ));
                };
                stored.body = required_body(text, index)?;
                stored.last_modified_at = at;
                stored.last_modified_by = Some(by);
            }
            if let Some(layouts) = &edit.layouts {
                tile.layouts = layouts.clone();
            }
            if let Some(color) = &edit.color {
                tile.color = color.clone();
            }
            if let Some(deleted) = edit.deleted {
                tile.deleted = deleted;
            }
        }
        Ok(next)
    }
}

fn required_body(text: &TextBody, index: usize) -> Result<String, ApiError> {
    text.body
        .clone()
        .ok_or_else(|| ApiError::required(&format!("tiles[{index}].text.body")))
}
