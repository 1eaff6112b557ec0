//! `headline`: clauses, fallbacks and the word limit.

use super::*;
use crate::summary::text::word_count;

#[test]
fn headline_fallbacks() {
    assert_eq!(headline(&[], &texts("x", &["a"])), NO_QUESTIONS);
    let links = [q("l", QuestionType::Link, "Docs")];
    assert_eq!(
        headline(&links, &texts("l", &["link clicked"])),
        NO_QUESTIONS
    );
    let open = [q("o", QuestionType::Open, "Why?")];
    assert_eq!(headline(&open, &[]), NO_RESPONSES_YET);
    assert_eq!(
        headline(&open, &texts("x", &["unrelated"])),
        NO_RESPONSES_YET
    );
}

#[test]
fn headline_combines_one_clause_per_question() {
    let questions = [
        rating_q("r", 10, true),
        choice_q("c", QuestionType::SingleChoice, &["Price", "Speed"], false),
        q("o", QuestionType::Open, "What should we improve?"),
    ];
    let mut responses = Vec::new();
    for (i, text) in FEEDBACK.iter().enumerate() {
        let score = [10, 9, 6, 8, 10, 3, 9, 10, 7, 9][i];
        let pick = if i % 3 == 0 { "Speed" } else { "Price" };
        responses.push(Answers {
            submitted_at: base() + Duration::minutes(i as i64),
            by_question: BTreeMap::from([
                ("r".to_owned(), json!(score)),
                ("c".to_owned(), json!(pick)),
                ("o".to_owned(), json!(text)),
            ]),
        });
    }
    assert_eq!(
        headline(&questions, &responses),
        "10 responses: NPS 40 (average 8.10/10); top answer \"Price\" (60%); common theme \"dark mode\"."
    );
}

#[test]
fn headline_open_text_without_themes() {
    let open = [q("o", QuestionType::Open, "Why?")];
    assert_eq!(
        headline(&open, &texts("o", &["Nothing", "nothing"])),
        "2 responses: frequent answer \"nothing\"."
    );
    assert_eq!(
        headline(&open, &texts("o", &["pricing", "speed"])),
        "2 responses: 2 comments with no common theme."
    );
}

#[test]
fn headline_never_exceeds_twenty_words() {
    let long = "This is an extremely long question text that goes on and on well beyond twenty words to make sure nothing quotes it verbatim anywhere";
    let long_choice = "An answer choice that is itself far longer than any headline could ever hold in twenty words or fewer";
    let mut questions = Vec::new();
    for i in 0..12 {
        let id = format!("q{i}");
        let mut question = match i % 4 {
            0 => rating_q(&id, 10, false),
            1 => choice_q(&id, QuestionType::MultipleChoice, &[long_choice, "B"], true),
            2 => q(&id, QuestionType::Open, long),
            _ => rating_q(&id, 5, false),
        };
        question.question = long.to_owned();
        questions.push(question);
    }
    for n in [1usize, 2, 3, 7, 40] {
        for upto in 1..=questions.len() {
            let responses: Vec<Answers> = (0..n)
                .map(|r| Answers {
                    submitted_at: base() + Duration::minutes(r as i64),
                    by_question: questions[..upto]
                        .iter()
                        .map(|question| {
                            let value = match question.kind {
                                QuestionType::Rating => json!(r % 11),
                                QuestionType::MultipleChoice => {
                                    json!([long_choice, format!("free text {long} {r}")])
                                }
                                _ => json!(format!("{long} {r}")),
                            };
                            (question.id.clone(), value)
                        })
                        .collect(),
                })
                .collect();
            let text = headline(&questions[..upto], &responses);
            assert!(
                word_count(&text) <= HEADLINE_MAX_WORDS,
                "{} words: {text}",
                word_count(&text)
            );
            assert!(text.ends_with('.'), "{text}");
            assert!(!text.contains("extremely long question"), "{text}");
        }
    }
}

#[test]
fn headline_does_not_depend_on_response_order() {
    let questions = [
        q("o", QuestionType::Open, "Why?"),
        choice_q("c", QuestionType::SingleChoice, &["A", "B"], false),
    ];
    let mut responses = texts("o", FEEDBACK);
    for (i, r) in responses.iter_mut().enumerate() {
        r.by_question
            .insert("c".into(), json!(if i % 2 == 0 { "A" } else { "B" }));
    }
    let forward = headline(&questions, &responses);
    responses.reverse();
    assert_eq!(headline(&questions, &responses), forward);
    // A 50/50 tie is broken by the label.
    assert!(forward.contains("top answer \"A\" (50%)"), "{forward}");
}
