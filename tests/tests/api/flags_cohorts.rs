//! Cohort conditions in feature flags on both backends: what a flag may name when saved (live
//! cohorts; behavioural ones once calculated), `/flags` answers for person-property cohorts
//! (nested, from stored and request properties), static and calculated membership, `not_in`,
//! the local-evaluation `cohorts`, and the per-process cache dropping a project's flags when a
//! cohort definition changes. Cohorts are written through the cohorts repository directly.

use api_tests::{World, error_shape, respond};
use axum::body::Body;
use axum::http::{Request, StatusCode};
use chrono::Utc;
use cohort_core::Cohort;
use common::activity::Actor;
use common::models::person;
use serde_json::{Value, json};

fn cohort(name: &str, filters: Option<Value>, is_static: bool) -> Cohort {
    serde_json::from_value(json!({
        "id": 0, "team_id": 0, "name": name, "filters": filters, "is_static": is_static,
        "created_at": "2026-01-01T00:00:00Z",
    }))
    .unwrap()
}

async fn create_cohort(world: &World, cohort: Cohort) -> i64 {
    cohort_core::repository::create(
        world.backend.state.store.as_ref(),
        world.bootstrap.project.id,
        cohort,
        &Actor::system(),
        Utc::now(),
        |_| Ok(vec![]),
    )
    .await
    .unwrap()
    .id
}

/// Changes a stored cohort as the cohorts routes would, then tells the flags cache.
async fn change_cohort(world: &World, id: i64, change: impl FnOnce(&mut Cohort)) {
    let store = world.backend.state.store.as_ref();
    let project = world.bootstrap.project.id;
    let stored = cohort_core::repository::get(store, project, id)
        .await
        .unwrap()
        .unwrap();
    let mut next = stored.cohort.clone();
    change(&mut next);
    cohort_core::repository::save(store, project, &stored, next, &Actor::system(), Utc::now())
        .await
        .unwrap();
    feature_flags::cache::cohorts_changed(&world.backend.state, project);
}

async fn person_of(world: &World, distinct_id: &str) -> uuid::Uuid {
    person::person_id_of(
        world.backend.state.store.as_ref(),
        world.bootstrap.project.id,
        distinct_id,
    )
    .await
    .unwrap()
    .unwrap_or_else(|| panic!("{}: no person for {distinct_id}", world.name()))
}

fn on_cohort(key: &str, id: i64, operator: &str) -> Value {
    json!({"key": key, "filters": {"groups": [{"rollout_percentage": 100, "properties": [
        {"key": "id", "type": "cohort", "value": id, "operator": operator}]}]}})
}

/// `/flags/?v=4` for `distinct_id`: flag key -> enabled, and whether errors were reported.
async fn flags_for(
    world: &World,
    distinct_id: &str,
    person_properties: Option<Value>,
) -> (serde_json::Map<String, Value>, bool) {
    let mut body = json!({"token": world.bootstrap.project.api_token, "distinct_id": distinct_id});
    if let Some(properties) = person_properties {
        body["person_properties"] = properties;
    }
    let request = Request::post("/flags/?v=4")
        .header("content-type", "application/json")
        .body(Body::from(body.to_string()))
        .unwrap();
    let (status, answer) = respond(world.app.clone(), request).await;
    assert_eq!(status, StatusCode::OK, "{} {answer}", world.name());
    let enabled = answer["flags"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(key, flag)| (key.clone(), flag["enabled"].clone()))
        .collect();
    (
        enabled,
        answer["errorsWhileComputingFlags"].as_bool().unwrap(),
    )
}

