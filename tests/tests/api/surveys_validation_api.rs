//! Every refusal of a survey write on both backends (reference 1.2–1.4), each in PostHog's words
//! and in the `{"type","code","detail","attr"}` shape: DRF's field checks, the questions and their
//! types, link schemes, conditions and appearance, the flags a survey names, targeting that
//! reaches everyone, what an external survey may not use, recurrence and response sampling, and
//! names unique per project on create and rename.

use api_tests::World;
use axum::http::{Method, StatusCode};
use serde_json::{Value, json};

async fn patch(world: &World, survey: &Value, body: Value) -> Value {
    let (status, answer) = world
        .send_json(Method::PATCH, &world.survey_uri(survey), body.clone())
        .await;
    assert_eq!(status, StatusCode::OK, "{} {body} {answer}", world.name());
    answer
}

/// A valid create body named `name`, with `extra` fields over it.
fn body(name: &str, extra: Value) -> Value {
    let mut body = json!({"name": name, "type": "popover",
        "questions": [{"type": "open", "question": "What could be better?"}]});
    for (key, value) in extra.as_object().unwrap() {
        body[key] = value.clone();
    }
    body
}

/// A refusal the API must answer: the body, then the code, detail and attr of the 400. A
/// detail ending in `…` is a prefix (the rest quotes the clock).
struct Refusal {
    body: Value,
    code: &'static str,
    detail: String,
    attr: Option<&'static str>,
}

fn refusal(body: Value, code: &'static str, detail: &str, attr: Option<&'static str>) -> Refusal {
    Refusal {
        body,
        code,
        detail: detail.to_owned(),
        attr,
    }
}

/// A refused `questions` list (PostHog's `validate_questions`: code `invalid_input`).
fn question_refusal(questions: Value, detail: &str) -> Refusal {
    refusal(
        body("V", json!({"questions": questions})),
        "invalid_input",
        detail,
        Some("questions"),
    )
}

/// A refusal of `extra` over a valid body, with PostHog's plain ValidationError code.
fn invalid(extra: Value, detail: &str, attr: Option<&'static str>) -> Refusal {
    refusal(body("V", extra), "invalid_input", detail, attr)
}

/// What is wrong with the answer to `refusal` (None when it is the expected 400).
fn mismatch(refusal: &Refusal, status: StatusCode, answer: &Value) -> Option<String> {
    let detail = answer["detail"].as_str().unwrap_or_default();
    let detail_ok = match refusal.detail.strip_suffix('…') {
        Some(prefix) => detail.starts_with(prefix),
        None => detail == refusal.detail,
    };
    let shape_ok = answer.as_object().is_some_and(|object| {
        let mut keys: Vec<&str> = object.keys().map(String::as_str).collect();
        keys.sort_unstable();
        keys == ["attr", "code", "detail", "type"]
    });
    let ok = status == StatusCode::BAD_REQUEST
        && shape_ok
        && answer["type"] == "validation_error"
        && answer["code"] == refusal.code
        && answer["attr"].as_str() == refusal.attr
        && detail_ok;
    (!ok).then(|| {
        format!(
            "{}\n  expected {} {:?} {:?} {:?}\n  answered {status} {answer}",
            refusal.body, 400, refusal.code, refusal.detail, refusal.attr
        )
    })
}

/// Sends every refusal; what was not answered as expected is added to `wrong`, so that one
/// run lists every difference on every backend.
async fn check_refused(
    world: &World,
    method: Method,
    uri: &str,
    refusals: &[Refusal],
    wrong: &mut Vec<String>,
) {
    for refusal in refusals {
        let (status, answer) = world
            .send_json(method.clone(), uri, refusal.body.clone())
            .await;
        if let Some(difference) = mismatch(refusal, status, &answer) {
            wrong.push(format!("{} {method} {difference}", world.name()));
        }
    }
}

/// Fails listing every difference found.
fn assert_none_wrong(wrong: &[String]) {
    assert!(
        wrong.is_empty(),
        "{} refusals differ:\n{}",
        wrong.len(),
        wrong.join("\n")
    );
}

