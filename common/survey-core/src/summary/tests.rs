//! Shared fixtures; the tests live in `tests/`, one file per part of the summarizer.

mod extract;
mod headline;
mod provider;
mod questions;
mod text;
mod themes;

pub(super) use std::collections::BTreeMap;

pub(super) use chrono::{DateTime, Duration, TimeZone, Utc};
pub(super) use serde_json::{Value, json};

pub(super) use super::aggregate::{Aggregate, Text};
pub(super) use super::*;
pub(super) use crate::model::{Question, QuestionType};

fn base() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2025, 3, 1, 12, 0, 0).unwrap()
}

fn q(id: &str, kind: QuestionType, text: &str) -> Question {
    serde_json::from_value(json!({"id": id, "type": kind.as_str(), "question": text})).unwrap()
}

fn choice_q(id: &str, kind: QuestionType, choices: &[&str], open: bool) -> Question {
    let mut question = q(id, kind, "Pick one");
    question.choices = Some(choices.iter().map(|c| c.to_string()).collect());
    question.has_open_choice = open.then_some(true);
    question
}

fn rating_q(id: &str, scale: i64, nps: bool) -> Question {
    let mut question = q(id, QuestionType::Rating, "How likely?");
    question.scale = Some(scale);
    question.is_nps_question = nps.then_some(true);
    question
}

/// One submission per value, a minute apart, the first one the oldest.
fn answers(id: &str, values: &[Value]) -> Vec<Answers> {
    values
        .iter()
        .enumerate()
        .map(|(i, v)| Answers {
            submitted_at: base() + Duration::minutes(i as i64),
            by_question: BTreeMap::from([(id.to_owned(), v.clone())]),
        })
        .collect()
}

fn texts(id: &str, values: &[&str]) -> Vec<Answers> {
    answers(id, &values.iter().map(|v| json!(v)).collect::<Vec<_>>())
}

fn open_texts(values: &[&str]) -> Vec<Text> {
    let question = q("o", QuestionType::Open, "Why?");
    match Aggregate::of(&question, &texts("o", values)) {
        Aggregate::Open(texts) => texts,
        other => panic!("not open: {other:?}"),
    }
}

const FEEDBACK: &[&str] = &[
    "Please add dark mode, my eyes hurt at night",
    "Dark mode would be great",
    "The export to CSV is broken",
    "CSV export fails for large tables",
    "I want a dark mode and faster dashboards",
    "Dashboards are slow to load",
    "Slow dashboards, otherwise great",
    "Nothing",
    "nothing.",
    "Love it!",
];
