//! Splits an answer into the terms the theme finder weighs: lowercase words with apostrophes
//! dropped, plural forms folded onto one key, and bigrams of adjacent content words.
//! Limitation: scripts written without spaces (Chinese, Japanese) come out as one long token.

use super::stopwords::is_stop_word;

/// One term occurrence in an answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Term {
    /// What occurrences are grouped by: "bug" for both "bug" and "Bugs"; "dark mode" for a bigram.
    pub key: String,
    /// The lowercase form as written, to label the theme with a real word.
    pub surface: String,
    /// Char index of the occurrence in the answer, so a quote can show it.
    pub start: usize,
}

struct Word {
    surface: String,
    start: usize,
    /// False for stop words, numbers and one-letter words: they break bigrams and are not terms.
    content: bool,
}

/// Every term of `text`, in order: each content word, followed by the bigram it starts when the
/// next word is a content word too (a stop word in between breaks the pair: "slow to load" gives
/// no "slow load").
pub(crate) fn terms(text: &str) -> Vec<Term> {
    let words = words(text);
    let mut out = Vec::new();
    for (i, word) in words.iter().enumerate() {
        if !word.content {
            continue;
        }
        out.push(Term {
            key: stem(&word.surface),
            surface: word.surface.clone(),
            start: word.start,
        });
        if let Some(next) = words.get(i + 1).filter(|w| w.content) {
            out.push(Term {
                key: format!("{} {}", stem(&word.surface), stem(&next.surface)),
                surface: format!("{} {}", word.surface, next.surface),
                start: word.start,
            });
        }
    }
    out
}

fn words(text: &str) -> Vec<Word> {
    let mut out = Vec::new();
    let mut current = String::new();
    let mut start = 0;
    for (index, c) in text.chars().chain(std::iter::once(' ')).enumerate() {
        if c.is_alphanumeric() || is_apostrophe(c) {
            if current.is_empty() {
                start = index;
            }
            current.push(c);
        } else if !current.is_empty() {
            if let Some(word) = word(&current, start) {
                out.push(word);
            }
            current.clear();
        }
    }
    out
}

fn word(raw: &str, start: usize) -> Option<Word> {
    let surface: String = raw
        .chars()
        .filter(|c| !is_apostrophe(*c))
        .flat_map(char::to_lowercase)
        .collect();
    if surface.is_empty() {
        return None;
    }
    let content = surface.chars().count() >= 2
        && !surface.chars().all(|c| c.is_numeric())
        && !is_stop_word(&surface);
    Some(Word {
        surface,
        start,
        content,
    })
}

fn is_apostrophe(c: char) -> bool {
    matches!(c, '\'' | '\u{2019}')
}

/// Folds common English plurals ("bugs", "crashes", "replies") onto the singular so they count as
/// one theme. Only plain ASCII words are touched; anything else is its own key.
pub(crate) fn stem(word: &str) -> String {
    if !word.bytes().all(|b| b.is_ascii_lowercase()) || word.len() <= 3 {
        return word.to_owned();
    }
    if let Some(base) = word.strip_suffix("ies")
        && base.len() >= 2
    {
        return format!("{base}y");
    }
    if let Some(base) = word.strip_suffix("es")
        && ["s", "x", "z", "ch", "sh"]
            .iter()
            .any(|end| base.ends_with(end))
    {
        return base.to_owned();
    }
    match word.strip_suffix('s') {
        Some(base) if !["ss", "us", "is"].iter().any(|end| word.ends_with(end)) => base.to_owned(),
        _ => word.to_owned(),
    }
}
