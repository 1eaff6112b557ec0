//! `/api/personal_api_keys/` on both backends: create (the secret shown once), list, the new key
//! at work and refused outside its scopes and projects, validation, the 10-key limit, retrieve,
//! update, delete, `@current`, roll, other users' keys, the `personal_api_key` scopes, and the
//! console session's recent-login rule for writes.

use api_tests::{World, error_shape, respond};
use axum::body::Body;
use axum::http::{Method, Request, StatusCode};
use chrono::{Duration, Utc};
use common::models::{PersonalApiKey, Session, Stage};
use serde_json::{Value, json};

const KEYS: &str = "/api/personal_api_keys/";

fn key_uri(id: &str) -> String {
    format!("{KEYS}{id}/")
}

/// A request with `key`; a write to the keys API as the key's owner in the console (a fresh
/// session), the only way keys are changed (`@current` naming `key`'s own id there).
async fn send(
    world: &World,
    method: Method,
    uri: &str,
    key: &str,
    body: Option<Value>,
) -> (StatusCode, Value) {
    if method == Method::GET || !uri.starts_with(KEYS) {
        let body = body.map(|body| body.to_string());
        return world.send(method, uri, Some(key), body.as_deref()).await;
    }
    let store = world.backend.state.store.as_ref();
    let own = PersonalApiKey::find(store, key).await.unwrap().unwrap();
    let uri = uri.replace("@current", &own.id.to_string());
    let (session, secret) = Session::start(own.user_uuid, Stage::LoggedIn, Utc::now());
    session.save(store).await.unwrap();
    send_as_session(world, &(secret, session.csrf_token), method, &uri, body).await
}

/// Creates a key with `key`; it must be accepted. Returns the answer (with `value`).
async fn create(world: &World, key: &str, body: Value) -> Value {
    let (status, answer) = send(world, Method::POST, KEYS, key, Some(body.clone())).await;
    assert_eq!(
        status,
        StatusCode::CREATED,
        "{} {body} {answer}",
        world.name()
    );
    answer
}

/// A 400 naming `attr` with `detail`.
async fn refused(world: &World, body: Value, attr: Option<&str>, code: &str, detail: &str) {
    let (status, answer) = send(world, Method::POST, KEYS, world.admin_key(), Some(body)).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{} {answer}", world.name());
    assert_eq!(
        error_shape(&answer),
        (code.to_owned(), attr.map(str::to_owned)),
        "{} {answer}",
        world.name()
    );
    assert_eq!(answer["detail"], detail, "{}", world.name());
    assert_eq!(answer["type"], "validation_error", "{}", world.name());
}

fn not_found() -> Value {
    json!({"type": "invalid_request", "code": "not_found", "detail": "Not found.", "attr": null})
}

/// A logged-in console session of the bootstrap user that started `age` ago: its cookie secret
/// and CSRF token.
async fn session(world: &World, age: Duration) -> (String, String) {
    let (session, secret) =
        Session::start(world.bootstrap.user.uuid, Stage::LoggedIn, Utc::now() - age);
    session
        .save(world.backend.state.store.as_ref())
        .await
        .unwrap();
    (secret, session.csrf_token)
}

/// A request authenticated by a session cookie, with its CSRF token.
async fn send_as_session(
    world: &World,
    (secret, csrf): &(String, String),
    method: Method,
    uri: &str,
    body: Option<Value>,
) -> (StatusCode, Value) {
    let mut request = Request::builder()
        .method(method)
        .uri(uri)
        .header("host", "testserver")
        .header("cookie", format!("sessionid={secret}"))
        .header("x-csrftoken", csrf);
    let body = match body {
        Some(json) => {
            request = request.header("content-type", "application/json");
            Body::from(json.to_string())
        }
        None => Body::empty(),
    };
    respond(world.app.clone(), request.body(body).unwrap()).await
}

