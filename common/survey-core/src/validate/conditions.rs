//! Conditions (reference 1.3): PostHog's `validate_conditions`, the `linkedFlagVariant` check
//! against the linked flag, and what an external survey (a hosted page, no SDK context) may not
//! use.

use common::error::ApiError;
use feature_flags::FeatureFlag;
use serde_json::Value;

use crate::{Survey, SurveyType};

/// Condition keys that only mean something inside an app that runs posthog-js.
const NOT_FOR_EXTERNAL: &[&str] = &[
    "url",
    "urlMatchType",
    "selector",
    "seenSurveyWaitPeriodInDays",
    "linkedFlagVariant",
    "deviceTypes",
    "deviceTypesMatchType",
];

pub fn conditions(value: Value) -> Result<Option<Value>, ApiError> {
    match value {
        Value::Null => Ok(None),
        Value::Object(_) => Ok(Some(value)),
        _ => Err(ApiError::validation(
            "conditions",
            "Conditions must be an object",
        )),
    }
}

/// `linkedFlagVariant` must name a variant of the linked flag (`any` is any of them).
/// `linked` is the flag `linked_flag_id` names, when it names a live one.
pub fn linked_flag_variant(survey: &Survey, linked: Option<&FeatureFlag>) -> Result<(), ApiError> {
    let Some(variant) = survey.linked_flag_variant().filter(|v| !v.is_empty()) else {
        return Ok(());
    };
    if survey.linked_flag_id.is_none() {
        return Err(ApiError::bad_request(
            "invalid_input",
            "linkedFlagVariant can only be used when a linked_flag_id is specified",
        ));
    }
    let Some(flag) = linked else {
        return Ok(()); // the flag is gone since: nothing to compare with
    };
    if variant == "any" {
        return Ok(());
    }
    let variants: Vec<&str> = flag.variant_keys().collect();
    if variants.contains(&variant) {
        return Ok(());
    }
    let detail = if variants.is_empty() {
        format!(
            "Feature flag variant '{variant}' specified but the linked feature flag has no variants"
        )
    } else {
        format!(
            "Feature flag variant '{variant}' does not exist. Available variants: {}",
            variants.join(", ")
        )
    };
    Err(ApiError::bad_request("invalid_input", detail))
}

/// An external survey's restrictions; PostHog answers all of them at once as a dict, the error
/// shape here holds one, so the first (in PostHog's order) is answered.
pub fn external(survey: &Survey, targeting_filters_sent: bool) -> Result<(), ApiError> {
    if survey.kind != SurveyType::ExternalSurvey {
        return Ok(());
    }
    let not_allowed = |field: &str| {
        ApiError::validation(
            field,
            format!("{field} is not allowed for external surveys"),
        )
    };
    if survey.linked_flag_id.is_some() {
        return Err(not_allowed("linked_flag_id"));
    }
    if targeting_filters_sent {
        return Err(not_allowed("targeting_flag_filters"));
    }
    if let Some(Value::Object(conditions)) = &survey.conditions {
        let mut fields: Vec<&str> = NOT_FOR_EXTERNAL
            .iter()
            .copied()
            .filter(|field| conditions.get(*field).is_some_and(|v| !v.is_null()))
            .collect();
        for field in ["actions", "events"] {
            let has_values = conditions
                .get(field)
                .and_then(|v| v.get("values"))
                .is_some_and(|values| match values {
                    Value::Array(a) => !a.is_empty(),
                    Value::Object(o) => !o.is_empty(),
                    Value::Null | Value::Bool(false) => false,
                    Value::String(s) => !s.is_empty(),
                    _ => true,
                });
            if has_values {
                fields.push(field);
            }
        }
        if !fields.is_empty() {
            return Err(ApiError::validation(
                "conditions",
                format!(
                    "The following condition fields are not allowed for external surveys: {}",
                    fields.join(", ")
                ),
            ));
        }
    }
    if survey
        .appearance
        .as_ref()
        .and_then(|a| a.get("surveyPopupDelaySeconds"))
        .is_some_and(|v| !v.is_null())
    {
        return Err(ApiError::validation(
            "appearance",
            "surveyPopupDelaySeconds is not allowed for external surveys",
        ));
    }
    Ok(())
}
