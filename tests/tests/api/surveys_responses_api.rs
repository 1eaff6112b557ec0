//! What surveys do with responses and copies, on both backends (reference 1.8–1.12): archiving and
//! unarchiving a response, duplicating a survey into other projects (all or nothing), the
//! parameter errors of stats and responses, and the summaries written from captured `survey
//! sent` events once the committer has made them queryable.

use api_tests::{World, error_shape};
use axum::http::{Method, StatusCode};
use chrono::{NaiveDateTime, Timelike, Utc};
use serde_json::{Value, json};

fn surveys_uri_of(project: i64) -> String {
    format!("/api/projects/{project}/surveys/")
}

async fn post(world: &World, uri: &str, body: Option<Value>) -> (StatusCode, Value) {
    let body = body.map(|b| b.to_string());
    world
        .send(Method::POST, uri, Some(world.admin_key()), body.as_deref())
        .await
}

async fn create_in(world: &World, project: i64, body: Value) -> Value {
    let (status, created) = post(world, &surveys_uri_of(project), Some(body.clone())).await;
    assert_eq!(
        status,
        StatusCode::CREATED,
        "{} {body} {created}",
        world.name()
    );
    created
}

fn survey(name: &str) -> Value {
    json!({"name": name, "type": "popover",
        "questions": [{"type": "open", "question": "What could be better?"}]})
}

async fn new_project(world: &World, name: &str) -> i64 {
    common::provisioning::create_project(
        world.backend.state.store.as_ref(),
        world.bootstrap.organization.id,
        name,
        "UTC",
    )
    .await
    .unwrap()
    .id
}

/// The project's surveys (every one: the list's page is 100).
async fn listed(world: &World, project: i64) -> Vec<Value> {
    let (status, page) = world
        .get(&surveys_uri_of(project), Some(world.admin_key()))
        .await;
    assert_eq!(status, StatusCode::OK, "{} {page}", world.name());
    page["results"].as_array().unwrap().clone()
}

/// Checks a 400 in the error shape and answers `(detail, attr)`.
fn refused(status: StatusCode, answer: &Value, context: &str) -> (String, Option<String>) {
    assert_eq!(status, StatusCode::BAD_REQUEST, "{context}: {answer}");
    let (_, attr) = error_shape(answer);
    (answer["detail"].as_str().unwrap().to_owned(), attr)
}

#[tokio::test]
async fn responses_are_archived_and_unarchived() {
    for world in World::all().await {
        let name = world.name();
        let created = world.create_survey(survey("Archive")).await;
        let uri = world.survey_uri(&created);
        for action in ["archive", "unarchive"] {
            let (status, answer) = post(
                &world,
                &format!("{uri}responses/not-a-uuid/{action}/"),
                None,
            )
            .await;
            let (detail, attr) = refused(status, &answer, &name);
            assert_eq!(detail, "Invalid UUID format", "{name}");
            assert_eq!(attr, None, "{name}");
        }
        let response = uuid::Uuid::new_v4();
        let archived_uri = format!("{uri}archived-response-uuids/");
        let (status, answer) = world.get(&archived_uri, Some(world.admin_key())).await;
        assert_eq!((status, answer), (StatusCode::OK, json!([])), "{name}");

        // PostHog answers 200 with the body `200`; archiving twice keeps one.
        for _ in 0..2 {
            let (status, answer) =
                post(&world, &format!("{uri}responses/{response}/archive/"), None).await;
            assert_eq!((status, answer), (StatusCode::OK, json!(200)), "{name}");
        }
        let (status, answer) = world.get(&archived_uri, Some(world.admin_key())).await;
        assert_eq!(
            (status, answer),
            (StatusCode::OK, json!([response.to_string()])),
            "{name}"
        );
        // Another survey's archive is its own.
        let other = world.create_survey(survey("Other")).await;
        let (_, answer) = world
            .get(
                &format!("{}archived-response-uuids/", world.survey_uri(&other)),
                Some(world.admin_key()),
            )
            .await;
        assert_eq!(answer, json!([]), "{name}");

        for _ in 0..2 {
            let (status, answer) = post(
                &world,
                &format!("{uri}responses/{response}/unarchive/"),
                None,
            )
            .await;
            assert_eq!((status, answer), (StatusCode::OK, json!(200)), "{name}");
        }
        let (_, answer) = world.get(&archived_uri, Some(world.admin_key())).await;
        assert_eq!(answer, json!([]), "{name}");

        // One entry per real change.
        let (_, log) = world
            .get(&format!("{uri}activity/"), Some(world.admin_key()))
            .await;
        let kinds: Vec<&str> = log["results"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["activity"].as_str().unwrap())
            .collect();
        assert_eq!(
            kinds,
            ["response_unarchived", "response_archived", "created"],
            "{name}"
        );
        // A survey that does not exist has no responses to archive.
        let (status, _) = post(
            &world,
            &format!(
                "{}{}/responses/{response}/archive/",
                world.surveys_uri(),
                uuid::Uuid::new_v4()
            ),
            None,
        )
        .await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{name}");
    }
}

