//! Holdouts (PostHog's `ExperimentHoldout`): a stable share of users kept out of every
//! experiment that names the holdout. The holdout's `filters` are flag release groups whose
//! first `rollout_percentage` is the share held out; an experiment's flag carries it as
//! `filters.holdout = {id, exclusion_percentage}`, and `feature-flags` answers `holdout-<id>`
//! to the users it hashes into that share.

pub mod repository;

use chrono::{DateTime, Utc};
use common::error::ApiError;
use common::models::User;
use feature_flags::render::user_basic;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};
use uuid::Uuid;

use crate::service;
use crate::validate::Present;

/// One holdout of a project.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Holdout {
    pub id: i64,
    pub team_id: i64,
    pub name: String,
    #[serde(default)]
    pub description: Option<String>,
    /// Release groups as given, each with `variant: "holdout-<id>"` set by the server.
    pub filters: Vec<Map<String, Value>>,
    #[serde(default)]
    pub created_by: Option<Uuid>,
    pub created_at: DateTime<Utc>,
    #[serde(default)]
    pub updated_at: Option<DateTime<Utc>>,
    #[serde(default)]
    pub version: u64,
}

impl Holdout {
    /// The variant its users get: `holdout-<id>`.
    pub fn variant(&self) -> String {
        format!("holdout-{}", self.id)
    }

    /// What an experiment's flag carries: only the first group's percentage reaches flags,
    /// as PostHog's `holdout_filters_for_flag` does.
    pub fn flag_holdout(&self) -> Option<feature_flags::model::Holdout> {
        let percentage = self.filters.first()?.get("rollout_percentage")?.as_f64()?;
        Some(feature_flags::model::Holdout {
            id: self.id,
            exclusion_percentage: percentage,
        })
    }

    /// Each group with the server's `variant` (PostHog's `_get_filters_with_holdout_id`).
    fn stamp_variant(&mut self) {
        let variant = Value::String(self.variant());
        for group in &mut self.filters {
            group.insert("variant".into(), variant.clone());
        }
    }
}

/// The body of create, PATCH and PUT. DRF ignores fields it does not know, so this does too;
/// the read-only fields the web app echoes back are ignored with them.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct HoldoutBody {
    #[serde(default, deserialize_with = "crate::validate::body::present")]
    pub name: Present<String>,
    #[serde(default, deserialize_with = "crate::validate::body::present")]
    pub description: Present<String>,
    #[serde(default, deserialize_with = "crate::validate::body::present")]
    pub filters: Present<Vec<Value>>,
}

/// DRF's checks of `filters`, then PostHog's `validate_filters`.
fn filters(given: &Present<Vec<Value>>) -> Result<Option<Vec<Map<String, Value>>>, ApiError> {
    let groups = match given {
        None => return Ok(None),
        Some(None) => {
            return Err(ApiError::field(
                "filters",
                "null",
                "This field may not be null.",
            ));
        }
        Some(Some(groups)) => groups,
    };
    let invalid = |detail: &str| ApiError::field("filters", "invalid", detail);
    if groups.is_empty() {
        return Err(invalid("Filters must not be empty."));
    }
    let mut checked = Vec::with_capacity(groups.len());
    for group in groups {
        let Some(group) = group.as_object() else {
            return Err(invalid("Each filter group must be an object."));
        };
        match group.get("rollout_percentage") {
            None | Some(Value::Null) => return Err(invalid("Rollout percentage must be present.")),
            Some(Value::Number(number)) => {
                let percentage = number.as_f64().unwrap_or(f64::NAN);
                if !(0.0..=100.0).contains(&percentage) {
                    return Err(invalid("Rollout percentage must be between 0 and 100."));
                }
            }
            Some(_) => return Err(invalid("Rollout percentage must be a number.")),
        }
        checked.push(group.clone());
    }
    Ok(Some(checked))
}

impl service::Described for Holdout {
    fn name_and_description(&mut self) -> (&mut String, &mut Option<String>) {
        (&mut self.name, &mut self.description)
    }
}

/// The holdout `body` creates (its id is set when it is stored), or PostHog's 400.
pub fn create(
    body: &HoldoutBody,
    user: &User,
    team_id: i64,
    at: DateTime<Utc>,
) -> Result<Holdout, ApiError> {
    if !matches!(body.name, Some(Some(_))) {
        return Err(ApiError::required("name"));
    }
    let groups = filters(&body.filters)?;
    let mut holdout = Holdout {
        id: 0,
        team_id,
        name: String::new(),
        description: None,
        filters: Vec::new(),
        created_by: Some(user.uuid),
        created_at: at,
        updated_at: Some(at),
        version: 1,
    };
    service::describe(&mut holdout, &body.name, &body.description, 400)?;
    // Raised from the serializer's `create`, so without a field.
    holdout.filters = groups.ok_or_else(|| {
        crate::validate::invalid("Filters are required to create an holdout group")
    })?;
    Ok(holdout)
}

/// The holdout after `body`; `filters` changed means the linked flags change too.
pub fn update(body: &HoldoutBody, current: &Holdout) -> Result<Holdout, ApiError> {
    let mut next = current.clone();
    service::describe(&mut next, &body.name, &body.description, 400)?;
    if let Some(groups) = filters(&body.filters)? {
        next.filters = groups;
        next.stamp_variant();
    }
    Ok(next)
}

/// PostHog's ExperimentHoldoutSerializer.
pub fn render(holdout: &Holdout, creator: Option<&User>) -> Value {
    json!({
        "id": holdout.id,
        "name": holdout.name,
        "description": holdout.description,
        "filters": holdout.filters,
        "created_by": creator.map(user_basic),
        "created_at": holdout.created_at,
        "updated_at": holdout.updated_at.unwrap_or(holdout.created_at),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn body(value: Value) -> HoldoutBody {
        serde_json::from_value(value).expect("body")
    }

    #[test]
    fn filters_are_checked_as_posthog_checks_them() {
        let detail = |value: Value| filters(&body(value).filters).unwrap_err().body.detail;
        assert_eq!(detail(json!({"filters": []})), "Filters must not be empty.");
        assert_eq!(
            detail(json!({"filters": [{"properties": []}]})),
            "Rollout percentage must be present."
        );
        assert_eq!(
            detail(json!({"filters": [{"rollout_percentage": 101}]})),
            "Rollout percentage must be between 0 and 100."
        );
        let groups = filters(&body(json!({"filters": [{"rollout_percentage": 12.5}]})).filters)
            .unwrap()
            .unwrap();
        assert_eq!(groups.len(), 1);
    }

    #[test]
    fn the_first_group_reaches_the_flag_and_groups_get_the_variant() {
        let mut holdout: Holdout = serde_json::from_value(json!({
            "id": 4, "team_id": 1, "name": "h", "created_at": "2026-01-01T00:00:00Z",
            "filters": [{"properties": [], "rollout_percentage": 10}, {"rollout_percentage": 50}],
        }))
        .unwrap();
        holdout.stamp_variant();
        assert_eq!(holdout.filters[1]["variant"], "holdout-4");
        let flag = holdout.flag_holdout().unwrap();
        assert_eq!((flag.id, flag.exclusion_percentage), (4, 10.0));
    }
}
