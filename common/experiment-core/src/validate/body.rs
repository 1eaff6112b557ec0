//! The body of create, PATCH and PUT: every field of PostHog's ExperimentSerializer (reference
//! 2.2). Writable fields are typed; read-only ones the web app echoes back are accepted and
//! ignored; anything else is refused by `deny_unknown_fields` with its name.

use chrono::{DateTime, Utc};
use serde::de::IgnoredAny;
use serde::{Deserialize, Deserializer};
use serde_json::Value;

/// A field whose presence matters apart from its value: `None` = absent, `Some(None)` = null.
pub type Present<T> = Option<Option<T>>;

pub(crate) fn present<'de, D, T>(deserializer: D) -> Result<Present<T>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    Option::<T>::deserialize(deserializer).map(Some)
}

/// `type`: what the experiment tests.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    Web,
    Product,
}

impl Kind {
    pub fn name(self) -> &'static str {
        match self {
            Kind::Web => "web",
            Kind::Product => "product",
        }
    }
}

/// `conclusion`: how an ended experiment turned out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Conclusion {
    Won,
    Lost,
    Inconclusive,
    StoppedEarly,
    Invalid,
}

impl Conclusion {
    pub fn name(self) -> &'static str {
        match self {
            Conclusion::Won => "won",
            Conclusion::Lost => "lost",
            Conclusion::Inconclusive => "inconclusive",
            Conclusion::StoppedEarly => "stopped_early",
            Conclusion::Invalid => "invalid",
        }
    }
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExperimentBody {
    #[serde(default, deserialize_with = "present")]
    pub name: Present<String>,
    #[serde(default, deserialize_with = "present")]
    pub description: Present<String>,
    #[serde(default, deserialize_with = "present")]
    pub start_date: Present<DateTime<Utc>>,
    #[serde(default, deserialize_with = "present")]
    pub end_date: Present<DateTime<Utc>>,
    pub feature_flag_key: Option<String>,
    #[serde(default, deserialize_with = "present")]
    pub holdout_id: Present<i64>,
    /// Open-shaped (reference 2.2): read by [`super::parameters`].
    #[serde(default, deserialize_with = "present")]
    pub parameters: Present<Value>,
    #[serde(default, deserialize_with = "present")]
    pub secondary_metrics: Present<Vec<Value>>,
    #[serde(default, deserialize_with = "present")]
    pub saved_metrics_ids: Present<Vec<Value>>,
    #[serde(default, deserialize_with = "present")]
    pub filters: Present<Value>,
    pub archived: Option<bool>,
    pub deleted: Option<bool>,
    #[serde(rename = "type", default, deserialize_with = "present")]
    pub kind: Present<Kind>,
    #[serde(default, deserialize_with = "present")]
    pub exposure_criteria: Present<Value>,
    #[serde(default, deserialize_with = "present")]
    pub metrics: Present<Vec<Value>>,
    #[serde(default, deserialize_with = "present")]
    pub metrics_secondary: Present<Vec<Value>>,
    #[serde(default, deserialize_with = "present")]
    pub stats_config: Present<Value>,
    #[serde(default, deserialize_with = "present")]
    pub scheduling_config: Present<Value>,
    /// Write-only: skip the event-definition check of metrics.
    pub allow_unknown_events: Option<bool>,
    #[serde(rename = "_create_in_folder")]
    pub create_in_folder: Option<IgnoredAny>,
    #[serde(default, deserialize_with = "present")]
    pub conclusion: Present<Conclusion>,
    #[serde(default, deserialize_with = "present")]
    pub conclusion_comment: Present<String>,
    #[serde(default, deserialize_with = "present")]
    pub primary_metrics_ordered_uuids: Present<Vec<String>>,
    #[serde(default, deserialize_with = "present")]
    pub secondary_metrics_ordered_uuids: Present<Vec<String>>,
    pub only_count_matured_users: Option<bool>,
    /// Write-only: rewrite the flag from `parameters` even when not a draft.
    pub update_feature_flag_params: Option<bool>,
    #[serde(default, deserialize_with = "present")]
    pub running_time_calculation: Present<Value>,

    // Read-only fields of the serializer: accepted and ignored, as DRF does.
    #[serde(rename = "id")]
    _id: Option<IgnoredAny>,
    #[serde(rename = "feature_flag")]
    _feature_flag: Option<IgnoredAny>,
    #[serde(rename = "holdout")]
    _holdout: Option<IgnoredAny>,
    #[serde(rename = "exposure_cohort")]
    _exposure_cohort: Option<IgnoredAny>,
    #[serde(rename = "saved_metrics")]
    _saved_metrics: Option<IgnoredAny>,
    #[serde(rename = "created_by")]
    _created_by: Option<IgnoredAny>,
    #[serde(rename = "created_at")]
    _created_at: Option<IgnoredAny>,
    #[serde(rename = "updated_at")]
    _updated_at: Option<IgnoredAny>,
    #[serde(rename = "status")]
    _status: Option<IgnoredAny>,
    #[serde(rename = "user_access_level")]
    _user_access_level: Option<IgnoredAny>,
}

impl ExperimentBody {
    /// The writable fields this body carries (PATCH's "Can't update keys" check reads them).
    pub fn written_fields(&self) -> Vec<&'static str> {
        let mut fields = Vec::new();
        let mut note = |present: bool, name: &'static str| {
            if present {
                fields.push(name);
            }
        };
        note(self.name.is_some(), "name");
        note(self.description.is_some(), "description");
        note(self.start_date.is_some(), "start_date");
        note(self.end_date.is_some(), "end_date");
        note(self.feature_flag_key.is_some(), "feature_flag_key");
        note(self.holdout_id.is_some(), "holdout");
        note(self.parameters.is_some(), "parameters");
        note(self.secondary_metrics.is_some(), "secondary_metrics");
        note(self.saved_metrics_ids.is_some(), "saved_metrics_ids");
        note(self.filters.is_some(), "filters");
        note(self.archived.is_some(), "archived");
        note(self.deleted.is_some(), "deleted");
        note(self.kind.is_some(), "type");
        note(self.exposure_criteria.is_some(), "exposure_criteria");
        note(self.metrics.is_some(), "metrics");
        note(self.metrics_secondary.is_some(), "metrics_secondary");
        note(self.stats_config.is_some(), "stats_config");
        note(self.scheduling_config.is_some(), "scheduling_config");
        note(self.conclusion.is_some(), "conclusion");
        note(self.conclusion_comment.is_some(), "conclusion_comment");
        note(
            self.primary_metrics_ordered_uuids.is_some(),
            "primary_metrics_ordered_uuids",
        );
        note(
            self.secondary_metrics_ordered_uuids.is_some(),
            "secondary_metrics_ordered_uuids",
        );
        note(
            self.only_count_matured_users.is_some(),
            "only_count_matured_users",
        );
        note(
            self.running_time_calculation.is_some(),
            "running_time_calculation",
        );
        fields
    }
}
