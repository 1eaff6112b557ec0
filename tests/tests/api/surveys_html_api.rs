//! Survey HTML is sanitised before it is stored, on both backends: XSS payloads sent through
//! create and PATCH in every text posthog-js may render as HTML (question, description, their
//! translations, the thank-you and intro texts, survey translations) come back without scripts,
//! event handlers or scripted URLs from the API and from the public `/api/surveys/?token=`
//! payload, while benign formatting and plain text are kept.

use api_tests::World;
use axum::http::{Method, StatusCode};
use serde_json::{Value, json};

const PAYLOADS: &[&str] = &[
    "<script>alert(1)</script>",
    "<SCRIPT SRC=https://evil.example/x.js></SCRIPT>",
    "<img src=x onerror=alert(1)>",
    "<IMG SRC=x OnErRoR=alert(1)>",
    r#"<a href="javascript:alert(1)">x</a>"#,
    r#"<a href="JaVaScRiPt:alert(1)">x</a>"#,
    r#"<a href="&#106;avascript:alert(1)">x</a>"#,
    r#"<a href="&#x6A;avascript&colon;alert(1)">x</a>"#,
    r#"<a href=" javascript:alert(1)">x</a>"#,
    "<a href=\"java\tscript:alert(1)\">x</a>",
    r#"<a href="vbscript:msgbox(1)">x</a>"#,
    r#"<a href="data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==">x</a>"#,
    r#"<img src="data:image/svg+xml,<svg onload=alert(1)>">"#,
    "<svg onload=alert(1)>",
    "<svg><script>alert(1)</script></svg>",
    r#"<iframe src="https://evil.example"></iframe>"#,
    r#"<iframe srcdoc="<script>alert(1)</script>"></iframe>"#,
    r#"<object data="javascript:alert(1)"></object>"#,
    r#"<embed src="javascript:alert(1)">"#,
    "<body onload=alert(1)>",
    r#"<div onclick="alert(1)">x</div>"#,
    r#"<form action="javascript:alert(1)"><button>x</button></form>"#,
    "<input autofocus onfocus=alert(1)>",
    "<details open ontoggle=alert(1)>x</details>",
    r#"<math><mtext><a href="javascript:alert(1)">x</a></mtext></math>"#,
    "<style>body{background:url(javascript:alert(1))}</style>",
    r#"<div style="width: expression(alert(1))">x</div>"#,
    r#"<div style="width: expr/**/ession(alert(1))">x</div>"#,
    r#"<div style="background:url('javascript:alert(1)')">x</div>"#,
    r#"<meta http-equiv="refresh" content="0;url=javascript:alert(1)">"#,
    r#"<base href="javascript:alert(1)//">"#,
    "<!--<img src=x onerror=alert(1)>-->",
    "<<script>script>alert(1)<</script>/script>",
    r#"<a href="https://ok.example" onclick="alert(1)">x</a>"#,
];

/// What no stored survey may carry (compared lowercased).
const FORBIDDEN: &[&str] = &[
    "<script",
    "<svg",
    "<iframe",
    "<object",
    "<embed",
    "<style",
    "<meta",
    "<base",
    "<form",
    "<input",
    "<math",
    "onerror",
    "onload",
    "onclick",
    "onfocus",
    "ontoggle",
    "javascript:",
    "vbscript:",
    "data:",
    "expression(",
    "url(",
    "srcdoc",
];

/// A body putting `texts` (one per question, rotated over the appearance and translation texts)
/// into every field that is sanitised.
fn html_fields(texts: &[&str]) -> Value {
    let at = |i: usize| texts[i % texts.len()];
    let questions: Vec<Value> = texts
        .iter()
        .enumerate()
        .map(|(i, text)| {
            json!({
                "type": "open",
                "question": text,
                "description": at(i + 1),
                "descriptionContentType": "html",
                "translations": {"fr": {"question": at(i + 2), "description": at(i + 3)}},
            })
        })
        .collect();
    json!({
        "questions": questions,
        "appearance": {
            "thankYouMessageHeader": at(0),
            "thankYouMessageDescription": at(1),
            "thankYouMessageDescriptionContentType": "html",
            "thankYouMessageCloseButtonText": at(2),
            "introScreenHeader": at(3),
            "introScreenDescription": at(4),
        },
        "translations": {"fr": {
            "thankYouMessageHeader": at(1),
            "thankYouMessageDescription": at(2),
            "thankYouMessageCloseButtonText": at(3),
        }},
    })
}

fn merged(mut body: Value, extra: Value) -> Value {
    if let (Value::Object(body), Value::Object(extra)) = (&mut body, extra) {
        body.extend(extra);
    }
    body
}

async fn retrieve(world: &World, survey: &Value) -> Value {
    let (status, answer) = world
        .get(&world.survey_uri(survey), Some(world.admin_key()))
        .await;
    assert_eq!(status, StatusCode::OK, "{} {answer}", world.name());
    answer
}

