//! The cohorts family on both backends: create/list/retrieve/update with every validation error,
//! static membership by person id, the stored members, soft delete and restore, the 405 of
//! DELETE, scopes, activity, the calculation queued for dynamic cohorts, and an experiment's
//! exposure cohort (reference 2.7).

use api_tests::{World, error_shape};
use axum::http::{Method, StatusCode};
use common::jobs::JobRun;
use common::models::person::{self, Person};
use common::store::{Condition, Item, WriteOp};
use serde_json::{Value, json};
use uuid::Uuid;

fn cohorts_uri(world: &World) -> String {
    format!("/api/projects/{}/cohorts/", world.bootstrap.project.id)
}

async fn send(world: &World, method: Method, uri: &str, body: Value) -> (StatusCode, Value) {
    world
        .send(
            method,
            uri,
            Some(world.admin_key()),
            Some(&body.to_string()),
        )
        .await
}

async fn create(world: &World, body: Value) -> Value {
    let (status, created) = send(world, Method::POST, &cohorts_uri(world), body.clone()).await;
    assert_eq!(
        status,
        StatusCode::CREATED,
        "{} {body} {created}",
        world.name()
    );
    created
}

/// The 400's `(detail, attr)`, after checking the error shape.
fn refused(status: StatusCode, body: &Value, context: &str) -> (String, Option<String>) {
    assert_eq!(status, StatusCode::BAD_REQUEST, "{context} {body}");
    let (_, attr) = error_shape(body);
    (body["detail"].as_str().unwrap_or_default().to_owned(), attr)
}

/// A person of the bootstrap project, written as the committer writes them.
async fn person(world: &World, plan: &str) -> Uuid {
    let team_id = world.bootstrap.project.id;
    let uuid = Uuid::new_v4();
    let mut properties = serde_json::Map::new();
    properties.insert("plan".into(), json!(plan));
    let person = Person {
        uuid,
        team_id,
        properties,
        is_identified: true,
        created_at: chrono::Utc::now(),
    };
    let item = Item::of(person::person_pk(team_id, uuid), person::PERSON_SK, &person).unwrap();
    world
        .backend
        .state
        .store
        .transact_write(vec![WriteOp::Put {
            item,
            condition: Condition::None,
        }])
        .await
        .unwrap();
    uuid
}

fn pro_filters() -> Value {
    json!({"properties": {"type": "AND", "values": [
        {"type": "person", "key": "plan", "value": ["pro"], "operator": "exact"}]}})
}

