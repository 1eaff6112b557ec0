//! Writes an aggregate as the markdown `summarize_responses` returns: the numbers first, then the
//! themes of whatever free text there is. Respondents' words are escaped so they stay plain text.

use std::fmt::Write;

use super::aggregate::{Aggregate, ChoiceStats, RatingStats, Text};
use super::text::{count, escape_markdown, percent, two_decimals};
use super::themes::{QUOTE_CHARS, QUOTES, repeated, themes};

/// Repeated answers listed at most.
const REPEATED: usize = 3;

pub(crate) fn render(aggregate: &Aggregate) -> String {
    let mut out = String::new();
    match aggregate {
        Aggregate::Choice(stats) => choice(&mut out, stats),
        Aggregate::Rating(stats) => rating(&mut out, stats),
        Aggregate::Open(texts) => {
            let _ = writeln!(out, "**{}**", count(texts.len(), "response"));
            open(&mut out, texts);
        }
        Aggregate::Link(clicks) => {
            let _ = writeln!(
                out,
                "**{}**: a link question records clicks, so there is no text to summarize.",
                count(*clicks, "response")
            );
        }
    }
    out.trim_end().to_owned()
}

fn choice(out: &mut String, stats: &ChoiceStats) {
    let _ = writeln!(out, "**{}**", count(stats.respondents, "response"));
    let _ = writeln!(out, "\n**Answers**");
    for row in &stats.rows {
        let _ = writeln!(
            out,
            "- {}: {} ({}%)",
            escape_markdown(&row.label),
            row.count,
            percent(row.count, stats.respondents)
        );
    }
    let picks: usize = stats.rows.iter().map(|r| r.count).sum();
    if picks > stats.respondents {
        let _ = writeln!(
            out,
            "\nPercentages are of respondents; one response can pick several options."
        );
    }
    if !stats.other.is_empty() {
        let _ = writeln!(
            out,
            "\n**Answers not among the choices** ({})",
            stats.other.len()
        );
        open(out, &stats.other);
    }
}

fn rating(out: &mut String, stats: &RatingStats) {
    let scale = match stats.scale {
        Some(scale) => format!(" out of {scale}"),
        None => String::new(),
    };
    let _ = writeln!(
        out,
        "**{}**, average **{}**{scale}",
        count(stats.count, "response"),
        two_decimals(stats.mean)
    );
    if let Some(nps) = stats.nps {
        let total = nps.total();
        let _ = writeln!(
            out,
            "\n**NPS {}**: {} ({}%), {} ({}%), {} ({}%)",
            nps.score(),
            count(nps.promoters, "promoter"),
            percent(nps.promoters, total),
            count(nps.passives, "passive"),
            percent(nps.passives, total),
            count(nps.detractors, "detractor"),
            percent(nps.detractors, total)
        );
    }
    let _ = writeln!(out, "\n**Scores**");
    for (score, n) in &stats.rows {
        let _ = writeln!(out, "- {score}: {n} ({}%)", percent(*n, stats.count));
    }
}

/// Themes, then repeated answers; without either, the newest answers as a sample.
fn open(out: &mut String, texts: &[Text]) {
    let found = themes(texts);
    if !found.is_empty() {
        let _ = writeln!(out, "\n**Main themes**");
        for (i, theme) in found.iter().enumerate() {
            let _ = writeln!(
                out,
                "{}. **{}**: {} of {} ({}%)",
                i + 1,
                escape_markdown(&theme.label),
                theme.mentions,
                count(texts.len(), "response"),
                percent(theme.mentions, texts.len())
            );
            for quote in &theme.quotes {
                let _ = writeln!(out, "   - \"{}\"", escape_markdown(quote));
            }
        }
    }
    let repeats = repeated(texts, REPEATED);
    if !repeats.is_empty() {
        let _ = writeln!(out, "\n**Repeated answers**");
        for (answer, n) in &repeats {
            let _ = writeln!(out, "- \"{}\": {n}", escape_markdown(answer));
        }
    }
    if found.is_empty() && repeats.is_empty() {
        let _ = writeln!(out, "\nNo theme recurs across responses. Latest:");
        for text in texts.iter().take(QUOTES) {
            let quote = super::text::clip_around(&text.text, 0, QUOTE_CHARS);
            let _ = writeln!(out, "- \"{}\"", escape_markdown(&quote));
        }
    }
}