const EVERYONE: &str = "Invalid operation: User targeting rolls out to everyone. If you want to roll out to everyone, delete this targeting";
const SHUFFLE_AND_BRANCHING: &str = "Question shuffling and question branching cannot be used together. Please disable one of these features.";
const LINK_SCHEMES: &str = "Link must be a URL with one of these schemes: [https, mailto]";

fn person_filter(key: &str, value: &str) -> Value {
    json!({"key": key, "value": [value], "operator": "exact", "type": "person"})
}

#[tokio::test]
async fn create_refuses_every_invalid_field_with_posthogs_message() {
    let mut wrong = Vec::new();
    for world in World::all().await {
        let name = world.name();
        let uri = world.surveys_uri();
        let boolean = world
            .create_flag(json!({"key": "survey-boolean", "filters": {
                "groups": [{"properties": [], "rollout_percentage": 100}]}}))
            .await;
        let multivariate = world
            .create_flag(json!({"key": "survey-mv", "filters": {
                "groups": [{"properties": [], "rollout_percentage": 100}],
                "multivariate": {"variants": [
                    {"key": "control", "rollout_percentage": 50},
                    {"key": "test", "rollout_percentage": 50}]}}}))
            .await;
        let email = person_filter("email", "a@example.com");
        let open = json!({"type": "open", "question": "Q"});
        let refusals = [
            // DRF's field checks.
            refusal(
                json!({"type": "popover"}),
                "required",
                "This field is required.",
                Some("name"),
            ),
            refusal(
                body("  ", json!({})),
                "blank",
                "This field may not be blank.",
                Some("name"),
            ),
            refusal(
                body(&"x".repeat(401), json!({})),
                "max_length",
                "Ensure this field has no more than 400 characters.",
                Some("name"),
            ),
            refusal(
                json!({"name": "V"}),
                "required",
                "This field is required.",
                Some("type"),
            ),
            refusal(
                body("V", json!({"type": "modal"})),
                "invalid_choice",
                "\"modal\" is not a valid choice.",
                Some("type"),
            ),
            refusal(
                body("V", json!({"colour": "red"})),
                "invalid_input",
                "unknown field `colour`…",
                Some("colour"),
            ),
            refusal(
                body("V", json!({"iteration_count": 501})),
                "max_value",
                "Ensure this value is less than or equal to 500.",
                Some("iteration_count"),
            ),
            refusal(
                body("V", json!({"iteration_count": -1})),
                "min_value",
                "Ensure this value is greater than or equal to 0.",
                Some("iteration_count"),
            ),
            invalid(
                json!({"schedule": "weekly"}),
                "Schedule must be one of: once, recurring, always",
                Some("schedule"),
            ),
            // validate_questions, in its order.
            question_refusal(json!("Why?"), "Questions must be a list of objects"),
            question_refusal(json!(["Why?"]), "Questions must be a list of objects"),
            question_refusal(json!([{"type": "open"}]), "Question text is required"),
            question_refusal(
                json!([{"type": "open", "question": ""}]),
                "Question text is required",
            ),
            question_refusal(
                json!([{"type": "open", "question": 7}]),
                "Question text must be a string",
            ),
            question_refusal(
                json!([{"type": "open", "question": "Q", "description": 5}]),
                "Question description must be a string",
            ),
            question_refusal(
                json!([{"type": "single_choice", "question": "Q", "choices": "Yes, No"}]),
                "Question choices must be a list of strings",
            ),
            question_refusal(
                json!([{"type": "single_choice", "question": "Q", "choices": ["Yes", 2]}]),
                "Question choices must be strings",
            ),
            question_refusal(
                json!([{"type": "multiple_choice", "question": "Q", "choices": ["Yes", " "]}]),
                "Question choices cannot be empty",
            ),
            question_refusal(
                json!([{"type": "open", "question": "Q", "descriptionContentType": "md"}]),
                "Question descriptionContentType must be one of ['text', 'html']",
            ),
            question_refusal(
                json!([{"type": "single_choice", "question": "Q", "choices": ["Yes", "No"],
                    "translations": {"fr": {"choices": ["Oui"]}}}]),
                "Question 1: Translation 'fr' has 1 choices but question has 2 choices. Array lengths must match to avoid partial translations.",
            ),
            // Link schemes.
            question_refusal(
                json!([{"type": "link", "question": "Q", "link": "http://example.com"}]),
                LINK_SCHEMES,
            ),
            question_refusal(
                json!([{"type": "link", "question": "Q", "link": "javascript:alert(1)"}]),
                LINK_SCHEMES,
            ),
            question_refusal(
                json!([{"type": "link", "question": "Q", "link": "mailto:nobody"}]),
                "Invalid mailto link. Please enter a valid mailto link (e.g., mailto:example@domain.com).",
            ),
            question_refusal(
                json!([{"type": "link", "question": "Q", "link": "https://"}]),
                "Invalid HTTPS URL. Please enter a valid HTTPS link.",
            ),
            // The question types' own shapes.
            question_refusal(
                json!([{"type": "essay", "question": "Q"}]),
                "Question 1: type must be one of: open, link, rating, single_choice, multiple_choice",
            ),
            question_refusal(
                json!([{"type": "rating", "question": "Q", "display": "stars"}]),
                "Question 1: display must be one of: number, emoji",
            ),
            question_refusal(
                json!([{"type": "rating", "question": "Q", "scale": 0}]),
                "Question 1: scale must be a positive integer",
            ),
            question_refusal(
                json!([{"type": "open", "question": "Q", "validation": [
                    {"type": "min_length", "value": 10}, {"type": "max_length", "value": 5}]}]),
                "Minimum length cannot be greater than maximum length",
            ),
            question_refusal(
                json!([{"type": "open", "question": "Q",
                    "validation": [{"type": "regex", "value": 3}]}]),
                "Validation rule type must be one of: min_length, max_length, email",
            ),
            question_refusal(
                json!([{"type": "open", "question": "A",
                    "branching": {"type": "specific_question", "index": 5}}, open]),
                "Question 1: branching must point to a question index between 0 and 1",
            ),
            invalid(
                json!({"appearance": {"shuffleQuestions": true}, "questions": [
                    {"type": "open", "question": "A", "branching": {"type": "end"}}]}),
                SHUFFLE_AND_BRANCHING,
                None,
            ),
            // Conditions and appearance.
            invalid(
                json!({"conditions": "https://example.com"}),
                "Conditions must be an object",
                Some("conditions"),
            ),
            invalid(
                json!({"conditions": []}),
                "Conditions must be an object",
                Some("conditions"),
            ),
            invalid(
                json!({"appearance": "dark"}),
                "Appearance must be an object",
                Some("appearance"),
            ),
            invalid(
                json!({"appearance": {"whiteLabel": true}}),
                "You need to upgrade to PostHog Enterprise to use white labelling",
                Some("appearance"),
            ),
            invalid(
                json!({"appearance": {"surveyPopupDelaySeconds": -5}}),
                "Survey popup delay seconds must be a positive integer",
                Some("appearance"),
            ),
            invalid(
                json!({"appearance": {"thankYouMessageDescriptionContentType": "md"}}),
                "thankYouMessageDescriptionContentType must be one of ['text', 'html']",
                Some("appearance"),
            ),
            // Flags and insights the survey names: the serializer's `validate`, so no attr.
            invalid(
                json!({"linked_flag_id": 999_999}),
                "Feature Flag with this ID does not exist",
                None,
            ),
            invalid(
                json!({"targeting_flag_id": 999_999}),
                "Targeting Feature Flag with this ID does not exist",
                None,
            ),
            invalid(
                json!({"linked_insight_id": 5}),
                "Insight with this ID does not exist",
                None,
            ),
            invalid(
                json!({"conditions": {"linkedFlagVariant": "test"}}),
                "linkedFlagVariant can only be used when a linked_flag_id is specified",
                None,
            ),
            invalid(
                json!({"linked_flag_id": boolean["id"], "conditions": {"linkedFlagVariant": "test"}}),
                "Feature flag variant 'test' specified but the linked feature flag has no variants",
                None,
            ),
            invalid(
                json!({"linked_flag_id": multivariate["id"],
                    "conditions": {"linkedFlagVariant": "nope"}}),
                "Feature flag variant 'nope' does not exist. Available variants: control, test",
                None,
            ),
            // Targeting that reaches everyone: PostHog's code `invalid`, which
            // drf-exceptions-hog answers as `invalid_input`.
            invalid(
                json!({"targeting_flag_filters": {"groups": [
                    {"properties": [], "rollout_percentage": 100}]}}),
                EVERYONE,
                None,
            ),
            invalid(
                json!({"targeting_flag_filters": {"groups": [
                    {"properties": [email], "rollout_percentage": 30},
                    {"rollout_percentage": null}]}}),
                EVERYONE,
                None,
            ),
            // What a hosted page cannot use (the first of PostHog's dict of errors).
            invalid(
                json!({"type": "external_survey", "linked_flag_id": boolean["id"]}),
                "linked_flag_id is not allowed for external surveys",
                Some("linked_flag_id"),
            ),
            invalid(
                json!({"type": "external_survey", "targeting_flag_filters": {"groups": [
                    {"properties": [email], "rollout_percentage": 100}]}}),
                "targeting_flag_filters is not allowed for external surveys",
                Some("targeting_flag_filters"),
            ),
            invalid(
                json!({"type": "external_survey", "conditions": {
                    "url": "https://example.com", "deviceTypes": ["Mobile"],
                    "events": {"values": [{"name": "purchase"}]}}}),
                "The following condition fields are not allowed for external surveys: url, deviceTypes, events",
                Some("conditions"),
            ),
            invalid(
                json!({"type": "external_survey", "appearance": {"surveyPopupDelaySeconds": 3}}),
                "surveyPopupDelaySeconds is not allowed for external surveys",
                Some("appearance"),
            ),
            // Response sampling.
            invalid(
                json!({"response_sampling_start_date": "2020-01-01T00:00:00Z",
                    "response_sampling_interval": 1, "response_sampling_limit": 10}),
                "Response sampling start date must be today or a future date in UTC. Got 2020-01-01 00:00:00+00:00 when current time is …",
                Some("response_sampling_start_date"),
            ),
            invalid(
                json!({"response_sampling_interval": 0}),
                "Response sampling interval must be greater than 0.",
                Some("response_sampling_interval"),
            ),
            invalid(
                json!({"response_sampling_interval": 2, "response_sampling_limit": 10}),
                "Response sampling start date should be set if response_sampling_start_date is not zero.",
                Some("response_sampling_start_date"),
            ),
        ];
        check_refused(&world, Method::POST, &uri, &refusals, &mut wrong).await;

        // Nothing refused was written.
        let (_, listed) = world.get(&uri, Some(world.admin_key())).await;
        assert_eq!(listed["count"], 0, "{name} {listed}");

        // The same fields, made valid, are accepted: each refusal was about its one field.
        for (title, extra) in [
            (
                "Variant any",
                json!({"linked_flag_id": multivariate["id"],
                    "conditions": {"linkedFlagVariant": "any"}}),
            ),
            (
                "Variant test",
                json!({"linked_flag_id": multivariate["id"],
                    "conditions": {"linkedFlagVariant": "test"}}),
            ),
            (
                "External",
                json!({"type": "external_survey", "conditions": {"events": {"values": []}}}),
            ),
            (
                "Links",
                json!({"questions": [
                    {"type": "link", "question": "Read", "link": "https://example.com/docs"},
                    {"type": "link", "question": "Mail", "link": "mailto:team@example.com"}]}),
            ),
            (
                "Targeted",
                json!({"targeting_flag_filters": {"groups": [
                    {"properties": [email], "rollout_percentage": 100}]}}),
            ),
            (
                "Shuffled",
                json!({"appearance": {"shuffleQuestions": true, "surveyPopupDelaySeconds": 0}}),
            ),
        ] {
            world.create_survey(body(title, extra)).await;
        }
        let (_, listed) = world.get(&uri, Some(world.admin_key())).await;
        assert_eq!(listed["count"], 6, "{name}");
    }
    assert_none_wrong(&wrong);
}

