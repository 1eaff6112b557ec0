//! An endpoint as stored (reference 2.1): the endpoint names a project's saved query and points
//! at its current version; each version is an immutable snapshot of the query with its own
//! settings. Materializations and last executions are kept beside them, one item each.

use std::fmt;
use std::str::FromStr;

use chrono::{DateTime, Duration, Utc};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;
use uuid::Uuid;

/// A named endpoint of a project: `TEAM#<team_id>` / `ENDPOINT#<name>`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Endpoint {
    pub id: Uuid,
    pub team_id: i64,
    pub name: String,
    pub is_active: bool,
    /// The version `run` uses by default; versions are numbered from 1.
    pub current_version: u32,
    /// The short id of the insight it was made from.
    #[serde(default)]
    pub derived_from_insight: Option<String>,
    #[serde(default)]
    pub created_by: Option<Uuid>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

/// One version of an endpoint: `ENDPOINTV#<endpoint uuid>#<version, 10 digits>`. Keyed by the
/// endpoint's uuid, not its name, so an endpoint re-created under a deleted one's name starts
/// with no versions.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Version {
    pub id: Uuid,
    pub endpoint_id: Uuid,
    pub version: u32,
    /// The query node as it was saved; never changed once written.
    pub query: Value,
    #[serde(default)]
    pub description: String,
    #[serde(default)]
    pub cache_age_seconds: Option<u32>,
    pub is_active: bool,
    #[serde(default)]
    pub is_materialized: bool,
    /// Set when `is_materialized`.
    #[serde(default)]
    pub sync_frequency: Option<SyncFrequency>,
    /// The result's columns, when known.
    #[serde(default)]
    pub columns: Vec<Column>,
    pub created_at: DateTime<Utc>,
    #[serde(default)]
    pub created_by: Option<Uuid>,
    pub updated_at: DateTime<Utc>,
}

/// One result column as PostHog lists it: `{"name", "type"}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Column {
    pub name: String,
    #[serde(rename = "type")]
    pub kind: String,
}

/// How often a materialized version is recomputed (PostHog's `DataWarehouseSyncInterval`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum SyncFrequency {
    FiveMinutes,
    FifteenMinutes,
    ThirtyMinutes,
    OneHour,
    SixHours,
    TwelveHours,
    #[default]
    OneDay,
    SevenDays,
    ThirtyDays,
}

impl SyncFrequency {
    pub const ALL: [SyncFrequency; 9] = [
        SyncFrequency::FiveMinutes,
        SyncFrequency::FifteenMinutes,
        SyncFrequency::ThirtyMinutes,
        SyncFrequency::OneHour,
        SyncFrequency::SixHours,
        SyncFrequency::TwelveHours,
        SyncFrequency::OneDay,
        SyncFrequency::SevenDays,
        SyncFrequency::ThirtyDays,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            SyncFrequency::FiveMinutes => "5min",
            SyncFrequency::FifteenMinutes => "15min",
            SyncFrequency::ThirtyMinutes => "30min",
            SyncFrequency::OneHour => "1hour",
            SyncFrequency::SixHours => "6hour",
            SyncFrequency::TwelveHours => "12hour",
            SyncFrequency::OneDay => "24hour",
            SyncFrequency::SevenDays => "7day",
            SyncFrequency::ThirtyDays => "30day",
        }
    }

    /// How long a materialization stays fresh.
    pub fn interval(self) -> Duration {
        match self {
            SyncFrequency::FiveMinutes => Duration::minutes(5),
            SyncFrequency::FifteenMinutes => Duration::minutes(15),
            SyncFrequency::ThirtyMinutes => Duration::minutes(30),
            SyncFrequency::OneHour => Duration::hours(1),
            SyncFrequency::SixHours => Duration::hours(6),
            SyncFrequency::TwelveHours => Duration::hours(12),
            SyncFrequency::OneDay => Duration::hours(24),
            SyncFrequency::SevenDays => Duration::days(7),
            SyncFrequency::ThirtyDays => Duration::days(30),
        }
    }
}

impl fmt::Display for SyncFrequency {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A sync frequency that is not one of the choices; the message lists them.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "\"{0}\" is not a valid choice. Choices: 5min, 15min, 30min, 1hour, 6hour, 12hour, 24hour, 7day, 30day."
)]
pub struct UnknownSyncFrequency(pub String);

