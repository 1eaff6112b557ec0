//! The pure halves of the optional language-model summary: the OpenAI chat-completions request
//! bodies and the reading of the answer. The handler sends the body to `ANALYTICS_LLM_URL`
//! (the same settings as `draft_sql`) and falls back to the offline summary when the call or
//! [`content`] fails. The model gets the same aggregates the offline summary is built from, so
//! its numbers match ours; only free text is sent verbatim (capped, newest first).

use std::fmt::Write;

use serde_json::{Value, json};

use super::aggregate::{Aggregate, Text};
use super::text::{clip_around, count, limit_words, percent, two_decimals};
use super::{Answers, HEADLINE_MAX_WORDS};
use crate::model::{Question, QuestionType};

/// PostHog's setting for both summaries: a little variety, mostly factual.
pub const TEMPERATURE: f64 = 0.3;

/// Free-text answers sent for one question's summary, and their longest length in chars.
const QUESTION_TEXTS: usize = 200;
const QUESTION_TEXT_CHARS: usize = 500;
/// The same per question for the headline, which reads every question at once.
const HEADLINE_TEXTS: usize = 50;
const HEADLINE_TEXT_CHARS: usize = 300;

const QUESTION_SYSTEM: &str = "You analyze survey responses for a product team. Write a short \
markdown summary of one question's answers: the main themes, each with roughly how many responses \
mention it and one or two short quotes, then the overall sentiment. Use only the data given; do \
not invent numbers or quotes. No preamble.";

const HEADLINE_SYSTEM: &str = "You write one-line headlines that summarize survey feedback for a \
product team. Answer with the headline only.";

/// The chat-completions body for `summarize_responses` on one question.
pub fn question_request(model: &str, question: &Question, responses: &[Answers]) -> Value {
    let aggregate = Aggregate::of(question, responses);
    let user = format!(
        "Question: {}\nType: {}\nResponses: {}\n\n{}",
        question.question.trim(),
        question.kind.as_str(),
        aggregate.response_count(),
        describe(&aggregate, QUESTION_TEXTS, QUESTION_TEXT_CHARS)
    );
    body(model, QUESTION_SYSTEM, &user)
}

/// The chat-completions body for `summary_headline`: every question but links, with its data.
pub fn headline_request(
    model: &str,
    survey_name: &str,
    questions: &[Question],
    responses: &[Answers],
) -> Value {
    let mut data = String::new();
    for question in questions.iter().filter(|q| q.kind != QuestionType::Link) {
        let aggregate = Aggregate::of(question, responses);
        let _ = write!(
            data,
            "\n\nQuestion: {} ({}, {})\n",
            question.question.trim(),
            question.kind.as_str(),
            count(aggregate.response_count(), "response")
        );
        data.push_str(&describe(&aggregate, HEADLINE_TEXTS, HEADLINE_TEXT_CHARS));
    }
    let user = format!(
        "Write one plain sentence of at most {HEADLINE_MAX_WORDS} words that captures the main \
finding or sentiment of this survey. Be specific. No markdown, no lists, no quotes around it.\n\n\
Survey: {}\nResponses sampled: {}{data}",
        survey_name.trim(),
        responses.len()
    );
    body(model, HEADLINE_SYSTEM, &user)
}

/// `choices[0].message.content`, trimmed; `None` when missing or blank. A content given as a list
/// of parts (`[{"type": "text", "text": ...}]`) is joined.
pub fn content(answer: &Value) -> Option<String> {
    let raw = answer.pointer("/choices/0/message/content")?;
    let text = match raw {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join(""),
        _ => return None,
    };
    let text = text.trim();
    (!text.is_empty()).then(|| text.to_owned())
}

/// The headline in an answer: its first non-blank line, stripped of markdown markers and
/// surrounding quotes, cut to at most [`HEADLINE_MAX_WORDS`] words.
pub fn headline_content(answer: &Value) -> Option<String> {
    let text = content(answer)?;
    let line = text.lines().map(str::trim).find(|l| !l.is_empty())?;
    let line = line
        .trim_start_matches(['#', '-', '*', '>', ' '])
        .trim_matches(['*', '_', '"', '\'', '`', '\u{201c}', '\u{201d}', ' ']);
    let headline = limit_words(line, HEADLINE_MAX_WORDS);
    (!headline.is_empty()).then_some(headline)
}

fn body(model: &str, system: &str, user: &str) -> Value {
    json!({
        "model": model,
        "messages": [
            {"role": "system", "content": system},
            {"role": "user", "content": user},
        ],
        "temperature": TEMPERATURE,
    })
}

/// The aggregate as plain text for the model.
fn describe(aggregate: &Aggregate, max_texts: usize, max_chars: usize) -> String {
    let mut out = String::new();
    match aggregate {
        Aggregate::Choice(stats) => {
            out.push_str("Answers (share of respondents):");
            for row in &stats.rows {
                let share = percent(row.count, stats.respondents);
                let _ = write!(out, "\n- {}: {} ({share}%)", row.label, row.count);
            }
            if !stats.other.is_empty() {
                out.push_str("\n\nFree-text answers not among the choices:");
                texts(&mut out, &stats.other, max_texts, max_chars);
            }
        }
        Aggregate::Rating(stats) => {
            let scale = stats
                .scale
                .map(|s| format!(" out of {s}"))
                .unwrap_or_default();
            let _ = write!(out, "Average: {}{scale}", two_decimals(stats.mean));
            if let Some(nps) = stats.nps {
                let _ = write!(
                    out,
                    "\nNPS: {} ({} promoters, {} passives, {} detractors)",
                    nps.score(),
                    nps.promoters,
                    nps.passives,
                    nps.detractors
                );
            }
            out.push_str("\nScores:");
            for (score, n) in &stats.rows {
                let _ = write!(out, "\n- {score}: {n} ({}%)", percent(*n, stats.count));
            }
        }
        Aggregate::Open(all) => {
            out.push_str("Answers (newest first):");
            texts(&mut out, all, max_texts, max_chars);
        }
        Aggregate::Link(clicks) => {
            let _ = write!(out, "Link clicks: {clicks}");
        }
    }
    out
}

fn texts(out: &mut String, texts: &[Text], max_texts: usize, max_chars: usize) {
    for text in texts.iter().take(max_texts) {
        let _ = write!(out, "\n- {}", clip_around(&text.text, 0, max_chars));
    }
    if texts.len() > max_texts {
        let _ = write!(out, "\n(and {} more not shown)", texts.len() - max_texts);
    }
}
