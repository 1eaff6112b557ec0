//! Per-question stats (`include_per_question_stats`): for each question of a survey, how many
//! submissions answered it, and for rating and choice questions how the answers spread (a
//! multiple choice answer counts each choice it holds) and, for ratings, their average.
//!
//! One query: the survey's submissions in the window (each question's latest non-null answer),
//! archived ones dropped, grouped by their answers. Open and link answers enter only as
//! "answered or not", so the groups stay few however varied the texts.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Value, json};
use survey_core::{QuestionType, Survey};
use uuid::Uuid;

use super::{
    MAX_ROWS, Params, SENT, SUBMISSION_KEY, SurveyQuery, Window, answer_expression, cell,
    cell_count, cell_json, event_conditions, where_not_archived,
};
use crate::Table;

/// Whether the distribution of a question's answers is counted (else only whether it was
/// answered).
fn distributed(kind: QuestionType) -> bool {
    matches!(
        kind,
        QuestionType::Rating | QuestionType::SingleChoice | QuestionType::MultipleChoice
    )
}

/// The query: one column per question (`v<i>` the raw answer, or `o<i>` 1/0 answered), then the
/// number of submissions `n`. `None` when the survey has no question.
pub fn query(survey: &Survey, window: &Window, archived: &[Uuid]) -> Option<SurveyQuery> {
    if survey.questions.is_empty() {
        return None;
    }
    let mut params = Params::default();
    let conditions =
        event_conditions(&mut params, &[SENT], Some(&[survey.id]), window).join(" AND ");
    let mut answers = Vec::new();
    let mut merged = Vec::new();
    let (mut columns, mut groups) = (Vec::new(), Vec::new());
    for (index, question) in survey.questions.iter().enumerate() {
        answers.push(format!(
            "{} AS r{index}",
            answer_expression(&mut params, &question.id, index)
        ));
        merged.push(format!(
            "argMaxIf(r{index}, timestamp, isNotNull(r{index})) AS v{index}"
        ));
        let group = match distributed(question.kind) {
            true => format!("v{index}"),
            false => format!("isNotNull(v{index})"),
        };
        columns.push(match distributed(question.kind) {
            true => group.clone(),
            false => format!("{group} AS o{index}"),
        });
        groups.push(group);
    }
    let kept = where_not_archived(&mut params, "rep_uuid", archived);
    let text = format!(
        "SELECT {columns}, count() AS n FROM (\
         SELECT argMax(uuid, timestamp) AS rep_uuid, {merged} FROM (\
         SELECT uuid, timestamp, {SUBMISSION_KEY} AS submission, {answers} \
         FROM events WHERE {conditions}\
         ) GROUP BY submission\
         ){kept} GROUP BY {groups} LIMIT {MAX_ROWS}",
        columns = columns.join(", "),
        merged = merged.join(", "),
        answers = answers.join(", "),
        groups = groups.join(", "),
    );
    Some(params.finish(text))
}

/// One question's stats.
#[derive(Debug, Clone, PartialEq)]
pub struct QuestionStats {
    pub question_id: String,
    pub question_index: usize,
    pub question_text: String,
    pub question_type: QuestionType,
    pub response_count: u64,
    /// Answer (as text) → submissions; empty for open and link questions.
    pub distribution: BTreeMap<String, u64>,
    /// Ratings only: the mean of the numeric answers.
    pub average: Option<f64>,
}

impl QuestionStats {
    pub fn to_json(&self) -> Value {
        json!({
            "question_id": self.question_id,
            "question_index": self.question_index,
            "question_text": self.question_text,
            "question_type": self.question_type.as_str(),
            "response_count": self.response_count,
            "distribution": self.distribution,
            "average": self.average,
        })
    }
}

/// `[{question_id, ...}]` in the survey's order.
pub fn to_json(stats: &[QuestionStats]) -> Value {
    Value::Array(stats.iter().map(QuestionStats::to_json).collect())
}

/// An answer as a distribution key: a string as itself, anything else as its JSON text.
pub fn answer_label(answer: &Value) -> String {
    match answer {
        Value::String(text) => text.clone(),
        other => other.to_string(),
    }
}

/// A rating as a number, whether sent as `7` or `"7"`.
pub fn numeric(answer: &Value) -> Option<f64> {
    match answer {
        Value::Number(number) => number.as_f64(),
        Value::String(text) => text.trim().parse().ok(),
        _ => None,
    }
}

/// The per-question stats of `survey` from the answer of [`query`] (none: every count 0).
pub fn assemble(survey: &Survey, table: Option<&Table>) -> Vec<QuestionStats> {
    let rows: &[Vec<Value>] = table.map_or(&[], |table| &table.rows);
    let width = survey.questions.len();
    survey
        .questions
        .iter()
        .enumerate()
        .map(|(index, question)| {
            let mut stats = QuestionStats {
                question_id: question.id.clone(),
                question_index: index,
                question_text: question.question.clone(),
                question_type: question.kind,
                response_count: 0,
                distribution: BTreeMap::new(),
                average: None,
            };
            let (mut sum, mut numbers) = (0.0, 0u64);
            for row in rows {
                let submissions = cell_count(cell(row, width));
                let value = cell(row, index);
                if !distributed(question.kind) {
                    if cell_count(value) > 0 {
                        stats.response_count += submissions;
                    }
                    continue;
                }
                let Some(answer) = cell_json(value) else {
                    continue;
                };
                stats.response_count += submissions;
                let labels: BTreeSet<String> = match (&answer, question.kind) {
                    (Value::Array(choices), QuestionType::MultipleChoice) => {
                        choices.iter().map(answer_label).collect()
                    }
                    (answer, _) => BTreeSet::from([answer_label(answer)]),
                };
                for label in labels {
                    *stats.distribution.entry(label).or_default() += submissions;
                }
                if question.kind == QuestionType::Rating
                    && let Some(number) = numeric(&answer)
                {
                    sum += number * submissions as f64;
                    numbers += submissions;
                }
            }
            if question.kind == QuestionType::Rating && numbers > 0 {
                stats.average = Some(sum / numbers as f64);
            }
            stats
        })
        .collect()
}
