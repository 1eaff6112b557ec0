//! Every sample event in `events/<family>/` goes through the Lambda adapter (`lambda_http`'s parser,
//! the stage stripping of `common::lambda`) into its family's router and must reach a handler:
//! not the unknown-route 404 nor a 405. Samples that need state the fresh store lacks (a pending
//! 2FA setup, a mailed code) reach their handler and answer its 400, which is the point here.

use std::path::Path;

use api_tests::World;
use axum::body::Body;
use axum::http::Method;
use common::testing::TestState;
use http_body_util::BodyExt;
use tower::ServiceExt;

/// The route table a family's Lambda binary serves.
fn family_routes(family: &str) -> common::routes::Routes {
    let (_, router) = local::FAMILIES
        .iter()
        .find(|(name, _)| *name == family)
        .unwrap_or_else(|| panic!("events/{family}/ names no known route family"));
    router()
}

/// The endpoint the endpoint samples read, change, run and delete (project 1: the admin's).
const SAMPLE_ENDPOINT: &str = r#"{"name": "daily-signups", "query": {"kind": "HogQLQuery", "query": "select count() from events where event = {variables.event}", "variables": {"v1": {"code_name": "event", "value": "signup"}}}}"#;

/// Before each endpoint sample (files come in no particular order, and one of them deletes the
/// endpoint): `daily-signups` exists, except before a create, which makes it.
async fn prepare_endpoint_sample(world: &World, project: i64, sample: &str) {
    let uri = format!("/api/projects/{project}/endpoints/daily-signups/");
    let key = Some(world.admin_key());
    let (status, _) = world.send(Method::GET, &uri, key, None).await;
    let exists = status.is_success();
    if sample.starts_with("create-") {
        if exists {
            let (status, body) = world.send(Method::DELETE, &uri, key, None).await;
            assert!(
                status.is_success(),
                "{sample}: deleting first: {status} {body}"
            );
        }
    } else if !exists {
        let collection = format!("/api/projects/{project}/endpoints/");
        let (status, body) = world
            .send(Method::POST, &collection, key, Some(SAMPLE_ENDPOINT))
            .await;
        assert_eq!(status, 201, "{sample}: creating first: {body}");
    }
}

#[tokio::test]
async fn every_sample_event_is_routed_to_a_handler() {
    let world = World::on(TestState::embedded().await).await;
    // Capture samples carry the token inside gzip and base64 bodies, out of reach of text
    // substitution: give a project exactly the placeholder token instead.
    let store = world.backend.state.store.as_ref();
    let mut sample_project = common::models::Project::allocate(
        store,
        common::models::NewProject {
            organization_id: world.bootstrap.organization.id,
            name: "Samples",
            timezone: "UTC",
        },
    )
    .await
    .unwrap();
    sample_project.api_token = "phc_REPLACE_WITH_YOUR_PROJECT_TOKEN".into();
    store
        .transact_write(sample_project.put_ops().unwrap())
        .await
        .unwrap();
    // The flag samples read and change flags 1 and 2 of the admin's current project (a
    // sample's handler answering "Not found." would look unrouted); the SDK samples evaluate
    // the sample project's flag.
    let current = world.bootstrap.project.id;
    let flags = [
        (current, Some(1), "sample-flag", r#"[]"#),
        (current, Some(2), "retired-flag", r#"[]"#),
        (
            sample_project.id,
            None,
            "pro-plan",
            r#"[{"key": "plan", "type": "person", "value": ["pro"], "operator": "exact"}]"#,
        ),
    ];
    for (project, id, key, properties) in flags {
        let body = format!(
            r#"{{"key": "{key}", "filters": {{"groups": [{{"properties": {properties}, "rollout_percentage": 50}}]}}}}"#
        );
        let (status, created) = world
            .send(
                Method::POST,
                &format!("/api/projects/{project}/feature_flags/"),
                Some(world.admin_key()),
                Some(&body),
            )
            .await;
        assert_eq!(status, 201, "{created}");
        if let Some(id) = id {
            assert_eq!(created["id"], id, "{created}");
        }
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../events");
    let mut seen = 0;
    for family in std::fs::read_dir(&root).unwrap() {
        let family = family.unwrap();
        let family_name = family.file_name().to_string_lossy().into_owned();
        // The worker is not an HTTP function: its samples are checked by its own tests.
        if family_name == "worker" {
            continue;
        }
        let app = common::http::finish(family_routes(&family_name), world.backend.state.clone());
        for file in std::fs::read_dir(family.path()).unwrap() {
            let path = file.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            if family_name == "endpoints" {
                // The samples name project 1, the bootstrap project.
                assert_eq!(current, 1, "the endpoint samples name project 1");
                prepare_endpoint_sample(&world, current, &name).await;
            }
            // The samples carry a placeholder for the key `cargo lambda invoke` users paste in.
            let text = std::fs::read_to_string(&path)
                .unwrap()
                .replace("phx_REPLACE_WITH_YOUR_KEY", world.admin_key());
            let request = lambda_http::request::from_str(&text)
                .unwrap_or_else(|e| panic!("{}: not an API Gateway event: {e}", path.display()));
            let request = common::lambda::strip_stage(request);
            let (parts, body) = request.into_parts();
            let body: Vec<u8> = body.to_vec();
            let request = axum::http::Request::from_parts(parts, Body::from(body));
            let response = app.clone().oneshot(request).await.unwrap();
            let status = response.status();
            let content_type = response
                .headers()
                .get(axum::http::header::CONTENT_TYPE)
                .and_then(|value| value.to_str().ok())
                .unwrap_or("")
                .to_owned();
            let bytes = response.into_body().collect().await.unwrap().to_bytes();
            // A delete answers 204 with no body; the console's pages are HTML.
            let body: serde_json::Value = if status == 204 && bytes.is_empty() {
                serde_json::Value::Null
            } else if content_type.starts_with("text/html") {
                serde_json::Value::String(format!("{} bytes of {content_type}", bytes.len()))
            } else {
                serde_json::from_slice(&bytes)
                    .unwrap_or_else(|_| panic!("{}: not JSON", path.display()))
            };
            let unrouted = (status == 404 && body["detail"] == "Not found.") || status == 405;
            assert!(!unrouted, "{}: {status} {body}", path.display());
            assert!(status.as_u16() < 500, "{}: {status} {body}", path.display());
            // Reads and plain updates need no prior state: they must succeed outright.
            let stateless = [
                "get-",
                "list-",
                "health",
                "patch-",
                "two-factor-status",
                "two-factor-start",
                "start-2fa",
                "request-email",
                "query-",
            ];
            // The flag samples' flags exist (made above): every one of them must succeed.
            let succeeds = family_name == "capture" || family_name == "flags";
            if succeeds || stateless.iter().any(|prefix| name.starts_with(prefix)) {
                assert!(status.is_success(), "{}: {status} {body}", path.display());
            }
            seen += 1;
        }
    }
    assert!(seen >= 85, "only {seen} sample events found");
}

#[test]
fn named_stages_are_stripped_and_default_ones_kept() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../events/users");
    let staged = std::fs::read_to_string(root.join("get-me-named-stage.json")).unwrap();
    let request = common::lambda::strip_stage(lambda_http::request::from_str(&staged).unwrap());
    assert_eq!(request.uri().path(), "/api/users/@me/");
    let plain = std::fs::read_to_string(root.join("list-projects.json")).unwrap();
    let request = common::lambda::strip_stage(lambda_http::request::from_str(&plain).unwrap());
    assert_eq!(request.uri().path(), "/api/projects/");
    assert_eq!(request.uri().query(), Some("limit=10"));
}