const NOT_ALLOWED: &str = "One or more target teams not found or you don't have access to them";

#[tokio::test]
async fn duplicate_to_projects_copies_all_or_nothing() {
    for world in World::all().await {
        let name = world.name();
        let second = new_project(&world, "Second").await;
        let third = new_project(&world, "Third").await;
        let linked = world
            .create_flag(json!({"key": "dup-mv", "filters": {
                "groups": [{"properties": [], "rollout_percentage": 100}],
                "multivariate": {"variants": [
                    {"key": "control", "rollout_percentage": 50},
                    {"key": "test", "rollout_percentage": 50}]}}}))
            .await;
        let source = world
            .create_survey(
                json!({"name": "Source", "description": "Copied along", "type": "popover",
                "questions": [
                    {"type": "open", "question": "Why?"},
                    {"type": "single_choice", "question": "Pick", "choices": ["A", "B"]}],
                "conditions": {"url": "https://example.com", "linkedFlagVariant": "test"},
                "linked_flag_id": linked["id"],
                "appearance": {"backgroundColor": "#000000"},
                "targeting_flag_filters": {"groups": [{"properties": [
                    {"key": "email", "value": ["a@example.com"], "operator": "exact",
                     "type": "person"}], "rollout_percentage": 50}]},
                "responses_limit": 100, "enable_partial_responses": true}),
            )
            .await;
        let uri = format!("{}duplicate_to_projects/", world.survey_uri(&source));
        let (status, _) = post(
            &world,
            &format!("{}launch/", world.survey_uri(&source)),
            None,
        )
        .await;
        assert_eq!(status, StatusCode::OK, "{name}");

        // The body's shape.
        for body in [
            json!({}),
            json!({"target_team_ids": []}),
            json!({"target_team_ids": null}),
            json!({"target_team_ids": second}),
            json!({"target_team_ids": "1,2"}),
            json!({"target_team_ids": [{"id": second}]}),
        ] {
            let (status, answer) = post(&world, &uri, Some(body.clone())).await;
            let (detail, attr) = refused(status, &answer, &format!("{name} {body}"));
            assert_eq!(
                detail, "target_team_ids must be a non-empty list of team IDs",
                "{name} {body}"
            );
            assert_eq!(attr.as_deref(), Some("target_team_ids"), "{name}");
        }
        // One target the caller may not use (another organization's, or none) fails the
        // whole request and writes nothing in the valid one.
        for bad in [world.foreign_project, 999_999] {
            let (status, answer) = post(
                &world,
                &uri,
                Some(json!({"target_team_ids": [second, bad]})),
            )
            .await;
            let (detail, attr) = refused(status, &answer, &format!("{name} {bad}"));
            assert_eq!(detail, NOT_ALLOWED, "{name} {bad}");
            assert_eq!(attr.as_deref(), Some("target_team_ids"), "{name}");
            assert_eq!(
                listed(&world, second).await.len(),
                0,
                "{name}: nothing written"
            );
        }
        // More targets than one transaction holds.
        let many: Vec<i64> = (1_000..1_034).collect();
        let (status, answer) = post(&world, &uri, Some(json!({"target_team_ids": many}))).await;
        let (detail, attr) = refused(status, &answer, &name);
        assert!(
            detail.starts_with("At most 33 target teams"),
            "{name} {detail}"
        );
        assert_eq!(attr.as_deref(), Some("target_team_ids"), "{name}");
        // A survey that does not exist.
        let (status, _) = post(
            &world,
            &format!(
                "{}{}/duplicate_to_projects/",
                world.surveys_uri(),
                uuid::Uuid::new_v4()
            ),
            Some(json!({"target_team_ids": [second]})),
        )
        .await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{name}");

        // A valid copy: 201 with what was made.
        let before = Utc::now().naive_utc();
        let (status, answer) = post(&world, &uri, Some(json!({"target_team_ids": [second]}))).await;
        let after = Utc::now().naive_utc();
        assert_eq!(status, StatusCode::CREATED, "{name} {answer}");
        assert_eq!(answer["count"], 1, "{name}");
        let made = answer["created_surveys"].as_array().unwrap();
        assert_eq!(made.len(), 1, "{name}");
        assert_eq!(made[0]["team_id"], second, "{name}");
        let mut keys: Vec<&str> = made[0]
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        keys.sort_unstable();
        assert_eq!(keys, ["name", "survey_id", "team_id"], "{name}");
        let copy_name = made[0]["name"].as_str().unwrap();
        let stamp = copy_name
            .strip_prefix("Source (duplicated at ")
            .and_then(|rest| rest.strip_suffix(')'))
            .unwrap_or_else(|| panic!("{name}: {copy_name}"));
        let stamped = NaiveDateTime::parse_from_str(stamp, "%Y-%m-%d %H:%M:%S")
            .unwrap_or_else(|_| panic!("{name}: {stamp}"));
        assert!(
            stamped >= before.with_nanosecond(0).unwrap() && stamped <= after,
            "{name}: {stamp} not between {before} and {after}"
        );
        let copies = listed(&world, second).await;
        assert_eq!(copies.len(), 1, "{name}");
        let copy = &copies[0];
        assert_eq!(copy["id"], made[0]["survey_id"], "{name}");
        assert_eq!(copy["name"], copy_name, "{name}");
        for field in [
            "description",
            "type",
            "appearance",
            "responses_limit",
            "enable_partial_responses",
        ] {
            assert_eq!(copy[field], source[field], "{name}: {field}");
        }
        assert_eq!(
            copy["conditions"],
            json!({"url": "https://example.com"}),
            "{name}: no linkedFlagVariant"
        );
        // Same questions, new ids.
        let source_questions = source["questions"].as_array().unwrap();
        let copy_questions = copy["questions"].as_array().unwrap();
        assert_eq!(copy_questions.len(), 2, "{name}");
        for (original, copied) in source_questions.iter().zip(copy_questions) {
            assert_ne!(copied["id"], original["id"], "{name}");
            assert!(
                copied["id"].as_str().unwrap().parse::<uuid::Uuid>().is_ok(),
                "{name}"
            );
            let mut without_id = copied.clone();
            without_id["id"] = original["id"].clone();
            assert_eq!(&without_id, original, "{name}");
        }
        // A draft without flags.
        for field in [
            "start_date",
            "end_date",
            "linked_flag",
            "linked_flag_id",
            "targeting_flag",
            "internal_targeting_flag",
        ] {
            assert_eq!(copy[field], Value::Null, "{name}: {field}");
        }
        assert_eq!(copy["archived"], false, "{name}");
        assert!(
            copy["feature_flag_keys"]
                .as_array()
                .unwrap()
                .iter()
                .all(|entry| entry["value"].is_null()),
            "{name} {copy}"
        );
        assert_eq!(
            copy["created_by"]["email"], world.bootstrap.user.email,
            "{name}"
        );
        // The source is untouched.
        let (_, again) = world
            .get(&world.survey_uri(&source), Some(world.admin_key()))
            .await;
        assert_eq!(again["name"], "Source", "{name}");
        assert_eq!(
            listed(&world, world.bootstrap.project.id).await.len(),
            1,
            "{name}"
        );
        // Launching the copy gives it its internal flag.
        let (status, launched) = post(
            &world,
            &format!(
                "{}{}/launch/",
                surveys_uri_of(second),
                copy["id"].as_str().unwrap()
            ),
            None,
        )
        .await;
        assert_eq!(status, StatusCode::OK, "{name} {launched}");
        assert_eq!(
            launched["internal_targeting_flag"]["active"], true,
            "{name}"
        );

        // Several targets at once.
        let (status, answer) = post(
            &world,
            &uri,
            Some(json!({"target_team_ids": [third, world.bootstrap.project.id]})),
        )
        .await;
        assert_eq!(status, StatusCode::CREATED, "{name} {answer}");
        assert_eq!(answer["count"], 2, "{name}");
        let teams: Vec<&Value> = answer["created_surveys"]
            .as_array()
            .unwrap()
            .iter()
            .map(|made| &made["team_id"])
            .collect();
        assert_eq!(
            teams,
            [&json!(third), &json!(world.bootstrap.project.id)],
            "{name}"
        );
        assert_eq!(listed(&world, third).await.len(), 1, "{name}");
        assert_eq!(
            listed(&world, world.bootstrap.project.id).await.len(),
            2,
            "{name}"
        );

        // All or nothing at the store too: when a copy's name is taken in one target, no copy
        // is written in the other. The taken names cover every second this request may run in.
        let fourth = new_project(&world, "Fourth").await;
        let fifth = new_project(&world, "Fifth").await;
        let start = Utc::now();
        for second_offset in -1..20 {
            let at = start + chrono::Duration::seconds(second_offset);
            create_in(
                &world,
                fourth,
                survey(&format!(
                    "Source (duplicated at {})",
                    at.format("%Y-%m-%d %H:%M:%S")
                )),
            )
            .await;
        }
        let (status, answer) = post(
            &world,
            &uri,
            Some(json!({"target_team_ids": [fifth, fourth]})),
        )
        .await;
        assert!(
            Utc::now() < start + chrono::Duration::seconds(19),
            "{name}: too slow to tell"
        );
        let (_, attr) = refused(status, &answer, &name);
        assert_eq!(attr.as_deref(), Some("target_team_ids"), "{name}");
        assert_eq!(
            listed(&world, fifth).await.len(),
            0,
            "{name}: nothing written"
        );
        assert_eq!(listed(&world, fourth).await.len(), 21, "{name}");
    }
}

