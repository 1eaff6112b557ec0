//! Recurrence (reference 1.1, 1.4): the iteration schedule PostHog's pre_save derives, and the
//! PATCH check that a running recurrence is not cut below the iteration it is in.

use chrono::TimeDelta;
use common::error::ApiError;

use super::fields::MAX_ITERATION_COUNT;
use crate::Survey;

/// PostHog's `update_survey_iterations`: without a count and a frequency there is no schedule;
/// without a start date it is not known yet; else one start every `frequency` days from the
/// start date (at most 500), and a first iteration.
pub fn derive(survey: &mut Survey) {
    let (count, frequency) = match (survey.iteration_count, survey.iteration_frequency_days) {
        (Some(count), Some(frequency)) if count != 0 && frequency != 0 => (count, frequency),
        _ => {
            survey.iteration_start_dates = Some(Vec::new());
            survey.current_iteration = None;
            survey.current_iteration_start_date = None;
            return;
        }
    };
    let Some(start) = survey.start_date else {
        survey.iteration_start_dates = None;
        return;
    };
    let mut dates = Vec::new();
    for index in 0..count.clamp(0, MAX_ITERATION_COUNT) {
        // Dates past chrono's range end the schedule (PostHog's rrule would fail there).
        let Some(date) = index
            .checked_mul(frequency)
            .and_then(TimeDelta::try_days)
            .and_then(|offset| start.checked_add_signed(offset))
        else {
            break;
        };
        dates.push(date);
    }
    survey.iteration_start_dates = Some(dates);
    if count > 0 && survey.current_iteration.unwrap_or(0) == 0 {
        survey.current_iteration = Some(1);
        survey.current_iteration_start_date = Some(start);
    }
}

/// A PATCH may not set a count below the iteration the survey is already in.
pub fn recurrence(before: &Survey, count: Option<i64>) -> Result<(), ApiError> {
    if let (Some(current), Some(count)) = (before.current_iteration, count)
        && current > count
        && count > 0
    {
        return Err(ApiError::bad_request(
            "invalid_input",
            format!("Cannot change survey recurrence to {count}, should be at least {current}"),
        ));
    }
    Ok(())
}
