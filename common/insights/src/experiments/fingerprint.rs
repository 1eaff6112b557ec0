//! A metric's fingerprint (PostHog's `compute_metric_fingerprint`, reference 2.6): the SHA-256
//! of the metric with its identity fields dropped, beside the experiment settings that change its
//! results, written as Python's `json.dumps(sort_keys=True, separators=(",", ":"))`. Stored
//! results and timeseries are keyed by it, so a change that alters results gets new ones.

use chrono::{DateTime, SecondsFormat, Timelike, Utc};
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use super::python_json::dumps_sorted;

/// Metric fields that name or identify it without changing what it computes.
const IDENTITY_FIELDS: &[&str] = &[
    "uuid",
    "name",
    "kind",
    "fingerprint",
    "only_count_matured_users",
];

/// The experiment settings a fingerprint covers besides the metric.
#[derive(Debug, Clone, Default)]
pub struct Settings<'a> {
    pub start_date: Option<DateTime<Utc>>,
    /// `bayesian` when not configured.
    pub stats_method: Option<&'a str>,
    pub exposure_criteria: Option<&'a Value>,
    pub only_count_matured_users: bool,
    pub excluded_variants: &'a [String],
}

/// The fingerprint: 64 lower-case hex digits.
pub fn fingerprint(metric: &Map<String, Value>, settings: &Settings<'_>) -> String {
    let mut clean = metric.clone();
    for field in IDENTITY_FIELDS {
        clean.remove(*field);
    }
    if clean.get("breakdownFilter").is_some_and(has_no_breakdowns) {
        clean.remove("breakdownFilter");
    }
    let mut data = Map::new();
    data.insert("metric".into(), Value::Object(clean));
    data.insert(
        "start_date".into(),
        settings
            .start_date
            .map_or(Value::Null, |at| Value::String(python_isoformat(at))),
    );
    data.insert(
        "stats_method".into(),
        Value::String(settings.stats_method.unwrap_or("bayesian").to_owned()),
    );
    if let Some(criteria) = settings.exposure_criteria.filter(|c| is_truthy(c)) {
        data.insert("exposure_criteria".into(), criteria.clone());
    }
    if settings.only_count_matured_users {
        data.insert("only_count_matured_users".into(), Value::Bool(true));
    }
    if !settings.excluded_variants.is_empty() {
        let mut variants = settings.excluded_variants.to_vec();
        variants.sort();
        variants.dedup();
        data.insert("excluded_variants".into(), variants.into());
    }
    let text = dumps_sorted(&Value::Object(data));
    hex::encode(Sha256::digest(text.as_bytes()))
}

fn has_no_breakdowns(filter: &Value) -> bool {
    match filter.get("breakdowns") {
        None | Some(Value::Null) => true,
        Some(Value::Array(items)) => items.is_empty(),
        Some(_) => false,
    }
}

/// Python's truth value of a JSON document.
fn is_truthy(value: &Value) -> bool {
    match value {
        Value::Null => false,
        Value::Bool(flag) => *flag,
        Value::Number(number) => number.as_f64().is_some_and(|n| n != 0.0),
        Value::String(text) => !text.is_empty(),
        Value::Array(items) => !items.is_empty(),
        Value::Object(object) => !object.is_empty(),
    }
}

/// `datetime.astimezone(UTC).isoformat()`: seconds, microseconds only when there are any,
/// and `+00:00`.
fn python_isoformat(at: DateTime<Utc>) -> String {
    let format = if at.nanosecond() / 1000 == 0 {
        SecondsFormat::Secs
    } else {
        SecondsFormat::Micros
    };
    at.to_rfc3339_opts(format, false)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn metric(value: Value) -> Map<String, Value> {
        value.as_object().cloned().unwrap_or_default()
    }

    /// Expected hashes computed with CPython 3.11 from the reference's steps (a Python rendering
    /// of `compute_metric_fingerprint`, not PostHog's file itself), so the bytes hashed are
    /// Python's own `json.dumps(data, sort_keys=True, separators=(",", ":"))` and `isoformat()`.
    #[test]
    fn equals_python_for_non_ascii_names_and_float_bounds() {
        let mean = metric(json!({
            "kind": "ExperimentMetric",
            "uuid": "0b7e1f0e-1111-4c8e-9a57-000000000001",
            "name": "Umsatz pro Käufer — €",
            "metric_type": "mean",
            "source": {"kind": "EventsNode", "event": "kauf abgeschlossen ✓", "math": "sum",
                       "math_property": "betrag"},
            "lower_bound_percentile": 0.05,
            "upper_bound_percentile": 99.5,
            "ignore_zeros": false,
            "conversion_window": 14,
            "conversion_window_unit": "day",
            "breakdownFilter": {"breakdowns": []},
        }));
        let start = DateTime::parse_from_rfc3339("2026-03-01T12:30:00Z")
            .map(|at| at.with_timezone(&Utc))
            .ok();
        let criteria =
            json!({"filterTestAccounts": true, "multiple_variant_handling": "first_seen"});
        let excluded = vec![
            "test-2".to_owned(),
            "holdout".to_owned(),
            "test-2".to_owned(),
        ];
        let settings = Settings {
            start_date: start,
            stats_method: Some("frequentist"),
            exposure_criteria: Some(&criteria),
            only_count_matured_users: true,
            excluded_variants: &excluded,
        };
        assert_eq!(fingerprint(&mean, &settings), PYTHON_MEAN);
        // Only identity fields differ: same fingerprint.
        let mut renamed = mean.clone();
        renamed.insert("name".into(), json!("another name"));
        renamed.insert("uuid".into(), json!("another uuid"));
        assert_eq!(fingerprint(&renamed, &settings), PYTHON_MEAN);
        // A bound that changes results changes it.
        let mut bounded = mean.clone();
        bounded.insert("upper_bound_percentile".into(), json!(99.0));
        assert_ne!(fingerprint(&bounded, &settings), PYTHON_MEAN);

        let funnel = metric(json!({
            "kind": "ExperimentMetric",
            "metric_type": "funnel",
            "series": [{"kind": "EventsNode", "event": "$pageview"},
                       {"kind": "EventsNode", "event": "注文"}],
            "funnel_order_type": "ordered",
        }));
        let micros = DateTime::parse_from_rfc3339("2026-03-01T12:30:00.250Z")
            .map(|at| at.with_timezone(&Utc))
            .ok();
        let plain = Settings {
            start_date: micros,
            ..Settings::default()
        };
        assert_eq!(fingerprint(&funnel, &plain), PYTHON_FUNNEL);
        assert_eq!(
            fingerprint(&funnel, &Settings::default()),
            PYTHON_FUNNEL_NO_START
        );
    }

    const PYTHON_MEAN: &str = "d2504271aa3dda8e6f915ae6649ae1c140012697be1877a7624bd2423fbf3b75";
    const PYTHON_FUNNEL: &str = "7520bc8e5a971d2e090fb3839e505ce32bfb948e57d77beda649b3cb49c38e3b";
    const PYTHON_FUNNEL_NO_START: &str =
        "45256f9e852e805185ef9c57f656238a4450162bedffb2a347984903dd2e8f95";
}
