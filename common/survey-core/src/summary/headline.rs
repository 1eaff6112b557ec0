//! The offline `summary_headline`: one sentence made of a short clause per question (NPS or
//! average rating, top answer, top theme), added in question order while the sentence stays
//! within the word limit. Question text is never quoted: it alone could exceed the limit.

use super::aggregate::Aggregate;
use super::text::{count, limit_words, percent, shorten_words, two_decimals, word_count};
use super::themes::{repeated, themes};
use super::{Answers, HEADLINE_MAX_WORDS, NO_QUESTIONS, NO_RESPONSES_YET};
use crate::model::{Question, QuestionType};

/// Words kept from a choice label or an answer inside a clause.
const QUOTED_WORDS: usize = 4;

pub(crate) fn compose(questions: &[Question], responses: &[Answers]) -> String {
    let asked: Vec<&Question> = questions
        .iter()
        .filter(|q| q.kind != QuestionType::Link)
        .collect();
    if asked.is_empty() {
        return NO_QUESTIONS.to_owned();
    }
    let clauses: Vec<String> = asked
        .iter()
        .filter_map(|q| clause(&Aggregate::of(q, responses)))
        .collect();
    if responses.is_empty() || clauses.is_empty() {
        return NO_RESPONSES_YET.to_owned();
    }
    let mut sentence = format!("{}:", count(responses.len(), "response"));
    let mut added = 0;
    for clause in &clauses {
        let separator = if added == 0 { " " } else { "; " };
        let candidate = format!("{sentence}{separator}{clause}");
        if word_count(&candidate) > HEADLINE_MAX_WORDS {
            continue;
        }
        sentence = candidate;
        added += 1;
    }
    if added == 0 {
        // Cannot happen with clauses of at most 9 words, but the limit is a promise.
        sentence = format!("{sentence} {}", clauses[0]);
    }
    let sentence = limit_words(&sentence, HEADLINE_MAX_WORDS);
    format!("{}.", sentence.trim_end_matches(['.', ';', ':', ',']))
}

/// The one fact worth a headline for a question, or `None` when it has no answers.
fn clause(aggregate: &Aggregate) -> Option<String> {
    if aggregate.response_count() == 0 {
        return None;
    }
    match aggregate {
        Aggregate::Rating(stats) => {
            let scale = stats.scale.map(|s| format!("/{s}")).unwrap_or_default();
            let mean = format!("{}{scale}", two_decimals(stats.mean));
            Some(match stats.nps {
                Some(nps) => format!("NPS {} (average {mean})", nps.score()),
                None => format!("average rating {mean}"),
            })
        }
        Aggregate::Choice(stats) => {
            let top = stats.rows.first().filter(|r| r.count > 0)?;
            Some(format!(
                "top answer \"{}\" ({}%)",
                shorten_words(&top.label, QUOTED_WORDS),
                percent(top.count, stats.respondents)
            ))
        }
        Aggregate::Open(texts) => {
            if let Some(theme) = themes(texts).into_iter().next() {
                return Some(format!(
                    "common theme \"{}\"",
                    shorten_words(&theme.label, QUOTED_WORDS)
                ));
            }
            Some(match repeated(texts, 1).into_iter().next() {
                Some((answer, _)) => format!(
                    "frequent answer \"{}\"",
                    shorten_words(&answer, QUOTED_WORDS)
                ),
                None => format!("{} with no common theme", count(texts.len(), "comment")),
            })
        }
        Aggregate::Link(_) => None,
    }
}