/// The survey as the public SDK payload lists it.
async fn public(world: &World, survey: &Value) -> Value {
    let (status, payload) = world
        .get(
            &format!("/api/surveys/?token={}", world.bootstrap.project.api_token),
            None,
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{} {payload}", world.name());
    payload["surveys"]
        .as_array()
        .and_then(|surveys| surveys.iter().find(|s| s["id"] == survey["id"]))
        .cloned()
        .unwrap_or_else(|| panic!("{} lists {}: {payload}", world.name(), survey["id"]))
}

fn assert_clean(world: &World, context: &str, survey: &Value) {
    let text = survey.to_string().to_lowercase();
    for bad in FORBIDDEN {
        assert!(
            !text.contains(bad),
            "{} {context}: {bad} in {survey}",
            world.name()
        );
    }
}

/// The answer to a write, the API's read and the public payload all carry no payload.
async fn assert_stored_clean(world: &World, context: &str, answer: &Value) {
    assert_clean(world, &format!("{context} answer"), answer);
    assert_clean(
        world,
        &format!("{context} GET"),
        &retrieve(world, answer).await,
    );
    assert_clean(
        world,
        &format!("{context} public"),
        &public(world, answer).await,
    );
}

#[tokio::test]
async fn xss_payloads_are_cleaned_on_create_and_patch() {
    for world in World::all().await {
        for (n, chunk) in PAYLOADS.chunks(5).enumerate() {
            let create = merged(
                json!({"name": format!("HTML {n}"), "type": "popover"}),
                html_fields(chunk),
            );
            let created = world.create_survey(create).await;
            assert_stored_clean(&world, &format!("create {chunk:?}"), &created).await;

            // A PATCH moves each payload into another field.
            let mut rotated = chunk.to_vec();
            rotated.rotate_left(1);
            let (status, patched) = world
                .send_json(
                    Method::PATCH,
                    &world.survey_uri(&created),
                    html_fields(&rotated),
                )
                .await;
            assert_eq!(status, StatusCode::OK, "{} {patched}", world.name());
            assert_stored_clean(&world, &format!("patch {rotated:?}"), &patched).await;
        }
        // What is safe in a cleaned text is kept.
        let plain = world
            .create_survey(json!({"name": "Plain", "type": "popover",
                "questions": [{"type": "open", "question": "Why?"}]}))
            .await;
        let (status, patched) = world
            .send_json(
                Method::PATCH,
                &world.survey_uri(&plain),
                json!({"appearance": {"thankYouMessageHeader": "<b onclick=alert(1)>Thanks</b>"}}),
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{} {patched}", world.name());
        assert_eq!(
            public(&world, &plain).await["appearance"]["thankYouMessageHeader"],
            "<b>Thanks</b>",
            "{}",
            world.name()
        );
    }
}

#[tokio::test]
async fn formatting_and_plain_text_survive() {
    const FORMATTED: &str = r#"<p><b>Bold</b>, <strong>strong</strong> and <i>it</i><br><a href="https://posthog.com/docs" target="_blank">docs</a></p>"#;
    const STORED: &str = r#"<p><b>Bold</b>, <strong>strong</strong> and <i>it</i><br><a href="https://posthog.com/docs" target="_blank" rel="noopener">docs</a></p>"#;
    const PLAIN: &str = "Q&A: is 1 < 2 && 3 > 2?";
    for world in World::all().await {
        let created = world
            .create_survey(json!({
                "name": "Formatted",
                "type": "popover",
                "questions": [{"type": "open", "question": PLAIN, "description": FORMATTED,
                    "descriptionContentType": "html"}],
                "appearance": {"thankYouMessageHeader": PLAIN,
                    "thankYouMessageDescription": FORMATTED},
            }))
            .await;
        let (status, patched) = world
            .send_json(
                Method::PATCH,
                &world.survey_uri(&created),
                json!({"appearance": {"thankYouMessageHeader": PLAIN,
                    "thankYouMessageDescription": FORMATTED,
                    "introScreenDescription": FORMATTED}}),
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{} {patched}", world.name());
        for (source, survey) in [
            ("created", created.clone()),
            ("GET", retrieve(&world, &created).await),
            ("public", public(&world, &created).await),
        ] {
            let question = &survey["questions"][0];
            assert_eq!(question["question"], PLAIN, "{} {source}", world.name());
            assert_eq!(question["description"], STORED, "{} {source}", world.name());
            assert_eq!(
                survey["appearance"]["thankYouMessageHeader"],
                PLAIN,
                "{} {source}",
                world.name()
            );
            assert_eq!(
                survey["appearance"]["thankYouMessageDescription"],
                STORED,
                "{} {source}",
                world.name()
            );
        }
        for survey in [
            patched.clone(),
            retrieve(&world, &created).await,
            public(&world, &created).await,
        ] {
            assert_eq!(
                survey["appearance"]["introScreenDescription"],
                STORED,
                "{}",
                world.name()
            );
        }
    }
}