#[tokio::test]
async fn a_created_key_is_shown_once_and_works_within_its_scopes() {
    for world in World::all().await {
        let name = world.name();
        let project = world.bootstrap.project.id;
        let created = create(
            &world,
            world.admin_key(),
            json!({"label": "  reporting  ", "scopes": ["user:read", "project:read"],
                   "scoped_teams": [project], "id": "ignored", "extra": 1}),
        )
        .await;
        let secret = created["value"].as_str().unwrap().to_owned();
        assert!(
            secret.starts_with("phx_") && secret.len() == 51,
            "{name} {created}"
        );
        let mask = format!("phx_...{}", &secret[47..]);
        assert_eq!(created["mask_value"], mask, "{name}");
        assert_eq!(created["label"], "reporting", "{name}");
        assert_eq!(
            created["scopes"],
            json!(["user:read", "project:read"]),
            "{name}"
        );
        assert_eq!(created["scoped_teams"], json!([project]), "{name}");
        assert_eq!(created["scoped_organizations"], Value::Null, "{name}");
        assert_eq!(created["user_id"], world.bootstrap.user.id(), "{name}");
        assert_eq!(created["last_used_at"], Value::Null, "{name}");
        assert_eq!(created["last_rolled_at"], Value::Null, "{name}");
        let mut fields: Vec<&str> = created
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        fields.sort();
        assert_eq!(
            fields,
            [
                "created_at",
                "id",
                "label",
                "last_rolled_at",
                "last_used_at",
                "mask_value",
                "scoped_organizations",
                "scoped_teams",
                "scopes",
                "user_id",
                "value"
            ],
            "{name}"
        );

        // The list: newest first, the secret never again.
        let (status, listed) = world.get(KEYS, Some(world.admin_key())).await;
        assert_eq!(status, StatusCode::OK, "{name} {listed}");
        let listed = listed.as_array().unwrap().clone();
        assert_eq!(listed.len(), 2, "{name} the bootstrap key and the new one");
        assert_eq!(listed[0]["id"], created["id"], "{name}");
        assert_eq!(listed[1]["label"], "Bootstrap key", "{name}");
        assert_eq!(listed[1]["scopes"], json!(["*"]), "{name}");
        for key in &listed {
            assert_eq!(key["value"], Value::Null, "{name} {key}");
        }
        assert_eq!(listed[0]["mask_value"], mask, "{name}");
        let mut expected = created.clone();
        expected["value"] = Value::Null;
        assert_eq!(listed[0], expected, "{name}");

        // The key works, within its scopes and its project.
        let (status, me) = world.get("/api/users/@me/", Some(&secret)).await;
        assert_eq!(status, StatusCode::OK, "{name} {me}");
        assert_eq!(me["uuid"], world.bootstrap.user.uuid.to_string(), "{name}");
        let (status, _) = world
            .get(&format!("/api/projects/{project}/"), Some(&secret))
            .await;
        assert_eq!(status, StatusCode::OK, "{name}");
        let (status, body) = send(
            &world,
            Method::PATCH,
            &format!("/api/projects/{project}/"),
            &secret,
            Some(json!({"name": "renamed"})),
        )
        .await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{name} {body}");
        assert_eq!(
            body["detail"], "API key missing required scope 'project:write'",
            "{name}"
        );
        let (status, body) = world
            .get(
                &format!("/api/projects/{}/", world.foreign_project),
                Some(&secret),
            )
            .await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{name} {body}");
        assert_eq!(
            body["detail"],
            format!(
                "API key does not have access to the requested project: ID {}.",
                world.foreign_project
            ),
            "{name}"
        );
        // Nor may it manage keys: it has no `personal_api_key` scope.
        let (status, body) = world.get(KEYS, Some(&secret)).await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{name} {body}");
        assert_eq!(
            body["detail"], "API key missing required scope 'personal_api_key:read'",
            "{name}"
        );

        // Using the key is recorded.
        let (_, listed) = world.get(KEYS, Some(world.admin_key())).await;
        assert!(listed[0]["last_used_at"].is_string(), "{name} {listed}");
    }
}

