//! The main themes of free-text answers by TF-IDF: each answer is a document; a term's weight in
//! it is (1 + ln tf) · idf, normalised per answer, and a theme's score is its weight summed over
//! answers (so a term that many answers lean on wins over one long rant). Quotes are the answers
//! where the term weighs most. All maps are ordered and every sort has a tie-break, so the result
//! depends only on the answers.

use std::collections::{BTreeMap, BTreeSet};

use super::aggregate::Text;
use super::text::{clip_around, collapse_whitespace};
use super::tokens::{Term, terms};

/// How many themes a summary lists.
pub(crate) const MAX_THEMES: usize = 5;
/// Quotes per theme.
pub(crate) const QUOTES: usize = 2;
/// Longest quote, in chars, "…" included.
pub(crate) const QUOTE_CHARS: usize = 160;
/// A phrase reads better than either of its words, so a bigram gets a little extra weight.
const BIGRAM_BOOST: f64 = 1.2;

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Theme {
    /// The most common written form of the term ("dark mode", "bugs").
    pub label: String,
    /// How many answers mention it.
    pub mentions: usize,
    /// Up to [`QUOTES`] distinct answers, clipped to [`QUOTE_CHARS`].
    pub quotes: Vec<String>,
}

/// One answer's terms: per key, its count and the char index of its first occurrence, and its
/// normalised TF-IDF weight.
struct Doc {
    counts: BTreeMap<String, (usize, usize)>,
    weights: BTreeMap<String, f64>,
}

/// The answers as documents, with what the theme choice needs about each term.
struct Corpus {
    docs: Vec<Doc>,
    /// key -> indexes of the answers containing it, ascending (its length is the term's df).
    postings: BTreeMap<String, Vec<usize>>,
    /// key -> written form -> occurrences, to label a theme.
    surfaces: BTreeMap<String, BTreeMap<String, usize>>,
}

struct Candidate {
    key: String,
    words: usize,
    df: usize,
    score: f64,
}

/// Up to [`MAX_THEMES`] themes of `texts` (expected newest first, as the aggregate sorts them).
/// A theme must recur in at least two answers; a single answer has no themes.
pub(crate) fn themes(texts: &[Text]) -> Vec<Theme> {
    let corpus = corpus(texts);
    let candidates = candidates(&corpus);
    let mut quoted: BTreeSet<String> = BTreeSet::new();
    select(&corpus, &candidates)
        .into_iter()
        .map(|c| Theme {
            label: corpus
                .surfaces
                .get(&c.key)
                .map_or_else(|| c.key.clone(), most_common),
            mentions: c.df,
            quotes: quotes(texts, &corpus.docs, &c.key, &mut quoted),
        })
        .collect()
}

fn corpus(texts: &[Text]) -> Corpus {
    let mut surfaces: BTreeMap<String, BTreeMap<String, usize>> = BTreeMap::new();
    let mut postings: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    let mut docs: Vec<Doc> = Vec::with_capacity(texts.len());
    for (index, text) in texts.iter().enumerate() {
        let mut counts: BTreeMap<String, (usize, usize)> = BTreeMap::new();
        for Term {
            key,
            surface,
            start,
        } in terms(&text.text)
        {
            *surfaces
                .entry(key.clone())
                .or_default()
                .entry(surface)
                .or_insert(0) += 1;
            counts.entry(key).or_insert((0, start)).0 += 1;
        }
        for key in counts.keys() {
            postings.entry(key.clone()).or_default().push(index);
        }
        docs.push(Doc {
            counts,
            weights: BTreeMap::new(),
        });
    }
    let n = docs.len() as f64;
    for doc in &mut docs {
        let raw: Vec<(String, f64)> = doc
            .counts
            .iter()
            .map(|(key, (tf, _))| {
                let df = postings.get(key).map_or(1, Vec::len) as f64;
                let idf = ((1.0 + n) / (1.0 + df)).ln() + 1.0;
                (key.clone(), (1.0 + (*tf as f64).ln()) * idf)
            })
            .collect();
        let norm = raw.iter().map(|(_, w)| w * w).sum::<f64>().sqrt();
        doc.weights = raw
            .into_iter()
            .map(|(key, w)| (key, if norm > 0.0 { w / norm } else { 0.0 }))
            .collect();
    }
    Corpus {
        docs,
        postings,
        surfaces,
    }
}

