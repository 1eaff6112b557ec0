//! Surveys' queries over events (reference 1.7–1.10): the dialect texts and the assembly of
//! their rows into PostHog's shapes. Nothing here runs a query: the query service runs each
//! [`SurveyQuery`] (text plus its `{name}` values) and hands the rows back.
//!
//! - [`stats`]: shown / dismissed / sent per event, the only-seen adjustments and the rates;
//! - [`questions`]: per-question response counts, distributions and averages;
//! - [`count`]: deduplicated responses per survey (`responses_count`);
//! - [`responses`]: one row per submission with its merged answers (`responses`).
//!
//! Every user-given value (survey ids, dates, question ids, archived uuids, scores, limits) is a
//! `{placeholder}` bound by the engine as a literal; the text only ever holds our own names.
//!
//! A submission (reference 1.7) is every `survey sent` of one survey with the same
//! `$survey_submission_id`, or one event alone when it has none; its latest event represents it
//! (its uuid is what the archive stores, its person and time are the submission's), and each
//! question's answer is the latest non-null one over its events.

pub mod count;
pub mod questions;
pub mod responses;
pub mod stats;
#[cfg(test)]
mod tests;

use chrono::{DateTime, SecondsFormat, Utc};
use serde_json::{Map, Value};
use uuid::Uuid;

pub const SHOWN: &str = "survey shown";
pub const DISMISSED: &str = "survey dismissed";
pub const SENT: &str = "survey sent";

/// Rows a query that returns one row per group may give (the engine's largest LIMIT).
pub const MAX_ROWS: u64 = 50_000;

/// A dialect text and the values of its `{placeholders}` (the engine's `Bindings.values`).
#[derive(Debug, Clone, PartialEq)]
pub struct SurveyQuery {
    pub text: String,
    pub values: Map<String, Value>,
}

/// An inclusive time window; an open side is unbounded.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Window {
    pub from: Option<DateTime<Utc>>,
    pub to: Option<DateTime<Utc>>,
}

/// The values of one query's placeholders, each named `p<n>` in the order bound.
#[derive(Debug, Default)]
pub(crate) struct Params {
    values: Map<String, Value>,
}

impl Params {
    /// The placeholder (`{p3}`) that stands for `value` in the text.
    pub(crate) fn bind(&mut self, value: impl Into<Value>) -> String {
        let name = format!("p{}", self.values.len());
        self.values.insert(name.clone(), value.into());
        format!("{{{name}}}")
    }

    /// `{p0}, {p1}, ...`: one placeholder per item (an `IN (...)` list).
    pub(crate) fn list<T: Into<Value>>(&mut self, items: impl IntoIterator<Item = T>) -> String {
        items
            .into_iter()
            .map(|item| self.bind(item))
            .collect::<Vec<_>>()
            .join(", ")
    }

    pub(crate) fn finish(self, text: String) -> SurveyQuery {
        SurveyQuery {
            text,
            values: self.values,
        }
    }
}

/// The text the dialect's `toDateTime` reads as this instant.
fn instant_text(at: DateTime<Utc>) -> String {
    at.format("%Y-%m-%d %H:%M:%S%.6fZ").to_string()
}

/// The conditions every survey query puts on its events: event names, survey ids, window.
/// `surveys: None` is every survey (events without a `$survey_id` are left out).
pub(crate) fn event_conditions(
    params: &mut Params,
    events: &[&str],
    surveys: Option<&[Uuid]>,
    window: &Window,
) -> Vec<String> {
    let mut conditions = vec![
        match events {
            [one] => format!("event = {}", params.bind(*one)),
            many => format!("event IN ({})", params.list(many.iter().copied())),
        },
        match surveys {
            None => "isNotNull(properties.$survey_id)".into(),
            // Callers answer an empty set without a query; this keeps the text valid anyway.
            Some([]) => "false".into(),
            Some([one]) => format!("properties.$survey_id = {}", params.bind(one.to_string())),
            Some(many) => format!(
                "properties.$survey_id IN ({})",
                params.list(many.iter().map(Uuid::to_string))
            ),
        },
    ];
    if let Some(from) = window.from {
        conditions.push(format!(
            "timestamp >= toDateTime({})",
            params.bind(instant_text(from))
        ));
    }
    if let Some(to) = window.to {
        conditions.push(format!(
            "timestamp <= toDateTime({})",
            params.bind(instant_text(to))
        ));
    }
    conditions
}

