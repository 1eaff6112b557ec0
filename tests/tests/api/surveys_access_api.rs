//! Reading surveys on both backends (reference 0, 1.5, 1.13): the list's pagination, filters and
//! search, the public SDK route read with the project token, the activity log with its scope and
//! pagination, and who may do what (scopes, project-limited keys, other organizations, ids that
//! name nothing).

use api_tests::{World, error_shape};
use axum::http::{Method, StatusCode};
use serde_json::{Value, json};

fn survey(name: &str, description: &str) -> Value {
    json!({"name": name, "description": description, "type": "popover",
        "questions": [{"type": "open", "question": "What could be better?"}]})
}

async fn list(world: &World, query: &str) -> Value {
    let (status, page) = world
        .get(
            &format!("{}?{query}", world.surveys_uri()),
            Some(world.admin_key()),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{} {query} {page}", world.name());
    page
}

fn names(page: &Value) -> Vec<String> {
    page["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap().to_owned())
        .collect()
}

fn match_types(page: &Value) -> Vec<Value> {
    page["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["search_match_type"].clone())
        .collect()
}

#[tokio::test]
async fn list_pages_filters_and_searches_newest_first() {
    for world in World::all().await {
        let name = world.name();
        for (title, description) in [
            ("Onboarding", ""),
            ("Onboarding feedback", ""),
            ("Pricing", "Asked after onboarding"),
            ("NPS", "Quarterly"),
        ] {
            world.create_survey(survey(title, description)).await;
        }
        let all = list(&world, "").await;
        assert_eq!(all["count"], 4, "{name}");
        assert_eq!(
            names(&all),
            ["NPS", "Pricing", "Onboarding feedback", "Onboarding"],
            "{name}: newest first"
        );
        assert_eq!(all["next"], Value::Null, "{name}");
        assert_eq!(all["previous"], Value::Null, "{name}");
        assert!(
            match_types(&all).iter().all(Value::is_null),
            "{name}: no search, no match type"
        );
        // The list answers the read serializer.
        assert!(all["results"][0]["feature_flag_keys"].is_array(), "{name}");
        assert!(
            all["results"][0]["internal_targeting_flag"]["key"].is_string(),
            "{name}"
        );

        // limit / offset.
        let first = list(&world, "limit=2").await;
        assert_eq!(first["count"], 4, "{name}");
        assert_eq!(names(&first), ["NPS", "Pricing"], "{name}");
        let next = first["next"].as_str().unwrap();
        assert!(
            next.contains("limit=2") && next.contains("offset=2"),
            "{name} {next}"
        );
        assert_eq!(first["previous"], Value::Null, "{name}");
        let second = list(&world, "limit=2&offset=2").await;
        assert_eq!(
            names(&second),
            ["Onboarding feedback", "Onboarding"],
            "{name}"
        );
        assert_eq!(second["next"], Value::Null, "{name}");
        assert!(second["previous"].is_string(), "{name}");
        assert_eq!(
            names(&list(&world, "limit=2&offset=3").await),
            ["Onboarding"],
            "{name}"
        );
        assert_eq!(
            list(&world, "offset=10").await["results"],
            json!([]),
            "{name}"
        );

        // archived=true|false; without it, both.
        let pricing = all["results"][1].clone();
        let (status, _) = world
            .send_json(
                Method::PATCH,
                &world.survey_uri(&pricing),
                json!({"archived": true}),
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{name}");
        assert_eq!(
            names(&list(&world, "archived=true").await),
            ["Pricing"],
            "{name}"
        );
        assert_eq!(
            names(&list(&world, "archived=false").await),
            ["NPS", "Onboarding feedback", "Onboarding"],
            "{name}"
        );
        assert_eq!(list(&world, "").await["count"], 4, "{name}");

        // search: case-insensitive substring matches on name or description are `exact`
        // (names before descriptions, then by name); similar ones are dropped when any is.
        let found = list(&world, "search=onboarding").await;
        assert_eq!(found["count"], 3, "{name} {found}");
        assert_eq!(
            names(&found),
            ["Onboarding", "Onboarding feedback", "Pricing"],
            "{name}"
        );
        assert_eq!(
            match_types(&found),
            [json!("exact"), json!("exact"), json!("exact")],
            "{name}"
        );
        let quarterly = list(&world, "search=QUARTERLY").await;
        assert_eq!(names(&quarterly), ["NPS"], "{name}");
        assert_eq!(match_types(&quarterly), [json!("exact")], "{name}");
        // Without an exact match, look-alikes (a typo) are `similar`; a description counts half.
        let typo = list(&world, "search=onbaording").await;
        assert_eq!(
            names(&typo),
            ["Onboarding", "Onboarding feedback", "Pricing"],
            "{name}"
        );
        assert_eq!(
            match_types(&typo),
            [json!("similar"), json!("similar"), json!("similar")],
            "{name}"
        );
        // With one, look-alikes are dropped: "nps" is in one name, "NPX" only looks like it.
        world.create_survey(survey("NPX", "")).await;
        assert_eq!(names(&list(&world, "search=nps").await), ["NPS"], "{name}");
        assert_eq!(list(&world, "search=zzzz").await["count"], 0, "{name}");
        let (status, answer) = world
            .get(
                &format!("{}?search={}", world.surveys_uri(), "x".repeat(201)),
                Some(world.admin_key()),
            )
            .await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{name} {answer}");
        assert_eq!(error_shape(&answer).1.as_deref(), Some("search"), "{name}");
        assert_eq!(
            answer["detail"], "Search query must be 200 characters or fewer.",
            "{name}"
        );

        // type and ids filters.
        assert_eq!(list(&world, "type=popover").await["count"], 5, "{name}");
        assert_eq!(list(&world, "type=widget").await["count"], 0, "{name}");
        let ids = format!(
            "ids={},{}",
            all["results"][0]["id"].as_str().unwrap(),
            uuid::Uuid::new_v4()
        );
        assert_eq!(names(&list(&world, &ids).await), ["NPS"], "{name}");
    }
}

/// SurveyAPISerializer's fields (reference 1.13), without translations (none set).
const SDK_FIELDS: &[&str] = &[
    "appearance",
    "base_language",
    "conditions",
    "current_iteration",
    "current_iteration_start_date",
    "enable_partial_responses",
    "end_date",
    "id",
    "internal_targeting_flag_key",
    "linked_flag_key",
    "name",
    "questions",
    "schedule",
    "start_date",
    "targeting_flag_key",
    "type",
];

#[tokio::test]
async fn public_route_serves_the_sdk_with_the_project_token() {
    for world in World::all().await {
        let name = world.name();
        let token = &world.bootstrap.project.api_token;
        let shown = world
            .create_survey(survey("Shown", "Notes nobody else reads"))
            .await;
        let hidden = world.create_survey(survey("Hidden", "")).await;
        let (status, _) = world
            .send_json(
                Method::PATCH,
                &world.survey_uri(&hidden),
                json!({"archived": true}),
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{name}");
        let (status, launched) = world
            .send(
                Method::POST,
                &format!("{}launch/", world.survey_uri(&shown)),
                Some(world.admin_key()),
                None,
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{name} {launched}");

        let (status, answer) = world
            .get(&format!("/api/surveys/?token={token}"), None)
            .await;
        assert_eq!(status, StatusCode::OK, "{name} {answer}");
        let mut keys: Vec<&str> = answer
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        keys.sort_unstable();
        assert_eq!(keys, ["survey_config", "surveys"], "{name}");
        let surveys = answer["surveys"].as_array().unwrap();
        assert_eq!(surveys.len(), 1, "{name}: archived ones are not served");
        let served = &surveys[0];
        let mut fields: Vec<&str> = served
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        fields.sort_unstable();
        assert_eq!(fields, SDK_FIELDS, "{name}: no description {served}");
        assert_eq!(served["id"], shown["id"], "{name}");
        assert_eq!(served["name"], "Shown", "{name}");
        assert_eq!(served["type"], "popover", "{name}");
        assert_eq!(served["start_date"], launched["start_date"], "{name}");
        assert_eq!(served["questions"], shown["questions"], "{name}");
        assert_eq!(
            served["internal_targeting_flag_key"], shown["internal_targeting_flag"]["key"],
            "{name}"
        );
        assert_eq!(served["linked_flag_key"], Value::Null, "{name}");
        assert_eq!(served["targeting_flag_key"], Value::Null, "{name}");
        // The older parameter name works too.
        let (status, same) = world
            .get(&format!("/api/surveys/?api_key={token}"), None)
            .await;
        assert_eq!(status, StatusCode::OK, "{name}");
        assert_eq!(same, answer, "{name}");

        // A token that names no project, or none at all: 401.
        for uri in ["/api/surveys/?token=phc_nope", "/api/surveys/"] {
            let (status, answer) = world.get(uri, None).await;
            assert_eq!(status, StatusCode::UNAUTHORIZED, "{name} {uri} {answer}");
            assert_eq!(error_shape(&answer).0, "invalid_api_key", "{name}");
        }
        // Another project's token serves that project's surveys only.
        let second = common::provisioning::create_project(
            world.backend.state.store.as_ref(),
            world.bootstrap.organization.id,
            "Second",
            "UTC",
        )
        .await
        .unwrap();
        let (status, answer) = world
            .get(&format!("/api/surveys/?token={}", second.api_token), None)
            .await;
        assert_eq!(status, StatusCode::OK, "{name}");
        assert_eq!(answer["surveys"], json!([]), "{name}");
    }
}

fn activities(log: &Value) -> Vec<String> {
    log["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|entry| entry["activity"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test]
async fn activity_log_of_one_survey_and_of_all() {
    for world in World::all().await {
        let name = world.name();
        let created = world.create_survey(survey("Logged", "")).await;
        let uri = world.survey_uri(&created);
        let id = created["id"].as_str().unwrap();
        let (status, _) = world
            .send_json(Method::PATCH, &uri, json!({"name": "Logged 2"}))
            .await;
        assert_eq!(status, StatusCode::OK, "{name}");
        for action in ["launch", "stop"] {
            let (status, answer) = world
                .send(
                    Method::POST,
                    &format!("{uri}{action}/"),
                    Some(world.admin_key()),
                    None,
                )
                .await;
            assert_eq!(status, StatusCode::OK, "{name} {action} {answer}");
        }
        let response = uuid::Uuid::new_v4();
        for action in ["archive", "unarchive"] {
            let (status, answer) = world
                .send(
                    Method::POST,
                    &format!("{uri}responses/{response}/{action}/"),
                    Some(world.admin_key()),
                    None,
                )
                .await;
            assert_eq!(status, StatusCode::OK, "{name} {action} {answer}");
        }
        let (status, _) = world
            .send_json(Method::PATCH, &uri, json!({"archived": true}))
            .await;
        assert_eq!(status, StatusCode::OK, "{name}");

        let (status, log) = world
            .get(&format!("{uri}activity/"), Some(world.admin_key()))
            .await;
        assert_eq!(status, StatusCode::OK, "{name} {log}");
        assert_eq!(
            activities(&log),
            [
                "updated",
                "response_unarchived",
                "response_archived",
                "stopped",
                "launched",
                "updated",
                "created"
            ],
            "{name}"
        );
        assert_eq!(log["total_count"], 7, "{name}");
        assert_eq!(log["next"], Value::Null, "{name}");
        let entry = &log["results"][5];
        assert_eq!(entry["scope"], "Survey", "{name}");
        assert_eq!(entry["item_id"], id, "{name}");
        assert_eq!(entry["user"]["email"], world.bootstrap.user.email, "{name}");
        assert!(
            entry["detail"]["changes"]
                .as_array()
                .unwrap()
                .iter()
                .any(|change| change["field"] == "name"
                    && change["before"] == "Logged"
                    && change["after"] == "Logged 2"),
            "{name} {entry}"
        );
        assert_eq!(
            log["results"][6]["detail"]["changes"],
            Value::Null,
            "{name}"
        );
        assert_eq!(log["results"][0]["detail"]["name"], "Logged 2", "{name}");

        // Pages of `limit` entries.
        let (_, page) = world
            .get(&format!("{uri}activity/?limit=3"), Some(world.admin_key()))
            .await;
        assert_eq!(
            activities(&page),
            ["updated", "response_unarchived", "response_archived"],
            "{name}"
        );
        assert_eq!(page["total_count"], 7, "{name}");
        assert!(
            page["next"].as_str().unwrap().ends_with("?page=2&limit=3"),
            "{name} {page}"
        );
        assert_eq!(page["previous"], Value::Null, "{name}");
        let (_, last) = world
            .get(
                &format!("{uri}activity/?limit=3&page=3"),
                Some(world.admin_key()),
            )
            .await;
        assert_eq!(activities(&last), ["created"], "{name}");
        assert_eq!(last["next"], Value::Null, "{name}");
        assert!(
            last["previous"]
                .as_str()
                .unwrap()
                .ends_with("?page=2&limit=3"),
            "{name} {last}"
        );
        let (status, answer) = world
            .get(&format!("{uri}activity/?limit=0"), Some(world.admin_key()))
            .await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{name} {answer}");
        assert_eq!(error_shape(&answer).1.as_deref(), Some("limit"), "{name}");

        // The whole family's log keeps a deleted survey's history, newest first.
        world.create_survey(survey("Other", "")).await;
        let (status, _) = world
            .send(Method::DELETE, &uri, Some(world.admin_key()), None)
            .await;
        assert_eq!(status, StatusCode::NO_CONTENT, "{name}");
        let (status, all) = world
            .get(
                &format!("{}activity/", world.surveys_uri()),
                Some(world.admin_key()),
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{name} {all}");
        assert_eq!(all["total_count"], 9, "{name}");
        assert_eq!(
            activities(&all)[..3],
            [
                "deleted".to_owned(),
                "created".to_owned(),
                "updated".to_owned()
            ],
            "{name}"
        );
        assert_eq!(all["results"][0]["item_id"], id, "{name}");
        assert_eq!(all["results"].as_array().unwrap().len(), 9, "{name}");
        // One survey's log needs the survey.
        let (status, _) = world
            .get(&format!("{uri}activity/"), Some(world.admin_key()))
            .await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{name}");

        // Scope activity_log:read: survey:read alone is not enough; it alone is.
        let surveys_only = world.key(&["survey:read"], None).await;
        let log_only = world.key(&["activity_log:read"], None).await;
        let all_uri = format!("{}activity/", world.surveys_uri());
        let (status, answer) = world.get(&all_uri, Some(&surveys_only)).await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{name} {answer}");
        error_shape(&answer);
        let (status, _) = world.get(&all_uri, Some(&log_only)).await;
        assert_eq!(status, StatusCode::OK, "{name}");
    }
}

#[tokio::test]
async fn scopes_projects_and_missing_surveys() {
    for world in World::all().await {
        let name = world.name();
        let uri = world.surveys_uri();
        let existing = world.create_survey(survey("Existing", "")).await;
        let one = world.survey_uri(&existing);

        // survey:read reads but does not write.
        let read_only = world.key(&["survey:read"], None).await;
        assert_eq!(
            world.get(&uri, Some(&read_only)).await.0,
            StatusCode::OK,
            "{name}"
        );
        assert_eq!(
            world.get(&one, Some(&read_only)).await.0,
            StatusCode::OK,
            "{name}"
        );
        let attempts = [
            (
                Method::POST,
                uri.clone(),
                Some(survey("Nope", "").to_string()),
            ),
            (
                Method::PATCH,
                one.clone(),
                Some(json!({"name": "Nope"}).to_string()),
            ),
            (Method::DELETE, one.clone(), None),
            (Method::POST, format!("{one}launch/"), None),
            (Method::POST, format!("{one}stop/"), None),
            (
                Method::POST,
                format!("{one}responses/{}/archive/", uuid::Uuid::new_v4()),
                None,
            ),
            (
                Method::POST,
                format!("{one}duplicate_to_projects/"),
                Some(json!({"target_team_ids": [world.bootstrap.project.id]}).to_string()),
            ),
        ];
        for (method, target, body) in attempts {
            let (status, answer) = world
                .send(method.clone(), &target, Some(&read_only), body.as_deref())
                .await;
            assert_eq!(
                status,
                StatusCode::FORBIDDEN,
                "{name} {method} {target} {answer}"
            );
            assert_eq!(error_shape(&answer).0, "permission_denied", "{name}");
        }
        // Nothing was written by the refused requests.
        let after = world.get(&one, Some(world.admin_key())).await.1;
        assert_eq!(after["name"], "Existing", "{name}");
        assert_eq!(after["start_date"], Value::Null, "{name}");
        // A key with no survey scope reads nothing.
        let flags_only = world.key(&["feature_flag:read"], None).await;
        assert_eq!(
            world.get(&uri, Some(&flags_only)).await.0,
            StatusCode::FORBIDDEN,
            "{name}"
        );

        // A key limited to another project cannot touch this one.
        let second = common::provisioning::create_project(
            world.backend.state.store.as_ref(),
            world.bootstrap.organization.id,
            "Second",
            "UTC",
        )
        .await
        .unwrap();
        let elsewhere = world.key(&["*"], Some(vec![second.id])).await;
        for target in [&uri, &one] {
            let (status, answer) = world.get(target, Some(&elsewhere)).await;
            assert_eq!(status, StatusCode::FORBIDDEN, "{name} {answer}");
            error_shape(&answer);
        }
        let (status, _) = world
            .get(
                &format!("/api/projects/{}/surveys/", second.id),
                Some(&elsewhere),
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{name}");
        // A project of another organization: the membership check answers 403.
        let foreign = format!("/api/projects/{}/surveys/", world.foreign_project);
        let (status, answer) = world.get(&foreign, Some(world.admin_key())).await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{name} {answer}");
        error_shape(&answer);
        let (status, _) = world
            .send_json(Method::POST, &foreign, survey("Intruder", ""))
            .await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{name}");
        // A survey of this project is not found through another project of the organization.
        let (status, _) = world
            .get(
                &format!(
                    "/api/projects/{}/surveys/{}/",
                    second.id,
                    existing["id"].as_str().unwrap()
                ),
                Some(world.admin_key()),
            )
            .await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{name}");

        // Ids that name nothing: an unknown uuid and a non-uuid are 404 on every route.
        for id in [
            uuid::Uuid::new_v4().to_string(),
            "not-a-uuid".to_owned(),
            "42".to_owned(),
        ] {
            let base = format!("{uri}{id}/");
            let requests = [
                (Method::GET, base.clone(), None),
                (
                    Method::PATCH,
                    base.clone(),
                    Some(json!({"name": "x"}).to_string()),
                ),
                (Method::DELETE, base.clone(), None),
                (Method::GET, format!("{base}activity/"), None),
                (Method::GET, format!("{base}archived-response-uuids/"), None),
                (Method::POST, format!("{base}launch/"), None),
            ];
            for (method, target, body) in requests {
                let (status, answer) = world
                    .send(
                        method.clone(),
                        &target,
                        Some(world.admin_key()),
                        body.as_deref(),
                    )
                    .await;
                assert_eq!(
                    status,
                    StatusCode::NOT_FOUND,
                    "{name} {method} {target} {answer}"
                );
                assert_eq!(error_shape(&answer).0, "not_found", "{name}");
            }
        }
        // No key at all: 401.
        let (status, answer) = world.get(&uri, None).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED, "{name} {answer}");
        error_shape(&answer);
    }
}