#[tokio::test]
async fn stats_and_responses_refuse_bad_parameters() {
    for world in World::all().await {
        let name = world.name();
        let created = world.create_survey(survey("Stats")).await;
        let uri = world.survey_uri(&created);
        let all_stats = format!("{}stats/", world.surveys_uri());
        for base in [format!("{uri}stats/"), all_stats.clone()] {
            for (query, attr) in [
                ("date_from=not-a-date", "date_from"),
                ("date_to=2024-01-01", "date_to"),
                ("date_from=2024-01-01T00:00:00", "date_from"),
            ] {
                let (status, answer) = world
                    .get(&format!("{base}?{query}"), Some(world.admin_key()))
                    .await;
                let (detail, got) = refused(status, &answer, &format!("{name} {base} {query}"));
                assert!(
                    detail.starts_with(
                        "Invalid date format. Please use ISO 8601 format with timezone info"
                    ),
                    "{name} {detail}"
                );
                assert_eq!(got.as_deref(), Some(attr), "{name} {query}");
            }
            let (status, answer) = world
                .get(
                    &format!("{base}?date_from=2024-02-01T00:00:00Z&date_to=2024-01-01T00:00:00Z"),
                    Some(world.admin_key()),
                )
                .await;
            let (detail, _) = refused(status, &answer, &name);
            assert_eq!(detail, "date_from must be before date_to", "{name}");
        }
        let (status, _) = world
            .get(
                &format!("{}{}/stats/", world.surveys_uri(), uuid::Uuid::new_v4()),
                Some(world.admin_key()),
            )
            .await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{name}");

        let question = created["questions"][0]["id"].as_str().unwrap();
        for query in ["score_gte=3", "score_lte=6", "score_gte=1&score_lte=2"] {
            let (status, answer) = world
                .get(&format!("{uri}responses/?{query}"), Some(world.admin_key()))
                .await;
            let (detail, attr) = refused(status, &answer, &format!("{name} {query}"));
            assert_eq!(
                detail, "score_lte and score_gte require question_id to be specified",
                "{name}"
            );
            assert_eq!(attr.as_deref(), Some("question_id"), "{name}");
        }
        for (query, attr) in [
            ("limit=0".to_owned(), "limit"),
            ("limit=501".to_owned(), "limit"),
            ("score_gte=high&question_id=x".to_owned(), "score_gte"),
            (
                format!("question_id={}", uuid::Uuid::new_v4()),
                "question_id",
            ),
        ] {
            let (status, answer) = world
                .get(&format!("{uri}responses/?{query}"), Some(world.admin_key()))
                .await;
            let (_, got) = refused(status, &answer, &format!("{name} {query}"));
            assert_eq!(got.as_deref(), Some(attr), "{name} {query}");
        }
        let (status, answer) = world
            .get(
                &format!("{}responses_count/?survey_ids=nope", world.surveys_uri()),
                Some(world.admin_key()),
            )
            .await;
        let (_, attr) = refused(status, &answer, &name);
        assert_eq!(attr.as_deref(), Some("survey_ids"), "{name}");

        // Responses read events: survey:read alone is not enough.
        let survey_read = world.key(&["survey:read"], None).await;
        let (status, _) = world
            .get(
                &format!("{uri}responses/?question_id={question}"),
                Some(&survey_read),
            )
            .await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{name}");
        // The summaries take survey:read alone, the scope PostHog lists for them; query:read
        // alone is not enough.
        let query_read = world.key(&["query:read"], None).await;
        for route in [
            "summary_headline/".to_owned(),
            format!("summarize_responses/?question_id={question}"),
            "summarize_responses/".to_owned(),
        ] {
            let (status, answer) = world
                .send(
                    Method::POST,
                    &format!("{uri}{route}"),
                    Some(&survey_read),
                    None,
                )
                .await;
            assert_eq!(status, StatusCode::OK, "{name} {route} {answer}");
            let (status, _) = world
                .send(
                    Method::POST,
                    &format!("{uri}{route}"),
                    Some(&query_read),
                    None,
                )
                .await;
            assert_eq!(status, StatusCode::FORBIDDEN, "{name} {route}");
        }
    }
}

