//! PostHog's create/update validation of an experiment (reference 2.3 and 2.4), each check with
//! PostHog's exact message. PostHog raises these from its service layer, so they carry no `attr`.

pub mod body;
mod metrics;
mod parameters;

use chrono::{DateTime, Utc};
use common::error::ApiError;
use serde_json::Value;

use crate::SavedMetricLink;
use crate::saved_metrics::SavedMetric;

pub use body::{Conclusion, ExperimentBody, Kind, Present};
pub(crate) use metrics::errors_repr;
pub use metrics::{fill_uuids, fingerprints, metrics, sync_ordering};
pub use parameters::{Parameters, excluded_variants, parameters};

/// A 400 without a field, as PostHog's service-level `ValidationError` answers.
pub fn invalid(detail: impl Into<String>) -> ApiError {
    ApiError::bad_request("invalid_input", detail)
}

/// 2.3 step 8.
pub fn dates(start: Option<DateTime<Utc>>, end: Option<DateTime<Utc>>) -> Result<(), ApiError> {
    match (start, end) {
        (Some(start), Some(end)) if start >= end => {
            Err(invalid("End date must be after start date"))
        }
        _ => Ok(()),
    }
}

/// 2.3 step 9: the method, and a baseline that names one of the variants.
pub fn stats_config(config: Option<&Value>, variant_keys: &[String]) -> Result<(), ApiError> {
    let Some(config) = config.filter(|config| !is_empty(config)) else {
        return Ok(());
    };
    let Some(object) = config.as_object() else {
        return Err(invalid("stats_config must be an object"));
    };
    match object.get("method") {
        None | Some(Value::Null) => {}
        Some(Value::String(method)) if method == "bayesian" || method == "frequentist" => {}
        Some(other) => {
            return Err(invalid(format!(
                "Invalid stats method: '{}'. Must be one of: bayesian, frequentist",
                text(other)
            )));
        }
    }
    if let Some(baseline) = object.get("baseline_variant_key").filter(|v| !v.is_null())
        && !variant_keys.is_empty()
        && !variant_keys
            .iter()
            .any(|key| Some(key.as_str()) == baseline.as_str())
    {
        let mut keys = variant_keys.to_vec();
        keys.sort();
        return Err(invalid(format!(
            "Invalid baseline_variant_key: '{}'. Must be one of: {}",
            text(baseline),
            keys.join(", ")
        )));
    }
    Ok(())
}

const EXPOSURE_CONFIG_HINT: &str = "Expected either an event-based config like {'kind': 'ExperimentEventExposureConfig', 'event': '<event_name>', 'properties': []} or an action-based config like {'kind': 'ActionsNode', 'id': <action_id>}.";

/// `exposure_criteria`: an object, a boolean `filterTestAccounts`, a known exposure kind.
pub fn exposure_criteria(criteria: Option<&Value>) -> Result<(), ApiError> {
    let Some(criteria) = criteria.filter(|value| !value.is_null()) else {
        return Ok(());
    };
    let Some(object) = criteria.as_object() else {
        return Err(invalid(format!(
            "exposure_criteria must be an object, got {}. Expected shape: {{'filterTestAccounts': <bool>, 'exposure_config': <object>}}.",
            python_type(criteria)
        )));
    };
    if let Some(filter) = object.get("filterTestAccounts")
        && !filter.is_boolean()
    {
        return Err(invalid(format!(
            "exposure_criteria.filterTestAccounts must be a boolean, got {}: {}.",
            python_type(filter),
            metrics::python_repr(filter)
        )));
    }
    if let Some(config) = object.get("exposure_config") {
        let Some(config) = config.as_object() else {
            return Err(invalid(format!(
                "exposure_criteria.exposure_config must be an object, got {}. {EXPOSURE_CONFIG_HINT}",
                python_type(config)
            )));
        };
        let kind = config
            .get("kind")
            .cloned()
            .unwrap_or_else(|| Value::String("ExperimentEventExposureConfig".into()));
        if kind != "ExperimentEventExposureConfig" && kind != "ActionsNode" {
            return Err(invalid(format!(
                "exposure_criteria.exposure_config.kind must be one of ['ExperimentEventExposureConfig', 'ActionsNode'], got {}. {EXPOSURE_CONFIG_HINT}",
                metrics::python_repr(&kind)
            )));
        }
    }
    Ok(())
}

/// 2.3 step 7: links to saved metrics, each `{id, metadata?: {type}}` naming a saved metric of
/// the project (`known`), each once. `None` when no list was given; new links have id 0 until
/// the repository numbers them.
pub fn saved_metrics_ids(
    ids: Option<&Vec<Value>>,
    known: &[SavedMetric],
    at: DateTime<Utc>,
) -> Result<Option<Vec<SavedMetricLink>>, ApiError> {
    let Some(ids) = ids else {
        return Ok(None);
    };
    for link in ids {
        let Some(link) = link.as_object() else {
            return Err(invalid("Saved metric must be an object"));
        };
        if !link.contains_key("id") {
            return Err(invalid("Saved metric must have an id"));
        }
        match link.get("metadata") {
            None => {}
            Some(Value::Object(metadata)) if metadata.contains_key("type") => {}
            Some(Value::Object(_)) => return Err(invalid("Metadata must have a type key")),
            Some(_) => return Err(invalid("Metadata must be an object")),
        }
    }
    // PostHog counts the project's saved metrics among the ids against the list's length, so
    // an unknown id and a repeated one are both refused.
    let mut links = Vec::with_capacity(ids.len());
    let mut seen = std::collections::HashSet::new();
    for link in ids {
        let id = link.get("id").and_then(Value::as_i64);
        let found = id.filter(|id| known.iter().any(|saved| saved.id == *id) && seen.insert(*id));
        let Some(saved_metric_id) = found else {
            return Err(invalid(
                "Saved metric does not exist or does not belong to this project",
            ));
        };
        links.push(SavedMetricLink {
            id: 0,
            saved_metric_id,
            metadata: link.get("metadata").cloned(),
            created_at: at,
        });
    }
    Ok(Some(links))
}

/// `filters` (legacy): global filter properties are refused.
pub fn filters(filters: Option<&Value>) -> Result<(), ApiError> {
    let has_properties = filters
        .and_then(|filters| filters.get("properties"))
        .is_some_and(|properties| !is_empty(properties));
    if has_properties {
        return Err(invalid(
            "Experiments do not support global filter properties",
        ));
    }
    Ok(())
}

/// Python's falsiness for the JSON kinds a check skips when empty.
pub(crate) fn is_empty(value: &Value) -> bool {
    match value {
        Value::Null => true,
        Value::Bool(flag) => !flag,
        Value::String(text) => text.is_empty(),
        Value::Array(items) => items.is_empty(),
        Value::Object(object) => object.is_empty(),
        Value::Number(number) => number.as_f64() == Some(0.0),
    }
}

fn text(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        other => other.to_string(),
    }
}

/// Python's `type(x).__name__` for a JSON value.
pub(crate) fn python_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "NoneType",
        Value::Bool(_) => "bool",
        Value::Number(number) if number.is_f64() => "float",
        Value::Number(_) => "int",
        Value::String(_) => "str",
        Value::Array(_) => "list",
        Value::Object(_) => "dict",
    }
}
