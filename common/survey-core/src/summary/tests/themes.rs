//! Theme finding and repeated answers.

use super::*;
use crate::summary::themes::{QUOTE_CHARS, repeated, themes};

#[test]
fn themes_find_recurring_topics_with_shares_and_quotes() {
    let found = themes(&open_texts(FEEDBACK));
    let labels: Vec<&str> = found.iter().map(|t| t.label.as_str()).collect();
    // "slow" only ever comes with "dashboards", and "export" with "csv": facets, not themes.
    // "export to CSV" / "CSV export" share words but no bigram; "great" recurs as praise.
    assert_eq!(labels, vec!["dark mode", "dashboards", "great", "csv"]);
    let mentions: Vec<usize> = found.iter().map(|t| t.mentions).collect();
    assert_eq!(mentions, vec![3, 3, 2, 2]);
    assert_eq!(
        found[0].quotes,
        vec![
            "Dark mode would be great",
            "I want a dark mode and faster dashboards"
        ]
    );
    for theme in &found {
        assert!(!theme.quotes.is_empty() && theme.quotes.len() <= 2);
        assert_ne!(theme.quotes.first(), theme.quotes.get(1));
    }
}

#[test]
fn themes_do_not_depend_on_input_order() {
    let mut reversed = texts("o", FEEDBACK);
    reversed.reverse();
    let question = q("o", QuestionType::Open, "Why?");
    assert_eq!(
        super::question(&question, &texts("o", FEEDBACK)),
        super::question(&question, &reversed)
    );
}

#[test]
fn a_theme_needs_two_answers_and_quotes_are_deduplicated() {
    assert!(themes(&open_texts(&["Only one answer about pricing"])).is_empty());
    assert!(themes(&open_texts(&["pricing", "onboarding", "speed"])).is_empty());
    let found = themes(&open_texts(&[
        "Pricing is high",
        "pricing   is HIGH",
        "Pricing is high.",
        "pricing",
    ]));
    assert_eq!(found[0].label, "pricing");
    assert_eq!(found[0].mentions, 4);
    assert_eq!(found[0].quotes.len(), 2);
    assert_ne!(
        found[0].quotes[0].to_lowercase(),
        found[0].quotes[1].to_lowercase().replace("   ", " ")
    );
}

#[test]
fn at_most_five_themes_and_long_quotes_are_clipped() {
    let words = [
        "alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf",
    ];
    let long_tail = "lorem ipsum ".repeat(40);
    let values: Vec<String> = words
        .iter()
        .flat_map(|w| [format!("{w} {long_tail}"), format!("{long_tail} {w}")])
        .collect();
    let refs: Vec<&str> = values.iter().map(String::as_str).collect();
    let found = themes(&open_texts(&refs));
    assert!(found.len() <= 5);
    for quote in found.iter().flat_map(|t| &t.quotes) {
        assert!(quote.chars().count() <= QUOTE_CHARS, "{quote}");
    }
}

#[test]
fn repeated_answers_ignore_case_spacing_and_final_punctuation() {
    let found = repeated(
        &open_texts(&[
            "Nothing",
            "nothing.",
            "NOTHING!",
            "all  good",
            "All good",
            "meh",
        ]),
        3,
    );
    assert_eq!(
        found,
        vec![("NOTHING!".to_owned(), 3), ("All good".to_owned(), 2)]
    );
}

#[test]
fn a_rare_term_inside_a_broad_theme_is_kept_but_a_facet_is_not() {
    // "crash" only appears with "app", but in 3 of its 8 answers: a theme of its own.
    let mut values = vec!["The app crashes on login"; 2];
    values.push("app crash when uploading");
    values.extend([
        "the app is fine",
        "app looks nice",
        "app onboarding",
        "app icon",
        "app sync",
    ]);
    let found = themes(&open_texts(&values));
    let labels: Vec<&str> = found.iter().map(|t| t.label.as_str()).collect();
    assert_eq!(labels[0], "app");
    assert!(labels.contains(&"crashes"), "{labels:?}");
}

#[test]
fn thousands_of_answers_stay_fast() {
    let topics = [
        "pricing",
        "dark mode",
        "export",
        "onboarding",
        "latency",
        "mobile app",
    ];
    let values: Vec<String> = (0..3000)
        .map(|i| {
            format!(
                "Answer {i}: the {} is {} and {} word{}",
                topics[i % topics.len()],
                ["great", "bad", "confusing"][i % 3],
                topics[(i / 7) % topics.len()],
                i % 97
            )
        })
        .collect();
    let refs: Vec<&str> = values.iter().map(String::as_str).collect();
    let started = std::time::Instant::now();
    let found = themes(&open_texts(&refs));
    assert_eq!(found.len(), 5);
    assert!(started.elapsed().as_secs() < 10, "{:?}", started.elapsed());
}
