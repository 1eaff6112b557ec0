//! Text helpers, stop words and tokens.

use crate::summary::text::{clip_around, percent, two_decimals};
use crate::summary::tokens::{stem, terms};

#[test]
fn percent_rounds_half_up_and_handles_zero() {
    assert_eq!(percent(1, 8), 13); // 12.5
    assert_eq!(percent(1, 3), 33);
    assert_eq!(percent(2, 3), 67);
    assert_eq!(percent(3, 3), 100);
    assert_eq!(percent(5, 0), 0);
}

#[test]
fn two_decimals_rounds_and_never_prints_negative_zero() {
    assert_eq!(two_decimals(7.125), "7.13");
    assert_eq!(two_decimals(4.0), "4.00");
    assert_eq!(two_decimals(10.0 / 3.0), "3.33");
    assert_eq!(two_decimals(-0.001), "0.00");
}

#[test]
fn clipping_is_unicode_safe_and_keeps_the_focus_visible() {
    let long = "é😀 ".repeat(200);
    for focus in [0, 5, 100, 399, 599, 10_000] {
        let clipped = clip_around(&long, focus, 50);
        assert!(clipped.chars().count() <= 50, "{clipped}");
    }
    let text = format!(
        "{} the keyword here {}",
        "filler ".repeat(60),
        "tail ".repeat(20)
    );
    let at = text.chars().count() - "keyword here ".len() - "tail ".len() * 20;
    let clipped = clip_around(&text, at, 60);
    assert!(
        clipped.starts_with('…') && clipped.contains("keyword"),
        "{clipped}"
    );
    assert!(clipped.chars().count() <= 60);
    assert_eq!(clip_around("short", 0, 60), "short");
    let head = clip_around(&"word ".repeat(50), 0, 20);
    assert!(head.ends_with('…') && !head.contains(" …"), "{head}");
}

// ---- tokens ----

#[test]
fn stop_words_are_lowercase_apostrophe_free_and_unique() {
    let words: Vec<&str> = crate::summary::stopwords::all().collect();
    let unique: std::collections::BTreeSet<&str> = words.iter().copied().collect();
    assert_eq!(words.len(), unique.len());
    assert!(
        words
            .iter()
            .all(|w| w.chars().all(|c| c.is_ascii_lowercase()))
    );
    assert!(
        crate::summary::stopwords::is_stop_word("dont")
            && !crate::summary::stopwords::is_stop_word("mode")
    );
}

#[test]
fn stemming_folds_plurals_only() {
    for (word, key) in [
        ("bugs", "bug"),
        ("crashes", "crash"),
        ("boxes", "box"),
        ("replies", "reply"),
        ("issues", "issue"),
        ("features", "feature"),
        ("status", "status"),
        ("analysis", "analysis"),
        ("class", "class"),
        ("gas", "gas"),
        ("cafés", "cafés"),
    ] {
        assert_eq!(stem(word), key, "{word}");
    }
}

#[test]
fn terms_are_lowercase_content_words_and_adjacent_bigrams() {
    let found: Vec<(String, String, usize)> = terms("Don't break the Dark-Mode toggles, 2024!")
        .into_iter()
        .map(|t| (t.key, t.surface, t.start))
        .collect();
    assert_eq!(
        found,
        vec![
            ("break".into(), "break".into(), 6),
            ("dark".into(), "dark".into(), 16),
            ("dark mode".into(), "dark mode".into(), 16),
            ("mode".into(), "mode".into(), 21),
            ("mode toggle".into(), "mode toggles".into(), 21),
            ("toggle".into(), "toggles".into(), 26),
        ]
    );
    // A stop word breaks a bigram; a curly apostrophe is dropped like a straight one.
    let keys: Vec<String> = terms("slow to load, it’s crashing")
        .into_iter()
        .map(|t| t.key)
        .collect();
    assert_eq!(keys, vec!["slow", "load", "crashing"]);
    assert!(terms("").is_empty() && terms("a 1 42 ' ’ !!").is_empty());
    assert_eq!(terms("Ünïcödé ÉCRAN")[0].surface, "ünïcödé");
}
