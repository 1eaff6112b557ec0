//! Reading raw answers: whatever the event holds, no panic and nothing invented.

use crate::summary::extract::{choices, open_text, rating};
use serde_json::json;

#[test]
fn choices_accept_strings_arrays_encoded_arrays_and_scalars() {
    assert_eq!(choices(&json!(" Yes ")), vec!["Yes"]);
    assert_eq!(
        choices(&json!(["A", " B", "A", "", null, 3])),
        vec!["A", "B", "3"]
    );
    assert_eq!(choices(&json!("[\"A\", \"B\"]")), vec!["A", "B"]);
    // Not valid JSON: one free-text answer that happens to start with a bracket.
    assert_eq!(choices(&json!("[beta] feedback")), vec!["[beta] feedback"]);
    assert_eq!(choices(&json!(7)), vec!["7"]);
    assert_eq!(choices(&json!(true)), vec!["true"]);
    assert!(choices(&json!(null)).is_empty());
    assert!(choices(&json!({"a": "b"})).is_empty());
    assert!(choices(&json!("   ")).is_empty());
}

#[test]
fn open_text_collapses_whitespace_and_drops_blanks() {
    assert_eq!(
        open_text(&json!("  two\n\nlines\t here ")).as_deref(),
        Some("two lines here")
    );
    assert_eq!(open_text(&json!(["a", "b"])).as_deref(), Some("a, b"));
    assert_eq!(open_text(&json!(42)).as_deref(), Some("42"));
    assert_eq!(open_text(&json!(" \n ")), None);
    assert_eq!(open_text(&json!(null)), None);
    assert_eq!(open_text(&json!({})), None);
}

#[test]
fn ratings_are_whole_numbers_only() {
    assert_eq!(rating(&json!(7)), Some(7));
    assert_eq!(rating(&json!(" 9 ")), Some(9));
    assert_eq!(rating(&json!(4.0)), Some(4));
    assert_eq!(rating(&json!("0")), Some(0));
    assert_eq!(rating(&json!(3.5)), None);
    assert_eq!(rating(&json!("NaN")), None);
    assert_eq!(rating(&json!("inf")), None);
    assert_eq!(rating(&json!(1e12)), None);
    assert_eq!(rating(&json!("seven")), None);
    assert_eq!(rating(&json!([7])), None);
    assert_eq!(rating(&json!(null)), None);
}
