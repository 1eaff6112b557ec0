//! Small text helpers: rounding, plurals, clipping and word limits. Clipping works on chars, never
//! bytes, so no answer can make us split a UTF-8 sequence.

/// `part / whole` as a whole percentage, halves rounded up; 0 when `whole` is 0.
pub(crate) fn percent(part: usize, whole: usize) -> usize {
    if whole == 0 {
        return 0;
    }
    // Integer arithmetic so the same counts always print the same number.
    (part.saturating_mul(200) + whole) / whole.saturating_mul(2)
}

/// "1 response", "3 responses".
pub(crate) fn count(n: usize, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
    }
}

/// Two decimals, halves away from zero, and never "-0.00".
pub(crate) fn two_decimals(x: f64) -> String {
    let rounded = (x * 100.0).round() / 100.0;
    let rounded = if rounded == 0.0 { 0.0 } else { rounded };
    format!("{rounded:.2}")
}

/// Whitespace runs (newlines included) become one space; ends trimmed.
pub(crate) fn collapse_whitespace(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// At most `max` words, counted by whitespace, joined by single spaces.
pub(crate) fn limit_words(s: &str, max: usize) -> String {
    s.split_whitespace().take(max).collect::<Vec<_>>().join(" ")
}

/// Number of whitespace-separated words.
pub(crate) fn word_count(s: &str) -> usize {
    s.split_whitespace().count()
}

/// At most `max` words; a cut is marked with "…" on the last word.
pub(crate) fn shorten_words(s: &str, max: usize) -> String {
    if word_count(s) <= max {
        return collapse_whitespace(s);
    }
    format!("{}…", limit_words(s, max))
}

/// At most `max` chars (the "…" included), cut at a word boundary when one is near, and shifted
/// so that the char at `focus` stays visible: a quote should show the word it was picked for.
pub(crate) fn clip_around(s: &str, focus: usize, max: usize) -> String {
    let chars: Vec<char> = s.chars().collect();
    if chars.len() <= max || max < 8 {
        return clip_head(&chars, max);
    }
    // Keep the head when the focus fits comfortably in it.
    if focus + max / 4 < max {
        return clip_head(&chars, max);
    }
    let mut start = focus.saturating_sub(max / 4).min(chars.len());
    // Start on a word: move forward past the partial word we landed in, if that stays before the focus.
    if start > 0
        && !chars[start - 1].is_whitespace()
        && let Some(offset) = chars[start..focus.min(chars.len())]
            .iter()
            .position(|c| c.is_whitespace())
    {
        start += offset + 1;
    }
    let rest = &chars[start..];
    let body = clip_head(rest, max - 1);
    format!("…{}", body.trim_start())
}

fn clip_head(chars: &[char], max: usize) -> String {
    if chars.len() <= max {
        return chars.iter().collect();
    }
    let keep = max.saturating_sub(1);
    let head = &chars[..keep];
    let cut = head
        .iter()
        .rposition(|c| c.is_whitespace())
        .filter(|&at| at >= keep / 2)
        .unwrap_or(keep);
    let mut out: String = head[..cut].iter().collect();
    let trimmed_len = out.trim_end().len();
    out.truncate(trimmed_len);
    out.push('…');
    out
}

/// Escapes the characters that would turn a respondent's words into markdown formatting.
pub(crate) fn escape_markdown(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if matches!(
            c,
            '\\' | '*' | '_' | '`' | '[' | ']' | '<' | '>' | '#' | '|'
        ) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}
