//! A survey's (or several surveys') funnel of events (reference 1.8): how many times and by how
//! many persons it was shown, dismissed and answered, the only-seen remainders and the rates.
//!
//! Query 1 counts per event over `survey shown` and `survey dismissed` as they are and the
//! deduplicated submissions for `survey sent`; query 2 counts the persons who both dismissed
//! and answered, who are taken out of the dismissed persons (they answered after all).

use chrono::{DateTime, Utc};
use serde_json::{Map, Value, json};
use survey_core::Survey;
use uuid::Uuid;

use super::{
    DISMISSED, Params, SENT, SHOWN, SurveyQuery, Window, cell, cell_count, cell_time,
    deduplicated_sent, event_conditions, iso, where_not_archived,
};
use crate::Table;

/// The two queries of [`assemble`], in order.
#[derive(Debug, Clone, PartialEq)]
pub struct StatsQueries {
    /// `kind, total, persons, first_at, last_at`: one row per event that occurred.
    pub events: SurveyQuery,
    /// `persons`: one row, how many persons both dismissed and answered.
    pub dismissed_and_sent: SurveyQuery,
}

/// One row per event of interest: `kind, person, at`, `survey sent` deduplicated (its
/// representative's person and time) and archived submissions dropped.
fn activity(params: &mut Params, surveys: &[Uuid], window: &Window, archived: &[Uuid]) -> String {
    let seen = event_conditions(params, &[SHOWN, DISMISSED], Some(surveys), window).join(" AND ");
    let sent = deduplicated_sent(params, Some(surveys), window);
    let sent_kind = params.bind(SENT);
    let kept = where_not_archived(params, "rep_uuid", archived);
    format!(
        "SELECT event AS kind, person_id AS person, timestamp AS at FROM events WHERE {seen} \
         UNION ALL \
         SELECT {sent_kind} AS kind, rep_person AS person, sent_at AS at FROM ({sent}){kept}"
    )
}

/// The queries over `surveys` (one survey's stats, or the global stats over many) in `window`,
/// leaving out the submissions whose representative uuid is in `archived`.
pub fn queries(surveys: &[Uuid], window: &Window, archived: &[Uuid]) -> StatsQueries {
    let mut params = Params::default();
    let rows = activity(&mut params, surveys, window, archived);
    let events = params.finish(format!(
        "SELECT kind, count() AS total, count(DISTINCT person) AS persons, \
         min(at) AS first_at, max(at) AS last_at \
         FROM ({rows}) GROUP BY kind ORDER BY kind LIMIT 10"
    ));
    let mut params = Params::default();
    let rows = activity(&mut params, surveys, window, archived);
    let dismissed = params.bind(DISMISSED);
    let sent = params.bind(SENT);
    let dismissed_and_sent = params.finish(format!(
        "SELECT count() AS persons FROM (\
         SELECT person FROM ({rows}) WHERE isNotNull(person) GROUP BY person \
         HAVING countIf(kind = {dismissed}) > 0 AND countIf(kind = {sent}) > 0\
         ) LIMIT 1"
    ));
    StatsQueries {
        events,
        dismissed_and_sent,
    }
}

/// One event's counts, as PostHog answers them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct EventStats {
    pub total_count: u64,
    pub unique_persons: u64,
    pub first_seen: Option<DateTime<Utc>>,
    pub last_seen: Option<DateTime<Utc>>,
    pub unique_persons_only_seen: u64,
    pub total_count_only_seen: u64,
}

impl EventStats {
    pub fn to_json(&self) -> Value {
        json!({
            "total_count": self.total_count,
            "unique_persons": self.unique_persons,
            "first_seen": self.first_seen.map(iso),
            "last_seen": self.last_seen.map(iso),
            "unique_persons_only_seen": self.unique_persons_only_seen,
            "total_count_only_seen": self.total_count_only_seen,
        })
    }
}

/// Percentages rounded to two decimals; all 0.0 when the survey was never shown.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Rates {
    pub response_rate: f64,
    pub dismissal_rate: f64,
    pub unique_users_response_rate: f64,
    pub unique_users_dismissal_rate: f64,
}