#[tokio::test]
async fn bodies_are_validated_with_posthogs_messages() {
    for world in World::all().await {
        let name = world.name();
        let organization = world.bootstrap.organization.id.to_string();
        let scopes = json!(["insight:read"]);
        refused(
            &world,
            json!({"scopes": scopes}),
            Some("label"),
            "required",
            "This field is required.",
        )
        .await;
        for blank in ["", "   "] {
            refused(
                &world,
                json!({"label": blank, "scopes": scopes}),
                Some("label"),
                "blank",
                "This field may not be blank.",
            )
            .await;
        }
        refused(
            &world,
            json!({"label": null, "scopes": scopes}),
            Some("label"),
            "null",
            "This field may not be null.",
        )
        .await;
        refused(
            &world,
            json!({"label": "x".repeat(41), "scopes": scopes}),
            Some("label"),
            "max_length",
            "Ensure this field has no more than 40 characters.",
        )
        .await;
        refused(
            &world,
            json!({"label": "test"}),
            Some("scopes"),
            "required",
            "This field is required.",
        )
        .await;
        for invalid in [
            "invalid",
            "insight:invalid",
            "nothing:read",
            "insight:read:write",
        ] {
            refused(
                &world,
                json!({"label": "test", "scopes": ["insight:read", invalid]}),
                Some("scopes"),
                "invalid_input",
                &format!("Invalid scope: {invalid}"),
            )
            .await;
        }
        for teams in [json!([world.foreign_project]), json!([987_654])] {
            refused(
                &world,
                json!({"label": "test", "scopes": ["*"], "scoped_teams": teams}),
                Some("scoped_teams"),
                "invalid_input",
                "You must be a member of all teams that you are scoping the key to.",
            )
            .await;
        }
        refused(
            &world,
            json!({"label": "test", "scopes": ["*"],
                   "scoped_organizations": [world.foreign_organization.to_string(), "nope"]}),
            Some("scoped_organizations"),
            "invalid_input",
            "Invalid organization UUID",
        )
        .await;
        refused(
            &world,
            json!({"label": "test", "scopes": ["*"],
                   "scoped_organizations": [organization, world.foreign_organization.to_string()]}),
            Some("scoped_organizations"),
            "invalid_input",
            "You must be a member of all organizations that you are scoping the key to.",
        )
        .await;
        // Wrong types name the field.
        for (body, field) in [
            (json!({"label": "t", "scopes": "insight:read"}), "scopes"),
            (json!({"label": 5, "scopes": []}), "label"),
            (
                json!({"label": "t", "scopes": [], "scoped_teams": ["a"]}),
                "scoped_teams",
            ),
        ] {
            let (status, answer) =
                send(&world, Method::POST, KEYS, world.admin_key(), Some(body)).await;
            assert_eq!(status, StatusCode::BAD_REQUEST, "{name} {answer}");
            let (_, attr) = error_shape(&answer);
            assert!(
                attr.as_deref().is_some_and(|attr| attr.starts_with(field)),
                "{name} {field} {answer}"
            );
        }
        // Nothing refused was stored.
        let (_, listed) = world.get(KEYS, Some(world.admin_key())).await;
        assert_eq!(listed.as_array().unwrap().len(), 1, "{name} {listed}");

        // Accepted: scoped to the user's own organization and project; `[]` is no scoping.
        let created = create(
            &world,
            world.admin_key(),
            json!({"label": "org", "scopes": ["*"], "scoped_organizations": [organization],
                   "scoped_teams": [world.bootstrap.project.id]}),
        )
        .await;
        assert_eq!(
            created["scoped_organizations"],
            json!([organization]),
            "{name}"
        );
        let created = create(
            &world,
            world.admin_key(),
            json!({"label": "all", "scopes": ["*"], "scoped_organizations": [],
                   "scoped_teams": []}),
        )
        .await;
        assert_eq!(created["scoped_teams"], Value::Null, "{name}");
        assert_eq!(created["scoped_organizations"], Value::Null, "{name}");
        let secret = created["value"].as_str().unwrap();
        let (status, _) = world
            .get(
                &format!("/api/projects/{}/", world.bootstrap.project.id),
                Some(secret),
            )
            .await;
        assert_eq!(
            status,
            StatusCode::OK,
            "{name}: no scoping is every project"
        );
    }
}

