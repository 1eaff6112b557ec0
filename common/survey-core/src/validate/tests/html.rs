//! HTML in the texts posthog-js renders is cleaned on create and update; plain text is kept.

use super::*;

const SCRIPTED: &str = r#"<b>Hi</b><img src=x onerror=alert(1)><script>alert(2)</script>"#;
const CLEANED: &str = r#"<b>Hi</b><img src="x">"#;

fn html_body() -> Value {
    with(json!({
        "questions": [question(json!({
            "question": SCRIPTED,
            "description": r#"<a href="javascript:alert(1)">more</a>"#,
            "buttonText": "Send & go",
            "choices": ["<b>kept as sent</b>"],
            "translations": {"fr": {
                "question": SCRIPTED,
                "description": "<svg onload=alert(1)>Pourquoi ?",
            }},
        }))],
        "appearance": {
            "thankYouMessageHeader": SCRIPTED,
            "thankYouMessageDescription": r#"<p onclick="x()">Thanks, <a href="https://posthog.com">read</a></p>"#,
            "thankYouMessageCloseButtonText": "<iframe src=https://evil.example></iframe>Close",
            "introScreenDescription": r#"<div style="width: expression(alert(1))">Hello</div>"#,
            "backgroundColor": "#fff",
        },
        "translations": {"fr": {"thankYouMessageHeader": SCRIPTED, "name": "<b>Avis</b>"}},
    }))
}

fn assert_cleaned(survey: &Survey) {
    let question = &survey.questions[0];
    assert_eq!(question.question, CLEANED);
    assert_eq!(
        question.description.as_deref(),
        Some(r#"<a rel="noopener">more</a>"#)
    );
    // PostHog cleans only the question and its description; posthog-js renders the rest as text.
    assert_eq!(question.button_text.as_deref(), Some("Send & go"));
    assert_eq!(
        question.choices,
        Some(vec!["<b>kept as sent</b>".to_owned()])
    );
    assert_eq!(
        question.translations,
        Some(json!({"fr": {"question": CLEANED, "description": "Pourquoi ?"}}))
    );
    assert_eq!(
        survey.appearance,
        Some(json!({
            "thankYouMessageHeader": CLEANED,
            "thankYouMessageDescription": r#"<p>Thanks, <a href="https://posthog.com" rel="noopener">read</a></p>"#,
            "thankYouMessageCloseButtonText": "Close",
            "introScreenDescription": "<div>Hello</div>",
            "backgroundColor": "#fff",
        }))
    );
    assert_eq!(
        survey.translations,
        Some(json!({"fr": {"thankYouMessageHeader": CLEANED, "name": "<b>Avis</b>"}}))
    );
}

#[tokio::test]
async fn create_cleans_rendered_html() {
    let store = store();
    let checked = created(&store, html_body()).await.unwrap();
    assert_cleaned(&checked.survey);
}

#[tokio::test]
async fn update_cleans_rendered_html() {
    let store = store();
    let plain = created(&store, with(json!({"questions": [question(json!({}))]})))
        .await
        .unwrap();
    let mut patch = html_body();
    if let Value::Object(patch) = &mut patch {
        patch.remove("name");
        patch.remove("type");
    }
    let updated = update(&store, TEAM, &plain.survey, body(patch), now())
        .await
        .unwrap();
    assert_cleaned(&updated.survey);
}

#[tokio::test]
async fn plain_text_is_kept() {
    let store = store();
    let text = "Rate Q&A from 1 < 5 to 5 > 1";
    let checked = created(
        &store,
        with(json!({
            "questions": [question(json!({"question": text, "description": text}))],
            "appearance": {"thankYouMessageHeader": text},
        })),
    )
    .await
    .unwrap();
    assert_eq!(checked.survey.questions[0].question, text);
    assert_eq!(
        checked.survey.questions[0].description.as_deref(),
        Some(text)
    );
    assert_eq!(
        checked.survey.appearance,
        Some(json!({"thankYouMessageHeader": text}))
    );
}
