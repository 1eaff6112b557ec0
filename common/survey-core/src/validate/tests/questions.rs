//! Questions and languages.

use super::*;

#[tokio::test]
async fn question_messages() {
    let store = store();
    let https = |link: &str| question(json!({"type": "link", "link": link}));
    let cases = [
        (json!({"a": 1}), "Questions must be a list of objects"),
        (json!(["text"]), "Questions must be a list of objects"),
        (
            json!([question(json!({"question": ""}))]),
            "Question text is required",
        ),
        (
            json!([question(json!({"question": 5}))]),
            "Question text must be a string",
        ),
        (
            json!([question(json!({"description": 5}))]),
            "Question description must be a string",
        ),
        (
            json!([question(json!({"buttonText": 5}))]),
            "Question buttonText must be a string",
        ),
        (
            json!([question(json!({"lowerBoundLabel": [1]}))]),
            "Question lowerBoundLabel must be a string",
        ),
        (
            json!([question(json!({"upperBoundLabel": true}))]),
            "Question upperBoundLabel must be a string",
        ),
        (
            json!([question(json!({"choices": "a,b"}))]),
            "Question choices must be a list of strings",
        ),
        (
            json!([question(json!({"choices": ["a", 2]}))]),
            "Question choices must be strings",
        ),
        (
            json!([question(json!({"choices": ["a", " "]}))]),
            "Question choices cannot be empty",
        ),
        (
            json!([question(json!({"descriptionContentType": "md"}))]),
            "Question descriptionContentType must be one of ['text', 'html']",
        ),
        (
            json!([https("http://x.com")]),
            "Link must be a URL with one of these schemes: [https, mailto]",
        ),
        (
            json!([https("javascript:alert(1)")]),
            "Link must be a URL with one of these schemes: [https, mailto]",
        ),
        (
            json!([https("mailto:nobody")]),
            "Invalid mailto link. Please enter a valid mailto link (e.g., mailto:example@domain.com).",
        ),
        (
            json!([https("https://")]),
            "Invalid HTTPS URL. Please enter a valid HTTPS link.",
        ),
        (
            json!([question(json!({"link": 5}))]),
            "Question 1: link must be a string",
        ),
        (
            json!([question(json!({"validation": {}}))]),
            "Question validation must be a list of validation rules",
        ),
        (
            json!([question(json!({"validation": [1]}))]),
            "Each validation rule must be an object",
        ),
        (
            json!([question(json!({"validation": [{"type": "regex"}]}))]),
            "Validation rule type must be one of: min_length, max_length, email",
        ),
        (
            json!([question(
                json!({"validation": [{"type": "min_length", "value": 0}]})
            )]),
            "Validation rule value for min_length must be a positive integer",
        ),
        (
            json!([question(
                json!({"validation": [{"type": "min_length", "value": 9}, {"type": "max_length", "value": 3}]})
            )]),
            "Minimum length cannot be greater than maximum length",
        ),
        (
            json!([question(json!({"type": "essay"}))]),
            "Question 1: type must be one of: open, link, rating, single_choice, multiple_choice",
        ),
        (
            json!([question(json!({"type": "rating", "display": "stars"}))]),
            "Question 1: display must be one of: number, emoji",
        ),
        (
            json!([question(json!({"type": "rating", "scale": 0}))]),
            "Question 1: scale must be a positive integer",
        ),
        (
            json!([question(json!({"branching": {"type": "jump"}}))]),
            "Question 1: branching type must be one of: next_question, end, specific_question, response_based",
        ),
        (
            json!([question(
                json!({"branching": {"type": "specific_question", "index": 1}})
            )]),
            "Question 1: branching must point to a question index between 0 and 0",
        ),
        (
            json!([question(json!({"branching": {"type": "response_based"}}))]),
            "Question 1: response_based branching needs a responseValues object",
        ),
        (
            json!([question(
                json!({"branching": {"type": "response_based", "responseValues": {"a": 3}}})
            )]),
            "Question 1: branching must point to a question index between 0 and 0",
        ),
        (
            json!([question(json!({"colour": "red"}))]),
            "Question 1: unknown field `colour`",
        ),
    ];
    for (list, message) in cases {
        let (attr, _, detail) = refused(&store, questions(list.clone())).await;
        assert_eq!(attr.as_deref(), Some("questions"), "{list}");
        assert!(detail.starts_with(message), "{list}: {detail}");
    }
    let fine = json!([
        https("https://posthog.com/docs"),
        https("mailto:hey@posthog.com"),
        question(json!({"type": "rating", "display": "emoji", "scale": 5,
            "branching": {"type": "response_based", "responseValues": {"1": 2, "5": "end"}}})),
        question(
            json!({"type": "single_choice", "choices": ["a", "b"], "id": null,
            "branching": {"type": "specific_question", "index": 0}})
        ),
        question(
            json!({"validation": [{"type": "min_length", "value": 2}, {"type": "max_length", "value": 9}, {"type": "email"}]})
        ),
    ]);
    let survey = created(&store, questions(fine)).await.unwrap().survey;
    assert_eq!(survey.questions.len(), 5);
    assert!(survey.questions.iter().all(|q| !q.id.is_empty()));
}

