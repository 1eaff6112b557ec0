//! The body of POST, PATCH and PUT: the fields a client may write, and the read-only fields of
//! FeatureFlagSerializer that PostHog's web app sends back on every edit (accepted, ignored).

use common::error::ApiError;
use feature_flags::FeatureFlag;
use feature_flags::model::{EvaluationRuntime, FlagFilters};
use serde::Deserialize;
use serde::de::IgnoredAny;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FlagBody {
    pub key: Option<String>,
    pub name: Option<String>,
    pub filters: Option<FlagFilters>,
    pub active: Option<bool>,
    pub deleted: Option<bool>,
    /// `null` reads as false, as PostHog's ClassicBehaviorBooleanField does.
    pub ensure_experience_continuity: Option<bool>,
    pub evaluation_runtime: Option<EvaluationRuntime>,
    pub evaluation_tags: Option<Vec<String>>,
    /// The version the client edited; another one is a 409.
    pub version: Option<u64>,

    // Writable in PostHog, with effects this service does not have: only their off value.
    archived: Option<bool>,
    is_remote_configuration: Option<bool>,
    has_encrypted_payloads: Option<bool>,
    bucketing_identifier: Option<String>,

    // Read-only (or UI-only) fields of PostHog's serializer: accepted and ignored.
    #[serde(rename = "id")]
    _id: Option<IgnoredAny>,
    #[serde(rename = "team_id")]
    _team_id: Option<IgnoredAny>,
    #[serde(rename = "created_at")]
    _created_at: Option<IgnoredAny>,
    #[serde(rename = "created_by")]
    _created_by: Option<IgnoredAny>,
    #[serde(rename = "updated_at")]
    _updated_at: Option<IgnoredAny>,
    #[serde(rename = "last_modified_by")]
    _last_modified_by: Option<IgnoredAny>,
    #[serde(rename = "is_simple_flag")]
    _is_simple_flag: Option<IgnoredAny>,
    #[serde(rename = "rollout_percentage")]
    _rollout_percentage: Option<IgnoredAny>,
    #[serde(rename = "status")]
    _status: Option<IgnoredAny>,
    #[serde(rename = "tags")]
    _tags: Option<IgnoredAny>,
    #[serde(rename = "evaluation_contexts")]
    _evaluation_contexts: Option<IgnoredAny>,
    #[serde(rename = "can_edit")]
    _can_edit: Option<IgnoredAny>,
    #[serde(rename = "user_access_level")]
    _user_access_level: Option<IgnoredAny>,
    #[serde(rename = "experiment_set")]
    _experiment_set: Option<IgnoredAny>,
    #[serde(rename = "experiment_set_metadata")]
    _experiment_set_metadata: Option<IgnoredAny>,
    #[serde(rename = "surveys")]
    _surveys: Option<IgnoredAny>,
    #[serde(rename = "features")]
    _features: Option<IgnoredAny>,
    #[serde(rename = "rollback_conditions")]
    _rollback_conditions: Option<IgnoredAny>,
    #[serde(rename = "performed_rollback")]
    _performed_rollback: Option<IgnoredAny>,
    #[serde(rename = "usage_dashboard")]
    _usage_dashboard: Option<IgnoredAny>,
    #[serde(rename = "analytics_dashboards")]
    _analytics_dashboards: Option<IgnoredAny>,
    #[serde(rename = "has_enriched_analytics")]
    _has_enriched_analytics: Option<IgnoredAny>,
    #[serde(rename = "last_called_at")]
    _last_called_at: Option<IgnoredAny>,
    #[serde(rename = "is_used_in_replay_settings")]
    _is_used_in_replay_settings: Option<IgnoredAny>,
    #[serde(rename = "creation_context")]
    _creation_context: Option<IgnoredAny>,
    #[serde(rename = "original_flag")]
    _original_flag: Option<IgnoredAny>,
    #[serde(rename = "_create_in_folder")]
    _create_in_folder: Option<IgnoredAny>,
    #[serde(rename = "_should_create_usage_dashboard")]
    _should_create_usage_dashboard: Option<IgnoredAny>,
}

impl FlagBody {
    /// Refuses what this service cannot honour, naming the field.
    pub fn check_unsupported(&self) -> Result<(), ApiError> {
        for (field, on) in [
            ("archived", self.archived),
            ("is_remote_configuration", self.is_remote_configuration),
            ("has_encrypted_payloads", self.has_encrypted_payloads),
        ] {
            if on == Some(true) {
                return Err(ApiError::validation(
                    field,
                    format!(
                        "`{field}` is not supported by this service; send false or leave it out."
                    ),
                ));
            }
        }
        if let Some(identifier) = &self.bucketing_identifier
            && identifier != "distinct_id"
        {
            return Err(ApiError::field(
                "bucketing_identifier",
                "invalid_choice",
                format!("\"{identifier}\" is not a valid choice: only distinct_id is supported."),
            ));
        }
        if let Some(name) = &self.name
            && name.chars().count() > MAX_NAME_CHARS
        {
            return Err(ApiError::field(
                "name",
                "max_length",
                format!("Ensure this field has no more than {MAX_NAME_CHARS} characters."),
            ));
        }
        Ok(())
    }

    /// `current` with this body's fields over it (a partial update).
    pub fn apply_to(&self, current: &FeatureFlag) -> FeatureFlag {
        let mut next = current.clone();
        if let Some(key) = &self.key {
            next.key = key.clone();
        }
        if let Some(name) = &self.name {
            next.name = name.clone();
        }
        if let Some(filters) = &self.filters {
            next.filters = filters.clone();
        }
        if let Some(active) = self.active {
            next.active = active;
        }
        if let Some(deleted) = self.deleted {
            next.deleted = deleted;
        }
        if let Some(continuity) = self.ensure_experience_continuity {
            next.ensure_experience_continuity = continuity;
        }
        if let Some(runtime) = self.evaluation_runtime {
            next.evaluation_runtime = runtime;
        }
        if let Some(tags) = &self.evaluation_tags {
            next.evaluation_tags = tags.clone();
        }
        next
    }
}

/// PostHog's `name` is a TextField; a bound keeps one flag's item well under DynamoDB's 400 KB.
pub const MAX_NAME_CHARS: usize = 10_000;