impl FromStr for SyncFrequency {
    type Err = UnknownSyncFrequency;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .into_iter()
            .find(|choice| choice.as_str() == text)
            .ok_or_else(|| UnknownSyncFrequency(text.to_owned()))
    }
}

impl Serialize for SyncFrequency {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

/// By hand rather than derived, so a bad value's 400 lists the choices in DRF's words.
impl<'de> Deserialize<'de> for SyncFrequency {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

/// Where a version's materialization is (PostHog's saved query `status`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum MaterializationStatus {
    Pending,
    Running,
    Completed,
    Failed,
}

impl MaterializationStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            MaterializationStatus::Pending => "Pending",
            MaterializationStatus::Running => "Running",
            MaterializationStatus::Completed => "Completed",
            MaterializationStatus::Failed => "Failed",
        }
    }
}

/// A materialized version's state: `ENDPOINTMAT#<endpoint uuid>#<version, 10 digits>`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Materialization {
    pub endpoint_id: Uuid,
    pub endpoint_name: String,
    pub version: u32,
    pub status: MaterializationStatus,
    pub sync_frequency: SyncFrequency,
    #[serde(default)]
    pub last_materialized_at: Option<DateTime<Utc>>,
    pub next_run_at: DateTime<Utc>,
    /// The last run's error, "" when it succeeded.
    #[serde(default)]
    pub error: String,
    /// The object-store path of the current Parquet file.
    #[serde(default)]
    pub object: Option<String>,
    /// The variable code name turned into a column, if any.
    #[serde(default)]
    pub variable: Option<String>,
    #[serde(default)]
    pub rows: u64,
    pub updated_at: DateTime<Utc>,
}

impl Materialization {
    /// Whether a run may read the materialized file instead of querying: one was written, is
    /// younger than one sync interval (PostHog's staleness rule, reference 2.5), and the latest
    /// run did not fail (a re-run under way leaves the previous file servable).
    pub fn is_fresh(&self, now: DateTime<Utc>) -> bool {
        self.status != MaterializationStatus::Failed
            && self.object.is_some()
            && self
                .last_materialized_at
                .is_some_and(|at| now < at + self.sync_frequency.interval())
    }
}

/// When an endpoint was last run: `ENDPOINTRUN#<name>`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LastExecution {
    pub name: String,
    pub last_executed_at: DateTime<Utc>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sync_frequencies_read_and_write_as_posthog_labels() {
        for choice in SyncFrequency::ALL {
            let text = serde_json::to_value(choice).unwrap();
            assert_eq!(text, Value::String(choice.as_str().into()));
            assert_eq!(
                serde_json::from_value::<SyncFrequency>(text).unwrap(),
                choice
            );
        }
        assert_eq!(SyncFrequency::default().as_str(), "24hour");
        assert_eq!(SyncFrequency::FiveMinutes.interval(), Duration::minutes(5));
        assert_eq!(SyncFrequency::ThirtyDays.interval(), Duration::days(30));
        let error = serde_json::from_value::<SyncFrequency>(Value::String("2min".into()))
            .unwrap_err()
            .to_string();
        assert!(
            error.starts_with("\"2min\" is not a valid choice."),
            "{error}"
        );
        assert!(
            error.contains("15min") && error.contains("30day"),
            "{error}"
        );
    }

    #[test]
    fn a_materialization_is_fresh_for_one_interval_after_a_completed_run() {
        let now = Utc::now();
        let mut m = Materialization {
            endpoint_id: Uuid::new_v4(),
            endpoint_name: "daily".into(),
            version: 1,
            status: MaterializationStatus::Completed,
            sync_frequency: SyncFrequency::OneHour,
            last_materialized_at: Some(now - Duration::minutes(59)),
            next_run_at: now,
            error: String::new(),
            object: Some("endpoints/1/x.parquet".into()),
            variable: None,
            rows: 3,
            updated_at: now,
        };
        assert!(m.is_fresh(now));
        assert!(!m.is_fresh(now + Duration::minutes(1)));
        m.status = MaterializationStatus::Running;
        assert!(m.is_fresh(now));
        m.status = MaterializationStatus::Failed;
        assert!(!m.is_fresh(now));
        m.status = MaterializationStatus::Completed;
        m.object = None;
        assert!(!m.is_fresh(now));
        assert_eq!(
            serde_json::to_value(MaterializationStatus::Completed).unwrap(),
            "Completed"
        );
    }
}