#[tokio::test]
async fn create_validates_and_renders_the_serializer_shape() {
    for world in World::all().await {
        let name = world.name();
        let uri = cohorts_uri(&world);
        let created = create(
            &world,
            json!({"name": "Pro users", "description": "Paying", "filters": pro_filters()}),
        )
        .await;
        let mut keys: Vec<&str> = created
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        keys.sort_unstable();
        assert_eq!(
            keys,
            [
                "cohort_type",
                "count",
                "created_at",
                "created_by",
                "deleted",
                "description",
                "errors_calculating",
                "experiment_set",
                "filters",
                "groups",
                "id",
                "is_calculating",
                "is_static",
                "last_calculation",
                "last_error_at",
                "name",
                "query"
            ],
            "{name}"
        );
        assert_eq!(created["cohort_type"], "person_property", "{name}");
        assert_eq!(created["is_static"], false, "{name}");
        assert_eq!(created["is_calculating"], true, "{name}");
        assert_eq!(created["groups"], json!([]), "{name}");
        assert_eq!(created["query"], Value::Null, "{name}");
        assert_eq!(created["experiment_set"], json!([]), "{name}");
        assert_eq!(created["filters"], pro_filters(), "{name}");
        assert_eq!(
            created["created_by"]["email"], world.bootstrap.user.email,
            "{name}"
        );
        // Its calculation is queued with the job's payload.
        let runs = JobRun::list(
            world.backend.state.store.as_ref(),
            Some(world.bootstrap.project.id),
            Some(cohort_core::calculation::JOB),
            10,
        )
        .await
        .unwrap();
        assert_eq!(runs.len(), 1, "{name}");
        assert_eq!(
            runs[0].payload,
            json!({"team_id": world.bootstrap.project.id, "cohort_id": created["id"]}),
            "{name}"
        );

        let behavioral = create(
            &world,
            json!({"name": "Bought recently and pro", "filters": {"properties": {"type": "AND",
                "values": [
                    {"type": "behavioral", "key": "purchase", "value": "performed_event",
                     "event_type": "events", "time_value": 30, "time_interval": "day"},
                    {"type": "cohort", "key": "id", "value": created["id"]}]}}}),
        )
        .await;
        assert_eq!(behavioral["cohort_type"], "behavioral", "{name}");

        let cases = [
            (
                json!({"filters": pro_filters()}),
                "This field is required.",
                Some("name"),
            ),
            (
                json!({"name": "  ", "filters": pro_filters()}),
                "This field may not be blank.",
                Some("name"),
            ),
            (
                json!({"name": "x".repeat(401), "filters": pro_filters()}),
                "Ensure this field has no more than 400 characters.",
                Some("name"),
            ),
            (
                json!({"name": "A", "filters": pro_filters(), "colour": "red"}),
                "unknown field `colour`",
                None,
            ),
            (
                json!({"name": "A"}),
                "A dynamic cohort needs filters",
                Some("filters"),
            ),
            (
                json!({"name": "A", "is_static": true, "filters": pro_filters()}),
                "A static cohort takes no filters: its members are added by person id.",
                Some("filters"),
            ),
            (
                json!({"name": "A", "filters": {"properties": {"type": "AND", "values": [
                    {"type": "person", "key": "", "value": "x"}]}}}),
                "A person filter needs a property key.",
                Some("filters.properties.values[0].key"),
            ),
            (
                json!({"name": "A", "filters": {"properties": {"type": "AND", "values": [
                    {"type": "behavioral", "key": "purchase", "value": "performed_event",
                     "event_type": "events"}]}}}),
                "A behavioral filter needs a window",
                Some("filters.properties.values[0].time_value"),
            ),
            (
                json!({"name": "A", "filters": {"properties": {"type": "OR", "values": [
                    {"type": "cohort", "key": "id", "value": 999}]}}}),
                "Cohort with id 999 does not exist",
                Some("filters"),
            ),
            (
                json!({"name": "A", "filters": pro_filters(), "groups": [{"properties": []}]}),
                "Legacy cohort groups are not supported",
                Some("groups"),
            ),
            (
                json!({"name": "A", "filters": pro_filters(), "query": {"kind": "HogQLQuery"}}),
                "Cohorts defined by a query are not supported",
                Some("query"),
            ),
        ];
        for (body, expected, expected_attr) in cases {
            let (status, answer) = send(&world, Method::POST, &uri, body.clone()).await;
            let (detail, attr) = refused(status, &answer, &format!("{name} {body}"));
            assert!(detail.starts_with(expected), "{name} {body}: {detail}");
            if expected_attr.is_some() {
                assert_eq!(attr.as_deref(), expected_attr, "{name} {body}");
            }
        }

        // Read-only fields sent back are ignored; an empty definition on a static cohort too.
        let echoed = create(
            &world,
            json!({"name": "Hand picked", "is_static": true, "count": 7, "groups": [],
                "query": null, "filters": {"properties": {"type": "AND", "values": []}}}),
        )
        .await;
        assert_eq!(echoed["cohort_type"], "static", "{name}");
        assert_eq!(echoed["count"], 0, "{name}");
        assert_eq!(echoed["is_calculating"], false, "{name}");
        assert_eq!(echoed["filters"], Value::Null, "{name}");

        // A cohort naming a cohort that names it back is refused on update.
        let (status, answer) = send(
            &world,
            Method::PATCH,
            &format!("{uri}{}/", created["id"]),
            json!({"filters": {"properties": {"type": "OR", "values": [
                {"type": "cohort", "key": "id", "value": behavioral["id"]}]}}}),
        )
        .await;
        let (detail, _) = refused(status, &answer, &name);
        assert!(detail.contains("cannot contain itself"), "{name} {detail}");
    }
}