#[tokio::test]
async fn question_translations() {
    let store = store();
    let translated = |translations: Value| {
        questions(json!([question(
            json!({"type": "single_choice", "choices": ["a", "b"], "translations": translations})
        )]))
    };
    let cases = [
        (json!([1]), "Question 1: translations must be an object"),
        (
            json!({"fr": "x"}),
            "Question 1: Translation for 'fr' must be an object",
        ),
        (
            json!({"fr": {"question": 1}}),
            "Question 1: Translation 'fr' field 'question' must be a string",
        ),
        (
            json!({"fr": {"link": 1}}),
            "Question 1: Translation 'fr' field 'link' must be a string",
        ),
        (
            json!({"fr": {"link": "ftp://x"}}),
            "Link must be a URL with one of these schemes: [https, mailto]",
        ),
        (
            json!({"fr": {"choices": "a"}}),
            "Question 1: Translation 'fr' field 'choices' must be a list of strings",
        ),
        (
            json!({"fr": {"choices": ["a"]}}),
            "Question 1: Translation 'fr' has 1 choices but question has 2 choices. Array lengths must match to avoid partial translations.",
        ),
        (
            json!({"french": {"question": "q"}}),
            "Question 1: 'french' is not a valid language code.",
        ),
        (
            json!({"default": {"question": "q"}}),
            "Question 1: 'default' is not a valid language code.",
        ),
        (
            json!({"EN": {"question": "q"}}),
            "Question 1: 'EN' is the survey's base_language",
        ),
    ];
    for (translations, message) in cases {
        let (attr, _, detail) = refused(&store, translated(translations.clone())).await;
        assert_eq!(attr.as_deref(), Some("questions"));
        assert!(detail.starts_with(message), "{translations}: {detail}");
    }
    // Unknown fields and empty languages are dropped; regional codes are fine.
    let survey = created(
        &store,
        translated(json!({"pt_BR": {"question": "Por quê?", "extra": 1}, "de": {"extra": 1}})),
    )
    .await
    .unwrap()
    .survey;
    assert_eq!(
        survey.questions[0].translations,
        Some(json!({"pt_BR": {"question": "Por quê?"}}))
    );
}

#[tokio::test]
async fn survey_languages() {
    let store = store();
    let cases = [
        (
            json!({"base_language": "english"}),
            "base_language",
            "'english' is not a valid language code.",
        ),
        (
            json!({"base_language": "x".repeat(21)}),
            "base_language",
            "Ensure this field has no more than 20 characters.",
        ),
        (
            json!({"translations": []}),
            "translations",
            "Translations must be an object",
        ),
        (
            json!({"translations": {"fr": 1}}),
            "translations",
            "Translation for 'fr' must be an object",
        ),
        (
            json!({"translations": {"fr": {"name": 1}}}),
            "translations",
            "Translation for 'fr': 'name' must be a string",
        ),
        (
            json!({"translations": {"original": {"name": "n"}}}),
            "translations",
            "'original' is not a valid language code.",
        ),
        (
            json!({"base_language": "fr", "translations": {"fr": {"name": "n"}}}),
            "translations",
            "'fr' is the survey's base_language",
        ),
    ];
    for (extra, attr, message) in cases {
        let (got, _, detail) = refused(&store, with(extra.clone())).await;
        assert_eq!(got.as_deref(), Some(attr), "{extra}");
        assert!(detail.starts_with(message), "{extra}: {detail}");
    }
    let survey = created(
        &store,
        with(json!({"base_language": "de", "translations": {"en": {"name": "Feedback", "x": 1}, "es": {}}})),
    )
    .await
    .unwrap()
    .survey;
    assert_eq!(
        survey.translations,
        Some(json!({"en": {"name": "Feedback"}}))
    );

    // A key a survey already had stays accepted, even one the rules refuse today.
    let mut legacy = survey.clone();
    legacy.translations = Some(json!({"english": {"name": "x"}}));
    let patched = update(
        &store,
        TEAM,
        &legacy,
        body(json!({"translations": {"english": {"name": "y"}}})),
        now(),
    )
    .await
    .unwrap();
    assert_eq!(
        patched.survey.translations,
        Some(json!({"english": {"name": "y"}}))
    );
}