#[tokio::test]
async fn a_user_holds_at_most_ten_keys() {
    for world in World::all().await {
        let name = world.name();
        // The bootstrap key is the first of ten.
        let mut ids = Vec::new();
        for n in 1..10 {
            let created = create(
                &world,
                world.admin_key(),
                json!({"label": format!("key {n}"), "scopes": ["insight:read"]}),
            )
            .await;
            ids.push(created["id"].as_str().unwrap().to_owned());
        }
        let (status, body) = send(
            &world,
            Method::POST,
            KEYS,
            world.admin_key(),
            Some(json!({"label": "eleventh", "scopes": ["insight:read"]})),
        )
        .await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{name} {body}");
        assert_eq!(
            body,
            json!({"type": "validation_error", "code": "invalid_input", "attr": null,
                   "detail": "You can only have 10 personal API keys. Remove an existing key before creating a new one."}),
            "{name}"
        );
        let (_, listed) = world.get(KEYS, Some(world.admin_key())).await;
        assert_eq!(listed.as_array().unwrap().len(), 10, "{name}");
        // Another user's count is their own.
        create(
            &world,
            &world.member_key,
            json!({"label": "mine", "scopes": ["*"]}),
        )
        .await;
        // One removed makes room for one.
        let (status, _) = send(
            &world,
            Method::DELETE,
            &key_uri(&ids[0]),
            world.admin_key(),
            None,
        )
        .await;
        assert_eq!(status, StatusCode::NO_CONTENT, "{name}");
        create(
            &world,
            world.admin_key(),
            json!({"label": "tenth again", "scopes": ["insight:read"]}),
        )
        .await;
    }
}