#[tokio::test]
async fn list_retrieve_update_soft_delete_and_restore() {
    for world in World::all().await {
        let name = world.name();
        let uri = cohorts_uri(&world);
        let first = create(&world, json!({"name": "First", "filters": pro_filters()})).await;
        let second = create(&world, json!({"name": "Second", "is_static": true})).await;
        let (status, list) = world
            .get(&format!("{uri}?limit=1"), Some(world.admin_key()))
            .await;
        assert_eq!(status, StatusCode::OK, "{name}");
        assert_eq!(list["count"], 2, "{name}");
        assert_eq!(
            list["results"][0]["id"], second["id"],
            "{name}: newest first"
        );
        assert!(
            list["next"].as_str().unwrap().contains("offset=1"),
            "{name}"
        );
        assert_eq!(list["previous"], Value::Null, "{name}");

        let one = format!("{uri}{}/", first["id"]);
        let (status, read) = world.get(&one, Some(world.admin_key())).await;
        assert_eq!(status, StatusCode::OK, "{name}");
        // The calculation (run by the job queue) may already have set count and its times.
        for field in [
            "id",
            "name",
            "filters",
            "created_at",
            "created_by",
            "is_static",
        ] {
            assert_eq!(read[field], first[field], "{name} {field}");
        }
        for missing in [format!("{uri}999/"), format!("{uri}abc/")] {
            let (status, _) = world.get(&missing, Some(world.admin_key())).await;
            assert_eq!(status, StatusCode::NOT_FOUND, "{name} {missing}");
        }

        // PATCH: name and description; a new definition queues a new calculation.
        let (status, renamed) = send(
            &world,
            Method::PATCH,
            &one,
            json!({"name": "Renamed", "description": "Now with words"}),
        )
        .await;
        assert_eq!(status, StatusCode::OK, "{name} {renamed}");
        assert_eq!(renamed["name"], "Renamed", "{name}");
        assert_eq!(renamed["description"], "Now with words", "{name}");
        let free = json!({"properties": {"type": "OR", "values": [
            {"type": "person", "key": "plan", "value": "free"}]}});
        let (status, redefined) = send(&world, Method::PATCH, &one, json!({"filters": free})).await;
        assert_eq!(status, StatusCode::OK, "{name} {redefined}");
        assert_eq!(redefined["filters"], free, "{name}");
        assert_eq!(redefined["is_calculating"], true, "{name}");
        let runs = JobRun::list(
            world.backend.state.store.as_ref(),
            Some(world.bootstrap.project.id),
            Some(cohort_core::calculation::JOB),
            10,
        )
        .await
        .unwrap();
        assert_eq!(
            runs.len(),
            2,
            "{name}: one for the create, one for the new definition"
        );

        let static_one = format!("{uri}{}/", second["id"]);
        let (status, answer) = send(
            &world,
            Method::PATCH,
            &static_one,
            json!({"filters": pro_filters()}),
        )
        .await;
        refused(status, &answer, &name);
        let (status, answer) = send(&world, Method::PATCH, &one, json!({"is_static": true})).await;
        let (_, attr) = refused(status, &answer, &name);
        assert_eq!(attr.as_deref(), Some("is_static"), "{name}");
        let (status, answer) = send(&world, Method::PATCH, &one, json!({"name": ""})).await;
        refused(status, &answer, &name);

        // DELETE is PostHog's empty 405; soft delete is a PATCH.
        let (status, body) = world
            .send(Method::DELETE, &one, Some(world.admin_key()), None)
            .await;
        assert_eq!(status, StatusCode::METHOD_NOT_ALLOWED, "{name}");
        assert_eq!(body, Value::Null, "{name}");
        let (status, deleted) = send(&world, Method::PATCH, &one, json!({"deleted": true})).await;
        assert_eq!(status, StatusCode::OK, "{name}");
        assert_eq!(deleted["deleted"], true, "{name}");
        let (status, _) = world.get(&one, Some(world.admin_key())).await;
        assert_eq!(
            status,
            StatusCode::NOT_FOUND,
            "{name}: a deleted cohort vanishes"
        );
        let (status, _) = world
            .get(&format!("{one}activity/"), Some(world.admin_key()))
            .await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{name}");
        let (_, list) = world.get(&uri, Some(world.admin_key())).await;
        assert_eq!(list["count"], 1, "{name}");
        let (status, _) = send(&world, Method::PATCH, &one, json!({"name": "Ghost"})).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{name}");
        // A deleted cohort cannot be named by another.
        let (status, answer) = send(
            &world,
            Method::POST,
            &uri,
            json!({"name": "Nested", "filters": {"properties": {"type": "OR", "values": [
                {"type": "cohort", "key": "id", "value": first["id"]}]}}}),
        )
        .await;
        refused(status, &answer, &name);
        let (status, restored) = send(&world, Method::PATCH, &one, json!({"deleted": false})).await;
        assert_eq!(status, StatusCode::OK, "{name} {restored}");
        let (status, _) = world.get(&one, Some(world.admin_key())).await;
        assert_eq!(status, StatusCode::OK, "{name}");

        // Activity: created, the updates, deleted, restored (newest first), as PostHog names them.
        let (status, activity) = world
            .get(&format!("{one}activity/"), Some(world.admin_key()))
            .await;
        assert_eq!(status, StatusCode::OK, "{name}");
        let kinds: Vec<&str> = activity["results"]
            .as_array()
            .unwrap()
            .iter()
            .map(|entry| entry["activity"].as_str().unwrap())
            .collect();
        assert_eq!(
            kinds,
            ["restored", "deleted", "updated", "updated", "created"],
            "{name}"
        );
        let (status, all) = world
            .get(&format!("{uri}activity/"), Some(world.admin_key()))
            .await;
        assert_eq!(status, StatusCode::OK, "{name}");
        assert!(all["results"].as_array().unwrap().len() >= 6, "{name}");

        // Scopes and tenancy.
        let reader = world.key(&["cohort:read"], None).await;
        let (status, _) = world.get(&uri, Some(&reader)).await;
        assert_eq!(status, StatusCode::OK, "{name}");
        let (status, body) = world
            .send(
                Method::POST,
                &uri,
                Some(&reader),
                Some(&json!({"name": "x", "is_static": true}).to_string()),
            )
            .await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{name} {body}");
        let (status, _) = world
            .send(Method::PATCH, &one, Some(&reader), Some(r#"{"name": "x"}"#))
            .await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{name}");
        let (status, _) = world.get(&uri, None).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED, "{name}");
        let foreign = format!("/api/projects/{}/cohorts/", world.foreign_project);
        let (status, _) = world.get(&foreign, Some(world.admin_key())).await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{name}");
    }
}

#[tokio::test]
async fn static_membership_by_person_id() {
    for world in World::all().await {
        let name = world.name();
        let uri = cohorts_uri(&world);
        let (alice, bob) = (person(&world, "pro").await, person(&world, "free").await);
        let cohort = create(&world, json!({"name": "Beta", "is_static": true})).await;
        let dynamic = create(&world, json!({"name": "Pro", "filters": pro_filters()})).await;
        let one = format!("{uri}{}/", cohort["id"]);
        let add = format!("{one}add_persons_to_static_cohort/");
        let remove = format!("{one}remove_person_from_static_cohort/");

        let (status, answer) = send(
            &world,
            Method::PATCH,
            &add,
            json!({"person_ids": [alice, bob, Uuid::new_v4(), "not-a-uuid"]}),
        )
        .await;
        assert_eq!(status, StatusCode::OK, "{name} {answer}");
        assert_eq!(answer, json!({"success": true}), "{name}");
        let (_, read) = world.get(&one, Some(world.admin_key())).await;
        assert_eq!(read["count"], 2, "{name}");
        // Adding again keeps one membership each.
        send(&world, Method::PATCH, &add, json!({"person_ids": [alice]})).await;
        let (status, persons) = world
            .get(&format!("{one}persons/"), Some(world.admin_key()))
            .await;
        assert_eq!(status, StatusCode::OK, "{name} {persons}");
        let mut ids: Vec<String> = persons["results"]
            .as_array()
            .unwrap()
            .iter()
            .map(|person| person["uuid"].as_str().unwrap().to_owned())
            .collect();
        ids.sort();
        let mut expected = vec![alice.to_string(), bob.to_string()];
        expected.sort();
        assert_eq!(ids, expected, "{name}");
        let alice_row = persons["results"]
            .as_array()
            .unwrap()
            .iter()
            .find(|row| row["uuid"] == json!(alice))
            .unwrap();
        assert_eq!(alice_row["properties"]["plan"], "pro", "{name}");
        assert_eq!(persons["next"], Value::Null, "{name}");
        let (_, paged) = world
            .get(&format!("{one}persons/?limit=1"), Some(world.admin_key()))
            .await;
        assert_eq!(paged["results"].as_array().unwrap().len(), 1, "{name}");
        assert!(paged["next"].is_string(), "{name}");

        let add_cases = [
            (json!({}), "person_ids must be a list"),
            (json!({"person_ids": "abc"}), "person_ids must be a list"),
            (json!({"person_ids": []}), "person_ids cannot be empty"),
            (
                json!({"person_ids": [Uuid::new_v4()]}),
                "No valid users to add to cohort",
            ),
        ];
        for (body, expected) in add_cases {
            let (status, answer) = send(&world, Method::PATCH, &add, body.clone()).await;
            let (detail, _) = refused(status, &answer, &format!("{name} {body}"));
            assert_eq!(detail, expected, "{name} {body}");
        }
        let (status, answer) = send(&world, Method::PATCH, &add, json!({"persons": []})).await;
        refused(status, &answer, &name);
        let dynamic_add = format!("{uri}{}/add_persons_to_static_cohort/", dynamic["id"]);
        let (status, answer) = send(
            &world,
            Method::PATCH,
            &dynamic_add,
            json!({"person_ids": [alice]}),
        )
        .await;
        let (detail, _) = refused(status, &answer, &name);
        assert_eq!(detail, "Can only add users to static cohorts", "{name}");

        let (status, answer) =
            send(&world, Method::PATCH, &remove, json!({"person_id": alice})).await;
        assert_eq!(status, StatusCode::OK, "{name} {answer}");
        let (_, read) = world.get(&one, Some(world.admin_key())).await;
        assert_eq!(read["count"], 1, "{name}");
        // Removing a non-member succeeds (PostHog: idempotent).
        let (status, _) = send(&world, Method::PATCH, &remove, json!({"person_id": alice})).await;
        assert_eq!(status, StatusCode::OK, "{name}");
        let remove_cases = [
            (json!({}), "person_id is required"),
            (json!({"person_id": 5}), "person_id must be a string"),
            (
                json!({"person_id": "nope"}),
                "person_id must be a valid UUID",
            ),
        ];
        for (body, expected) in remove_cases {
            let (status, answer) = send(&world, Method::PATCH, &remove, body.clone()).await;
            let (detail, _) = refused(status, &answer, &format!("{name} {body}"));
            assert_eq!(detail, expected, "{name} {body}");
        }
        let (status, answer) = send(
            &world,
            Method::PATCH,
            &remove,
            json!({"person_id": Uuid::new_v4()}),
        )
        .await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{name} {answer}");
        error_shape(&answer);
        let dynamic_remove = format!("{uri}{}/remove_person_from_static_cohort/", dynamic["id"]);
        let (status, answer) = send(
            &world,
            Method::PATCH,
            &dynamic_remove,
            json!({"person_id": alice}),
        )
        .await;
        let (detail, _) = refused(status, &answer, &name);
        assert_eq!(
            detail, "Can only remove users from static cohorts",
            "{name}"
        );

        // Members need person:read too.
        let reader = world.key(&["cohort:read"], None).await;
        let (status, _) = world.get(&format!("{one}persons/"), Some(&reader)).await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{name}");
        // A dynamic cohort's stored members: none until its calculation writes them.
        let (status, none) = world
            .get(
                &format!("{uri}{}/persons/", dynamic["id"]),
                Some(world.admin_key()),
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{name}");
        assert!(none["results"].is_array(), "{name}");

        let (_, activity) = world
            .get(&format!("{one}activity/"), Some(world.admin_key()))
            .await;
        let kinds: Vec<&str> = activity["results"]
            .as_array()
            .unwrap()
            .iter()
            .map(|entry| entry["activity"].as_str().unwrap())
            .collect();
        assert_eq!(
            kinds,
            [
                "person_removed_manually",
                "person_removed_manually",
                "persons_added_manually",
                "persons_added_manually",
                "created"
            ],
            "{name}"
        );
    }
}

#[tokio::test]
async fn exposure_cohort_for_an_experiment() {
    for world in World::all().await {
        let name = world.name();
        let experiments = world.experiments_uri();
        let experiment = world
            .create_experiment(json!({"name": "Checkout", "feature_flag_key": "checkout-exp"}))
            .await;
        let id = &experiment["id"];
        let action = format!("{experiments}{id}/create_exposure_cohort_for_experiment/");
        let (status, answer) = send(&world, Method::POST, &action, json!({})).await;
        let (detail, _) = refused(status, &answer, &name);
        assert_eq!(detail, "Experiment does not have a start date", "{name}");

        let (status, launched) = send(
            &world,
            Method::POST,
            &format!("{experiments}{id}/launch/"),
            json!({}),
        )
        .await;
        assert_eq!(status, StatusCode::OK, "{name} {launched}");
        let (status, answer) = send(&world, Method::POST, &action, json!({})).await;
        assert_eq!(status, StatusCode::CREATED, "{name} {answer}");
        let cohort = &answer["cohort"];
        assert_eq!(
            cohort["name"], "Users exposed to experiment \"Checkout\"",
            "{name}"
        );
        assert_eq!(cohort["is_static"], false, "{name}");
        assert_eq!(cohort["is_calculating"], true, "{name}");
        assert_eq!(cohort["cohort_type"], "behavioral", "{name}");
        assert_eq!(cohort["experiment_set"], json!([id]), "{name}");
        assert_eq!(
            cohort["created_by"]["email"], world.bootstrap.user.email,
            "{name}"
        );
        let filter = &cohort["filters"]["properties"]["values"][0]["values"][0];
        assert_eq!(cohort["filters"]["properties"]["type"], "OR", "{name}");
        assert_eq!(filter["type"], "behavioral", "{name}");
        assert_eq!(filter["value"], "performed_event", "{name}");
        assert_eq!(filter["key"], "$feature_flag_called", "{name}");
        assert_eq!(filter["event_type"], "events", "{name}");
        assert_eq!(
            filter["event_filters"],
            json!([{"key": "$feature_flag", "value": ["checkout-exp"], "operator": "exact",
                "type": "event"}]),
            "{name}"
        );
        let start =
            |value: &Value| chrono::DateTime::parse_from_rfc3339(value.as_str().unwrap()).unwrap();
        assert_eq!(
            start(&filter["explicit_datetime"]),
            start(&launched["start_date"]),
            "{name}"
        );

        // Linked on the experiment; readable and listed as a cohort; only one per experiment.
        let (_, read) = world
            .get(&format!("{experiments}{id}/"), Some(world.admin_key()))
            .await;
        assert_eq!(read["exposure_cohort"], cohort["id"], "{name}");
        let (status, again) = send(&world, Method::POST, &action, json!({})).await;
        let (detail, _) = refused(status, &again, &name);
        assert_eq!(
            detail, "Experiment already has an exposure cohort",
            "{name}"
        );
        let (status, listed) = world
            .get(&cohorts_uri(&world), Some(world.admin_key()))
            .await;
        assert_eq!(status, StatusCode::OK, "{name}");
        assert_eq!(listed["results"][0]["id"], cohort["id"], "{name}");
        assert_eq!(
            listed["results"][0]["experiment_set"],
            json!([id]),
            "{name}"
        );
        let runs = JobRun::list(
            world.backend.state.store.as_ref(),
            Some(world.bootstrap.project.id),
            Some(cohort_core::calculation::JOB),
            10,
        )
        .await
        .unwrap();
        assert_eq!(runs.len(), 1, "{name}");

        // A custom exposure event is the cohort's event, with its event-level properties.
        let custom = world
            .create_experiment(json!({"name": "Pricing", "feature_flag_key": "pricing-exp",
                "exposure_criteria": {"exposure_config": {"kind": "ExperimentEventExposureConfig",
                    "event": "pricing_viewed", "properties": [
                        {"key": "plan", "value": "pro", "operator": "exact", "type": "event"},
                        {"key": "email", "value": "x", "operator": "exact", "type": "person"}]}}}))
            .await;
        let custom_id = &custom["id"];
        send(
            &world,
            Method::POST,
            &format!("{experiments}{custom_id}/launch/"),
            json!({}),
        )
        .await;
        let (status, answer) = send(
            &world,
            Method::POST,
            &format!("{experiments}{custom_id}/create_exposure_cohort_for_experiment/"),
            json!({}),
        )
        .await;
        assert_eq!(status, StatusCode::CREATED, "{name} {answer}");
        let filter = &answer["cohort"]["filters"]["properties"]["values"][0]["values"][0];
        assert_eq!(filter["key"], "pricing_viewed", "{name}");
        assert_eq!(
            filter["event_filters"],
            json!([{"key": "plan", "value": "pro", "operator": "exact", "type": "event"}]),
            "{name}"
        );

        // Without its flag (soft-deleted) there is nothing to be exposed to.
        let orphan = world
            .create_experiment(json!({"name": "Orphan", "feature_flag_key": "orphan-exp"}))
            .await;
        let orphan_id = &orphan["id"];
        send(
            &world,
            Method::POST,
            &format!("{experiments}{orphan_id}/launch/"),
            json!({}),
        )
        .await;
        let flag_uri = format!("{}{}/", world.flags_uri(), orphan["feature_flag"]["id"]);
        let (status, answer) =
            send(&world, Method::PATCH, &flag_uri, json!({"deleted": true})).await;
        assert_eq!(status, StatusCode::OK, "{name} {answer}");
        let (status, answer) = send(
            &world,
            Method::POST,
            &format!("{experiments}{orphan_id}/create_exposure_cohort_for_experiment/"),
            json!({}),
        )
        .await;
        let (detail, _) = refused(status, &answer, &name);
        assert_eq!(detail, "Experiment does not have a feature flag", "{name}");

        // Unknown or deleted experiments are 404s; the key needs experiment:write.
        let (status, _) = send(
            &world,
            Method::POST,
            &format!("{experiments}999/create_exposure_cohort_for_experiment/"),
            json!({}),
        )
        .await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{name}");
        let reader = world.key(&["experiment:read"], None).await;
        let (status, _) = world
            .send(Method::POST, &action, Some(&reader), Some("{}"))
            .await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{name}");
    }
}

#[tokio::test]
async fn concurrent_exposure_cohorts_make_one() {
    for world in World::all().await {
        let name = world.name();
        let experiments = world.experiments_uri();
        let experiment = world
            .create_experiment(json!({"name": "Race", "feature_flag_key": "race-exp"}))
            .await;
        let id = &experiment["id"];
        send(
            &world,
            Method::POST,
            &format!("{experiments}{id}/launch/"),
            json!({}),
        )
        .await;
        let action = format!("{experiments}{id}/create_exposure_cohort_for_experiment/");
        let (a, b) = tokio::join!(
            send(&world, Method::POST, &action, json!({})),
            send(&world, Method::POST, &action, json!({})),
        );
        let mut statuses = [a.0, b.0];
        statuses.sort();
        assert_eq!(
            statuses,
            [StatusCode::CREATED, StatusCode::BAD_REQUEST],
            "{name} {} {}",
            a.1,
            b.1
        );
        let winner = if a.0 == StatusCode::CREATED {
            &a.1
        } else {
            &b.1
        };
        let (_, read) = world
            .get(&format!("{experiments}{id}/"), Some(world.admin_key()))
            .await;
        assert_eq!(read["exposure_cohort"], winner["cohort"]["id"], "{name}");
        let (_, listed) = world
            .get(&cohorts_uri(&world), Some(world.admin_key()))
            .await;
        assert_eq!(
            listed["count"], 1,
            "{name}: the loser left no cohort behind"
        );
    }
}