#[tokio::test]
async fn cohort_conditions_validate_evaluate_and_feed_local_evaluation() {
    for world in World::all().await {
        let name = world.name();
        let project = world.bootstrap.project.id;
        let store = world.backend.state.store.as_ref();
        // Persons the lake keeps.
        world
            .capture(vec![
                json!({"event": "$identify", "distinct_id": "ada", "timestamp": "2026-11-22T10:00:00Z",
                    "properties": {"$set": {"plan": "pro", "country": "de"}}}),
                json!({"event": "$identify", "distinct_id": "bob", "timestamp": "2026-11-22T10:00:00Z",
                    "properties": {"$set": {"plan": "free", "country": "us"}}}),
                json!({"event": "$identify", "distinct_id": "cyd", "timestamp": "2026-11-22T10:00:00Z",
                    "properties": {"$set": {"plan": "free", "country": "FR"}}}),
            ])
            .await;
        lake::commit_all(&world.backend.state).await.unwrap();

        let pro = create_cohort(
            &world,
            cohort(
                "pro",
                Some(json!({"properties": {"type": "AND", "values": [
                    {"type": "person", "key": "plan", "value": "pro"}]}})),
                false,
            ),
        )
        .await;
        let europe = create_cohort(
            &world,
            cohort(
                "europe or pro",
                Some(json!({"properties": {"type": "OR", "values": [
                    {"type": "AND", "values": [
                        {"type": "person", "key": "country", "value": ["de", "fr"], "operator": "exact"}]},
                    {"type": "cohort", "key": "id", "value": pro}]}})),
                false,
            ),
        )
        .await;
        let hand_picked = create_cohort(&world, cohort("hand picked", None, true)).await;
        cohort_core::members::add(
            store,
            project,
            hand_picked,
            &[person_of(&world, "bob").await],
        )
        .await
        .unwrap();
        let behavioural = json!({"properties": {"type": "OR", "values": [
            {"type": "behavioral", "key": "$pageview", "value": "performed_event",
             "event_type": "events", "time_value": 30, "time_interval": "day"}]}});
        let uncalculated =
            create_cohort(&world, cohort("viewers", Some(behavioural.clone()), false)).await;
        let calculated =
            create_cohort(&world, cohort("recent viewers", Some(behavioural), false)).await;
        change_cohort(&world, calculated, |cohort| {
            cohort.last_calculation = Some(Utc::now());
        })
        .await;
        cohort_core::members::add(
            store,
            project,
            calculated,
            &[person_of(&world, "cyd").await],
        )
        .await
        .unwrap();
        let deleted = create_cohort(&world, cohort("gone", None, true)).await;
        change_cohort(&world, deleted, |cohort| cohort.deleted = true).await;

        // Saving: unknown and deleted cohorts do not exist; an uncalculated behavioural one is
        // still being backfilled.
        for (body, code, detail) in [
            (
                on_cohort("x", 999, "in"),
                "cohort_does_not_exist",
                "Cohort with id 999 does not exist".to_owned(),
            ),
            (
                on_cohort("x", deleted, "in"),
                "cohort_does_not_exist",
                format!("Cohort with id {deleted} does not exist"),
            ),
            (
                on_cohort("x", uncalculated, "not_in"),
                "behavioral_cohort_found",
                "Cohort 'viewers' is still being backfilled and cannot be used in feature flags yet. It will become available once its initial backfill completes.".to_owned(),
            ),
        ] {
            let (status, answer) = world
                .send(
                    axum::http::Method::POST,
                    &world.flags_uri(),
                    Some(world.admin_key()),
                    Some(&body.to_string()),
                )
                .await;
            assert_eq!(status, StatusCode::BAD_REQUEST, "{name} {answer}");
            assert_eq!(
                error_shape(&answer),
                (code.to_owned(), Some("filters".to_owned())),
                "{name} {answer}"
            );
            assert_eq!(answer["detail"], detail, "{name}");
        }

        world.create_flag(on_cohort("pro", pro, "in")).await;
        world.create_flag(on_cohort("not-pro", pro, "not_in")).await;
        world.create_flag(on_cohort("europe", europe, "in")).await;
        world
            .create_flag(on_cohort("picked", hand_picked, "in"))
            .await;
        world
            .create_flag(on_cohort("not-picked", hand_picked, "not_in"))
            .await;
        world
            .create_flag(on_cohort("viewers", calculated, "in"))
            .await;

        let expect = |who: &str, answers: &serde_json::Map<String, Value>, wanted: [bool; 6]| {
            let keys = [
                "pro",
                "not-pro",
                "europe",
                "picked",
                "not-picked",
                "viewers",
            ];
            for (key, wanted) in keys.iter().zip(wanted) {
                assert_eq!(answers[*key], wanted, "{name} {who} {key}: {answers:?}");
            }
        };
        let (ada, errors) = flags_for(&world, "ada", None).await;
        assert!(!errors, "{name}");
        expect("ada", &ada, [true, false, true, false, true, false]);
        let (bob, _) = flags_for(&world, "bob", None).await;
        expect("bob", &bob, [false, true, false, true, false, false]);
        let (cyd, _) = flags_for(&world, "cyd", None).await;
        expect("cyd", &cyd, [false, true, true, false, true, true]);
        // No person: no stored membership; request properties still place them.
        let (stranger, errors) = flags_for(&world, "stranger", Some(json!({"plan": "pro"}))).await;
        assert!(!errors, "{name}");
        expect(
            "stranger",
            &stranger,
            [true, false, true, false, true, false],
        );
        // The request's values win over the stored ones.
        let (ada_free, _) = flags_for(
            &world,
            "ada",
            Some(json!({"plan": "free", "country": "us"})),
        )
        .await;
        expect(
            "ada as free",
            &ada_free,
            [false, true, false, false, true, false],
        );

        // Local evaluation carries the person-property cohorts only (nested ones included).
        let token = &world.bootstrap.project.api_token;
        let (status, definitions) = world
            .get(
                &format!("/flags/definitions?token={token}&send_cohorts"),
                Some(world.admin_key()),
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{name} {definitions}");
        let mut ids: Vec<&String> = definitions["cohorts"].as_object().unwrap().keys().collect();
        ids.sort();
        let mut wanted = [pro.to_string(), europe.to_string()];
        wanted.sort();
        assert_eq!(
            ids,
            wanted.iter().collect::<Vec<_>>(),
            "{name} {definitions}"
        );
        assert_eq!(
            definitions["cohorts"][pro.to_string()],
            json!({"type": "AND", "values": [{"type": "person", "key": "plan", "value": "pro"}]}),
            "{name}"
        );

        // Membership is read per request; a definition change reaches the cache at once.
        cohort_core::members::add(
            store,
            project,
            hand_picked,
            &[person_of(&world, "ada").await],
        )
        .await
        .unwrap();
        change_cohort(&world, pro, |cohort| {
            cohort.filters = Some(
                serde_json::from_value(json!({"properties": {"type": "AND", "values": [
                    {"type": "person", "key": "plan", "value": "free"}]}}))
                .unwrap(),
            );
        })
        .await;
        let (ada, _) = flags_for(&world, "ada", None).await;
        expect("ada after", &ada, [false, true, true, true, false, false]);
        let (bob, _) = flags_for(&world, "bob", None).await;
        expect("bob after", &bob, [true, false, true, true, false, false]);
    }
}