#[tokio::test]
async fn keys_are_retrieved_updated_and_deleted() {
    for world in World::all().await {
        let name = world.name();
        let admin = world.admin_key();
        let created = create(
            &world,
            admin,
            json!({"label": "crud", "scopes": ["insight:read"],
                   "scoped_teams": [world.bootstrap.project.id]}),
        )
        .await;
        let id = created["id"].as_str().unwrap();
        let secret = created["value"].as_str().unwrap();

        let (status, got) = world.get(&key_uri(id), Some(admin)).await;
        assert_eq!(status, StatusCode::OK, "{name} {got}");
        assert_eq!(got["label"], "crud", "{name}");
        assert_eq!(got["value"], Value::Null, "{name}");

        // PATCH changes what it names and keeps the rest.
        let (status, patched) = send(
            &world,
            Method::PATCH,
            &key_uri(id),
            admin,
            Some(json!({"label": "renamed", "scopes": ["insight:write", "user:read"]})),
        )
        .await;
        assert_eq!(status, StatusCode::OK, "{name} {patched}");
        assert_eq!(patched["label"], "renamed", "{name}");
        assert_eq!(
            patched["scopes"],
            json!(["insight:write", "user:read"]),
            "{name}"
        );
        assert_eq!(
            patched["scoped_teams"],
            json!([world.bootstrap.project.id]),
            "{name}"
        );
        assert_eq!(patched["mask_value"], created["mask_value"], "{name}");
        assert_eq!(patched["value"], Value::Null, "{name}");
        // The secret is unchanged and the new scopes hold at once.
        let (status, _) = world.get("/api/users/@me/", Some(secret)).await;
        assert_eq!(status, StatusCode::OK, "{name}");
        // Unscoping the teams with `null`.
        let (status, patched) = send(
            &world,
            Method::PATCH,
            &key_uri(id),
            admin,
            Some(json!({"scoped_teams": null})),
        )
        .await;
        assert_eq!(status, StatusCode::OK, "{name} {patched}");
        assert_eq!(patched["scoped_teams"], Value::Null, "{name}");
        assert_eq!(patched["label"], "renamed", "{name}");
        // PATCH validates as create does.
        for (body, attr, detail) in [
            (json!({"scopes": ["bad"]}), "scopes", "Invalid scope: bad"),
            (
                json!({"label": ""}),
                "label",
                "This field may not be blank.",
            ),
            (
                json!({"scoped_teams": [world.foreign_project]}),
                "scoped_teams",
                "You must be a member of all teams that you are scoping the key to.",
            ),
        ] {
            let (status, answer) =
                send(&world, Method::PATCH, &key_uri(id), admin, Some(body)).await;
            assert_eq!(status, StatusCode::BAD_REQUEST, "{name} {answer}");
            assert_eq!(error_shape(&answer).1.as_deref(), Some(attr), "{name}");
            assert_eq!(answer["detail"], detail, "{name}");
        }
        let (_, unchanged) = world.get(&key_uri(id), Some(admin)).await;
        assert_eq!(unchanged, patched, "{name}");

        // `@current` is the key of the request.
        let (status, current) = world.get(&key_uri("@current"), Some(admin)).await;
        assert_eq!(status, StatusCode::OK, "{name} {current}");
        assert_eq!(current["label"], "Bootstrap key", "{name}");
        assert_eq!(current["id"], world.bootstrap.key.id.to_string(), "{name}");

        // Unknown and malformed ids are 404s.
        for unknown in [uuid::Uuid::now_v7().to_string(), "abc".to_owned()] {
            let (status, body) = world.get(&key_uri(&unknown), Some(admin)).await;
            assert_eq!(
                (status, body),
                (StatusCode::NOT_FOUND, not_found()),
                "{name}"
            );
        }

        // DELETE: 204, then gone, and its secret refused.
        let (status, body) = send(&world, Method::DELETE, &key_uri(id), admin, None).await;
        assert_eq!(
            (status, body),
            (StatusCode::NO_CONTENT, Value::Null),
            "{name}"
        );
        let (status, body) = world.get(&key_uri(id), Some(admin)).await;
        assert_eq!(
            (status, body),
            (StatusCode::NOT_FOUND, not_found()),
            "{name}"
        );
        let (status, body) = send(&world, Method::DELETE, &key_uri(id), admin, None).await;
        assert_eq!(
            (status, body),
            (StatusCode::NOT_FOUND, not_found()),
            "{name}"
        );
        let (status, body) = world.get("/api/users/@me/", Some(secret)).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED, "{name} {body}");
        let (_, listed) = world.get(KEYS, Some(admin)).await;
        assert_eq!(listed.as_array().unwrap().len(), 1, "{name} {listed}");
    }
}

#[tokio::test]
async fn a_rolled_key_has_a_new_secret_and_the_old_one_stops_working() {
    for world in World::all().await {
        let name = world.name();
        let admin = world.admin_key();
        let created = create(
            &world,
            admin,
            json!({"label": "roll me", "scopes": ["user:read", "personal_api_key:write"]}),
        )
        .await;
        let id = created["id"].as_str().unwrap();
        let old = created["value"].as_str().unwrap();

        let (status, rolled) = send(
            &world,
            Method::POST,
            &format!("{}roll/", key_uri(id)),
            admin,
            Some(json!({})),
        )
        .await;
        assert_eq!(status, StatusCode::OK, "{name} {rolled}");
        let new = rolled["value"].as_str().unwrap();
        assert!(new.starts_with("phx_") && new != old, "{name} {rolled}");
        assert!(rolled["last_rolled_at"].is_string(), "{name} {rolled}");
        assert_ne!(rolled["mask_value"], created["mask_value"], "{name}");
        for field in [
            "id",
            "label",
            "scopes",
            "created_at",
            "scoped_teams",
            "user_id",
        ] {
            assert_eq!(rolled[field], created[field], "{name} {field}");
        }

        let (status, body) = world.get("/api/users/@me/", Some(old)).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED, "{name} {body}");
        assert_eq!(
            body["detail"], "Personal API key found in request Authorization header is invalid.",
            "{name}"
        );
        let (status, _) = world.get("/api/users/@me/", Some(new)).await;
        assert_eq!(status, StatusCode::OK, "{name}");

        // Listed once, with the new mask and no secret.
        let (_, listed) = world.get(KEYS, Some(admin)).await;
        let listed = listed.as_array().unwrap();
        let mine: Vec<&Value> = listed.iter().filter(|key| key["id"] == id).collect();
        assert_eq!(mine.len(), 1, "{name} {listed:?}");
        assert_eq!(mine[0]["mask_value"], rolled["mask_value"], "{name}");
        assert_eq!(mine[0]["value"], Value::Null, "{name}");
        assert_eq!(
            mine[0]["last_rolled_at"], rolled["last_rolled_at"],
            "{name}"
        );

        // A key with the write scope rolls itself through `@current`.
        let (status, again) = send(
            &world,
            Method::POST,
            "/api/personal_api_keys/@current/roll/",
            new,
            None,
        )
        .await;
        assert_eq!(status, StatusCode::OK, "{name} {again}");
        assert_eq!(again["id"], id, "{name}");
        let (status, _) = world.get("/api/users/@me/", Some(new)).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED, "{name}");
        let (status, _) = world
            .get("/api/users/@me/", Some(again["value"].as_str().unwrap()))
            .await;
        assert_eq!(status, StatusCode::OK, "{name}");
    }
}

