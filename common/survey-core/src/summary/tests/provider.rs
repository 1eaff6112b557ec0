//! The request bodies and the reading of answers.

use super::*;
use crate::summary::provider::{content, headline_content, headline_request, question_request};
use crate::summary::text::word_count;

#[test]
fn question_request_carries_model_prompt_data_and_temperature() {
    let question = choice_q(
        "c",
        QuestionType::SingleChoice,
        &["Yes", "No", "Other"],
        true,
    );
    let body = question_request(
        "gpt-4o-mini",
        &question,
        &texts("c", &["Yes", "Yes", "Too pricey"]),
    );
    assert_eq!(body["model"], "gpt-4o-mini");
    assert_eq!(body["temperature"], 0.3);
    assert_eq!(body["messages"][0]["role"], "system");
    assert_eq!(body["messages"][1]["role"], "user");
    let user = body["messages"][1]["content"].as_str().unwrap();
    assert!(
        user.starts_with("Question: Pick one\nType: single_choice\nResponses: 3\n"),
        "{user}"
    );
    assert!(
        user.contains("- Yes: 2 (67%)") && user.contains("- Other: 1 (33%)"),
        "{user}"
    );
    assert!(
        user.contains("Free-text answers not among the choices:\n- Too pricey"),
        "{user}"
    );
}

#[test]
fn question_request_caps_free_text() {
    let question = q("o", QuestionType::Open, "Why?");
    let many: Vec<String> = (0..250)
        .map(|i| format!("answer {i} {}", "x".repeat(900)))
        .collect();
    let refs: Vec<&str> = many.iter().map(String::as_str).collect();
    let body = question_request("m", &question, &texts("o", &refs));
    let user = body["messages"][1]["content"].as_str().unwrap();
    assert_eq!(user.matches("\n- answer").count(), 200);
    assert!(user.contains("(and 50 more not shown)"));
    assert!(user.lines().all(|l| l.chars().count() <= 510));
    // Newest first.
    assert!(user.contains("\n- answer 249"));
}

#[test]
fn headline_request_skips_links_and_names_the_survey() {
    let questions = [
        rating_q("r", 10, true),
        q("l", QuestionType::Link, "Docs link"),
        q("o", QuestionType::Open, "Anything else?"),
    ];
    let mut responses = answers("r", &[json!(10), json!(6)]);
    responses[0]
        .by_question
        .insert("o".into(), json!("Great product"));
    let body = headline_request("gpt-4.1-mini", "  Onboarding  ", &questions, &responses);
    assert_eq!(body["model"], "gpt-4.1-mini");
    assert_eq!(body["temperature"], 0.3);
    let user = body["messages"][1]["content"].as_str().unwrap();
    assert!(user.contains("at most 20 words"));
    assert!(
        user.contains("Survey: Onboarding\nResponses sampled: 2"),
        "{user}"
    );
    assert!(
        user.contains(
            "Question: How likely? (rating, 2 responses)\nAverage: 8.00 out of 10\nNPS: 0"
        ),
        "{user}"
    );
    assert!(
        user.contains(
            "Question: Anything else? (open, 1 response)\nAnswers (newest first):\n- Great product"
        ),
        "{user}"
    );
    assert!(!user.contains("Docs link"));
}

#[test]
fn content_reads_the_first_choice() {
    let answer = |c: Value| json!({"choices": [{"message": {"role": "assistant", "content": c}}]});
    assert_eq!(
        content(&answer(json!("  **Themes** \n- a  "))).as_deref(),
        Some("**Themes** \n- a")
    );
    assert_eq!(
        content(&answer(
            json!([{"type": "text", "text": "a"}, {"type": "text", "text": "b"}])
        ))
        .as_deref(),
        Some("ab")
    );
    assert_eq!(content(&answer(json!("   "))), None);
    assert_eq!(content(&answer(json!(null))), None);
    assert_eq!(content(&json!({"choices": []})), None);
    assert_eq!(
        content(&json!({"error": {"message": "rate limited"}})),
        None
    );
    assert_eq!(content(&json!("not an object")), None);
}

#[test]
fn headline_content_takes_the_first_line_within_twenty_words() {
    let answer = |c: &str| json!({"choices": [{"message": {"content": c}}]});
    assert_eq!(
        headline_content(&answer(
            "\n\n\"Users love the speed but want dark mode.\"\nSecond line"
        ))
        .as_deref(),
        Some("Users love the speed but want dark mode.")
    );
    assert_eq!(
        headline_content(&answer("## **Pricing is the top complaint**")).as_deref(),
        Some("Pricing is the top complaint")
    );
    let long = "word ".repeat(35);
    assert_eq!(word_count(&headline_content(&answer(&long)).unwrap()), 20);
    assert_eq!(headline_content(&answer("  \n ** \n")), None);
}
