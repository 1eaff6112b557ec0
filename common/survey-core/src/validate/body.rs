//! The POST / PATCH body: every field SurveySerializerCreateUpdateOnly writes. Each writable field
//! is a [`Field`], so a PATCH can tell "not sent" (`None`) from `null` (`Some(None)`). JSON
//! documents PostHog checks by hand (questions, conditions, appearance, translations, targeting
//! filters) stay `Value` here, so their errors carry PostHog's own messages rather than serde's.

use chrono::{DateTime, NaiveDate, NaiveDateTime, Utc};
use serde::de::{Deserializer, IgnoredAny};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Absent (`None`), `null` (`Some(None)`) or a value.
pub type Field<T> = Option<Option<T>>;

/// Keeps `null` apart from absence: with `#[serde(default)]`, an absent key stays `None`.
fn present<'de, D, T>(deserializer: D) -> Result<Field<T>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    Option::<T>::deserialize(deserializer).map(Some)
}

/// A date-time as DRF's DateTimeField reads it: ISO 8601, with or without an offset (UTC
/// assumed, as PostHog's projects are), or a bare date (midnight).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(transparent)]
pub struct Timestamp(pub DateTime<Utc>);

pub const DATETIME_FORMAT_ERROR: &str = "Datetime has wrong format. Use one of these formats instead: YYYY-MM-DDThh:mm[:ss[.uuuuuu]][+HH:MM|-HH:MM|Z].";

impl Timestamp {
    pub fn parse(text: &str) -> Option<Self> {
        let text = text.trim();
        if let Ok(at) = DateTime::parse_from_rfc3339(text) {
            return Some(Self(at.with_timezone(&Utc)));
        }
        for format in [
            "%Y-%m-%dT%H:%M:%S%.f",
            "%Y-%m-%d %H:%M:%S%.f",
            "%Y-%m-%dT%H:%M",
        ] {
            if let Ok(at) = NaiveDateTime::parse_from_str(text, format) {
                return Some(Self(at.and_utc()));
            }
        }
        NaiveDate::parse_from_str(text, "%Y-%m-%d")
            .ok()
            .and_then(|day| day.and_hms_opt(0, 0, 0))
            .map(|at| Self(at.and_utc()))
    }
}

impl<'de> Deserialize<'de> for Timestamp {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)
            .map_err(|_| serde::de::Error::custom(DATETIME_FORMAT_ERROR))?;
        Timestamp::parse(&text).ok_or_else(|| serde::de::Error::custom(DATETIME_FORMAT_ERROR))
    }
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SurveyBody {
    #[serde(default, deserialize_with = "present")]
    pub name: Field<String>,
    #[serde(default, deserialize_with = "present")]
    pub description: Field<String>,
    /// Checked against the choices by hand, for DRF's `"x" is not a valid choice.`.
    #[serde(default, rename = "type", deserialize_with = "present")]
    pub kind: Field<String>,
    #[serde(default, deserialize_with = "present")]
    pub schedule: Field<String>,

    #[serde(default, deserialize_with = "present")]
    pub linked_flag_id: Field<i64>,
    #[serde(default, deserialize_with = "present")]
    pub linked_insight_id: Field<i64>,
    #[serde(default, deserialize_with = "present")]
    pub targeting_flag_id: Field<i64>,
    #[serde(default, deserialize_with = "present")]
    pub targeting_flag_filters: Field<Value>,
    #[serde(default, deserialize_with = "present")]
    pub remove_targeting_flag: Field<bool>,

    #[serde(default, deserialize_with = "present")]
    pub questions: Field<Value>,
    #[serde(default, deserialize_with = "present")]
    pub conditions: Field<Value>,
    #[serde(default, deserialize_with = "present")]
    pub appearance: Field<Value>,

    #[serde(default, deserialize_with = "present")]
    pub start_date: Field<Timestamp>,
    #[serde(default, deserialize_with = "present")]
    pub end_date: Field<Timestamp>,
    #[serde(default, deserialize_with = "present")]
    pub archived: Field<bool>,
    #[serde(default, deserialize_with = "present")]
    pub responses_limit: Field<i64>,

    #[serde(default, deserialize_with = "present")]
    pub iteration_count: Field<i64>,
    #[serde(default, deserialize_with = "present")]
    pub iteration_frequency_days: Field<i64>,
    #[serde(default, deserialize_with = "present")]
    pub current_iteration: Field<i64>,
    #[serde(default, deserialize_with = "present")]
    pub current_iteration_start_date: Field<Timestamp>,

    #[serde(default, deserialize_with = "present")]
    pub response_sampling_start_date: Field<Timestamp>,
    #[serde(default, deserialize_with = "present")]
    pub response_sampling_interval_type: Field<String>,
    #[serde(default, deserialize_with = "present")]
    pub response_sampling_interval: Field<i64>,
    #[serde(default, deserialize_with = "present")]
    pub response_sampling_limit: Field<i64>,

    #[serde(default, deserialize_with = "present")]
    pub enable_partial_responses: Field<bool>,
    #[serde(default, deserialize_with = "present")]
    pub enable_iframe_embedding: Field<bool>,
    #[serde(default, deserialize_with = "present")]
    pub translations: Field<Value>,
    #[serde(default, deserialize_with = "present")]
    pub base_language: Field<String>,
    #[serde(default, deserialize_with = "present")]
    pub form_content: Field<Value>,

    // Writable in PostHog but always recomputed by its pre_save: accepted, then derived.
    #[serde(default, rename = "iteration_start_dates")]
    _iteration_start_dates: IgnoredAny,
    #[serde(default, rename = "response_sampling_daily_limits")]
    _response_sampling_daily_limits: IgnoredAny,
    /// PostHog's file-system folder for the new item: there is no file system here.
    #[serde(default, rename = "_create_in_folder")]
    _create_in_folder: IgnoredAny,

    // Read-only fields a client may echo back from a GET: accepted and ignored, as DRF does.
    #[serde(default, rename = "id")]
    _id: IgnoredAny,
    #[serde(default, rename = "created_at")]
    _created_at: IgnoredAny,
    #[serde(default, rename = "created_by")]
    _created_by: IgnoredAny,
    #[serde(default, rename = "feature_flag_keys")]
    _feature_flag_keys: IgnoredAny,
    #[serde(default, rename = "user_access_level")]
    _user_access_level: IgnoredAny,
    #[serde(default, rename = "linked_flag")]
    _linked_flag: IgnoredAny,
    #[serde(default, rename = "targeting_flag")]
    _targeting_flag: IgnoredAny,
    #[serde(default, rename = "internal_targeting_flag")]
    _internal_targeting_flag: IgnoredAny,
    #[serde(default, rename = "internal_response_sampling_flag")]
    _internal_response_sampling_flag: IgnoredAny,
    #[serde(default, rename = "search_match_type")]
    _search_match_type: IgnoredAny,
}
