//! PostHog's `validate_appearance` (reference 1.3). The thank-you and intro texts go through the
//! HTML allow-list when they hold markup (see `crate::html`).

use common::error::ApiError;
use serde_json::Value;

use crate::html;

const ATTR: &str = "appearance";

pub fn appearance(mut value: Value) -> Result<Option<Value>, ApiError> {
    let map = match &mut value {
        Value::Null => return Ok(None),
        Value::Object(map) => map,
        _ => return Err(ApiError::validation(ATTR, "Appearance must be an object")),
    };
    html::clean_fields(map, html::APPEARANCE_FIELDS);
    let map = &*map;
    if let Some(kind) = map
        .get("thankYouMessageDescriptionContentType")
        .filter(|v| !is_falsy(v))
        && !matches!(kind.as_str(), Some("text" | "html"))
    {
        return Err(ApiError::validation(
            ATTR,
            "thankYouMessageDescriptionContentType must be one of ['text', 'html']",
        ));
    }
    if let Some(delay) = map.get("surveyPopupDelaySeconds").filter(|v| !is_falsy(v)) {
        // PostHog compares with `< 0`; a non-number would be its 500, here the same 400.
        if !delay.as_f64().is_some_and(|d| d >= 0.0) {
            return Err(ApiError::validation(
                ATTR,
                "Survey popup delay seconds must be a positive integer",
            ));
        }
    }
    match map.get("whiteLabel") {
        None | Some(Value::Null | Value::Bool(false)) => {}
        Some(Value::Bool(true)) => {
            // White labelling is an organization feature this product does not sell.
            return Err(ApiError::validation(
                ATTR,
                "You need to upgrade to PostHog Enterprise to use white labelling",
            ));
        }
        Some(_) => return Err(ApiError::validation(ATTR, "whiteLabel must be a boolean")),
    }
    Ok(Some(value))
}

/// Python's falsiness for the values PostHog tests with `if value:`.
fn is_falsy(value: &Value) -> bool {
    match value {
        Value::Null => true,
        Value::Bool(b) => !b,
        Value::Number(n) => n.as_f64() == Some(0.0),
        Value::String(s) => s.is_empty(),
        Value::Array(a) => a.is_empty(),
        Value::Object(o) => o.is_empty(),
    }
}

/// Whether the appearance shuffles questions (for the branching conflict).
pub fn shuffles_questions(appearance: Option<&Value>) -> bool {
    appearance
        .and_then(|a| a.get("shuffleQuestions"))
        .is_some_and(|v| !is_falsy(v))
}
