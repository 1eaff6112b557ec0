//! The surveys family's writes on both backends (reference 1.1–1.6): the read shape with its
//! minimal flags and `feature_flag_keys`, the internal targeting flag (its filters, its activity
//! following launch, stop and archive), the targeting flag made from `targeting_flag_filters` as
//! the flags API shows it, question ids, response sampling and recurrence, launch and stop
//! refusals, delete, and the actions the conditions name shown as they are now (API and SDK).
//! Validation messages are in surveys_validation_api.rs.

use api_tests::{World, error_shape};
use axum::http::{Method, StatusCode};
use serde_json::{Value, json};

async fn patch(world: &World, survey: &Value, body: Value) -> Value {
    let (status, answer) = world
        .send_json(Method::PATCH, &world.survey_uri(survey), body.clone())
        .await;
    assert_eq!(status, StatusCode::OK, "{} {body} {answer}", world.name());
    answer
}

async fn retrieve(world: &World, survey: &Value) -> Value {
    let (status, answer) = world
        .get(&world.survey_uri(survey), Some(world.admin_key()))
        .await;
    assert_eq!(status, StatusCode::OK, "{} {answer}", world.name());
    answer
}

/// `POST :id/<action>/` (launch, stop) with the admin key; must answer 200.
async fn act(world: &World, survey: &Value, action: &str) -> Value {
    let (status, answer) = world
        .send(
            Method::POST,
            &format!("{}{action}/", world.survey_uri(survey)),
            Some(world.admin_key()),
            None,
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{} {action} {answer}", world.name());
    answer
}

/// The flags API's view of flag `id`.
async fn flag(world: &World, id: &Value) -> (StatusCode, Value) {
    world
        .get(
            &format!("{}{id}/", world.flags_uri()),
            Some(world.admin_key()),
        )
        .await
}

fn open(text: &str) -> Value {
    json!({"type": "open", "question": text})
}

/// A valid create body named `name`, with `extra` fields over it.
fn body(name: &str, extra: Value) -> Value {
    let mut body =
        json!({"name": name, "type": "popover", "questions": [open("What could be better?")]});
    for (key, value) in extra.as_object().unwrap() {
        body[key] = value.clone();
    }
    body
}

fn sorted_keys(value: &Value) -> Vec<String> {
    let mut keys: Vec<String> = value.as_object().unwrap().keys().cloned().collect();
    keys.sort();
    keys
}

fn is_uuid(value: &Value) -> bool {
    value
        .as_str()
        .is_some_and(|text| text.parse::<uuid::Uuid>().is_ok())
}

/// Checks a lifecycle refusal: a 400 in the error shape, code `invalid_input`, no attr.
fn assert_refused(status: StatusCode, answer: &Value, detail: &str, context: &str) {
    assert_eq!(status, StatusCode::BAD_REQUEST, "{context}: {answer}");
    let (code, attr) = error_shape(answer);
    assert_eq!(answer["type"], "validation_error", "{context}: {answer}");
    assert_eq!(code, "invalid_input", "{context}: {answer}");
    assert_eq!(attr, None, "{context}: {answer}");
    assert_eq!(answer["detail"], detail, "{context}");
}

/// SurveySerializer's fields (reference 1.5).
const READ_FIELDS: &[&str] = &[
    "appearance",
    "archived",
    "base_language",
    "conditions",
    "created_at",
    "created_by",
    "current_iteration",
    "current_iteration_start_date",
    "description",
    "enable_iframe_embedding",
    "enable_partial_responses",
    "end_date",
    "feature_flag_keys",
    "form_content",
    "id",
    "internal_targeting_flag",
    "iteration_count",
    "iteration_frequency_days",
    "iteration_start_dates",
    "linked_flag",
    "linked_flag_id",
    "linked_insight_id",
    "name",
    "questions",
    "response_sampling_daily_limits",
    "response_sampling_interval",
    "response_sampling_interval_type",
    "response_sampling_limit",
    "response_sampling_start_date",
    "responses_limit",
    "schedule",
    "search_match_type",
    "start_date",
    "targeting_flag",
    "translations",
    "type",
    "user_access_level",
];

/// What the create/update serializer shows besides: no write-only field, no
/// `feature_flag_keys` or `user_access_level`.
const NOT_WRITTEN: &[&str] = &[
    "feature_flag_keys",
    "linked_flag_id",
    "linked_insight_id",
    "search_match_type",
    "user_access_level",
];

/// MinimalFeatureFlagSerializer's fields.
const MINIMAL_FLAG_FIELDS: &[&str] = &[
    "active",
    "deleted",
    "ensure_experience_continuity",
    "evaluation_runtime",
    "evaluation_tags",
    "filters",
    "has_encrypted_payloads",
    "id",
    "key",
    "name",
    "team_id",
    "version",
];

fn not_set(key: String) -> Value {
    json!({"key": key, "type": "person", "value": "is_not_set", "operator": "is_not_set"})
}

fn flag_keys(survey: &Value) -> Vec<(String, Value)> {
    survey["feature_flag_keys"]
        .as_array()
        .unwrap()
        .iter()
        .map(|entry| {
            (
                entry["key"].as_str().unwrap().to_owned(),
                entry["value"].clone(),
            )
        })
        .collect()
}

#[tokio::test]
async fn read_shape_internal_flag_launch_stop_and_question_ids() {
    for world in World::all().await {
        let name = world.name();
        let project = world.bootstrap.project.id;
        let created = world
            .create_survey(
                json!({"name": "Shape", "description": "Internal notes", "type": "popover",
                "questions": [
                    open("What could be better?"),
                    {"type": "rating", "question": "How likely?", "scale": 10,
                     "display": "number", "isNpsQuestion": true},
                    {"type": "single_choice", "question": "Pick", "choices": ["A", "B"]}],
                "conditions": {"url": "https://example.com", "urlMatchType": "icontains"},
                "appearance": {"backgroundColor": "#ffffff"}}),
            )
            .await;
        let written: Vec<&str> = READ_FIELDS
            .iter()
            .copied()
            .filter(|field| !NOT_WRITTEN.contains(field))
            .collect();
        assert_eq!(sorted_keys(&created), written, "{name} {created}");
        let id = created["id"].as_str().unwrap().to_owned();
        assert!(is_uuid(&created["id"]), "{name}");
        assert_eq!(created["name"], "Shape", "{name}");
        assert_eq!(created["description"], "Internal notes", "{name}");
        assert_eq!(created["type"], "popover", "{name}");
        assert_eq!(created["schedule"], "once", "{name}");
        assert_eq!(created["archived"], false, "{name}");
        assert_eq!(created["start_date"], Value::Null, "{name}");
        assert_eq!(created["end_date"], Value::Null, "{name}");
        assert_eq!(created["linked_flag"], Value::Null, "{name}");
        assert_eq!(created["targeting_flag"], Value::Null, "{name}");
        assert_eq!(created["base_language"], "en", "{name}");
        assert_eq!(created["enable_partial_responses"], false, "{name}");
        assert_eq!(created["enable_iframe_embedding"], false, "{name}");
        assert_eq!(created["response_sampling_interval_type"], "week", "{name}");
        assert_eq!(
            created["response_sampling_daily_limits"],
            Value::Null,
            "{name}"
        );
        assert_eq!(created["iteration_start_dates"], json!([]), "{name}");
        assert_eq!(created["current_iteration"], Value::Null, "{name}");
        assert_eq!(
            created["created_by"]["email"], world.bootstrap.user.email,
            "{name}"
        );
        assert_eq!(
            created["conditions"],
            json!({"url": "https://example.com", "urlMatchType": "icontains"}),
            "{name}: no actions named, nothing injected"
        );
        assert_eq!(
            created["appearance"],
            json!({"backgroundColor": "#ffffff"}),
            "{name}"
        );
        // Every question got an id; the rest is kept as sent.
        let questions = created["questions"].as_array().unwrap();
        let ids: Vec<String> = questions
            .iter()
            .map(|q| q["id"].as_str().unwrap().to_owned())
            .collect();
        assert!(questions.iter().all(|q| is_uuid(&q["id"])), "{name}");
        assert_eq!(
            ids.iter().collect::<std::collections::BTreeSet<_>>().len(),
            3,
            "{name}"
        );
        assert_eq!(
            questions[1],
            json!({"id": ids[1], "type": "rating", "question": "How likely?", "scale": 10,
                "display": "number", "isNpsQuestion": true}),
            "{name}"
        );

        // The internal targeting flag: hides the survey from whoever answered or dismissed it,
        // inactive while the survey is a draft.
        let internal = &created["internal_targeting_flag"];
        let mut minimal = sorted_keys(internal);
        minimal.retain(|field| MINIMAL_FLAG_FIELDS.contains(&field.as_str()));
        assert_eq!(minimal, MINIMAL_FLAG_FIELDS, "{name} {internal}");
        assert_eq!(internal["team_id"], project, "{name}");
        assert_eq!(
            internal["name"], "Targeting flag for survey Shape",
            "{name}"
        );
        assert_eq!(internal["active"], false, "{name}");
        assert_eq!(internal["deleted"], false, "{name}");
        let key = internal["key"].as_str().unwrap();
        let random = key
            .strip_prefix("survey-targeting-")
            .and_then(|rest| rest.strip_suffix("-custom"))
            .unwrap_or_else(|| panic!("{name}: key {key}"));
        assert_eq!(random.len(), 10, "{name} {key}");
        assert!(
            random.chars().all(|c| c.is_ascii_hexdigit()),
            "{name} {key}"
        );
        let groups = internal["filters"]["groups"].as_array().unwrap();
        assert_eq!(groups.len(), 1, "{name} {internal}");
        assert_eq!(
            groups[0]["properties"],
            json!([
                not_set(format!("$survey_dismissed/{id}")),
                not_set(format!("$survey_responded/{id}"))
            ]),
            "{name}"
        );
        assert_eq!(groups[0]["rollout_percentage"], json!(100.0), "{name}");
        let (status, through_flags) = flag(&world, &internal["id"]).await;
        assert_eq!(status, StatusCode::OK, "{name} {through_flags}");
        assert_eq!(through_flags["key"], key, "{name}");
        assert_eq!(through_flags["active"], false, "{name}");

        // The read serializer: every field, the flag keys, and what create answered.
        let read = retrieve(&world, &created).await;
        assert_eq!(sorted_keys(&read), READ_FIELDS, "{name} {read}");
        for field in &written {
            assert_eq!(read[*field], created[*field], "{name}: {field}");
        }
        assert_eq!(read["linked_flag_id"], Value::Null, "{name}");
        assert_eq!(read["linked_insight_id"], Value::Null, "{name}");
        assert_eq!(read["search_match_type"], Value::Null, "{name}");
        assert_eq!(
            flag_keys(&read),
            [
                ("linked_flag_key".to_owned(), Value::Null),
                ("targeting_flag_key".to_owned(), Value::Null),
                ("internal_targeting_flag_key".to_owned(), json!(key)),
                (
                    "internal_response_sampling_flag_key".to_owned(),
                    Value::Null
                ),
            ],
            "{name}"
        );

        // Launch: started now, the flag serves it; a second launch changes nothing.
        let launched = act(&world, &created, "launch").await;
        let started = launched["start_date"].clone();
        assert!(started.is_string(), "{name} {launched}");
        assert_eq!(launched["end_date"], Value::Null, "{name}");
        assert_eq!(
            launched["internal_targeting_flag"]["active"], true,
            "{name}"
        );
        assert_eq!(
            launched["internal_targeting_flag"]["id"], internal["id"],
            "{name}: the same flag"
        );
        assert_eq!(
            flag(&world, &internal["id"]).await.1["active"],
            true,
            "{name}"
        );
        let again = act(&world, &created, "launch").await;
        assert_eq!(again["start_date"], started, "{name}");
        // Stop: ended now, the flag stops serving it; stopping again changes nothing.
        let stopped = act(&world, &created, "stop").await;
        let ended = stopped["end_date"].clone();
        assert!(ended.is_string(), "{name} {stopped}");
        assert_eq!(stopped["start_date"], started, "{name}");
        assert_eq!(
            stopped["internal_targeting_flag"]["active"], false,
            "{name}"
        );
        assert_eq!(
            flag(&world, &internal["id"]).await.1["active"],
            false,
            "{name}"
        );
        assert_eq!(
            act(&world, &created, "stop").await["end_date"],
            ended,
            "{name}"
        );

        // Question ids sent back are kept; a new question gets a new one.
        let edited = patch(
            &world,
            &created,
            json!({"questions": [
                {"id": ids[0], "type": "open", "question": "What would you change?"},
                {"id": ids[2], "type": "single_choice", "question": "Pick", "choices": ["A", "B", "C"]},
                open("Anything else?")]}),
        )
        .await;
        let edited_ids: Vec<&str> = edited["questions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|q| q["id"].as_str().unwrap())
            .collect();
        assert_eq!(
            edited_ids[..2],
            [ids[0].as_str(), ids[2].as_str()],
            "{name}"
        );
        assert!(is_uuid(&json!(edited_ids[2])), "{name}");
        assert!(!ids.iter().any(|id| id == edited_ids[2]), "{name}");
        assert_eq!(
            edited["questions"][0]["question"], "What would you change?",
            "{name}"
        );
        assert_eq!(
            retrieve(&world, &created).await["questions"],
            edited["questions"],
            "{name}"
        );
    }
}

#[tokio::test]
async fn lifecycle_refusals_and_archiving() {
    for world in World::all().await {
        let name = world.name();
        let survey = world.create_survey(body("Archived one", json!({}))).await;
        let internal = survey["internal_targeting_flag"]["id"].clone();
        act(&world, &survey, "launch").await;
        assert_eq!(flag(&world, &internal).await.1["active"], true, "{name}");
        // Archiving takes the flag out of service.
        let archived = patch(&world, &survey, json!({"archived": true})).await;
        assert_eq!(archived["archived"], true, "{name}");
        assert_eq!(
            archived["internal_targeting_flag"]["active"], false,
            "{name}"
        );
        assert_eq!(flag(&world, &internal).await.1["active"], false, "{name}");
        for (action, detail) in [
            (
                "launch",
                "Cannot launch an archived survey. Unarchive it first.",
            ),
            ("stop", "Cannot stop an archived survey."),
        ] {
            let (status, answer) = world
                .send(
                    Method::POST,
                    &format!("{}{action}/", world.survey_uri(&survey)),
                    Some(world.admin_key()),
                    None,
                )
                .await;
            assert_refused(status, &answer, detail, &name);
        }
        let back = patch(&world, &survey, json!({"archived": false})).await;
        assert_eq!(back["internal_targeting_flag"]["active"], true, "{name}");

        // An end date in the past cannot be launched.
        let ended = world
            .create_survey(body("Ended", json!({"end_date": "2020-01-01T00:00:00Z"})))
            .await;
        let (status, answer) = world
            .send(
                Method::POST,
                &format!("{}launch/", world.survey_uri(&ended)),
                Some(world.admin_key()),
                None,
            )
            .await;
        assert_refused(
            status,
            &answer,
            "Cannot launch a survey with end_date in the past. Extend the end_date first.",
            &name,
        );
        // Stopping it is a no-op: it ended already.
        assert_eq!(
            act(&world, &ended, "stop").await["end_date"],
            "2020-01-01T00:00:00Z",
            "{name}"
        );
        // Launch and stop of a survey that does not exist.
        for action in ["launch", "stop"] {
            let (status, answer) = world
                .send(
                    Method::POST,
                    &format!("{}{}/{action}/", world.surveys_uri(), uuid::Uuid::new_v4()),
                    Some(world.admin_key()),
                    None,
                )
                .await;
            assert_eq!(status, StatusCode::NOT_FOUND, "{name} {answer}");
            error_shape(&answer);
        }
    }
}

#[tokio::test]
async fn targeting_flag_is_made_updated_removed_and_deleted_with_the_survey() {
    for world in World::all().await {
        let name = world.name();
        let email = json!({"groups": [{"properties": [
            {"key": "email", "value": ["a@example.com"], "operator": "exact", "type": "person"}],
            "rollout_percentage": 50}]});
        let survey = world
            .create_survey(body("Targeted", json!({"targeting_flag_filters": email})))
            .await;
        let targeting = survey["targeting_flag"].clone();
        assert_eq!(
            targeting["name"], "Targeting flag for survey Targeted",
            "{name}"
        );
        let key = targeting["key"].as_str().unwrap().to_owned();
        let random = key.strip_prefix("survey-targeting-").unwrap();
        assert_eq!(random.len(), 10, "{name} {key}");
        assert!(
            random.chars().all(|c| c.is_ascii_hexdigit()),
            "{name} {key}"
        );
        assert_eq!(targeting["active"], false, "{name}: a draft's flag is off");
        assert_ne!(
            targeting["id"], survey["internal_targeting_flag"]["id"],
            "{name}"
        );
        // The flags API shows it with the filters sent.
        let (status, through_flags) = flag(&world, &targeting["id"]).await;
        assert_eq!(status, StatusCode::OK, "{name} {through_flags}");
        assert_eq!(through_flags["key"], key, "{name}");
        let group = &through_flags["filters"]["groups"][0];
        assert_eq!(
            group["properties"],
            json!([{"key": "email", "value": ["a@example.com"], "operator": "exact", "type": "person"}]),
            "{name}"
        );
        assert_eq!(group["rollout_percentage"], json!(50.0), "{name}");
        let read = retrieve(&world, &survey).await;
        assert_eq!(flag_keys(&read)[1].1, json!(key), "{name}");

        // New filters update the same flag.
        let plan = json!({"groups": [{"properties": [
            {"key": "plan", "value": ["pro"], "operator": "exact", "type": "person"}],
            "rollout_percentage": 20}]});
        let updated = patch(&world, &survey, json!({"targeting_flag_filters": plan})).await;
        assert_eq!(updated["targeting_flag"]["id"], targeting["id"], "{name}");
        let (_, through_flags) = flag(&world, &targeting["id"]).await;
        let group = &through_flags["filters"]["groups"][0];
        assert_eq!(group["properties"][0]["key"], "plan", "{name}");
        assert_eq!(group["rollout_percentage"], json!(20.0), "{name}");
        // ... and it follows the survey's life.
        act(&world, &survey, "launch").await;
        assert_eq!(
            flag(&world, &targeting["id"]).await.1["active"],
            true,
            "{name}"
        );
        // Filters that reach everyone are refused (surveys_validation_api.rs) and change nothing.
        let (status, _) = world
            .send_json(
                Method::PATCH,
                &world.survey_uri(&survey),
                json!({"targeting_flag_filters": {"groups": [{"rollout_percentage": 100}]}}),
            )
            .await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{name}");
        let (_, through_flags) = flag(&world, &targeting["id"]).await;
        assert_eq!(
            through_flags["filters"]["groups"][0]["rollout_percentage"],
            json!(20.0),
            "{name}"
        );

        // remove_targeting_flag deletes it.
        let removed = patch(&world, &survey, json!({"remove_targeting_flag": true})).await;
        assert_eq!(removed["targeting_flag"], Value::Null, "{name}");
        assert_eq!(
            flag(&world, &targeting["id"]).await.0,
            StatusCode::NOT_FOUND,
            "{name}"
        );
        assert_eq!(
            flag_keys(&retrieve(&world, &survey).await)[1].1,
            Value::Null,
            "{name}"
        );
        // New filters afterwards make a new flag, active as the survey runs.
        let again = patch(&world, &survey, json!({"targeting_flag_filters": email})).await;
        let second = again["targeting_flag"].clone();
        assert_ne!(second["id"], targeting["id"], "{name}");
        assert_eq!(second["active"], true, "{name}");

        // DELETE: 204, the survey and its own flags are gone, its name is free again.
        let internal = again["internal_targeting_flag"]["id"].clone();
        let (status, answer) = world
            .send(
                Method::DELETE,
                &world.survey_uri(&survey),
                Some(world.admin_key()),
                None,
            )
            .await;
        assert_eq!(status, StatusCode::NO_CONTENT, "{name} {answer}");
        assert_eq!(answer, Value::Null, "{name}");
        let (status, answer) = world
            .get(&world.survey_uri(&survey), Some(world.admin_key()))
            .await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{name} {answer}");
        error_shape(&answer);
        for id in [&second["id"], &internal] {
            assert_eq!(
                flag(&world, id).await.0,
                StatusCode::NOT_FOUND,
                "{name} {id}"
            );
        }
        let (status, _) = world
            .send(
                Method::DELETE,
                &world.survey_uri(&survey),
                Some(world.admin_key()),
                None,
            )
            .await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{name}: deleted once");
        world.create_survey(body("Targeted", json!({}))).await;
    }
}

#[tokio::test]
async fn recurrence_wait_period_and_response_sampling_shape_the_flags() {
    for world in World::all().await {
        let name = world.name();
        let survey = world
            .create_survey(body(
                "Recurring",
                json!({"iteration_count": 2, "iteration_frequency_days": 30,
                    "start_date": "2030-01-01T00:00:00Z", "schedule": "recurring",
                    "conditions": {"seenSurveyWaitPeriodInDays": 7}}),
            ))
            .await;
        let id = survey["id"].as_str().unwrap();
        assert_eq!(
            survey["iteration_start_dates"],
            json!(["2030-01-01T00:00:00Z", "2030-01-31T00:00:00Z"]),
            "{name}"
        );
        assert_eq!(survey["current_iteration"], 1, "{name}");
        assert_eq!(
            survey["current_iteration_start_date"], "2030-01-01T00:00:00Z",
            "{name}"
        );
        // Keyed by iteration; two groups for the wait period. A start date makes it active.
        let internal = &survey["internal_targeting_flag"];
        assert_eq!(internal["active"], true, "{name}");
        let base = [
            not_set(format!("$survey_dismissed/{id}/1")),
            not_set(format!("$survey_responded/{id}/1")),
        ];
        let groups = internal["filters"]["groups"].as_array().unwrap();
        assert_eq!(groups.len(), 2, "{name} {internal}");
        assert_eq!(
            groups[0]["properties"],
            json!([base[0], base[1], not_set("$last_seen_survey_date".into())]),
            "{name}"
        );
        assert_eq!(
            groups[1]["properties"],
            json!([base[0], base[1], {"key": "$last_seen_survey_date", "type": "person",
                "value": "7d", "operator": "is_date_before"}]),
            "{name}"
        );
        // Dropping the wait period and the recurrence rewrites the same flag.
        let plain = patch(
            &world,
            &survey,
            json!({"conditions": {}, "iteration_count": 0}),
        )
        .await;
        assert_eq!(
            plain["internal_targeting_flag"]["id"], internal["id"],
            "{name}"
        );
        assert_eq!(plain["iteration_start_dates"], json!([]), "{name}");
        assert_eq!(plain["current_iteration"], Value::Null, "{name}");
        assert_eq!(
            plain["internal_targeting_flag"]["filters"]["groups"][0]["properties"],
            json!([
                not_set(format!("$survey_dismissed/{id}")),
                not_set(format!("$survey_responded/{id}"))
            ]),
            "{name}"
        );

        // Response sampling: the daily limits as PostHog stores them (a JSON string), and a
        // sampling flag.
        let sampled = world
            .create_survey(body(
                "Sampled",
                json!({"response_sampling_start_date": "2030-01-01T00:00:00Z",
                    "response_sampling_interval_type": "day",
                    "response_sampling_interval": 2, "response_sampling_limit": 5}),
            ))
            .await;
        assert_eq!(
            sampled["response_sampling_daily_limits"],
            "[{\"date\": \"2030-01-01T00:00:00+00:00\", \"daily_response_limit\": 3, \"rollout_percentage\": 50.0}, {\"date\": \"2030-01-02T00:00:00+00:00\", \"daily_response_limit\": 5, \"rollout_percentage\": 100.0}]",
            "{name}"
        );
        let read = retrieve(&world, &sampled).await;
        let sampling_key = flag_keys(&read)[3].1.clone();
        let sampling_key = sampling_key.as_str().unwrap();
        assert!(
            sampling_key.starts_with("survey-targeting-") && sampling_key.ends_with("-sampling"),
            "{name} {sampling_key}"
        );
        // Without a limit there are no daily limits and no sampling flag.
        let unsampled = patch(&world, &sampled, json!({"response_sampling_limit": null})).await;
        assert_eq!(
            unsampled["response_sampling_daily_limits"],
            Value::Null,
            "{name}"
        );
        assert_eq!(
            flag_keys(&retrieve(&world, &sampled).await)[3].1,
            Value::Null,
            "{name}"
        );
    }
}

#[tokio::test]
async fn linked_flag_is_shown_minimal_and_through_its_keys() {
    for world in World::all().await {
        let name = world.name();
        let multivariate = world
            .create_flag(json!({"key": "linked-mv", "filters": {
                "groups": [{"properties": [], "rollout_percentage": 100}],
                "multivariate": {"variants": [
                    {"key": "control", "rollout_percentage": 50},
                    {"key": "test", "rollout_percentage": 50}]}}}))
            .await;
        let survey = world
            .create_survey(body(
                "Linked",
                json!({"linked_flag_id": multivariate["id"],
                    "conditions": {"linkedFlagVariant": "test"}}),
            ))
            .await;
        assert_eq!(survey["linked_flag"]["id"], multivariate["id"], "{name}");
        assert_eq!(survey["linked_flag"]["key"], "linked-mv", "{name}");
        assert_eq!(
            survey["conditions"],
            json!({"linkedFlagVariant": "test"}),
            "{name}"
        );
        let read = retrieve(&world, &survey).await;
        assert_eq!(read["linked_flag_id"], multivariate["id"], "{name}");
        assert_eq!(flag_keys(&read)[0].1, "linked-mv", "{name}");
        // A survey does not own its linked flag: deleting the survey leaves it.
        let (status, _) = world
            .send(
                Method::DELETE,
                &world.survey_uri(&survey),
                Some(world.admin_key()),
                None,
            )
            .await;
        assert_eq!(status, StatusCode::NO_CONTENT, "{name}");
        assert_eq!(
            flag(&world, &multivariate["id"]).await.0,
            StatusCode::OK,
            "{name}"
        );
    }
}

#[tokio::test]
async fn conditions_show_the_actions_they_name_as_they_are_now() {
    for world in World::all().await {
        let name = world.name();
        let actions_uri = format!("/api/projects/{}/actions/", world.bootstrap.project.id);
        let mut ids = Vec::new();
        for (action, event) in [("Signed up", "signed_up"), ("Bought", "bought")] {
            let (status, created) = world
                .send_json(
                    Method::POST,
                    &actions_uri,
                    json!({"name": action, "steps": [{"event": event, "url": "/app",
                        "url_matching": "contains"}]}),
                )
                .await;
            assert_eq!(status, StatusCode::CREATED, "{name} {created}");
            ids.push(created["id"].as_i64().unwrap());
        }
        // The frontend sends the actions it picked with their names; an unknown id is dropped.
        let conditions = json!({"url": "/pricing", "actions": {"values": [
            {"id": ids[1], "name": "Bought (as picked)"}, {"id": 999_999, "name": "gone"}]}});
        let created = world
            .create_survey(body("Buyers", json!({"conditions": conditions})))
            .await;
        let shown = |survey: &Value| -> Vec<(i64, String)> {
            survey["conditions"]["actions"]["values"]
                .as_array()
                .unwrap_or_else(|| panic!("{name}: no actions in {survey}"))
                .iter()
                .map(|a| {
                    (
                        a["id"].as_i64().unwrap(),
                        a["name"].as_str().unwrap().to_owned(),
                    )
                })
                .collect()
        };
        // The create answer and every read show ActionSerializer's action, not what was sent.
        assert_eq!(shown(&created), [(ids[1], "Bought".to_owned())], "{name}");
        assert_eq!(created["conditions"]["url"], "/pricing", "{name}");
        let action = &created["conditions"]["actions"]["values"][0];
        assert_eq!(action["steps"][0]["event"], "bought", "{name} {action}");
        assert_eq!(action["steps"][0]["url_matching"], "contains", "{name}");
        assert_eq!(action["deleted"], false, "{name}");
        assert_eq!(
            action["created_by"]["email"], world.bootstrap.user.email,
            "{name}"
        );
        let read = retrieve(&world, &created).await;
        assert_eq!(read["conditions"], created["conditions"], "{name}");
        let (_, list) = world
            .get(&world.surveys_uri(), Some(world.admin_key()))
            .await;
        assert_eq!(
            list["results"][0]["conditions"], created["conditions"],
            "{name}"
        );

        // Renamed since: shown renamed. Named anew by a PATCH: the new set.
        let (status, _) = world
            .send_json(
                Method::PATCH,
                &format!("{actions_uri}{}/", ids[1]),
                json!({"name": "Purchased"}),
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{name}");
        assert_eq!(
            shown(&retrieve(&world, &created).await),
            [(ids[1], "Purchased".to_owned())],
            "{name}"
        );
        let patched = patch(
            &world,
            &created,
            json!({"conditions": {"actions": {"values": [{"id": ids[1]}, {"id": ids[0]}]}}}),
        )
        .await;
        assert_eq!(
            shown(&patched),
            [
                (ids[0], "Signed up".to_owned()),
                (ids[1], "Purchased".to_owned())
            ],
            "{name}"
        );

        // The SDK payload: `{id, name, steps}` only.
        let (status, payload) = world
            .get(
                &format!("/api/surveys/?token={}", world.bootstrap.project.api_token),
                None,
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{name} {payload}");
        let sdk = &payload["surveys"][0]["conditions"]["actions"]["values"];
        assert_eq!(sdk.as_array().map(Vec::len), Some(2), "{name} {payload}");
        assert_eq!(sorted_keys(&sdk[0]), ["id", "name", "steps"], "{name}");
        assert_eq!(sdk[0]["name"], "Signed up", "{name}");
        assert_eq!(sdk[1]["steps"][0]["event"], "bought", "{name}");
        assert_eq!(sdk[1]["steps"][0]["url"], "/app", "{name}");

        // Naming no action of the project leaves the conditions as sent.
        let none = patch(
            &world,
            &created,
            json!({"conditions": {"actions": {"values": [{"id": 999_999, "name": "gone"}]}}}),
        )
        .await;
        assert_eq!(
            none["conditions"],
            json!({"actions": {"values": [{"id": 999_999, "name": "gone"}]}}),
            "{name}"
        );
    }
}
