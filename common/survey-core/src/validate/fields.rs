//! DRF's per-field checks with its messages: null, blank, length, choices, integer bounds.

use common::error::ApiError;

use super::body::Field;
use crate::SurveyType;

pub const MAX_NAME_CHARS: usize = 400;
pub const MAX_LANGUAGE_CHARS: usize = 20;
/// PostHog's `MAX_ITERATION_COUNT`: a huge count once hurt its scheduler.
pub const MAX_ITERATION_COUNT: i64 = 500;
/// PositiveIntegerField's upper bound (a Postgres integer).
pub const MAX_POSITIVE: i64 = 2_147_483_647;

pub fn null(attr: &str) -> ApiError {
    ApiError::field(attr, "null", "This field may not be null.")
}

/// A field that may be absent but not `null`.
pub fn not_null<T>(attr: &str, field: Field<T>) -> Result<Option<T>, ApiError> {
    match field {
        None => Ok(None),
        Some(None) => Err(null(attr)),
        Some(Some(value)) => Ok(Some(value)),
    }
}

/// A CharField without `allow_blank`, with `max_length`.
pub fn text(attr: &str, value: String, max: usize) -> Result<String, ApiError> {
    if value.trim().is_empty() {
        return Err(ApiError::field(
            attr,
            "blank",
            "This field may not be blank.",
        ));
    }
    if value.chars().count() > max {
        return Err(ApiError::field(
            attr,
            "max_length",
            format!("Ensure this field has no more than {max} characters."),
        ));
    }
    Ok(value)
}

pub fn survey_type(value: &str) -> Result<SurveyType, ApiError> {
    match value {
        "popover" => Ok(SurveyType::Popover),
        "widget" => Ok(SurveyType::Widget),
        "external_survey" => Ok(SurveyType::ExternalSurvey),
        "api" => Ok(SurveyType::Api),
        other => Err(invalid_choice("type", other)),
    }
}

pub fn invalid_choice(attr: &str, value: &str) -> ApiError {
    ApiError::field(
        attr,
        "invalid_choice",
        format!("\"{value}\" is not a valid choice."),
    )
}

/// An IntegerField with `min_value` and `max_value`.
pub fn bounded(attr: &str, value: i64, min: i64, max: i64) -> Result<i64, ApiError> {
    if value < min {
        return Err(ApiError::field(
            attr,
            "min_value",
            format!("Ensure this value is greater than or equal to {min}."),
        ));
    }
    if value > max {
        return Err(ApiError::field(
            attr,
            "max_value",
            format!("Ensure this value is less than or equal to {max}."),
        ));
    }
    Ok(value)
}

/// A nullable PositiveIntegerField.
pub fn positive(attr: &str, field: Option<i64>) -> Result<Option<i64>, ApiError> {
    field.map(|v| bounded(attr, v, 0, MAX_POSITIVE)).transpose()
}

/// `schedule`: PostHog's `validate_schedule`.
pub fn schedule(value: Option<String>) -> Result<Option<String>, ApiError> {
    match value.as_deref() {
        None | Some("once" | "recurring" | "always") => Ok(value),
        Some(_) => Err(ApiError::validation(
            "schedule",
            "Schedule must be one of: once, recurring, always",
        )),
    }
}

/// `response_sampling_interval_type`: a blank choice is kept as no choice (PostHog's pre_save
/// could not use it either).
pub fn interval_type(value: Option<String>) -> Result<Option<String>, ApiError> {
    match value.as_deref() {
        None | Some("") => Ok(None),
        Some("day" | "week" | "month") => Ok(value),
        Some(other) => Err(invalid_choice("response_sampling_interval_type", other)),
    }
}