#[tokio::test]
async fn another_users_keys_are_not_found() {
    for world in World::all().await {
        let name = world.name();
        let (status, members) = world.get(KEYS, Some(&world.member_key)).await;
        assert_eq!(status, StatusCode::OK, "{name} {members}");
        let members = members.as_array().unwrap();
        assert_eq!(members.len(), 1, "{name}: only the member's own key");
        assert_eq!(members[0]["label"], "member", "{name}");
        assert_eq!(members[0]["user_id"], world.member.id(), "{name}");
        let theirs = key_uri(members[0]["id"].as_str().unwrap());

        let admin = world.admin_key();
        for (method, uri, body) in [
            (Method::GET, theirs.clone(), None),
            (
                Method::PATCH,
                theirs.clone(),
                Some(json!({"label": "mine now"})),
            ),
            (Method::DELETE, theirs.clone(), None),
            (Method::POST, format!("{theirs}roll/"), None),
        ] {
            let (status, answer) = send(&world, method.clone(), &uri, admin, body).await;
            assert_eq!(
                (status, answer),
                (StatusCode::NOT_FOUND, not_found()),
                "{name} {method} {uri}"
            );
        }
        // Untouched.
        let (status, _) = world.get("/api/users/@me/", Some(&world.member_key)).await;
        assert_eq!(status, StatusCode::OK, "{name}");
        let (_, members) = world.get(KEYS, Some(&world.member_key)).await;
        assert_eq!(members[0]["label"], "member", "{name}");
    }
}

