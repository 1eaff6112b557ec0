//! `GET /experiments/stats` (reference 2.7): launches and completions over the last 30 days,
//! counted by calendar day in the project's time zone.

use chrono::{DateTime, Duration, NaiveDate, Utc};
use chrono_tz::Tz;
use serde::Serialize;

use crate::Experiment;

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Velocity {
    pub launched_last_30d: usize,
    pub launched_previous_30d: usize,
    pub percent_change: f64,
    pub active_experiments: usize,
    pub completed_last_30d: usize,
}

/// Counts over experiments that are neither deleted nor archived. An unknown time zone name
/// counts in UTC.
pub fn velocity(experiments: &[Experiment], timezone: &str, now: DateTime<Utc>) -> Velocity {
    let tz: Tz = timezone.parse().unwrap_or(Tz::UTC);
    let day = |at: DateTime<Utc>| -> NaiveDate { at.with_timezone(&tz).date_naive() };
    let today = day(now);
    let in_range = |at: Option<DateTime<Utc>>, from: i64, to: i64| {
        at.is_some_and(|at| {
            let date = day(at);
            date >= today - Duration::days(from) && date < today + Duration::days(to)
        })
    };
    let shown: Vec<&Experiment> = experiments
        .iter()
        .filter(|experiment| !experiment.deleted && !experiment.archived)
        .collect();
    let launched_last_30d = shown
        .iter()
        .filter(|e| in_range(e.start_date, 30, 1))
        .count();
    let launched_previous_30d = shown
        .iter()
        .filter(|e| in_range(e.start_date, 60, -30))
        .count();
    let percent_change = if launched_previous_30d == 0 {
        if launched_last_30d > 0 { 100.0 } else { 0.0 }
    } else {
        let change = (launched_last_30d as f64 - launched_previous_30d as f64)
            / launched_previous_30d as f64
            * 100.0;
        (change * 10.0).round() / 10.0
    };
    Velocity {
        launched_last_30d,
        launched_previous_30d,
        percent_change,
        active_experiments: shown
            .iter()
            .filter(|e| e.start_date.is_some() && e.end_date.is_none())
            .count(),
        completed_last_30d: shown.iter().filter(|e| in_range(e.end_date, 30, 1)).count(),
    }
}
