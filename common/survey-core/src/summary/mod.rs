//! The offline summarizer behind `summarize_responses` and `summary_headline` (reference 1.12).
//! PostHog asks a hosted model; here the default needs no network: choice distributions, rating
//! means and NPS, and for open text the main themes by term weighting with representative quotes.
//! Everything is a pure function of the questions and the answers, so the same input always gives
//! the same text (the handler stores it on the survey and reuses it until `force_refresh`).
//! [`provider`] holds the pure halves of the optional OpenAI-compatible call.

mod aggregate;
mod extract;
mod headline;
mod markdown;
pub mod provider;
mod stopwords;
mod text;
mod themes;
mod tokens;

#[cfg(test)]
mod tests;

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::model::Question;

/// The content PostHog returns when a question has no answers to read.
pub const NO_RESPONSES: &str = "No responses to analyze.";
/// The headline when every question is a link (or there are none).
pub const NO_QUESTIONS: &str = "No questions in survey";
/// The headline when nobody has answered yet.
pub const NO_RESPONSES_YET: &str = "No responses yet";
/// PostHog's limit for a headline, counted in whitespace-separated words.
pub const HEADLINE_MAX_WORDS: usize = 20;

/// One submission's answers, as the responses query returns them: question id -> raw JSON answer
/// (a string, a number, or an array of strings for multiple_choice), plus when it was submitted.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Answers {
    pub submitted_at: DateTime<Utc>,
    pub by_question: BTreeMap<String, Value>,
}

/// `summarize_responses` for one question: markdown, and how many responses it read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct QuestionText {
    pub content: String,
    pub response_count: usize,
}

/// Summarizes one question's answers as markdown. A question nobody answered gives PostHog's
/// "No responses to analyze." with a count of 0.
pub fn question(question: &Question, responses: &[Answers]) -> QuestionText {
    let aggregate = aggregate::Aggregate::of(question, responses);
    let response_count = aggregate.response_count();
    if response_count == 0 {
        return QuestionText {
            content: NO_RESPONSES.to_owned(),
            response_count: 0,
        };
    }
    QuestionText {
        content: markdown::render(&aggregate),
        response_count,
    }
}

/// One sentence of at most [`HEADLINE_MAX_WORDS`] words over every question but links, or
/// PostHog's fallbacks "No questions in survey" and "No responses yet".
pub fn headline(questions: &[Question], responses: &[Answers]) -> String {
    headline::compose(questions, responses)
}
