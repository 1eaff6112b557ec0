//! `parameters` (reference 2.2, 2.3 steps 2–5): the variants of the flag, its rollout and
//! aggregation. On input `split_percent` overrides `rollout_percentage` and a case-variant
//! `Control` becomes `control`; what is stored carries `rollout_percentage` only.

use std::collections::BTreeMap;

use common::error::ApiError;
use feature_flags::model::Variant;
use serde_json::{Map, Value};

use super::invalid;

/// The newest PostHog's cap: fewer than 21 variants.
const MAX_VARIANTS: usize = 21;

/// `parameters` as read and normalised.
#[derive(Debug, Clone, Default)]
pub struct Parameters {
    /// What is stored (`None` when the body had none).
    pub value: Option<Value>,
    /// `feature_flag_variants`, when given and not empty.
    pub variants: Option<Vec<Variant>>,
    /// The first release condition's rollout (default 100).
    pub rollout_percentage: Option<f64>,
    pub aggregation_group_type_index: Option<i64>,
    pub ensure_experience_continuity: Option<bool>,
    pub payloads: Option<BTreeMap<String, Value>>,
    pub excluded_variants: Vec<String>,
}

/// Reads and checks `parameters` in PostHog's order: variant shapes, percentages, count, control.
pub fn parameters(raw: Option<&Value>) -> Result<Parameters, ApiError> {
    let Some(raw) = raw.filter(|value| !value.is_null()) else {
        return Ok(Parameters::default());
    };
    let Some(object) = raw.as_object() else {
        return Err(invalid("parameters must be an object"));
    };
    let mut object = object.clone();
    let mut variants = None;
    match object.get_mut("feature_flag_variants") {
        None | Some(Value::Null) => {}
        Some(Value::Array(list)) => {
            normalise_variants(list)?;
            if !list.is_empty() {
                variants = Some(typed_variants(list)?);
            }
        }
        Some(_) => return Err(invalid("feature_flag_variants must be a list")),
    }
    let rollout_percentage = match object.get("rollout_percentage") {
        None | Some(Value::Null) => None,
        Some(value) => match value.as_f64() {
            Some(pct) if (0.0..=100.0).contains(&pct) => Some(pct),
            _ => {
                return Err(invalid(
                    "rollout_percentage must be a number between 0 and 100",
                ));
            }
        },
    };
    let aggregation_group_type_index = match object.get("aggregation_group_type_index") {
        None | Some(Value::Null) => None,
        Some(value) => Some(
            value
                .as_i64()
                .ok_or_else(|| invalid("aggregation_group_type_index must be an integer"))?,
        ),
    };
    let ensure_experience_continuity = object
        .get("ensure_experience_continuity")
        .and_then(Value::as_bool);
    let payloads = match object.get("feature_flag_payloads") {
        None | Some(Value::Null) => None,
        Some(Value::Object(payloads)) => Some(
            payloads
                .iter()
                .map(|(key, value)| (key.clone(), value.clone()))
                .collect(),
        ),
        Some(_) => return Err(invalid("feature_flag_payloads must be an object")),
    };
    let excluded_variants = match object.get("excluded_variants") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(items)) if items.iter().all(Value::is_string) => items
            .iter()
            .filter_map(|item| item.as_str().map(str::to_owned))
            .collect(),
        Some(_) => return Err(invalid("excluded_variants must be a list of strings")),
    };
    Ok(Parameters {
        value: Some(Value::Object(object)),
        variants,
        rollout_percentage,
        aggregation_group_type_index,
        ensure_experience_continuity,
        payloads,
        excluded_variants,
    })
}

