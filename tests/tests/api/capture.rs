//! Capture through the HTTP routes SDKs use, then the committer, then the Delta table itself,
//! on both backends: every accepted event lands exactly once with its person; bad input stages
//! nothing.

use std::io::Write;

use api_tests::{World, error_shape, respond};
use axum::body::Body;
use axum::http::{Request, StatusCode};
use futures::TryStreamExt;
use object_store::ObjectStoreExt;
use serde_json::{Value, json};

fn capture(path: &str, body: Vec<u8>, headers: &[(&str, &str)]) -> Request<Body> {
    let mut request = Request::post(path);
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    request.body(Body::from(body)).unwrap()
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    encoder.write_all(bytes).unwrap();
    encoder.finish().unwrap()
}

/// Staged requests waiting: objects on S3, staging log records embedded.
async fn staged_objects(world: &World) -> usize {
    lake::committer::staged_count(&world.backend.state)
        .await
        .unwrap()
}

async fn send(world: &World, request: Request<Body>) -> (StatusCode, Value) {
    respond(world.app.clone(), request).await
}

#[tokio::test]
async fn sdk_shaped_requests_land_exactly_once_with_their_person() {
    for world in World::all().await {
        let name = world.name();
        let token = world.bootstrap.project.api_token.clone();
        let json_header = [("content-type", "application/json")];
        let batch = json!({"api_key": token, "sent_at": chrono::Utc::now().to_rfc3339(), "batch": [
            {"event": "$pageview", "distinct_id": "anon-1", "uuid": "0192f0a1-7c3e-7b2a-9d41-000000000001",
             "timestamp": chrono::Utc::now().to_rfc3339(),
             "properties": {"$session_id": "s-1", "$current_url": "https://example.com", "$set_once": {"first_seen": "2026-11-22"}}},
            {"event": "$identify", "distinct_id": "ada@example.com",
             "properties": {"$anon_distinct_id": "anon-1", "$set": {"email": "ada@example.com", "plan": "free"}}},
        ]});
        let (status, body) = send(
            &world,
            capture("/batch/", batch.to_string().into_bytes(), &json_header),
        )
        .await;
        assert_eq!(
            (status, body),
            (StatusCode::OK, json!({"status": 1})),
            "{name}"
        );

        // A single event, gzip-compressed, as posthog-js sends it.
        let single = json!({"event": "signed_up", "distinct_id": "ada@example.com", "properties": {"token": token, "$set": {"plan": "pro"}}});
        let request = capture(
            "/e/?compression=gzip-js",
            gzip(single.to_string().as_bytes()),
            &[("content-type", "text/plain")],
        );
        assert_eq!(send(&world, request).await.0, StatusCode::OK, "{name}");
        // The form-encoded base64 variant, and an alias.
        let alias = json!([{"event": "$create_alias", "distinct_id": "ada@example.com", "properties": {"alias": "ada-mobile", "token": token}}]);
        let form = format!("data={}", base64_encode(alias.to_string().as_bytes()));
        let request = capture(
            "/i/v0/e/",
            form.into_bytes(),
            &[("content-type", "application/x-www-form-urlencoded")],
        );
        assert_eq!(send(&world, request).await.0, StatusCode::OK, "{name}");
        let later = json!({"api_key": token, "event": "opened_app", "distinct_id": "ada-mobile", "properties": {"$unset": ["plan"]}});
        assert_eq!(
            send(
                &world,
                capture("/capture/", later.to_string().into_bytes(), &json_header)
            )
            .await
            .0,
            StatusCode::OK,
            "{name}"
        );
        assert_eq!(staged_objects(&world).await, 4, "{name}");

        let reports = lake::commit_all(&world.backend.state).await.unwrap();
        assert_eq!(reports.len(), 1, "{name}");
        assert_eq!(
            (reports[0].batches, reports[0].events),
            (4, 5),
            "{name} {:?}",
            reports[0]
        );
        assert_eq!(staged_objects(&world).await, 0, "{name}");

        let rows = lake::table::scan(&world.backend.state, world.bootstrap.project.id)
            .await
            .unwrap();
        assert_eq!(rows.len(), 5, "{name}");
        let uuids: std::collections::HashSet<_> = rows.iter().map(|r| r.uuid.clone()).collect();
        assert_eq!(uuids.len(), 5, "{name}");
        assert!(
            uuids.contains("0192f0a1-7c3e-7b2a-9d41-000000000001"),
            "{name}: sent uuids are kept"
        );
        let people: std::collections::HashSet<_> =
            rows.iter().map(|r| r.person_id.clone().unwrap()).collect();
        assert_eq!(
            people.len(),
            1,
            "{name}: identify and alias joined every distinct id {rows:?}"
        );
        let pageview = rows.iter().find(|r| r.event == "$pageview").unwrap();
        assert_eq!(pageview.session_id.as_deref(), Some("s-1"), "{name}");
        let props: Value = serde_json::from_str(&pageview.properties).unwrap();
        assert_eq!(props["$current_url"], "https://example.com", "{name}");
        let signed_up = rows.iter().find(|r| r.event == "signed_up").unwrap();
        let snapshot: Value =
            serde_json::from_str(signed_up.person_properties.as_deref().unwrap()).unwrap();
        assert_eq!(
            (snapshot["plan"].as_str(), snapshot["email"].as_str()),
            (Some("pro"), Some("ada@example.com")),
            "{name}"
        );
        assert_eq!(snapshot["first_seen"], "2026-11-22", "{name}");
        let opened = rows.iter().find(|r| r.event == "opened_app").unwrap();
        let snapshot: Value =
            serde_json::from_str(opened.person_properties.as_deref().unwrap()).unwrap();
        assert!(snapshot.get("plan").is_none(), "{name}: $unset removed it");

        let person = lake::persons::person_of(
            world.backend.state.store.clone(),
            world.bootstrap.project.id,
            "anon-1",
        )
        .await
        .unwrap()
        .unwrap();
        assert!(person.is_identified, "{name}");
        assert_eq!(
            person.uuid.to_string(),
            *people.iter().next().unwrap(),
            "{name}"
        );
    }
}

