//! An experiment as stored and as PostHog's API shows it (reference 2.1–2.2). The JSON columns
//! PostHog keeps as JSON (`parameters`, `metrics`, `stats_config`, ...) stay JSON here; they are
//! read through typed views (`insights::experiments::metric`, [`crate::validate`]) where used.

use chrono::{DateTime, Utc};
use feature_flags::FeatureFlag;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use uuid::Uuid;

/// One experiment of a project.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Experiment {
    pub id: i64,
    pub team_id: i64,
    pub name: String,
    #[serde(default)]
    pub description: Option<String>,
    /// The flag the experiment runs on (its `feature_flag` FK).
    pub feature_flag_id: i64,
    #[serde(default)]
    pub holdout_id: Option<i64>,
    #[serde(default)]
    pub exposure_cohort_id: Option<i64>,
    #[serde(default)]
    pub start_date: Option<DateTime<Utc>>,
    #[serde(default)]
    pub end_date: Option<DateTime<Utc>>,
    #[serde(default)]
    pub archived: bool,
    #[serde(default)]
    pub deleted: bool,
    /// `won` | `lost` | `inconclusive` | `stopped_early` | `invalid`.
    #[serde(default)]
    pub conclusion: Option<String>,
    #[serde(default)]
    pub conclusion_comment: Option<String>,
    /// `product` | `web`.
    #[serde(rename = "type", default = "product")]
    pub kind: String,
    #[serde(default = "empty_object")]
    pub filters: Value,
    /// Stored as given, variants with `rollout_percentage` (`split_percent` is added on output).
    #[serde(default)]
    pub parameters: Option<Value>,
    #[serde(default)]
    pub secondary_metrics: Vec<Value>,
    /// Web experiments: `{key: {rollout_percentage}}`.
    #[serde(default)]
    pub variants: Option<Value>,
    #[serde(default)]
    pub exposure_criteria: Option<Value>,
    /// ExperimentMetric objects, each with `uuid` and `fingerprint` filled in.
    #[serde(default)]
    pub metrics: Vec<Value>,
    #[serde(default)]
    pub metrics_secondary: Vec<Value>,
    #[serde(default)]
    pub stats_config: Option<Value>,
    #[serde(default)]
    pub scheduling_config: Option<Value>,
    #[serde(default)]
    pub primary_metrics_ordered_uuids: Option<Vec<String>>,
    #[serde(default)]
    pub secondary_metrics_ordered_uuids: Option<Vec<String>>,
    /// Links to saved metrics (PostHog's `ExperimentToSavedMetric` rows).
    #[serde(default)]
    pub saved_metrics: Vec<SavedMetricLink>,
    #[serde(default)]
    pub only_count_matured_users: bool,
    #[serde(default)]
    pub running_time_calculation: Option<Value>,
    #[serde(default)]
    pub created_by: Option<Uuid>,
    pub created_at: DateTime<Utc>,
    #[serde(default)]
    pub updated_at: Option<DateTime<Utc>>,
    /// Optimistic-concurrency counter, bumped on every save.
    #[serde(default)]
    pub version: u64,
}

/// An experiment's link to one saved metric of its project.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SavedMetricLink {
    /// The link's own id; 0 until the repository numbers it.
    pub id: i64,
    pub saved_metric_id: i64,
    /// `{type: "primary" | "secondary", ...}` as given.
    #[serde(default)]
    pub metadata: Option<Value>,
    pub created_at: DateTime<Utc>,
}

fn product() -> String {
    "product".to_owned()
}

fn empty_object() -> Value {
    Value::Object(Map::new())
}

/// The serializer's `status`, derived from the dates and the flag (never stored as truth).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    Draft,
    Running,
    Paused,
    Stopped,
}

impl Status {
    pub fn name(self) -> &'static str {
        match self {
            Status::Draft => "draft",
            Status::Running => "running",
            Status::Paused => "paused",
            Status::Stopped => "stopped",
        }
    }
}

impl Experiment {
    /// draft = not started; stopped = ended; paused = running with an inactive flag.
    pub fn status(&self, flag: Option<&FeatureFlag>) -> Status {
        match (self.start_date, self.end_date) {
            (None, _) => Status::Draft,
            (Some(_), Some(_)) => Status::Stopped,
            (Some(_), None) if flag.is_some_and(|flag| !flag.active) => Status::Paused,
            (Some(_), None) => Status::Running,
        }
    }

    pub fn is_draft(&self) -> bool {
        self.start_date.is_none()
    }
}
