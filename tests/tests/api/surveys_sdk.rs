//! What posthog-js sees of a survey, on both backends: `/flags`'s remote config says `surveys`
//! while one runs, `/api/surveys/?token=` lists it with its flag keys, and its internal
//! targeting flag is on for a new person and off once that person answered (`survey sent`
//! with `$set: {"$survey_responded/<id>": true}`, as posthog-js sends it) or dismissed.

use api_tests::World;
use axum::body::Body;
use axum::http::{Method, Request, StatusCode};
use serde_json::{Value, json};

async fn flags(world: &World, distinct_id: &str) -> Value {
    let body = json!({"token": world.bootstrap.project.api_token, "distinct_id": distinct_id});
    let request = Request::post("/flags/?v=2&config=true")
        .header("content-type", "application/json")
        .body(Body::from(body.to_string()))
        .unwrap();
    let (status, answer) = api_tests::respond(world.app.clone(), request).await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    answer
}

fn enabled(answer: &Value, key: &str) -> Value {
    answer["flags"][key]["enabled"].clone()
}

#[tokio::test]
async fn posthog_js_finds_running_surveys_and_their_flags_hide_them_after_an_answer() {
    for world in World::all().await {
        let name = world.name();
        let project = world.bootstrap.project.id;
        let uri = format!("/api/projects/{project}/surveys/");
        assert_eq!(flags(&world, "nobody").await["surveys"], false, "{name}");

        let body = json!({"name": "Pulse", "type": "popover", "description": "internal note",
            "questions": [{"type": "rating", "question": "How are we doing?", "scale": 5, "id": "q1"}],
            "conditions": {"url": "/pricing", "urlMatchType": "icontains"}});
        let (status, survey) = world
            .send(
                Method::POST,
                &uri,
                Some(world.admin_key()),
                Some(&body.to_string()),
            )
            .await;
        assert_eq!(status, StatusCode::CREATED, "{name} {survey}");
        let id = survey["id"].as_str().unwrap().to_owned();
        let key = survey["internal_targeting_flag"]["key"]
            .as_str()
            .unwrap()
            .to_owned();
        // A draft: listed for the SDK (it reads the dates itself), but no survey runs yet.
        assert_eq!(flags(&world, "nobody").await["surveys"], false, "{name}");

        let (status, launched) = world
            .send(
                Method::POST,
                &format!("{uri}{id}/launch/"),
                Some(world.admin_key()),
                None,
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{name} {launched}");
        assert!(launched["start_date"].is_string(), "{name} {launched}");
        let answer = flags(&world, "visitor").await;
        assert_eq!(answer["surveys"], true, "{name} {answer}");
        assert_eq!(enabled(&answer, &key), true, "{name} {answer}");

        // The SDK payload, fetched with the project token alone.
        let (status, payload) = world
            .get(
                &format!("/api/surveys/?token={}", world.bootstrap.project.api_token),
                None,
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{name} {payload}");
        let listed = &payload["surveys"][0];
        assert_eq!(listed["id"], id.as_str(), "{name} {payload}");
        assert_eq!(
            listed["internal_targeting_flag_key"],
            key.as_str(),
            "{name}"
        );
        assert_eq!(listed["conditions"]["url"], "/pricing", "{name}");
        assert!(listed.get("description").is_none(), "{name} {listed}");
        assert!(listed["start_date"].is_string(), "{name} {listed}");
        // Server SDKs do not evaluate survey flags locally (PostHog leaves them out).
        let (status, definitions) = world
            .get(
                &format!("/api/projects/{project}/feature_flags/local_evaluation/"),
                Some(world.admin_key()),
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{name} {definitions}");
        assert!(
            definitions["flags"]
                .as_array()
                .unwrap()
                .iter()
                .all(|flag| flag["key"] != key.as_str()),
            "{name} {definitions}"
        );
        let (status, refused) = world.get("/api/surveys/?token=phc_unknown", None).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED, "{name} {refused}");

        // posthog-js's events after an answer and after a dismissal.
        world
            .capture(vec![
                json!({"event": "survey sent", "distinct_id": "visitor",
                    "properties": {"$survey_id": id, "$survey_response_q1": 4,
                        "$set": {format!("$survey_responded/{id}"): true}}}),
                json!({"event": "survey dismissed", "distinct_id": "skipper",
                    "properties": {"$survey_id": id,
                        "$set": {format!("$survey_dismissed/{id}"): true}}}),
            ])
            .await;
        lake::commit_all(&world.backend.state).await.unwrap();
        for (person, shown) in [("visitor", false), ("skipper", false), ("newcomer", true)] {
            let answer = flags(&world, person).await;
            assert_eq!(enabled(&answer, &key), shown, "{name} {person} {answer}");
        }

        // Stopped: no survey runs, the flag is off for everyone.
        let (status, _) = world
            .send(
                Method::POST,
                &format!("{uri}{id}/stop/"),
                Some(world.admin_key()),
                None,
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{name}");
        let answer = flags(&world, "newcomer").await;
        assert_eq!(answer["surveys"], false, "{name} {answer}");
        assert_ne!(enabled(&answer, &key), true, "{name} {answer}");
    }
}