/// A submission's group key: `$survey_submission_id`, else the event's own uuid (a property
/// read gives NULL for a missing or empty value).
pub(crate) const SUBMISSION_KEY: &str =
    "coalesce(properties.$survey_submission_id, toString(uuid))";

/// ` WHERE column NOT IN (...)`, or nothing when no uuid is archived. Applied to a submission's
/// representative uuid, after deduplication, as the archive stores that one.
pub(crate) fn where_not_archived(params: &mut Params, column: &str, archived: &[Uuid]) -> String {
    match archived {
        [] => String::new(),
        uuids => format!(
            " WHERE {column} NOT IN ({})",
            params.list(uuids.iter().map(Uuid::to_string))
        ),
    }
}

/// The deduplicated `survey sent` rows: one per (survey, submission), with the representative
/// (latest) event's uuid, person and time as `rep_uuid`, `rep_person`, `sent_at`, and the
/// survey as `sid`. Names differ from the events' columns so no alias shadows a column.
pub(crate) fn deduplicated_sent(
    params: &mut Params,
    surveys: Option<&[Uuid]>,
    window: &Window,
) -> String {
    let conditions = event_conditions(params, &[SENT], surveys, window).join(" AND ");
    format!(
        "SELECT properties.$survey_id AS sid, argMax(uuid, timestamp) AS rep_uuid, \
         argMax(person_id, timestamp) AS rep_person, max(timestamp) AS sent_at \
         FROM events WHERE {conditions} \
         GROUP BY properties.$survey_id, {SUBMISSION_KEY}"
    )
}

/// A question's legacy response key: `$survey_response` for the first question,
/// `$survey_response_<i>` for the others.
pub fn legacy_key(index: usize) -> String {
    match index {
        0 => "$survey_response".into(),
        i => format!("$survey_response_{i}"),
    }
}

/// The key posthog-js writes a question's response under.
pub fn response_key(question_id: &str) -> String {
    format!("$survey_response_{question_id}")
}

/// One event's answer to question `index` as raw JSON text (a quoted string, a number, an
/// array), or NULL: `$survey_response_<id>`, else the legacy key. `null`, `""` and `[]` are no
/// answer, so an empty id-keyed value falls back to the legacy key as in PostHog.
pub(crate) fn answer_expression(params: &mut Params, question_id: &str, index: usize) -> String {
    let one = |params: &mut Params, key: String| {
        let key = params.bind(key);
        format!(
            "if(JSONExtractRaw(properties, {key}) IN ('', 'null', '\"\"', '[]'), NULL, \
             JSONExtractRaw(properties, {key}))"
        )
    };
    let by_id = one(params, response_key(question_id));
    let legacy = one(params, legacy_key(index));
    format!("coalesce({by_id}, {legacy})")
}

/// ISO 8601 in UTC with `Z`, as PostHog's JSON encoder writes datetimes.
pub fn iso(at: DateTime<Utc>) -> String {
    at.to_rfc3339_opts(SecondsFormat::AutoSi, true)
}

/// A time cell of an engine result (RFC 3339 text with the project's offset).
pub(crate) fn cell_time(cell: &Value) -> Option<DateTime<Utc>> {
    let text = cell.as_str()?;
    DateTime::parse_from_rfc3339(text)
        .ok()
        .map(|at| at.with_timezone(&Utc))
}

/// A count cell (counts are unsigned; a float or text is read leniently).
pub(crate) fn cell_count(cell: &Value) -> u64 {
    match cell {
        Value::Number(number) => number
            .as_u64()
            .or_else(|| number.as_f64().map(|f| f.max(0.0) as u64))
            .unwrap_or(0),
        Value::String(text) => text.parse().unwrap_or(0),
        Value::Bool(flag) => u64::from(*flag),
        _ => 0,
    }
}

/// A raw-JSON cell parsed: the answer as sent (string, number, array). Text that is not JSON
/// is kept as a string rather than lost.
pub(crate) fn cell_json(cell: &Value) -> Option<Value> {
    match cell {
        Value::String(raw) => {
            Some(serde_json::from_str(raw).unwrap_or_else(|_| Value::String(raw.clone())))
        }
        Value::Null => None,
        other => Some(other.clone()),
    }
}

/// The cell at `index` of a row, NULL when the row is short.
pub(crate) fn cell(row: &[Value], index: usize) -> &Value {
    row.get(index).unwrap_or(&Value::Null)
}