/// Terms found in two answers or more, best first: score, then bigrams before words, then df,
/// then the key, so equal scores still sort the same way every time.
fn candidates(corpus: &Corpus) -> Vec<Candidate> {
    let mut scores: BTreeMap<&str, f64> = BTreeMap::new();
    for doc in &corpus.docs {
        for (key, weight) in &doc.weights {
            *scores.entry(key.as_str()).or_insert(0.0) += weight;
        }
    }
    let mut out: Vec<Candidate> = scores
        .into_iter()
        .filter_map(|(key, score)| {
            let df = corpus.postings.get(key)?.len();
            let words = key.split(' ').count();
            let boost = if words > 1 { BIGRAM_BOOST } else { 1.0 };
            (df >= 2).then(|| Candidate {
                key: key.to_owned(),
                words,
                df,
                score: score * boost,
            })
        })
        .collect();
    out.sort_by(|a, b| {
        b.score
            .total_cmp(&a.score)
            .then_with(|| b.words.cmp(&a.words))
            .then_with(|| b.df.cmp(&a.df))
            .then_with(|| a.key.cmp(&b.key))
    });
    out
}

/// The best candidates that are not the same theme again.
fn select<'a>(corpus: &Corpus, candidates: &'a [Candidate]) -> Vec<&'a Candidate> {
    let answers = |key: &str| corpus.postings.get(key).map_or(&[][..], Vec::as_slice);
    let mut chosen: Vec<&Candidate> = Vec::new();
    let mut used_words: BTreeSet<&str> = BTreeSet::new();
    for candidate in candidates {
        if chosen.len() == MAX_THEMES {
            break;
        }
        // "dark mode" and "dark" are one theme: skip a term sharing a word with a chosen one.
        let parts: Vec<&str> = candidate.key.split(' ').collect();
        if parts.iter().any(|p| used_words.contains(p)) {
            continue;
        }
        // A term found only in answers of a chosen theme, and in at least half of them, is a
        // facet of it ("slow" under "dashboards"); a rarer one ("crash" under "app") is kept.
        let ours = answers(&candidate.key);
        let facet = chosen.iter().any(|c| {
            let theirs = answers(&c.key);
            ours.len() * 2 >= theirs.len() && ours.iter().all(|i| theirs.binary_search(i).is_ok())
        });
        if facet {
            continue;
        }
        used_words.extend(parts);
        chosen.push(candidate);
    }
    chosen
}

/// The answers where `key` weighs most, distinct (ignoring case and spacing), preferring answers
/// not already quoted under an earlier theme.
fn quotes(texts: &[Text], docs: &[Doc], key: &str, quoted: &mut BTreeSet<String>) -> Vec<String> {
    let mut ranked: Vec<(usize, f64, usize)> = docs
        .iter()
        .enumerate()
        .filter_map(|(i, doc)| Some((i, *doc.weights.get(key)?, doc.counts.get(key)?.1)))
        .collect();
    // Heaviest first; the input order (newest first) breaks ties.
    ranked.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    let mut picked: Vec<(usize, usize)> = Vec::new();
    let mut seen: BTreeSet<String> = BTreeSet::new();
    for fresh_only in [true, false] {
        for (index, _, start) in &ranked {
            if picked.len() == QUOTES {
                break;
            }
            let identity = normalized(&texts[*index].text);
            if seen.contains(&identity) || (fresh_only && quoted.contains(&identity)) {
                continue;
            }
            seen.insert(identity);
            picked.push((*index, *start));
        }
    }
    picked
        .into_iter()
        .map(|(index, start)| {
            quoted.insert(normalized(&texts[index].text));
            clip_around(&texts[index].text, start, QUOTE_CHARS)
        })
        .collect()
}

/// Answers given word for word by at least two responses (ignoring case, spacing and a trailing
/// full stop or exclamation mark), most frequent first: short answers like "Nothing" or "All good"
/// carry no theme words but still say something.
pub(crate) fn repeated(texts: &[Text], limit: usize) -> Vec<(String, usize)> {
    let mut groups: BTreeMap<String, (usize, &str)> = BTreeMap::new();
    for text in texts {
        // The first seen is the newest, which labels the group.
        groups
            .entry(normalized(&text.text))
            .or_insert((0, text.text.as_str()))
            .0 += 1;
    }
    let mut out: Vec<(String, usize, String)> = groups
        .into_iter()
        .filter(|(_, (count, _))| *count >= 2)
        .map(|(key, (count, label))| (key, count, label.to_owned()))
        .collect();
    out.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    out.into_iter()
        .take(limit)
        .map(|(_, count, label)| (clip_around(&label, 0, QUOTE_CHARS), count))
        .collect()
}

fn normalized(text: &str) -> String {
    collapse_whitespace(&text.to_lowercase())
        .trim_end_matches(['.', '!'])
        .trim_end()
        .to_owned()
}

fn most_common(forms: &BTreeMap<String, usize>) -> String {
    // Max count; on a tie the alphabetically first form, since BTreeMap iterates in order and
    // max_by keeps the last maximum, so compare the reverse.
    forms
        .iter()
        .max_by(|a, b| a.1.cmp(b.1).then_with(|| b.0.cmp(a.0)))
        .map(|(form, _)| form.clone())
        .unwrap_or_default()
}