/// Shapes, then percentages, then count and control, then the wire normalisation.
fn normalise_variants(list: &mut [Value]) -> Result<(), ApiError> {
    for (index, variant) in list.iter().enumerate() {
        let Some(variant) = variant.as_object() else {
            return Err(invalid(format!(
                "Feature flag variant at index {index} must be an object"
            )));
        };
        if !variant.contains_key("key") {
            return Err(invalid(format!(
                "Feature flag variant at index {index} must have a 'key' field"
            )));
        }
    }
    for variant in list.iter() {
        let has_percent = variant.as_object().is_some_and(|variant| {
            variant.contains_key("split_percent") || variant.contains_key("rollout_percentage")
        });
        if !has_percent {
            return Err(invalid(
                "Each variant must include split_percent (recommended) or rollout_percentage (deprecated).",
            ));
        }
    }
    for variant in list.iter_mut() {
        if let Some(variant) = variant.as_object_mut()
            && let Some(split) = variant.remove("split_percent")
        {
            variant.insert("rollout_percentage".into(), split);
        }
    }
    let key_of = |variant: &Value| variant.get("key").cloned().unwrap_or(Value::Null);
    let has_control = list.iter().any(|variant| key_of(variant) == "control");
    if !has_control {
        let capitalised = list.iter_mut().find(|variant| {
            key_of(variant)
                .as_str()
                .is_some_and(|key| key.eq_ignore_ascii_case("control"))
        });
        if let Some(Value::Object(variant)) = capitalised {
            variant.insert("key".into(), Value::String("control".into()));
        }
    }
    if list.len() >= MAX_VARIANTS {
        return Err(invalid("Feature flag variants must be less than 21"));
    }
    if !list.is_empty() {
        if list.len() < 2 {
            return Err(invalid(
                "Feature flag must have at least 2 variants (control and at least one test variant)",
            ));
        }
        if !list.iter().any(|variant| key_of(variant) == "control") {
            let keys: Vec<Value> = list.iter().map(key_of).collect();
            return Err(invalid(format!(
                "Feature flag variants must contain a variant with key 'control' (lowercase, exactly). Got keys: {}. Rename the baseline variant's 'key' to 'control'.",
                super::metrics::python_repr(&Value::Array(keys))
            )));
        }
    }
    Ok(())
}

fn typed_variants(list: &[Value]) -> Result<Vec<Variant>, ApiError> {
    list.iter()
        .enumerate()
        .map(|(index, variant)| {
            let mut variant: Map<String, Value> = variant.as_object().cloned().unwrap_or_default();
            // Fields the flag does not keep (descriptions, UI state) stay in `parameters` only.
            variant.retain(|key, _| matches!(key.as_str(), "key" | "name" | "rollout_percentage"));
            serde_json::from_value::<Variant>(Value::Object(variant)).map_err(|error| {
                invalid(format!(
                    "Feature flag variant at index {index} is invalid: {error}"
                ))
            })
        })
        .collect()
}

/// 2.3 step 5: excluded variants against the resolved variant keys.
pub fn excluded_variants(
    excluded: &[String],
    variant_keys: &[String],
    baseline: &str,
) -> Result<(), ApiError> {
    if excluded.is_empty() {
        return Ok(());
    }
    let sorted_repr = |mut keys: Vec<String>| {
        keys.sort();
        keys.dedup();
        super::metrics::python_repr(&Value::from(keys))
    };
    let holdouts: Vec<String> = excluded
        .iter()
        .filter(|key| key.starts_with("holdout-"))
        .cloned()
        .collect();
    if !holdouts.is_empty() {
        return Err(invalid(format!(
            "cannot exclude holdout pseudo-variants: {}",
            sorted_repr(holdouts)
        )));
    }
    if excluded.iter().any(|key| key == baseline) {
        return Err(invalid(format!(
            "baseline variant cannot be excluded ('{baseline}')"
        )));
    }
    let unknown: Vec<String> = excluded
        .iter()
        .filter(|key| !variant_keys.contains(key))
        .cloned()
        .collect();
    if !unknown.is_empty() {
        return Err(invalid(format!(
            "unknown variants for this experiment: {}",
            sorted_repr(unknown)
        )));
    }
    let remaining = variant_keys
        .iter()
        .filter(|key| !excluded.contains(key) && key.as_str() != baseline)
        .count();
    if remaining == 0 {
        return Err(invalid("at least one test variant must remain in analysis"));
    }
    Ok(())
}