fn sent(survey: &str, answers: &[(&str, Value)], submission: &str, uuid: uuid::Uuid) -> Value {
    let mut properties = json!({"$survey_id": survey, "$survey_submission_id": submission});
    for (question, answer) in answers {
        properties[format!("$survey_response_{question}")] = answer.clone();
    }
    json!({"event": "survey sent", "distinct_id": format!("person-{submission}"), "uuid": uuid,
        "timestamp": Utc::now().to_rfc3339(), "properties": properties})
}

async fn headline(world: &World, survey: &Value, body: Option<Value>) -> Value {
    let (status, answer) = post(
        world,
        &format!("{}summary_headline/", world.survey_uri(survey)),
        body,
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{} {answer}", world.name());
    let mut keys: Vec<&str> = answer
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    keys.sort_unstable();
    assert_eq!(
        keys,
        ["has_more", "headline", "responses_sampled"],
        "{answer}"
    );
    answer
}

async fn summarize(
    world: &World,
    survey: &Value,
    query: &str,
    body: Option<Value>,
) -> (StatusCode, Value) {
    post(
        world,
        &format!("{}summarize_responses/?{query}", world.survey_uri(survey)),
        body,
    )
    .await
}

#[tokio::test]
async fn summaries_of_captured_responses_are_stored_until_refreshed() {
    for world in World::all().await {
        let name = world.name();
        let survey = world
            .create_survey(json!({"name": "Feedback", "type": "popover", "questions": [
                {"type": "rating", "question": "How was it?", "scale": 5, "display": "number"},
                {"type": "single_choice", "question": "Again?", "choices": ["Yes", "No"]},
                {"type": "link", "question": "Docs", "link": "https://example.com"},
                {"type": "open", "question": "Anything else?"}]}))
            .await;
        let id = survey["id"].as_str().unwrap();
        let question = |i: usize| survey["questions"][i]["id"].as_str().unwrap().to_owned();
        let (rating, choice, open) = (question(0), question(1), question(3));

        // Nothing answered yet; a survey of links only has nothing to summarize.
        let empty = headline(&world, &survey, None).await;
        assert_eq!(
            empty,
            json!({"headline": "No responses yet", "responses_sampled": 0, "has_more": false}),
            "{name}"
        );
        let links = world
            .create_survey(json!({"name": "Links", "type": "popover", "questions": [
                {"type": "link", "question": "Docs", "link": "https://example.com"}]}))
            .await;
        assert_eq!(
            headline(&world, &links, None).await["headline"],
            "No questions in survey",
            "{name}"
        );
        let (status, answer) =
            summarize(&world, &survey, &format!("question_id={rating}"), None).await;
        assert_eq!(status, StatusCode::OK, "{name} {answer}");
        assert_eq!(answer["content"], "No responses to analyze.", "{name}");
        assert_eq!(answer["response_count"], 0, "{name}");
        assert_eq!(answer["cached"], false, "{name}");

        // Three submissions, one of them sent in two parts, then a response to another survey.
        let uuids: Vec<uuid::Uuid> = (0..6).map(|_| uuid::Uuid::new_v4()).collect();
        world
            .capture(vec![
                sent(
                    id,
                    &[(&rating, json!(5)), (&choice, json!("Yes"))],
                    "s1",
                    uuids[0],
                ),
                sent(id, &[(&rating, json!(4))], "s2", uuids[1]),
                sent(id, &[(&choice, json!("Yes"))], "s2", uuids[2]),
                sent(
                    id,
                    &[(&rating, json!(3)), (&choice, json!("No"))],
                    "s3",
                    uuids[3],
                ),
                sent(
                    links["id"].as_str().unwrap(),
                    &[(&rating, json!(1))],
                    "other",
                    uuids[4],
                ),
            ])
            .await;
        lake::commit_all(&world.backend.state).await.unwrap();

        let first = headline(&world, &survey, None).await;
        assert_eq!(
            first,
            json!({"headline": "3 responses: average rating 4.00/5; top answer \"Yes\" (67%).",
                "responses_sampled": 3, "has_more": false}),
            "{name}"
        );
        let words = first["headline"]
            .as_str()
            .unwrap()
            .split_whitespace()
            .count();
        assert!(words <= 20, "{name}: {words} words");
        // Stored: a new response does not change it until a refresh.
        world
            .capture(vec![sent(
                id,
                &[(&rating, json!(1)), (&choice, json!("Yes"))],
                "s4",
                uuids[5],
            )])
            .await;
        lake::commit_all(&world.backend.state).await.unwrap();
        assert_eq!(headline(&world, &survey, None).await, first, "{name}");
        assert_eq!(
            headline(&world, &survey, Some(json!({}))).await,
            first,
            "{name}"
        );
        let refreshed = headline(&world, &survey, Some(json!({"force_refresh": true}))).await;
        assert_eq!(
            refreshed,
            json!({"headline": "4 responses: average rating 3.25/5; top answer \"Yes\" (75%).",
                "responses_sampled": 4, "has_more": false}),
            "{name}"
        );
        assert_eq!(headline(&world, &survey, None).await, refreshed, "{name}");
        // An archived response is left out.
        let (status, _) = post(
            &world,
            &format!(
                "{}responses/{}/archive/",
                world.survey_uri(&survey),
                uuids[5]
            ),
            None,
        )
        .await;
        assert_eq!(status, StatusCode::OK, "{name}");
        assert_eq!(
            headline(&world, &survey, Some(json!({"force_refresh": true}))).await,
            first,
            "{name}"
        );
        // The stored headline is not part of the survey's shape or its activity.
        let (_, read) = world
            .get(&world.survey_uri(&survey), Some(world.admin_key()))
            .await;
        assert!(read.get("headline_summary").is_none(), "{name}");

        // One question's summary: made, then answered from the survey.
        let (status, made) =
            summarize(&world, &survey, &format!("question_id={rating}"), None).await;
        assert_eq!(status, StatusCode::OK, "{name} {made}");
        let mut keys: Vec<&str> = made
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        keys.sort_unstable();
        assert_eq!(
            keys,
            [
                "cached",
                "content",
                "generated_at",
                "response_count",
                "trace_id"
            ],
            "{name}"
        );
        assert!(
            made["content"]
                .as_str()
                .unwrap()
                .starts_with("**3 responses**, average **4.00** out of 5"),
            "{name} {made}"
        );
        assert_eq!(made["response_count"], 3, "{name}");
        assert_eq!(made["cached"], false, "{name}");
        assert!(
            made["trace_id"].is_string() && made["generated_at"].is_string(),
            "{name}"
        );
        let (_, cached) = summarize(&world, &survey, &format!("question_id={rating}"), None).await;
        let mut expected = made.clone();
        expected["cached"] = json!(true);
        assert_eq!(cached, expected, "{name}");
        // By index too; a refresh makes it again.
        let (_, by_index) = summarize(&world, &survey, "question_index=0", None).await;
        assert_eq!(by_index, expected, "{name}");
        let (_, remade) = summarize(
            &world,
            &survey,
            &format!("question_id={rating}"),
            Some(json!({"force_refresh": true})),
        )
        .await;
        assert_eq!(remade["cached"], false, "{name}");
        assert_eq!(remade["content"], made["content"], "{name}");
        assert_ne!(remade["trace_id"], made["trace_id"], "{name}");
        // The choice question counts its answers over the merged submissions.
        let (_, choices) = summarize(&world, &survey, &format!("question_id={choice}"), None).await;
        assert_eq!(choices["response_count"], 3, "{name} {choices}");
        // A question nobody answered is never stored.
        for _ in 0..2 {
            let (_, nothing) =
                summarize(&world, &survey, &format!("question_id={open}"), None).await;
            assert_eq!(nothing["content"], "No responses to analyze.", "{name}");
            assert_eq!(nothing["cached"], false, "{name}");
        }
        // Without a question it is the headline.
        let (status, answer) = summarize(&world, &survey, "", None).await;
        assert_eq!(status, StatusCode::OK, "{name}");
        assert_eq!(answer, first, "{name}");
        // A question the survey does not have.
        for (query, expected) in [
            ("question_id=nope", "question_id"),
            ("question_index=9", "question_index"),
        ] {
            let (status, answer) = summarize(&world, &survey, query, None).await;
            let (_, attr) = refused(status, &answer, &format!("{name} {query}"));
            assert_eq!(attr.as_deref(), Some(expected), "{name} {query}");
        }
        let (status, _) = post(
            &world,
            &format!(
                "{}{}/summary_headline/",
                world.surveys_uri(),
                uuid::Uuid::new_v4()
            ),
            None,
        )
        .await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{name}");
    }
}
