//! `GET /surveys/:id/responses` (reference 1.10): one row per submission, newest first, each
//! question's answer the latest non-null one over the submission's events, and the context of
//! its latest event (`extra`). The rows are typed ([`Response`]) so the summarizer reads the
//! same answers the route shows.

use chrono::{DateTime, Utc};
use serde_json::{Value, json};
use survey_core::summary::Answers;
use survey_core::{QuestionType, Survey};
use uuid::Uuid;

use super::{
    Params, SENT, SUBMISSION_KEY, SurveyQuery, Window, answer_expression, cell, cell_json,
    cell_time, event_conditions, iso,
};
use crate::{Invalid, Table};

pub const DEFAULT_LIMIT: usize = 100;
pub const MAX_LIMIT: usize = 500;

/// The list's filters, as parsed from the request.
#[derive(Debug, Clone, PartialEq)]
pub struct ResponseFilters {
    /// Events at or after / at or before these instants.
    pub since: Option<DateTime<Utc>>,
    pub until: Option<DateTime<Utc>>,
    /// Only submissions that answered this question (and whose score there is in bounds).
    pub question_id: Option<String>,
    pub score_lte: Option<f64>,
    pub score_gte: Option<f64>,
    /// 1–500.
    pub limit: usize,
    pub offset: usize,
}

impl Default for ResponseFilters {
    fn default() -> Self {
        Self {
            since: None,
            until: None,
            question_id: None,
            score_lte: None,
            score_gte: None,
            limit: DEFAULT_LIMIT,
            offset: 0,
        }
    }
}

impl ResponseFilters {
    /// The 400s of the route: the limit's range, scores without a question, an unknown question.
    /// Answers the question's index when one is named.
    pub fn check(&self, survey: &Survey) -> Result<Option<usize>, Invalid> {
        if !(1..=MAX_LIMIT).contains(&self.limit) {
            return Err(Invalid::new(
                "limit",
                format!("limit must be between 1 and {MAX_LIMIT}."),
            ));
        }
        let scored = self.score_lte.is_some() || self.score_gte.is_some();
        match &self.question_id {
            None if scored => Err(Invalid::new(
                "question_id",
                "score_lte and score_gte require question_id to be specified",
            )),
            None => Ok(None),
            Some(id) => survey
                .questions
                .iter()
                .position(|question| &question.id == id)
                .map(Some)
                .ok_or_else(|| {
                    Invalid::new(
                        "question_id",
                        format!("Question {id} is not in this survey."),
                    )
                }),
        }
    }
}

/// The properties of a submission's latest event shown as `extra`, with their keys there.
const EXTRA: [(&str, &str); 7] = [
    ("$device_type", "device_type"),
    ("$browser", "browser"),
    ("$os", "os"),
    ("$geoip_country_code", "geoip_country_code"),
    ("$geoip_country_name", "geoip_country_name"),
    ("$geoip_city_name", "geoip_city_name"),
    ("$current_url", "current_url"),
];

/// Columns before the answers: uuid, distinct_id, session_id, submitted_at, the [`EXTRA`]
/// properties and the iteration.
const FIXED_COLUMNS: usize = 4 + EXTRA.len() + 1;