/// Base64, form-encoded, as the `data=` field carries it.
fn base64_encode(bytes: &[u8]) -> String {
    use base64::Engine;
    let text = base64::engine::general_purpose::STANDARD.encode(bytes);
    form_urlencoded::byte_serialize(text.as_bytes()).collect()
}

/// A body, its headers, and the status and error code it must get.
type BadCase = (
    Vec<u8>,
    Vec<(&'static str, &'static str)>,
    StatusCode,
    &'static str,
);

#[tokio::test]
async fn bad_input_is_refused_whole_and_stages_nothing() {
    for world in World::all().await {
        let name = world.name();
        let token = world.bootstrap.project.api_token.clone();
        let json_header = [("content-type", "application/json")];
        let cases: Vec<BadCase> = vec![
            (json!({"event": "e", "distinct_id": "d"}).to_string().into_bytes(), json_header.to_vec(), StatusCode::UNAUTHORIZED, "invalid_api_key"),
            (json!({"api_key": "phc_unknown", "event": "e", "distinct_id": "d"}).to_string().into_bytes(), json_header.to_vec(), StatusCode::UNAUTHORIZED, "invalid_api_key"),
            (b"{not json".to_vec(), json_header.to_vec(), StatusCode::BAD_REQUEST, "parse_error"),
            (b"not gzip".to_vec(), vec![("content-encoding", "gzip")], StatusCode::BAD_REQUEST, "parse_error"),
            (json!({"api_key": token, "batch": [{"event": "ok", "distinct_id": "d"}, {"event": "missing id"}]}).to_string().into_bytes(), json_header.to_vec(), StatusCode::BAD_REQUEST, "required"),
            (json!({"api_key": token, "event": "e", "distinct_id": "d", "timestamp": "soon"}).to_string().into_bytes(), json_header.to_vec(), StatusCode::BAD_REQUEST, "invalid_input"),
            (json!({"api_key": token, "event": ["e"], "distinct_id": "d"}).to_string().into_bytes(), json_header.to_vec(), StatusCode::BAD_REQUEST, "invalid_input"),
        ];
        for (body, headers, status, code) in cases {
            let (got, response) = send(&world, capture("/batch/", body.clone(), &headers)).await;
            assert_eq!(got, status, "{name} {}", String::from_utf8_lossy(&body));
            assert_eq!(error_shape(&response).0, code, "{name} {response}");
        }
        assert_eq!(
            staged_objects(&world).await,
            0,
            "{name}: nothing partial was staged"
        );
    }
}