#[tokio::test]
async fn names_are_unique_per_project_on_create_and_rename() {
    let mut wrong = Vec::new();
    for world in World::all().await {
        let name = world.name();
        let uri = world.surveys_uri();
        world.create_survey(body("Taken", json!({}))).await;
        let other = world.create_survey(body("Other", json!({}))).await;
        let other_uri = world.survey_uri(&other);
        check_refused(
            &world,
            Method::POST,
            &uri,
            &[refusal(
                body("Taken", json!({})),
                "unique",
                "There is already a survey with this name.",
                Some("name"),
            )],
            &mut wrong,
        )
        .await;
        check_refused(
            &world,
            Method::PATCH,
            &other_uri,
            &[
                refusal(
                    json!({"name": "Taken"}),
                    "unique",
                    "There is already another survey with this name.",
                    Some("name"),
                ),
                refusal(
                    json!({"name": null}),
                    "null",
                    "This field may not be null.",
                    Some("name"),
                ),
                refusal(
                    json!({"type": "modal"}),
                    "invalid_choice",
                    "\"modal\" is not a valid choice.",
                    Some("type"),
                ),
                refusal(
                    json!({"questions": [{"type": "link", "question": "Q", "link": "ftp://x"}]}),
                    "invalid_input",
                    LINK_SCHEMES,
                    Some("questions"),
                ),
                refusal(
                    json!({"targeting_flag_filters": {"groups": [{"rollout_percentage": 100}]}}),
                    "invalid_input",
                    EVERYONE,
                    None,
                ),
            ],
            &mut wrong,
        )
        .await;
        // Keeping one's own name is no clash; a rename frees the old name.
        patch(&world, &other, json!({"name": "Other", "description": "d"})).await;
        patch(&world, &other, json!({"name": "Renamed"})).await;
        world.create_survey(body("Other", json!({}))).await;

        // Another project of the organization may use the name.
        let second = common::provisioning::create_project(
            world.backend.state.store.as_ref(),
            world.bootstrap.organization.id,
            "Second",
            "UTC",
        )
        .await
        .unwrap();
        let (status, answer) = world
            .send_json(
                Method::POST,
                &format!("/api/projects/{}/surveys/", second.id),
                body("Taken", json!({})),
            )
            .await;
        assert_eq!(status, StatusCode::CREATED, "{name} {answer}");

        // The update's own rule: a recurrence cannot shrink below the iteration it is in.
        let recurring = world
            .create_survey(body(
                "Recurring",
                json!({"iteration_count": 3, "iteration_frequency_days": 7,
                    "start_date": "2030-01-01T00:00:00Z"}),
            ))
            .await;
        assert_eq!(recurring["current_iteration"], 1, "{name}");
        patch(&world, &recurring, json!({"current_iteration": 3})).await;
        let recurring_uri = world.survey_uri(&recurring);
        check_refused(
            &world,
            Method::PATCH,
            &recurring_uri,
            &[refusal(
                json!({"iteration_count": 2}),
                "invalid_input",
                "Cannot change survey recurrence to 2, should be at least 3",
                None,
            )],
            &mut wrong,
        )
        .await;
        // Shuffling an existing survey's branching questions is the same conflict as on create.
        let branching = world.create_survey(body(
                "Branching",
                json!({"questions": [{"type": "open", "question": "A", "branching": {"type": "end"}}]}),
            ),
        )
        .await;
        check_refused(
            &world,
            Method::PATCH,
            &world.survey_uri(&branching),
            &[refusal(
                json!({"appearance": {"shuffleQuestions": true}}),
                "invalid_input",
                SHUFFLE_AND_BRANCHING,
                None,
            )],
            &mut wrong,
        )
        .await;
        // The refused PATCHes wrote nothing.
        let (_, after) = world.get(&recurring_uri, Some(world.admin_key())).await;
        assert_eq!(after["iteration_count"], 3, "{name}");
        let (_, after) = world.get(&other_uri, Some(world.admin_key())).await;
        assert_eq!(after["name"], "Renamed", "{name}");
        assert_eq!(after["type"], "popover", "{name}");
        assert_eq!(after["targeting_flag"], Value::Null, "{name}");
        let (_, log) = world
            .get(&format!("{other_uri}activity/"), Some(world.admin_key()))
            .await;
        assert_eq!(
            log["total_count"], 3,
            "{name}: created and two updates {log}"
        );
    }
    assert_none_wrong(&wrong);
}