/// The page's query (asks one row more than the limit, to tell `has_more`); `archived` are the
/// representative uuids to leave out (none: nothing is left out).
pub fn query(
    survey: &Survey,
    filters: &ResponseFilters,
    archived: &[Uuid],
) -> Result<SurveyQuery, Invalid> {
    let question = filters.check(survey)?;
    let mut params = Params::default();
    let window = Window {
        from: filters.since,
        to: filters.until,
    };
    let conditions =
        event_conditions(&mut params, &[SENT], Some(&[survey.id]), &window).join(" AND ");
    let mut inner = vec![
        "uuid".to_owned(),
        "timestamp".to_owned(),
        "distinct_id".to_owned(),
        "nullIf($session_id, '') AS session".to_owned(),
        format!("{SUBMISSION_KEY} AS submission"),
    ];
    let mut merged = vec![
        "argMax(uuid, timestamp) AS rep_uuid".to_owned(),
        "argMax(distinct_id, timestamp) AS rep_distinct_id".to_owned(),
        "argMax(session, timestamp) AS rep_session".to_owned(),
        "max(timestamp) AS submitted_at".to_owned(),
    ];
    for (index, (property, _)) in EXTRA.iter().enumerate() {
        inner.push(format!("properties.{property} AS e{index}"));
        merged.push(format!("argMax(e{index}, timestamp) AS x{index}"));
    }
    inner.push("properties.$survey_iteration AS iteration".to_owned());
    merged.push("argMax(iteration, timestamp) AS rep_iteration".to_owned());
    for (index, question) in survey.questions.iter().enumerate() {
        inner.push(format!(
            "{} AS r{index}",
            answer_expression(&mut params, &question.id, index)
        ));
        merged.push(format!(
            "argMaxIf(r{index}, timestamp, isNotNull(r{index})) AS v{index}"
        ));
    }
    let mut outer = vec![
        "rep_uuid".to_owned(),
        "rep_distinct_id".to_owned(),
        "rep_session".to_owned(),
        "submitted_at".to_owned(),
    ];
    outer.extend((0..EXTRA.len()).map(|index| format!("x{index}")));
    outer.push("rep_iteration".to_owned());
    outer.extend((0..survey.questions.len()).map(|index| format!("v{index}")));

    let mut kept = Vec::new();
    if !archived.is_empty() {
        kept.push(format!(
            "rep_uuid NOT IN ({})",
            params.list(archived.iter().map(Uuid::to_string))
        ));
    }
    if let Some(index) = question {
        kept.push(format!("isNotNull(v{index})"));
        // A score is the answer as a number, whether sent as 7 or "7".
        let score = format!("toFloat(replaceAll(v{index}, '\"', ''))");
        if let Some(bound) = filters.score_gte {
            kept.push(format!("{score} >= {}", params.bind(bound)));
        }
        if let Some(bound) = filters.score_lte {
            kept.push(format!("{score} <= {}", params.bind(bound)));
        }
    }
    let kept = match kept.is_empty() {
        true => String::new(),
        false => format!(" WHERE {}", kept.join(" AND ")),
    };
    let limit = params.bind(filters.limit as u64 + 1);
    let offset = params.bind(filters.offset as u64);
    let text = format!(
        "SELECT {outer} FROM (\
         SELECT {merged} FROM (SELECT {inner} FROM events WHERE {conditions}) \
         GROUP BY submission\
         ){kept} ORDER BY submitted_at DESC, rep_uuid DESC LIMIT {limit} OFFSET {offset}",
        outer = outer.join(", "),
        merged = merged.join(", "),
        inner = inner.join(", "),
    );
    Ok(params.finish(text))
}

/// One question's answer in a submission.
#[derive(Debug, Clone, PartialEq)]
pub struct Answer {
    pub question_id: String,
    pub question_index: usize,
    pub question_text: String,
    pub question_type: QuestionType,
    /// As sent: a string, a number, or an array of strings (multiple choice); None unanswered.
    pub answer: Option<Value>,
}

/// The context of a submission's latest event.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Extra {
    pub device_type: Option<String>,
    pub browser: Option<String>,
    pub os: Option<String>,
    pub geoip_country_code: Option<String>,
    pub geoip_country_name: Option<String>,
    pub geoip_city_name: Option<String>,
    pub current_url: Option<String>,
    /// `$survey_iteration`, a number when it is one.
    pub iteration: Option<Value>,
}

/// One submission.
#[derive(Debug, Clone, PartialEq)]
pub struct Response {
    /// The representative (latest) event's uuid: what the archive stores.
    pub uuid: Uuid,
    pub distinct_id: String,
    pub session_id: Option<String>,
    pub submitted_at: DateTime<Utc>,
    /// Every question of the survey, in its order.
    pub answers: Vec<Answer>,
    pub extra: Extra,
}

