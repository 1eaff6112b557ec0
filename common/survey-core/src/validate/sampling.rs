//! Response sampling (reference 1.1, 1.4): the write checks, and the daily limits PostHog's
//! pre_save derives, a cumulative schedule stored as a JSON *string*.

use chrono::{DateTime, Duration, Timelike, Utc};
use common::error::ApiError;

use crate::Survey;

/// Python's `datetime.isoformat(sep)` of a UTC time: `+00:00`, microseconds only when set.
pub fn python_datetime(at: DateTime<Utc>, sep: char) -> String {
    let micros = at.nanosecond() / 1_000;
    let base = format!("{}{sep}{}", at.format("%Y-%m-%d"), at.format("%H:%M:%S"));
    if micros == 0 {
        format!("{base}+00:00")
    } else {
        format!("{base}.{micros:06}+00:00")
    }
}

/// Our bound, not PostHog's: the schedule has one entry a day, and an interval of millions of
/// days would be a schedule nobody can store.
pub const MAX_DAYS: i64 = 3_660;

/// The interval in days, when the type and interval say one.
fn total_days(survey: &Survey) -> Option<i64> {
    let days_per = match survey.response_sampling_interval_type.as_deref()? {
        "day" => 1,
        "week" => 7,
        "month" => 30,
        _ => return None,
    };
    survey
        .response_sampling_interval
        .filter(|i| *i > 0)?
        .checked_mul(days_per)
}

/// The sent start date is today (UTC) or later.
pub fn start_date(start: DateTime<Utc>, now: DateTime<Utc>) -> Result<(), ApiError> {
    let today = now.date_naive().and_hms_opt(0, 0, 0).map(|t| t.and_utc());
    let Some(today) = today else {
        return Ok(());
    };
    if start < today {
        return Err(ApiError::validation(
            "response_sampling_start_date",
            format!(
                "Response sampling start date must be today or a future date in UTC. Got {} when current time is {}",
                python_datetime(start, ' '),
                python_datetime(today, ' ')
            ),
        ));
    }
    Ok(())
}

/// Interval above 0; a positive limit over a positive interval needs a start date.
pub fn settings(survey: &Survey) -> Result<(), ApiError> {
    if let Some(interval) = survey.response_sampling_interval
        && interval <= 0
    {
        return Err(ApiError::validation(
            "response_sampling_interval",
            "Response sampling interval must be greater than 0.",
        ));
    }
    if total_days(survey).is_some_and(|days| days > MAX_DAYS) {
        return Err(ApiError::validation(
            "response_sampling_interval",
            format!("Response sampling interval must be at most {MAX_DAYS} days."),
        ));
    }
    let limit = survey.response_sampling_limit.unwrap_or(0);
    let interval = survey.response_sampling_interval.unwrap_or(0);
    if limit > 0 && interval > 0 && survey.response_sampling_start_date.is_none() {
        return Err(ApiError::validation(
            "response_sampling_start_date",
            "Response sampling start date should be set if response_sampling_start_date is not zero.",
        ));
    }
    Ok(())
}

/// PostHog's `update_response_sampling_limits`: one entry a day over the interval, the limit
/// spread evenly (the remainder on the first days) and cumulated, the rollout rising to 100.
/// Settings it could not use (no type, limit or start, a zero interval) give no limits.
pub fn daily_limits(survey: &Survey) -> Option<String> {
    let limit = survey.response_sampling_limit.filter(|l| *l > 0)?;
    let start = survey.response_sampling_start_date?;
    let total_days = total_days(survey).filter(|days| *days <= MAX_DAYS)?;
    let per_day = limit / total_days;
    let remainder = limit % total_days;
    let increment = 100.0 / total_days as f64;
    let mut entries = Vec::new();
    let mut cumulative = 0i64;
    let mut rollout = increment;
    for day in 0..total_days {
        cumulative += per_day + i64::from(day < remainder);
        let date = start.checked_add_signed(Duration::try_days(day)?)?;
        let shown = if day == total_days - 1 {
            100.0
        } else {
            (rollout * 100.0).round() / 100.0
        };
        // json.dumps' default separators, so the stored text is PostHog's byte for byte.
        entries.push(format!(
            "{{\"date\": \"{}\", \"daily_response_limit\": {cumulative}, \"rollout_percentage\": {}}}",
            python_datetime(date, 'T'),
            python_float(shown)
        ));
        rollout += increment;
    }
    Some(format!("[{}]", entries.join(", ")))
}

/// Python's repr of a float: always a decimal point.
fn python_float(value: f64) -> String {
    let text = value.to_string();
    if text.contains('.') || text.contains('e') {
        text
    } else {
        format!("{text}.0")
    }
}
