//! Metrics (reference 2.3 steps 1 and 6, 2.6): uuids filled in, each metric checked by the
//! typed model of `insights`, fingerprints, and the ordering arrays kept in step.

use std::collections::HashSet;

use common::error::ApiError;
use insights::experiments::fingerprint::{Settings, fingerprint};
use insights::experiments::metric::{self, MetricError};
use insights::experiments::python_json::float_repr;
use serde_json::Value;
use uuid::Uuid;

use super::invalid;
use crate::Experiment;

/// PostHog reports at most this many pydantic errors of one metric.
const MAX_REPORTED_ERRORS: usize = 15;

/// 2.3 step 1: every metric gets a `uuid`; a duplicate (across both lists) gets a new one.
pub fn fill_uuids(lists: [&mut Vec<Value>; 2]) {
    let mut seen = HashSet::new();
    for list in lists {
        for metric in list.iter_mut() {
            let Some(metric) = metric.as_object_mut() else {
                continue;
            };
            let current = metric
                .get("uuid")
                .and_then(Value::as_str)
                .filter(|uuid| !uuid.is_empty())
                .map(str::to_owned);
            match current {
                Some(uuid) if seen.insert(uuid.clone()) => {}
                _ => {
                    let fresh = Uuid::new_v4().to_string();
                    seen.insert(fresh.clone());
                    metric.insert("uuid".into(), Value::String(fresh));
                }
            }
        }
    }
}

/// 2.3 step 6: each metric an `ExperimentMetric` the typed model accepts.
pub fn metrics(list: &[Value]) -> Result<(), ApiError> {
    for (index, metric) in list.iter().enumerate() {
        let Some(object) = metric.as_object() else {
            return Err(invalid(format!(
                "Invalid metric at index {index}: must be a dict"
            )));
        };
        let kind = object.get("kind").and_then(Value::as_str);
        if let Some(kind @ ("ExperimentTrendsQuery" | "ExperimentFunnelsQuery")) = kind {
            return Err(invalid(format!(
                "Invalid metric at index {index}: legacy metric kind '{kind}' is no longer supported for new experiments. Use 'ExperimentMetric' instead."
            )));
        }
        if kind != Some("ExperimentMetric") {
            return Err(invalid(format!(
                "Invalid metric at index {index}: metric kind must be 'ExperimentMetric'"
            )));
        }
        let is_empty_funnel = object.get("metric_type").and_then(Value::as_str) == Some("funnel")
            && object
                .get("series")
                .and_then(Value::as_array)
                .is_none_or(Vec::is_empty);
        if is_empty_funnel {
            return Err(invalid(format!(
                "Invalid metric at index {index}: funnel metrics require at least one step. The experiment exposure event is added as the initial step automatically."
            )));
        }
        // After the empty-funnel check: PostHog's own message wins over the model's `too_short`.
        if let Err(errors) = metric::parse(metric) {
            return Err(invalid(format!(
                "Invalid metric at index {index}: {}.",
                errors_repr(&errors)
            )));
        }
    }
    Ok(())
}

/// Python's `repr` of pydantic's `[{loc, type, msg}]`, capped as PostHog caps it.
pub(crate) fn errors_repr(errors: &[MetricError]) -> String {
    let mut parts: Vec<String> = errors
        .iter()
        .take(MAX_REPORTED_ERRORS)
        .map(|error| {
            let loc: Vec<String> = error.loc.iter().map(python_repr).collect();
            let loc = match loc.len() {
                1 => format!("({},)", loc[0]),
                _ => format!("({})", loc.join(", ")),
            };
            format!(
                "{{'loc': {loc}, 'type': {}, 'msg': {}}}",
                py_str(&error.kind),
                py_str(&error.msg)
            )
        })
        .collect();
    if errors.len() > MAX_REPORTED_ERRORS {
        parts.push(format!(
            "{{'truncated': '...{} more'}}",
            errors.len() - MAX_REPORTED_ERRORS
        ));
    }
    format!("[{}]", parts.join(", "))
}