impl Rates {
    pub fn to_json(&self) -> Value {
        json!({
            "response_rate": self.response_rate,
            "dismissal_rate": self.dismissal_rate,
            "unique_users_response_rate": self.unique_users_response_rate,
            "unique_users_dismissal_rate": self.unique_users_dismissal_rate,
        })
    }
}

#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Stats {
    pub shown: EventStats,
    pub dismissed: EventStats,
    pub sent: EventStats,
    pub rates: Rates,
}

/// `part / whole` in percent, rounded to 2 decimals half to even (Python's `round`).
pub fn rate(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        return 0.0;
    }
    (part as f64 / whole as f64 * 100.0 * 100.0).round_ties_even() / 100.0
}

/// Stats from the answers of [`queries`]: `events` (query 1) and `dismissed_and_sent` (query 2).
pub fn assemble(events: &Table, dismissed_and_sent: &Table) -> Stats {
    let mut stats = Stats::default();
    for row in &events.rows {
        let target = match cell(row, 0).as_str() {
            Some(SHOWN) => &mut stats.shown,
            Some(DISMISSED) => &mut stats.dismissed,
            Some(SENT) => &mut stats.sent,
            _ => continue,
        };
        *target = EventStats {
            total_count: cell_count(cell(row, 1)),
            unique_persons: cell_count(cell(row, 2)),
            first_seen: cell_time(cell(row, 3)),
            last_seen: cell_time(cell(row, 4)),
            ..EventStats::default()
        };
    }
    let both = dismissed_and_sent
        .rows
        .first()
        .map_or(0, |row| cell_count(cell(row, 0)));
    adjust(&mut stats, both);
    stats
}

/// The adjustments and rates of reference 1.8, given how many persons dismissed and answered.
pub fn adjust(stats: &mut Stats, dismissed_and_sent: u64) {
    stats.dismissed.unique_persons = stats
        .dismissed
        .unique_persons
        .saturating_sub(dismissed_and_sent);
    stats.shown.unique_persons_only_seen = stats
        .shown
        .unique_persons
        .saturating_sub(stats.dismissed.unique_persons)
        .saturating_sub(stats.sent.unique_persons);
    stats.shown.total_count_only_seen = stats
        .shown
        .total_count
        .saturating_sub(stats.dismissed.total_count)
        .saturating_sub(stats.sent.total_count);
    stats.rates = match stats.shown.total_count {
        0 => Rates::default(),
        shown => Rates {
            response_rate: rate(stats.sent.total_count, shown),
            dismissal_rate: rate(stats.dismissed.total_count, shown),
            unique_users_response_rate: rate(stats.sent.unique_persons, stats.shown.unique_persons),
            unique_users_dismissal_rate: rate(
                stats.dismissed.unique_persons,
                stats.shown.unique_persons,
            ),
        },
    };
}

impl Stats {
    /// `{"stats": {...per event...}, "rates": {...}}`: the global answer.
    pub fn to_json(&self) -> Value {
        let mut events = Map::new();
        for (name, event) in [
            (SHOWN, &self.shown),
            (DISMISSED, &self.dismissed),
            (SENT, &self.sent),
        ] {
            events.insert(name.into(), event.to_json());
        }
        json!({"stats": events, "rates": self.rates.to_json()})
    }

    /// One survey's answer: [`Stats::to_json`] with `survey_id`, the survey's `start_date`
    /// and `end_date`, and `per_question_stats` when asked for.
    pub fn survey_json(&self, survey: &Survey, per_question: Option<Value>) -> Value {
        let mut body = self.to_json();
        if let Value::Object(fields) = &mut body {
            fields.insert("survey_id".into(), json!(survey.id.to_string()));
            fields.insert("start_date".into(), json!(survey.start_date.map(iso)));
            fields.insert("end_date".into(), json!(survey.end_date.map(iso)));
            if let Some(per_question) = per_question {
                fields.insert("per_question_stats".into(), per_question);
            }
        }
        body
    }
}

/// The global answer when the project has no survey to count.
pub fn empty_json() -> Value {
    json!({"stats": {}, "rates": Rates::default().to_json()})
}
