//! `question`: the markdown per question type.

use super::*;
use crate::summary::aggregate::Nps;

#[test]
fn no_answers_gives_posthogs_empty_summary() {
    for question in [
        q("o", QuestionType::Open, "Why?"),
        rating_q("o", 5, false),
        choice_q("o", QuestionType::SingleChoice, &["A", "B"], false),
    ] {
        let empty = QuestionText {
            content: NO_RESPONSES.into(),
            response_count: 0,
        };
        assert_eq!(super::question(&question, &[]), empty);
        // Answers to other questions, blank text and junk do not count.
        let mut others = texts("x", &["hello"]);
        others.extend(answers(
            "o",
            &[json!(""), json!("   "), json!(null), json!({"a": 1})],
        ));
        assert_eq!(super::question(&question, &others), empty, "{question:?}");
    }
}

#[test]
fn single_choice_distribution_and_other_answers() {
    let question = choice_q(
        "c",
        QuestionType::SingleChoice,
        &["Yes", "No", "Other"],
        true,
    );
    let responses = texts(
        "c",
        &[
            "Yes",
            "No",
            "Yes",
            " Yes ",
            "Other",
            "Too expensive for us",
            "too expensive",
        ],
    );
    let summary = super::question(&question, &responses);
    assert_eq!(summary.response_count, 7);
    let expected_rows = "**Answers**\n- Other: 3 (43%)\n- Yes: 3 (43%)\n- No: 1 (14%)";
    assert!(
        summary.content.contains(expected_rows),
        "{}",
        summary.content
    );
    assert!(
        summary
            .content
            .contains("**Answers not among the choices** (2)")
    );
    assert!(
        summary
            .content
            .contains("**expensive**: 2 of 2 responses (100%)"),
        "{}",
        summary.content
    );
    assert!(!summary.content.contains("several options"));
}

#[test]
fn choices_never_picked_are_listed_with_zero_and_free_text_without_open_choice_is_other() {
    let question = choice_q("c", QuestionType::SingleChoice, &["Red", "Blue"], false);
    let summary = super::question(&question, &texts("c", &["Red", "Purple"]));
    assert!(
        summary
            .content
            .contains("- Other: 1 (50%)\n- Red: 1 (50%)\n- Blue: 0 (0%)"),
        "{}",
        summary.content
    );
    assert!(
        summary.content.contains("Latest:\n- \"Purple\""),
        "{}",
        summary.content
    );
}

#[test]
fn multiple_choice_counts_each_pick_against_respondents() {
    let question = choice_q(
        "m",
        QuestionType::MultipleChoice,
        &["Email", "Chat", "Phone"],
        false,
    );
    let responses = answers(
        "m",
        &[
            json!(["Email", "Chat"]),
            json!(["Email", "Email"]),
            json!("[\"Chat\"]"),
            json!([]),
            json!("Phone"),
        ],
    );
    let summary = super::question(&question, &responses);
    assert_eq!(summary.response_count, 4);
    assert!(
        summary
            .content
            .contains("- Chat: 2 (50%)\n- Email: 2 (50%)\n- Phone: 1 (25%)"),
        "{}",
        summary.content
    );
    assert!(summary.content.contains("several options"));
}

#[test]
fn rating_mean_distribution_and_no_nps_below_ten() {
    let question = rating_q("r", 5, false);
    let responses = answers(
        "r",
        &[
            json!(5),
            json!("4"),
            json!(4.0),
            json!(2),
            json!(3.5),
            json!("x"),
        ],
    );
    let summary = super::question(&question, &responses);
    assert_eq!(summary.response_count, 4);
    assert!(
        summary
            .content
            .starts_with("**4 responses**, average **3.75** out of 5"),
        "{}",
        summary.content
    );
    assert!(
        summary
            .content
            .contains("**Scores**\n- 2: 1 (25%)\n- 4: 2 (50%)\n- 5: 1 (25%)")
    );
    assert!(!summary.content.contains("NPS"));
}

#[test]
fn nps_from_scale_ten_or_flag() {
    let values: Vec<Value> = [10, 9, 9, 10, 8, 7, 6, 0]
        .iter()
        .map(|v| json!(v))
        .collect();
    for question in [rating_q("r", 10, false), rating_q("r", 5, true)] {
        let summary = super::question(&question, &answers("r", &values));
        assert!(
            summary
                .content
                .contains("**NPS 25**: 4 promoters (50%), 2 passives (25%), 2 detractors (25%)"),
            "{}",
            summary.content
        );
    }
    let all = |promoters, passives, detractors| Nps {
        promoters,
        passives,
        detractors,
    };
    assert_eq!(all(0, 0, 0).score(), 0);
    assert_eq!(all(3, 0, 0).score(), 100);
    assert_eq!(all(0, 1, 2).score(), -67);
    assert_eq!(all(1, 1, 1).score(), 0);
}

#[test]
fn open_text_summary_lists_themes_quotes_and_repeated_answers() {
    let question = q("o", QuestionType::Open, "What should we improve?");
    let summary = super::question(&question, &texts("o", FEEDBACK));
    assert_eq!(summary.response_count, 10);
    let content = &summary.content;
    assert!(
        content.starts_with(
            "**10 responses**\n\n**Main themes**\n1. **dark mode**: 3 of 10 responses (30%)"
        ),
        "{content}"
    );
    assert!(content.contains("   - \"Dark mode would be great\""));
    assert!(
        content.contains("**Repeated answers**\n- \"nothing.\": 2"),
        "{content}"
    );
}

#[test]
fn respondents_markdown_is_escaped() {
    let question = q("o", QuestionType::Open, "Why?");
    let summary = super::question(&question, &texts("o", &["*bold* _claim_ [link](x) <b>"]));
    assert!(
        summary
            .content
            .contains(r#""\*bold\* \_claim\_ \[link\](x) \<b\>""#),
        "{}",
        summary.content
    );
}

#[test]
fn link_questions_report_clicks_only() {
    let question = q("l", QuestionType::Link, "Read the docs");
    let summary = super::question(&question, &texts("l", &["link clicked", "link clicked"]));
    assert_eq!(summary.response_count, 2);
    assert!(summary.content.contains("no text to summarize"));
}

#[test]
fn unicode_and_huge_answers_do_not_panic() {
    let question = q("o", QuestionType::Open, "Why?");
    let wild = [
        "日本語のテキストです。とても良い",
        "日本語のテキストです。とても良い",
        "🚀🚀🚀 ship it 🚀",
        "Ship it!!! 🚀",
        &"ﷺ".repeat(5000),
        &"é".repeat(400),
        "\u{0130}stanbul İstanbul office",
        "istanbul office",
    ];
    let summary = super::question(&question, &texts("o", &wild));
    assert_eq!(summary.response_count, 8);
    assert!(summary.content.contains("**ship**"), "{}", summary.content);
}
