//! `?search=` of the list as PostHog's trigram search answers it (its viewset documents it:
//! "Returns exact (case-insensitive substring) matches only; if no exact match exists, returns
//! similar (fuzzy trigram — typos, prefix-as-you-type) matches instead"):
//! - a survey whose name or description contains the search, case aside, is `exact`; when any
//!   survey is, only those are answered;
//! - otherwise names that look like the search (trigram similarity at least 0.3) and
//!   descriptions that do (at least 0.4) are `similar`.
//!
//! Relevance orders them: a description counts half a name, ties by name (PostHog's tiebreaker),
//! then newest first. Similarity is pg_trgm's `word_similarity` (shared trigrams of padded
//! lowercase words over all trigrams, on the text's best continuous extent).

use std::cmp::Ordering;
use std::collections::HashSet;

use survey_core::Survey;

/// PostHog's `MAX_SEARCH_LENGTH`.
pub const MAX_SEARCH_CHARS: usize = 200;
const MIN_NAME_SIMILARITY: f64 = 0.3;
const MIN_DESCRIPTION_SIMILARITY: f64 = 0.4;
const DESCRIPTION_WEIGHT: f64 = 0.5;

pub const EXACT: &str = "exact";
pub const SIMILAR: &str = "similar";

/// The surveys (newest first) that match `search`, most relevant first, with how they matched.
pub fn matches(surveys: Vec<Survey>, search: &str) -> Vec<(Survey, &'static str)> {
    let needle = search.to_lowercase();
    let contains = |text: &str| text.to_lowercase().contains(&needle);
    let exact: Vec<(Survey, f64)> = surveys
        .iter()
        .filter_map(|survey| {
            if contains(&survey.name) {
                Some((survey.clone(), 1.0))
            } else if contains(&survey.description) {
                Some((survey.clone(), DESCRIPTION_WEIGHT))
            } else {
                None
            }
        })
        .collect();
    if !exact.is_empty() {
        return ranked(exact, EXACT);
    }
    let wanted: HashSet<[char; 3]> = trigrams(&words(&needle)).into_iter().collect();
    if wanted.is_empty() {
        return Vec::new();
    }
    let similar = surveys
        .into_iter()
        .filter_map(|survey| {
            let name = similarity(&wanted, &survey.name);
            let description = similarity(&wanted, &survey.description);
            let name = if name >= MIN_NAME_SIMILARITY {
                name
            } else {
                0.0
            };
            let description = if description >= MIN_DESCRIPTION_SIMILARITY {
                description * DESCRIPTION_WEIGHT
            } else {
                0.0
            };
            let score = name.max(description);
            (score > 0.0).then_some((survey, score))
        })
        .collect();
    ranked(similar, SIMILAR)
}

/// Best score first, then by name; the sort is stable, so equal ones stay newest first.
fn ranked(mut scored: Vec<(Survey, f64)>, kind: &'static str) -> Vec<(Survey, &'static str)> {
    scored.sort_by(|(a, a_score), (b, b_score)| {
        b_score
            .partial_cmp(a_score)
            .unwrap_or(Ordering::Equal)
            .then_with(|| a.name.to_lowercase().cmp(&b.name.to_lowercase()))
            .then_with(|| a.name.cmp(&b.name))
    });
    scored
        .into_iter()
        .map(|(survey, _)| (survey, kind))
        .collect()
}

/// pg_trgm's words: runs of letters and digits, lowercased.
fn words(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|word| !word.is_empty())
        .map(str::to_lowercase)
        .collect()
}

/// pg_trgm's trigrams of some words, in order: each word padded with two spaces before and
/// one after.
fn trigrams(words: &[String]) -> Vec<[char; 3]> {
    let mut list = Vec::new();
    for word in words {
        let padded: Vec<char> = "  ".chars().chain(word.chars()).chain([' ']).collect();
        for window in padded.windows(3) {
            list.push([window[0], window[1], window[2]]);
        }
    }
    list
}

/// pg_trgm's `word_similarity`: the best similarity of the search's trigrams to a continuous
/// extent of the text's (extents longer than twice the search cannot reach the thresholds and
/// are not tried).
fn similarity(wanted: &HashSet<[char; 3]>, text: &str) -> f64 {
    let list = trigrams(&words(text));
    let longest = wanted.len() * 2;
    let mut best = 0.0_f64;
    for start in 0..list.len() {
        // A best extent starts with a shared trigram.
        if !wanted.contains(&list[start]) {
            continue;
        }
        let mut seen = HashSet::new();
        let mut shared = 0usize;
        for trigram in &list[start..list.len().min(start + longest)] {
            if seen.insert(*trigram) && wanted.contains(trigram) {
                shared += 1;
            }
            let all = wanted.len() + seen.len() - shared;
            best = best.max(shared as f64 / all as f64);
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(text: &str) -> HashSet<[char; 3]> {
        trigrams(&words(text)).into_iter().collect()
    }

    #[test]
    fn similarity_is_pg_trgms_word_similarity() {
        // pg_trgm's documented example: word_similarity('word', 'two words') = 0.8.
        assert!((similarity(&set("word"), "two words") - 0.8).abs() < 1e-9);
        // A typo keeps 7 of 15 trigrams: similar enough for a name.
        let typo = similarity(&set("onbaording"), "Onboarding feedback");
        assert!((typo - 7.0 / 15.0).abs() < 1e-9, "{typo}");
        // Only "ing" and "ng " are shared: 2 of 8, below the name threshold.
        assert_eq!(similarity(&set("pricing"), "Onboarding"), 0.25);
    }
}