#[tokio::test]
async fn keys_need_the_personal_api_key_scopes() {
    for world in World::all().await {
        let name = world.name();
        let missing = |scope: &str| format!("API key missing required scope '{scope}'");
        let none = world.key(&["user:read", "insight:write"], None).await;
        let read = world.key(&["personal_api_key:read"], None).await;
        let write = world.key(&["personal_api_key:write"], None).await;
        let (_, current) = world.get(&key_uri("@current"), Some(&read)).await;
        let read_id = current["id"].as_str().unwrap().to_owned();

        for (uri, key) in [(KEYS.to_owned(), &none), (key_uri("@current"), &none)] {
            let (status, body) = world.get(&uri, Some(key)).await;
            assert_eq!(status, StatusCode::FORBIDDEN, "{name} {body}");
            assert_eq!(
                (error_shape(&body).0.as_str(), body["detail"].as_str()),
                (
                    "permission_denied",
                    Some(missing("personal_api_key:read").as_str())
                ),
                "{name}"
            );
        }
        // Read allows reading, not writing.
        let (status, listed) = world.get(KEYS, Some(&read)).await;
        assert_eq!(status, StatusCode::OK, "{name} {listed}");
        for (method, uri, body) in [
            (
                Method::POST,
                KEYS.to_owned(),
                Some(json!({"label": "x", "scopes": ["*"]})),
            ),
            (
                Method::PATCH,
                key_uri(&read_id),
                Some(json!({"label": "x"})),
            ),
            (Method::DELETE, key_uri(&read_id), None),
            (Method::POST, format!("{}roll/", key_uri(&read_id)), None),
        ] {
            // No key changes keys, whatever its scopes: only the console does.
            for key in [&read, &write] {
                let text = body.as_ref().map(Value::to_string);
                let (status, answer) = world
                    .send(method.clone(), &uri, Some(key), text.as_deref())
                    .await;
                assert_eq!(
                    status,
                    StatusCode::FORBIDDEN,
                    "{name} {method} {uri} {answer}"
                );
                assert_eq!(
                    answer["detail"], "This action does not support Personal API Key access",
                    "{name} {method} {uri}"
                );
            }
        }
        // The refusal comes before the body's check.
        let (status, answer) = world
            .send(Method::POST, KEYS, Some(&write), Some(r#"{"label": 5}"#))
            .await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{name} {answer}");
        // Write implies read.
        let (status, _) = world.get(KEYS, Some(&write)).await;
        assert_eq!(status, StatusCode::OK, "{name}");
    }
}

#[tokio::test]
async fn a_console_session_must_have_logged_in_recently_to_change_keys() {
    for world in World::all().await {
        let name = world.name();
        let fresh = session(&world, Duration::minutes(5)).await;
        let stale = session(&world, Duration::hours(3)).await;

        // A fresh session manages keys; it has no key of its own for `@current`.
        let (status, created) = send_as_session(
            &world,
            &fresh,
            Method::POST,
            KEYS,
            Some(json!({"label": "from the console", "scopes": ["*"]})),
        )
        .await;
        assert_eq!(status, StatusCode::CREATED, "{name} {created}");
        let id = created["id"].as_str().unwrap().to_owned();
        let (status, body) =
            send_as_session(&world, &fresh, Method::GET, &key_uri("@current"), None).await;
        assert_eq!(
            (status, body),
            (StatusCode::NOT_FOUND, not_found()),
            "{name}"
        );

        // A stale one still reads, and may change nothing.
        let (status, listed) = send_as_session(&world, &stale, Method::GET, KEYS, None).await;
        assert_eq!(status, StatusCode::OK, "{name} {listed}");
        assert_eq!(listed.as_array().unwrap().len(), 2, "{name}");
        let (status, _) = send_as_session(&world, &stale, Method::GET, &key_uri(&id), None).await;
        assert_eq!(status, StatusCode::OK, "{name}");
        for (method, uri, body) in [
            (
                Method::POST,
                KEYS.to_owned(),
                Some(json!({"label": "x", "scopes": ["*"]})),
            ),
            (Method::PATCH, key_uri(&id), Some(json!({"label": "x"}))),
            (Method::DELETE, key_uri(&id), None),
            (Method::POST, format!("{}roll/", key_uri(&id)), None),
        ] {
            let (status, answer) =
                send_as_session(&world, &stale, method.clone(), &uri, body).await;
            assert_eq!(
                (status, answer),
                (
                    StatusCode::FORBIDDEN,
                    json!({"type": "authentication_error", "code": "permission_denied",
                           "detail": "This action requires you to be recently authenticated.",
                           "attr": null})
                ),
                "{name} {method} {uri}"
            );
        }
        // The fresh one rolls and deletes.
        let (status, rolled) = send_as_session(
            &world,
            &fresh,
            Method::POST,
            &format!("{}roll/", key_uri(&id)),
            None,
        )
        .await;
        assert_eq!(status, StatusCode::OK, "{name} {rolled}");
        let (status, _) =
            send_as_session(&world, &fresh, Method::DELETE, &key_uri(&id), None).await;
        assert_eq!(status, StatusCode::NO_CONTENT, "{name}");
        // Keys are not asked how recent anything is.
        let (status, _) = send(
            &world,
            Method::POST,
            KEYS,
            world.admin_key(),
            Some(json!({"label": "by key", "scopes": ["*"]})),
        )
        .await;
        assert_eq!(status, StatusCode::CREATED, "{name}");
    }
}
