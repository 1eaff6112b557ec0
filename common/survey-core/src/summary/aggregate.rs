//! Per-question aggregates, computed once and then written out either as the offline markdown,
//! the headline, or the data handed to a language model.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};

use super::{Answers, extract};
use crate::model::{Question, QuestionType};

/// The label free-text answers are grouped under when the question has no open choice of its own.
pub(crate) const OTHER: &str = "Other";

/// One free-text answer and when it was given.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Text {
    pub text: String,
    pub submitted_at: DateTime<Utc>,
}

/// A line of a distribution: a label and how many responses gave it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Row {
    pub label: String,
    pub count: usize,
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ChoiceStats {
    /// Responses that picked at least one option; percentages are of these (so a
    /// multiple_choice distribution can add up to more than 100%).
    pub respondents: usize,
    /// Count descending, then label; every predefined choice appears, picked or not.
    pub rows: Vec<Row>,
    /// Answers that are not among the predefined choices (the open "Other"), newest first.
    pub other: Vec<Text>,
}

/// Net Promoter Score parts: promoters 9–10, passives 7–8, detractors 0–6.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Nps {
    pub promoters: usize,
    pub passives: usize,
    pub detractors: usize,
}

impl Nps {
    pub(crate) fn total(&self) -> usize {
        self.promoters + self.passives + self.detractors
    }

    /// % promoters − % detractors, rounded to a whole number (−100..=100).
    pub(crate) fn score(&self) -> i64 {
        let total = self.total();
        if total == 0 {
            return 0;
        }
        let diff = self.promoters as f64 - self.detractors as f64;
        (diff * 100.0 / total as f64).round() as i64
    }
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct RatingStats {
    pub count: usize,
    pub mean: f64,
    pub scale: Option<i64>,
    /// (score, responses), by score ascending.
    pub rows: Vec<(i64, usize)>,
    /// Present for NPS questions (`isNpsQuestion`, or a scale of 10).
    pub nps: Option<Nps>,
}

/// Everything a summary says about one question.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Aggregate {
    Choice(ChoiceStats),
    Rating(RatingStats),
    /// Open answers, newest first (then by text, so the order never depends on the input's).
    Open(Vec<Text>),
    /// A link question records clicks, not text: only the count is worth saying.
    Link(usize),
}

impl Aggregate {
    pub(crate) fn of(question: &Question, responses: &[Answers]) -> Self {
        let answers = responses
            .iter()
            .filter_map(|r| Some((r.by_question.get(&question.id)?, r.submitted_at)));
        match question.kind {
            QuestionType::SingleChoice | QuestionType::MultipleChoice => {
                let picks: Vec<(Vec<String>, DateTime<Utc>)> = answers
                    .map(|(value, at)| (extract::choices(value), at))
                    .filter(|(picked, _)| !picked.is_empty())
                    .collect();
                Aggregate::Choice(choice_stats(question, &picks))
            }
            QuestionType::Rating => {
                let scores: Vec<i64> = answers.filter_map(|(v, _)| extract::rating(v)).collect();
                Aggregate::Rating(rating_stats(question, &scores))
            }
            QuestionType::Open => Aggregate::Open(sorted_texts(
                answers
                    .filter_map(|(value, at)| {
                        let text = extract::open_text(value)?;
                        Some(Text {
                            text,
                            submitted_at: at,
                        })
                    })
                    .collect(),
            )),
            QuestionType::Link => Aggregate::Link(
                answers
                    .filter(|(v, _)| extract::open_text(v).is_some())
                    .count(),
            ),
        }
    }

    /// How many responses answered the question.
    pub(crate) fn response_count(&self) -> usize {
        match self {
            Aggregate::Choice(stats) => stats.respondents,
            Aggregate::Rating(stats) => stats.count,
            Aggregate::Open(texts) => texts.len(),
            Aggregate::Link(count) => *count,
        }
    }
}

fn choice_stats(question: &Question, picks: &[(Vec<String>, DateTime<Utc>)]) -> ChoiceStats {
    let predefined: Vec<String> = question
        .choices
        .iter()
        .flatten()
        .map(|c| c.trim().to_owned())
        .filter(|c| !c.is_empty())
        .collect();
    // Free text is counted under the open choice's own label ("Other", "Something else", ...).
    let other_label = match (question.has_open_choice, predefined.last()) {
        (Some(true), Some(last)) => last.clone(),
        _ => OTHER.to_owned(),
    };
    let mut counts: BTreeMap<String, usize> = predefined.iter().map(|c| (c.clone(), 0)).collect();
    let mut other = Vec::new();
    for (picked, at) in picks {
        for pick in picked {
            // Without predefined choices nothing is "other": each answer is its own line.
            let label = if predefined.is_empty() || predefined.contains(pick) {
                pick.clone()
            } else {
                other.push(Text {
                    text: super::text::collapse_whitespace(pick),
                    submitted_at: *at,
                });
                other_label.clone()
            };
            *counts.entry(label).or_insert(0) += 1;
        }
    }
    let mut rows: Vec<Row> = counts
        .into_iter()
        .map(|(label, count)| Row { label, count })
        .collect();
    rows.sort_by(|a, b| b.count.cmp(&a.count).then_with(|| a.label.cmp(&b.label)));
    ChoiceStats {
        respondents: picks.len(),
        rows,
        other: sorted_texts(other),
    }
}

fn rating_stats(question: &Question, scores: &[i64]) -> RatingStats {
    let mut rows: BTreeMap<i64, usize> = BTreeMap::new();
    for score in scores {
        *rows.entry(*score).or_insert(0) += 1;
    }
    let mean = if scores.is_empty() {
        0.0
    } else {
        scores.iter().map(|s| *s as f64).sum::<f64>() / scores.len() as f64
    };
    let is_nps = question.is_nps_question == Some(true) || question.scale == Some(10);
    let nps = is_nps.then(|| {
        let mut nps = Nps {
            promoters: 0,
            passives: 0,
            detractors: 0,
        };
        for score in scores {
            match score {
                9.. => nps.promoters += 1,
                7..=8 => nps.passives += 1,
                _ => nps.detractors += 1,
            }
        }
        nps
    });
    RatingStats {
        count: scores.len(),
        mean,
        scale: question.scale,
        rows: rows.into_iter().collect(),
        nps,
    }
}

/// Newest first, then by text: a fixed order whatever order the query returned.
fn sorted_texts(mut texts: Vec<Text>) -> Vec<Text> {
    texts.sort_by(|a, b| {
        b.submitted_at
            .cmp(&a.submitted_at)
            .then_with(|| a.text.cmp(&b.text))
    });
    texts
}