impl Response {
    pub fn to_json(&self) -> Value {
        let answers: Vec<Value> = self
            .answers
            .iter()
            .map(|answer| {
                json!({
                    "question_id": answer.question_id,
                    "question_index": answer.question_index,
                    "question_text": answer.question_text,
                    "question_type": answer.question_type.as_str(),
                    "answer": answer.answer,
                })
            })
            .collect();
        let extra = &self.extra;
        json!({
            "uuid": self.uuid.to_string(),
            "distinct_id": self.distinct_id,
            "session_id": self.session_id,
            "submitted_at": iso(self.submitted_at),
            "answers": answers,
            "extra": {
                "device_type": extra.device_type,
                "browser": extra.browser,
                "os": extra.os,
                "geoip_country_code": extra.geoip_country_code,
                "geoip_country_name": extra.geoip_country_name,
                "geoip_city_name": extra.geoip_city_name,
                "current_url": extra.current_url,
                "iteration": extra.iteration,
            },
        })
    }
}

/// A page of submissions.
#[derive(Debug, Clone, PartialEq)]
pub struct ResponsePage {
    pub rows: Vec<Response>,
    pub has_more: bool,
    pub limit: usize,
    pub offset: usize,
}

impl ResponsePage {
    /// The submissions' answered questions, for the summarizer.
    pub fn answers(&self) -> Vec<Answers> {
        self.rows
            .iter()
            .map(|row| Answers {
                submitted_at: row.submitted_at,
                by_question: row
                    .answers
                    .iter()
                    .filter_map(|answer| Some((answer.question_id.clone(), answer.answer.clone()?)))
                    .collect(),
            })
            .collect()
    }

    /// `{"results": [...], "has_more", "limit", "offset"}`.
    pub fn to_json(&self) -> Value {
        json!({
            "results": self.rows.iter().map(Response::to_json).collect::<Vec<_>>(),
            "has_more": self.has_more,
            "limit": self.limit,
            "offset": self.offset,
        })
    }
}

fn text(value: &Value) -> Option<String> {
    match value {
        Value::String(text) => Some(text.clone()),
        Value::Null => None,
        other => Some(other.to_string()),
    }
}

/// A property read: JSON text for numbers, the string itself for strings.
fn scalar(value: &Value) -> Option<Value> {
    let text = value.as_str()?;
    Some(
        serde_json::from_str::<serde_json::Number>(text)
            .map_or_else(|_| Value::String(text.to_owned()), Value::Number),
    )
}

/// The page from the answer of [`query`]. A row whose uuid or time does not parse (never
/// written by capture) is left out rather than failing the page.
pub fn assemble(survey: &Survey, filters: &ResponseFilters, table: &Table) -> ResponsePage {
    let limit = filters.limit;
    let mut rows: Vec<Response> = table
        .rows
        .iter()
        .filter_map(|row| {
            let uuid = cell(row, 0).as_str()?.parse().ok()?;
            let submitted_at = cell_time(cell(row, 3))?;
            let extra_at = |index: usize| text(cell(row, 4 + index));
            let answers = survey
                .questions
                .iter()
                .enumerate()
                .map(|(index, question)| Answer {
                    question_id: question.id.clone(),
                    question_index: index,
                    question_text: question.question.clone(),
                    question_type: question.kind,
                    answer: cell_json(cell(row, FIXED_COLUMNS + index)),
                })
                .collect();
            Some(Response {
                uuid,
                distinct_id: text(cell(row, 1)).unwrap_or_default(),
                session_id: text(cell(row, 2)),
                submitted_at,
                answers,
                extra: Extra {
                    device_type: extra_at(0),
                    browser: extra_at(1),
                    os: extra_at(2),
                    geoip_country_code: extra_at(3),
                    geoip_country_name: extra_at(4),
                    geoip_city_name: extra_at(5),
                    current_url: extra_at(6),
                    iteration: scalar(cell(row, 4 + EXTRA.len())),
                },
            })
        })
        .collect();
    let has_more = table.rows.len() > limit;
    rows.truncate(limit);
    ResponsePage {
        rows,
        has_more,
        limit: filters.limit,
        offset: filters.offset,
    }
}
