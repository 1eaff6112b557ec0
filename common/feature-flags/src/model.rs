//! A feature flag as stored and as PostHog's API and SDKs show it (reference section 3.1).

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use uuid::Uuid;

/// One flag of a project. `version` is the optimistic-concurrency counter a PATCH must carry.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FeatureFlag {
    pub id: i64,
    pub team_id: i64,
    pub key: String,
    /// PostHog's "description" text lives in `name`.
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub filters: FlagFilters,
    pub active: bool,
    #[serde(default)]
    pub deleted: bool,
    #[serde(default)]
    pub ensure_experience_continuity: bool,
    #[serde(default)]
    pub evaluation_runtime: EvaluationRuntime,
    #[serde(default)]
    pub evaluation_tags: Vec<String>,
    pub version: u64,
    /// The user who created it (None for flags made by the system).
    #[serde(default)]
    pub created_by: Option<Uuid>,
    pub created_at: DateTime<Utc>,
    #[serde(default)]
    pub updated_at: Option<DateTime<Utc>>,
}

/// Keys of the flags a survey owns (PostHog's slugs): `survey-targeting-<hex>` for its targeting
/// flag, with `-custom` for the internal one that is active exactly while the survey runs.
pub const SURVEY_FLAG_PREFIX: &str = "survey-targeting-";
pub const SURVEY_INTERNAL_SUFFIX: &str = "-custom";

impl FeatureFlag {
    /// One of the flags a survey owns (targeting, internal targeting, sampling): PostHog leaves
    /// them out of local evaluation, since only posthog-js shows surveys.
    pub fn is_survey_flag(&self) -> bool {
        self.key.starts_with(SURVEY_FLAG_PREFIX)
    }

    /// A survey's internal targeting flag (so an active one means a running survey).
    pub fn is_survey_internal_targeting(&self) -> bool {
        self.key.starts_with(SURVEY_FLAG_PREFIX) && self.key.ends_with(SURVEY_INTERNAL_SUFFIX)
    }

    /// `multivariate` when the flag has variants, else `boolean` (the list's `type` filter).
    pub fn kind(&self) -> FlagKind {
        match &self.filters.multivariate {
            Some(multivariate) if !multivariate.variants.is_empty() => FlagKind::Multivariant,
            _ => FlagKind::Boolean,
        }
    }

    /// The variant keys, in order (empty for a boolean flag).
    pub fn variant_keys(&self) -> impl Iterator<Item = &str> {
        self.filters
            .multivariate
            .iter()
            .flat_map(|multivariate| multivariate.variants.iter())
            .map(|variant| variant.key.as_str())
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FlagKind {
    Boolean,
    Multivariant,
}

/// Where SDKs may evaluate the flag.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EvaluationRuntime {
    Server,
    Client,
    #[default]
    All,
}

/// `filters`: who gets the flag and which variant.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FlagFilters {
    #[serde(default)]
    pub groups: Vec<FlagGroup>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub multivariate: Option<Multivariate>,
    /// Aggregate by this group type instead of by person.
    #[serde(default)]
    pub aggregation_group_type_index: Option<i64>,
    /// Variant key (or `"true"` for a boolean flag) to its payload, a JSON document as text.
    #[serde(default)]
    pub payloads: BTreeMap<String, Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub holdout: Option<Holdout>,
    /// Conditions evaluated before `groups` (early-access enrollment); same shape.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub super_groups: Vec<FlagGroup>,
}

/// A release condition: all its properties must match, then the rollout decides.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FlagGroup {
    #[serde(default)]
    pub properties: Vec<PropertyFilter>,
    /// 0–100; None means everyone who matches.
    #[serde(default)]
    pub rollout_percentage: Option<f64>,
    /// Everyone this condition matches gets this variant.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub variant: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The web app's stable key for a condition row.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sort_key: Option<String>,
    /// Group-type conditions on a flag that mixes them (PostHog's newer model).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub aggregation_group_type_index: Option<i64>,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Multivariate {
    pub variants: Vec<Variant>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Variant {
    pub key: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    pub rollout_percentage: f64,
}

/// Part of the audience kept out of the flag (for an experiment's holdout group).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Holdout {
    pub id: i64,
    pub exclusion_percentage: f64,
}

/// One property condition, as in query filters.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PropertyFilter {
    pub key: String,
    #[serde(default)]
    pub value: Value,
    #[serde(default)]
    pub operator: Operator,
    /// `person`, `group`, `cohort`, `flag` (a dependency on another flag).
    #[serde(rename = "type", default = "person")]
    pub kind: PropertyKind,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group_type_index: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub negation: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    /// For `type: flag`: the chain of flag ids this dependency goes through (PostHog fills it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dependency_chain: Option<Vec<Value>>,
}

fn person() -> PropertyKind {
    PropertyKind::Person
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PropertyKind {
    Person,
    Group,
    Cohort,
    Flag,
}

/// The comparison a property condition makes (posthog-python's `match_property`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Operator {
    #[default]
    Exact,
    IsNot,
    Icontains,
    NotIcontains,
    Regex,
    NotRegex,
    Gt,
    Gte,
    Lt,
    Lte,
    IsSet,
    IsNotSet,
    IsDateExact,
    IsDateBefore,
    IsDateAfter,
    SemverEq,
    SemverNeq,
    SemverGt,
    SemverGte,
    SemverLt,
    SemverLte,
    SemverTilde,
    SemverCaret,
    SemverWildcard,
    /// Cohort membership (`type: cohort`).
    In,
    NotIn,
    /// Flag dependency (`type: flag`): the other flag evaluates to `value`.
    FlagEvaluatesTo,
}