#[tokio::test]
async fn oversized_and_bomb_bodies_are_413() {
    let mut backend = common::testing::TestState::embedded().await;
    let mut config = (*backend.state.config).clone();
    config.max_body_bytes = 64 * 1024;
    backend.state.config = std::sync::Arc::new(config);
    let world = World::on(backend).await;
    let token = world.bootstrap.project.api_token.clone();
    let big = json!({"api_key": token, "event": "e", "distinct_id": "d", "properties": {"blob": "x".repeat(100_000)}});
    let (status, body) = send(
        &world,
        capture(
            "/e/",
            big.to_string().into_bytes(),
            &[("content-type", "application/json")],
        ),
    )
    .await;
    assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE);
    error_shape(&body);
    let bomb = gzip(big.to_string().as_bytes());
    assert!(bomb.len() < 64 * 1024);
    let (status, _) = send(
        &world,
        capture("/e/", bomb, &[("content-encoding", "gzip")]),
    )
    .await;
    assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE);
    assert_eq!(staged_objects(&world).await, 0);
}

#[tokio::test]
async fn a_committer_that_died_before_cleaning_up_does_not_duplicate() {
    for world in World::all().await {
        let name = world.name();
        let state = &world.backend.state;
        let team = world.bootstrap.project.id;
        let token = world.bootstrap.project.api_token.clone();
        let event = json!({"api_key": token, "event": "once", "distinct_id": "d"});
        // A staged object, as capture writes on S3 (embedded it appends to the log instead).
        let now = state.clock.now();
        let once = common::staging::StagedEvent {
            uuid: uuid::Uuid::now_v7(),
            event: "once".into(),
            distinct_id: "d".into(),
            properties: Default::default(),
            timestamp: now,
            created_at: now,
            elements_chain: None,
        };
        let path = common::staging::stage_object(state.objects.as_ref(), team, &[once])
            .await
            .unwrap();
        // A run that died after claiming (copy to claimed/) but before removing the original.
        let bytes = state
            .objects
            .get(&path)
            .await
            .unwrap()
            .bytes()
            .await
            .unwrap();
        let claimed =
            object_store::path::Path::from(path.as_ref().replacen("staging/", "claimed/", 1));
        state
            .objects
            .put(&claimed, bytes.clone().into())
            .await
            .unwrap();
        let first = lake::commit_team(state, team).await.unwrap();
        assert_eq!((first.batches, first.events), (1, 1), "{name} {first:?}");
        assert_eq!(staged_objects(&world).await, 0, "{name}");
        // A run that died after its Delta commit but before deleting the claimed object.
        state.objects.put(&claimed, bytes.into()).await.unwrap();
        let retry = lake::commit_team(state, team).await.unwrap();
        assert_eq!(
            (retry.batches, retry.recovered, retry.events),
            (0, 1, 0),
            "{name}"
        );
        let leftover: Vec<_> = state
            .objects
            .list(Some(&object_store::path::Path::from("claimed")))
            .try_collect()
            .await
            .unwrap();
        assert!(leftover.is_empty(), "{name}");
        let rows = lake::table::scan(state, team).await.unwrap();
        assert_eq!(rows.len(), 1, "{name}");

        // An unreadable staged object is set aside, not lost and not blocking.
        let broken = object_store::path::Path::from(format!(
            "{}/0000-broken.ndjson.gz",
            common::staging::team_prefix(team)
        ));
        state
            .objects
            .put(&broken, b"garbage".to_vec().into())
            .await
            .unwrap();
        assert_eq!(
            send(
                &world,
                capture(
                    "/e/",
                    event.to_string().into_bytes(),
                    &[("content-type", "application/json")]
                )
            )
            .await
            .0,
            StatusCode::OK
        );
        let report = lake::commit_team(state, team).await.unwrap();
        assert_eq!((report.rejected, report.batches), (1, 1), "{name}");
        let aside: Vec<_> = state
            .objects
            .list(Some(&object_store::path::Path::from("staging-rejected")))
            .try_collect()
            .await
            .unwrap();
        assert_eq!(aside.len(), 1, "{name}");
        assert_eq!(
            lake::table::scan(state, team).await.unwrap().len(),
            2,
            "{name}"
        );
    }
}