/// Each metric's `fingerprint` from the experiment's current settings (2.6).
pub fn fingerprints(experiment: &mut Experiment) {
    let stats_method = experiment
        .stats_config
        .as_ref()
        .and_then(|config| config.get("method"))
        .and_then(Value::as_str)
        .map(str::to_owned);
    let excluded: Vec<String> = experiment
        .parameters
        .as_ref()
        .and_then(|parameters| parameters.get("excluded_variants"))
        .and_then(Value::as_array)
        .map(|items| {
            items
                .iter()
                .filter_map(|item| item.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default();
    let exposure_criteria = experiment.exposure_criteria.clone();
    let settings = Settings {
        start_date: experiment.start_date,
        stats_method: stats_method.as_deref(),
        exposure_criteria: exposure_criteria.as_ref(),
        only_count_matured_users: experiment.only_count_matured_users,
        excluded_variants: &excluded,
    };
    for metric in experiment
        .metrics
        .iter_mut()
        .chain(experiment.metrics_secondary.iter_mut())
    {
        if let Some(object) = metric.as_object_mut() {
            let print = fingerprint(object, &settings);
            object.insert("fingerprint".into(), Value::String(print));
        }
    }
}

/// The ordering arrays: a uuid the client's array lacks is an error when the client sent the
/// array (`explicit`), else appended; uuids of removed metrics are dropped.
pub fn sync_ordering(
    experiment: &mut Experiment,
    explicit_primary: bool,
    explicit_secondary: bool,
) -> Result<(), ApiError> {
    let uuids = |list: &[Value]| -> Vec<String> {
        list.iter()
            .filter_map(|metric| metric.get("uuid").and_then(Value::as_str))
            .map(str::to_owned)
            .collect()
    };
    let primary = uuids(&experiment.metrics);
    let secondary = uuids(&experiment.metrics_secondary);
    experiment.primary_metrics_ordered_uuids = Some(sync_one(
        experiment.primary_metrics_ordered_uuids.take(),
        &primary,
        explicit_primary,
        "primary_metrics_ordered_uuids",
    )?);
    experiment.secondary_metrics_ordered_uuids = Some(sync_one(
        experiment.secondary_metrics_ordered_uuids.take(),
        &secondary,
        explicit_secondary,
        "secondary_metrics_ordered_uuids",
    )?);
    Ok(())
}

fn sync_one(
    ordering: Option<Vec<String>>,
    uuids: &[String],
    explicit: bool,
    field: &str,
) -> Result<Vec<String>, ApiError> {
    let mut ordering = ordering.unwrap_or_default();
    let missing: Vec<String> = uuids
        .iter()
        .filter(|uuid| !ordering.contains(uuid))
        .cloned()
        .collect();
    if explicit && !missing.is_empty() {
        return Err(invalid(format!(
            "{field} is missing UUIDs: {}",
            python_repr(&Value::from(missing))
        )));
    }
    ordering.retain(|uuid| uuids.contains(uuid));
    ordering.extend(missing);
    Ok(ordering)
}

/// Python's `repr` of a JSON value (messages quote lists the way PostHog's f-strings do).
pub fn python_repr(value: &Value) -> String {
    match value {
        Value::Null => "None".into(),
        Value::Bool(true) => "True".into(),
        Value::Bool(false) => "False".into(),
        Value::Number(number) => match (number.as_i64(), number.as_f64()) {
            (Some(int), _) => int.to_string(),
            (None, Some(float)) if number.is_f64() => float_repr(float),
            _ => number.to_string(),
        },
        Value::String(text) => py_str(text),
        Value::Array(items) => format!(
            "[{}]",
            items.iter().map(python_repr).collect::<Vec<_>>().join(", ")
        ),
        Value::Object(object) => format!(
            "{{{}}}",
            object
                .iter()
                .map(|(key, value)| format!("{}: {}", py_str(key), python_repr(value)))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

/// Python's `repr` of a string: single quotes unless the text has one and no double quote.
fn py_str(text: &str) -> String {
    let quote = if text.contains('\'') && !text.contains('"') {
        '"'
    } else {
        '\''
    };
    let mut out = String::with_capacity(text.len() + 2);
    out.push(quote);
    for ch in text.chars() {
        match ch {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c == quote => {
                out.push('\\');
                out.push(c);
            }
            c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                out.push_str(&format!("\\x{:02x}", c as u32));
            }
            c => out.push(c),
        }
    }
    out.push(quote);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn python_repr_matches_python() {
        assert_eq!(
            python_repr(&json!(["Control", "b", 1, 1.5, null, true])),
            "['Control', 'b', 1, 1.5, None, True]"
        );
        assert_eq!(python_repr(&json!("it's")), "\"it's\"");
    }

    #[test]
    fn duplicate_uuids_are_regenerated() {
        let mut primary = vec![json!({"uuid": "a"}), json!({"uuid": "a"}), json!({})];
        let mut secondary = vec![json!({"uuid": "a"})];
        fill_uuids([&mut primary, &mut secondary]);
        let all: HashSet<&str> = primary
            .iter()
            .chain(&secondary)
            .filter_map(|m| m["uuid"].as_str())
            .collect();
        assert_eq!(all.len(), 4);
        assert_eq!(primary[0]["uuid"], "a");
    }
}
