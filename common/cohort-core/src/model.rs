//! A cohort as stored. PostHog's serializer fields that are derived (`experiment_set`,
//! `cohort_type`) are computed when rendering.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::Filters;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Cohort {
    pub id: i64,
    pub team_id: i64,
    pub name: String,
    #[serde(default)]
    pub description: String,
    /// Members are added by person id (`add_persons_to_static_cohort`), never computed.
    #[serde(default)]
    pub is_static: bool,
    /// The definition of a dynamic cohort; `None` for a static one.
    #[serde(default)]
    pub filters: Option<Filters>,
    #[serde(default)]
    pub deleted: bool,
    /// Persons in the cohort when it was last counted (static: its members; dynamic: at the
    /// last calculation), `None` until then.
    #[serde(default)]
    pub count: Option<i64>,
    #[serde(default)]
    pub is_calculating: bool,
    /// When the stored membership of a dynamic cohort was last computed.
    #[serde(default)]
    pub last_calculation: Option<DateTime<Utc>>,
    #[serde(default)]
    pub errors_calculating: i64,
    #[serde(default)]
    pub last_error_at: Option<DateTime<Utc>>,
    /// Experiments whose exposure cohort this is (PostHog's `experiment_set`).
    #[serde(default)]
    pub experiment_ids: Vec<i64>,
    #[serde(default)]
    pub created_by: Option<Uuid>,
    pub created_at: DateTime<Utc>,
    #[serde(default)]
    pub updated_at: Option<DateTime<Utc>>,
    /// Optimistic-concurrency counter, bumped on every save.
    #[serde(default)]
    pub version: u64,
}

impl Cohort {
    /// A dynamic cohort whose definition reads events: its members can only be known by a
    /// calculation over the event lake (feature flags cannot evaluate it per request).
    pub fn is_behavioral(&self) -> bool {
        self.filters.as_ref().is_some_and(Filters::has_behavioral)
    }
}
