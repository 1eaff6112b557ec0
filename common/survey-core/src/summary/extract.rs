//! Reads one raw answer (JSON as the responses query returns it) as the kind of value a question
//! type expects. Anything unreadable is skipped, never an error: one odd event must not break a
//! summary.

use serde_json::Value;

/// The options picked in a choice answer, trimmed, empty ones and repeats dropped. Accepts a string,
/// an array, a JSON-encoded array (older SDKs sent multiple_choice that way), a number or a bool.
pub(crate) fn choices(value: &Value) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut push = |text: String| {
        if !text.is_empty() && !out.contains(&text) {
            out.push(text);
        }
    };
    match value {
        Value::Array(items) => items.iter().filter_map(scalar).for_each(&mut push),
        Value::String(s) => match encoded_array(s) {
            Some(items) => items.iter().filter_map(scalar).for_each(&mut push),
            None => push(s.trim().to_owned()),
        },
        other => {
            if let Some(text) = scalar(other) {
                push(text);
            }
        }
    }
    out
}

/// The text of an open answer, whitespace runs collapsed; `None` when empty.
pub(crate) fn open_text(value: &Value) -> Option<String> {
    let raw = match value {
        Value::Array(items) => items
            .iter()
            .filter_map(scalar)
            .collect::<Vec<_>>()
            .join(", "),
        other => scalar(other)?,
    };
    let text = super::text::collapse_whitespace(&raw);
    (!text.is_empty()).then_some(text)
}

/// A rating: a whole number, sent as a number or a numeric string. Fractions, non-finite values and
/// absurd magnitudes are not ratings.
pub(crate) fn rating(value: &Value) -> Option<i64> {
    let number = match value {
        Value::Number(n) => n.as_f64()?,
        Value::String(s) => s.trim().parse::<f64>().ok()?,
        _ => return None,
    };
    let sane = number.is_finite() && number.fract() == 0.0 && number.abs() <= 1e9;
    // In range and whole, so the cast is exact.
    sane.then_some(number as i64)
}

fn scalar(value: &Value) -> Option<String> {
    let text = match value {
        Value::String(s) => s.trim().to_owned(),
        Value::Number(n) => n.to_string(),
        Value::Bool(b) => b.to_string(),
        _ => return None,
    };
    (!text.is_empty()).then_some(text)
}

fn encoded_array(s: &str) -> Option<Vec<Value>> {
    let trimmed = s.trim();
    if !trimmed.starts_with('[') {
        return None;
    }
    serde_json::from_str(trimmed).ok()
}
