//! The user payload's writable fields, password and e-mail changes, e-mail verification and
//! cancellation, on both backends, with codes read from the mail outbox.

use api_tests::{World, error_shape};
use axum::http::{Method, StatusCode};
use serde_json::{Value, json};

async fn patch(world: &World, uri: &str, key: &str, body: Value) -> (StatusCode, Value) {
    world
        .send(Method::PATCH, uri, Some(key), Some(&body.to_string()))
        .await
}

async fn post_anonymous(world: &World, uri: &str, body: Value) -> (StatusCode, Value) {
    world
        .send(Method::POST, uri, None, Some(&body.to_string()))
        .await
}

/// The code in the newest message to `address`.
fn last_code_to(world: &World, address: &str) -> String {
    let message = world
        .backend
        .outbox()
        .into_iter()
        .rev()
        .find(|m| m.contains(&format!("To: {address}")))
        .unwrap_or_else(|| panic!("no mail to {address}"));
    let subject = message
        .lines()
        .find_map(|line| line.strip_prefix("Subject: Your verification code: "))
        .expect("a code in the subject");
    subject.trim().to_owned()
}

#[tokio::test]
async fn email_change_is_verified_before_it_applies() {
    for world in World::all().await {
        let name = world.name();
        let key = world.member_key.clone();
        let uuid = world.member.uuid.to_string();

        let (code, body) = patch(
            &world,
            "/api/users/@me/",
            &key,
            json!({"email": "new@example.com"}),
        )
        .await;
        assert_eq!(
            (code, error_shape(&body).1.as_deref()),
            (StatusCode::BAD_REQUEST, Some("current_password")),
            "{name}"
        );
        let (code, _) = patch(
            &world,
            "/api/users/@me/",
            &key,
            json!({"email": "new@example.com", "current_password": "nope"}),
        )
        .await;
        assert_eq!(code, StatusCode::BAD_REQUEST, "{name}");
        let (code, body) = patch(
            &world,
            "/api/users/@me/",
            &key,
            json!({"email": "not-an-address", "current_password": "hunter22"}),
        )
        .await;
        assert_eq!(
            (code, error_shape(&body).1.as_deref()),
            (StatusCode::BAD_REQUEST, Some("email")),
            "{name}"
        );
        let (code, body) = patch(
            &world,
            "/api/users/@me/",
            &key,
            json!({"email": "ADMIN@localhost", "current_password": "hunter22"}),
        )
        .await;
        assert_eq!(
            (code, error_shape(&body).0.as_str()),
            (StatusCode::BAD_REQUEST, "unique"),
            "{name}"
        );

        let (code, me) = patch(
            &world,
            "/api/users/@me/",
            &key,
            json!({"email": "new@example.com", "current_password": "hunter22"}),
        )
        .await;
        assert_eq!(code, StatusCode::OK, "{name} {me}");
        assert_eq!(
            (me["email"].as_str(), me["pending_email"].as_str()),
            (Some("member@example.com"), Some("new@example.com")),
            "{name}"
        );
        let sent = last_code_to(&world, "new@example.com");

        let wrong = if sent == "000000" { "000001" } else { "000000" };
        let (code, body) = post_anonymous(
            &world,
            "/api/users/verify_email/",
            json!({"uuid": uuid, "code": wrong}),
        )
        .await;
        assert_eq!(
            (code, error_shape(&body)),
            (
                StatusCode::BAD_REQUEST,
                ("invalid_code".into(), Some("code".into()))
            ),
            "{name}"
        );
        let (code, body) = post_anonymous(
            &world,
            "/api/users/verify_email/",
            json!({"uuid": uuid, "code": "12ab"}),
        )
        .await;
        assert_eq!(
            (code, error_shape(&body).1.as_deref()),
            (StatusCode::BAD_REQUEST, Some("code")),
            "{name}"
        );

        let (code, body) = post_anonymous(
            &world,
            "/api/users/verify_email/",
            json!({"uuid": uuid, "code": sent}),
        )
        .await;
        assert_eq!(code, StatusCode::OK, "{name} {body}");
        assert_eq!(body, json!({"success": true}), "{name}");
        let (_, me) = world.get("/api/users/@me/", Some(&key)).await;
        assert_eq!(me["email"], "new@example.com", "{name}");
        assert_eq!(me["pending_email"], Value::Null, "{name}");
        assert_eq!(me["is_email_verified"], true, "{name}");
        assert!(
            world
                .backend
                .outbox()
                .iter()
                .any(|m| m.contains("To: member@example.com")
                    && m.contains("changed to new@example.com")),
            "{name}"
        );

        // Single use.
        let (code, _) = post_anonymous(
            &world,
            "/api/users/verify_email/",
            json!({"uuid": uuid, "code": sent}),
        )
        .await;
        assert_eq!(code, StatusCode::BAD_REQUEST, "{name}");
        // The old address is free again, the new one is taken.
        let store = world.backend.state.store.as_ref();
        assert!(
            common::models::User::by_email(store, "member@example.com")
                .await
                .unwrap()
                .is_none(),
            "{name}"
        );
        assert_eq!(
            common::models::User::by_email(store, "NEW@example.com")
                .await
                .unwrap()
                .unwrap()
                .uuid,
            world.member.uuid,
            "{name}"
        );

        // A cancelled change: the code stops working.
        let (code, _) = patch(
            &world,
            "/api/users/@me/",
            &key,
            json!({"email": "third@example.com", "current_password": "hunter22"}),
        )
        .await;
        assert_eq!(code, StatusCode::OK, "{name}");
        let cancelled = last_code_to(&world, "third@example.com");
        let (code, me) = patch(
            &world,
            "/api/users/cancel_email_change_request/",
            &key,
            json!({}),
        )
        .await;
        assert_eq!(
            (code, me["pending_email"].clone()),
            (StatusCode::OK, Value::Null),
            "{name}"
        );
        let (code, _) = post_anonymous(
            &world,
            "/api/users/verify_email/",
            json!({"uuid": uuid, "code": cancelled}),
        )
        .await;
        assert_eq!(code, StatusCode::BAD_REQUEST, "{name}");
        let (code, body) = patch(
            &world,
            "/api/users/cancel_email_change_request/",
            &key,
            json!({}),
        )
        .await;
        assert_eq!(
            (code, error_shape(&body).0.as_str()),
            (StatusCode::BAD_REQUEST, "email_change_request_not_found"),
            "{name}"
        );
        let (code, _) = world
            .send(
                Method::PATCH,
                "/api/users/cancel_email_change_request/",
                None,
                Some("{}"),
            )
            .await;
        assert_eq!(code, StatusCode::UNAUTHORIZED, "{name}");
    }
}

#[tokio::test]
async fn verification_requests_do_not_reveal_accounts() {
    for world in World::all().await {
        let name = world.name();
        let uuid = world.member.uuid.to_string();
        for unknown in [uuid::Uuid::new_v4().to_string(), "not-a-uuid".into()] {
            let (code, body) = post_anonymous(
                &world,
                "/api/users/request_email_verification/",
                json!({"uuid": unknown}),
            )
            .await;
            assert_eq!(
                (code, body),
                (StatusCode::OK, json!({"success": true})),
                "{name}"
            );
        }
        let (code, body) =
            post_anonymous(&world, "/api/users/request_email_verification/", json!({})).await;
        assert_eq!(
            (code, error_shape(&body).0.as_str()),
            (StatusCode::BAD_REQUEST, "required"),
            "{name}"
        );
        let unknown = uuid::Uuid::new_v4().to_string();
        let (code, body) = post_anonymous(
            &world,
            "/api/users/verify_email/",
            json!({"uuid": unknown, "code": "123456"}),
        )
        .await;
        assert_eq!(
            (code, error_shape(&body).0.as_str()),
            (StatusCode::BAD_REQUEST, "invalid_code"),
            "{name}"
        );

        let (code, _) = post_anonymous(
            &world,
            "/api/users/request_email_verification/",
            json!({"uuid": uuid}),
        )
        .await;
        assert_eq!(code, StatusCode::OK, "{name}");
        let sent = last_code_to(&world, "member@example.com");
        let (code, _) = post_anonymous(
            &world,
            "/api/users/verify_email/",
            json!({"uuid": uuid, "code": sent}),
        )
        .await;
        assert_eq!(code, StatusCode::OK, "{name}");
        let (_, me) = world.get("/api/users/@me/", Some(&world.member_key)).await;
        assert_eq!(me["is_email_verified"], true, "{name}");
        let (code, body) = post_anonymous(
            &world,
            "/api/users/request_email_verification/",
            json!({"uuid": uuid}),
        )
        .await;
        assert_eq!(
            (code, error_shape(&body).0.as_str()),
            (StatusCode::BAD_REQUEST, "already_verified"),
            "{name}"
        );
    }
}

#[tokio::test]
async fn verification_is_throttled_and_codes_are_withdrawn_after_wrong_guesses() {
    for world in World::all().await {
        let name = world.name();
        let uuid = world.member.uuid.to_string();
        let (code, _) = post_anonymous(
            &world,
            "/api/users/request_email_verification/",
            json!({"uuid": uuid}),
        )
        .await;
        assert_eq!(code, StatusCode::OK, "{name}");
        let sent = last_code_to(&world, "member@example.com");
        let wrong: Vec<String> = (0..5)
            .map(|n| format!("{:06}", (sent.parse::<u32>().unwrap() + 1 + n) % 1_000_000))
            .collect();
        for (attempt, guess) in wrong.iter().enumerate() {
            let (code, body) = post_anonymous(
                &world,
                "/api/users/verify_email/",
                json!({"uuid": uuid, "code": guess}),
            )
            .await;
            assert_eq!(code, StatusCode::BAD_REQUEST, "{name} {attempt}");
            let expected = if attempt == 4 {
                "too_many_attempts"
            } else {
                "invalid_code"
            };
            assert_eq!(error_shape(&body).0, expected, "{name} {attempt}");
        }
        // The code is gone, and the next request is over the 6-per-20-minutes budget either way.
        let (code, body) = post_anonymous(
            &world,
            "/api/users/verify_email/",
            json!({"uuid": uuid, "code": sent}),
        )
        .await;
        assert!(
            code == StatusCode::BAD_REQUEST || code == StatusCode::TOO_MANY_REQUESTS,
            "{name} {code}"
        );
        error_shape(&body);
        let (code, body) = post_anonymous(
            &world,
            "/api/users/verify_email/",
            json!({"uuid": uuid, "code": sent}),
        )
        .await;
        assert_eq!(code, StatusCode::TOO_MANY_REQUESTS, "{name}");
        assert_eq!(body["type"], "throttled_error", "{name}");

        for _ in 0..5 {
            post_anonymous(
                &world,
                "/api/users/request_email_verification/",
                json!({"uuid": uuid}),
            )
            .await;
        }
        let (code, _) = post_anonymous(
            &world,
            "/api/users/request_email_verification/",
            json!({"uuid": uuid}),
        )
        .await;
        assert_eq!(code, StatusCode::TOO_MANY_REQUESTS, "{name}");
    }
}

#[tokio::test]
async fn password_changes_need_the_current_password_and_are_throttled() {
    for world in World::all().await {
        let name = world.name();
        let key = world.member_key.clone();
        let (code, body) = patch(
            &world,
            "/api/users/@me/",
            &key,
            json!({"password": "a much better one"}),
        )
        .await;
        assert_eq!(
            (code, error_shape(&body).1.as_deref()),
            (StatusCode::BAD_REQUEST, Some("current_password")),
            "{name}"
        );
        for (weak, reason) in [
            ("short", "password_too_short"),
            ("1234567890", "password_entirely_numeric"),
        ] {
            let (code, body) = patch(
                &world,
                "/api/users/@me/",
                &key,
                json!({"password": weak, "current_password": "hunter22"}),
            )
            .await;
            assert_eq!(
                (code, error_shape(&body).0.as_str()),
                (StatusCode::BAD_REQUEST, reason),
                "{name}"
            );
        }
        let (code, body) = patch(
            &world,
            "/api/users/@me/",
            &key,
            json!({"password": "a much better one", "current_password": "hunter22"}),
        )
        .await;
        assert_eq!(code, StatusCode::OK, "{name} {body}");
        assert!(
            body.get("password").is_none() && body.get("password_hash").is_none(),
            "{name}"
        );
        let store = world.backend.state.store.as_ref();
        let stored = common::models::User::load(store, world.member.uuid)
            .await
            .unwrap()
            .unwrap();
        assert!(
            stored.verify_password("a much better one") && !stored.verify_password("hunter22"),
            "{name}"
        );

        // 5 attempts a minute carry current_password; the sixth is throttled.
        for _ in 0..4 {
            patch(
                &world,
                "/api/users/@me/",
                &key,
                json!({"password": "another good one", "current_password": "wrong"}),
            )
            .await;
        }
        let (code, body) = patch(
            &world,
            "/api/users/@me/",
            &key,
            json!({"password": "another good one", "current_password": "a much better one"}),
        )
        .await;
        assert_eq!(code, StatusCode::TOO_MANY_REQUESTS, "{name} {body}");
    }
}

#[tokio::test]
async fn payload_fields_are_validated_and_persisted() {
    for world in World::all().await {
        let name = world.name();
        let key = world.member_key.clone();
        let cases = [
            (
                json!({"theme_mode": "purple"}),
                "invalid_choice",
                "theme_mode",
            ),
            (
                json!({"toolbar_mode": "sometimes"}),
                "invalid_choice",
                "toolbar_mode",
            ),
            (
                json!({"shortcut_position": "left"}),
                "invalid_choice",
                "shortcut_position",
            ),
            (
                json!({"role_at_organization": "wizard"}),
                "invalid_choice",
                "role_at_organization",
            ),
            (
                json!({"first_name": "x".repeat(151)}),
                "max_length",
                "first_name",
            ),
            (
                json!({"anonymize_data": "yes"}),
                "invalid_input",
                "anonymize_data",
            ),
            (
                json!({"notification_settings": [1]}),
                "invalid_input",
                "notification_settings",
            ),
            (
                json!({"set_current_team": world.foreign_project}),
                "does_not_exist",
                "set_current_team",
            ),
            (
                json!({"set_current_organization": world.foreign_organization}),
                "does_not_exist",
                "set_current_organization",
            ),
        ];
        for (body, code_expected, attr) in cases {
            let (code, response) = patch(&world, "/api/users/@me/", &key, body.clone()).await;
            assert_eq!(code, StatusCode::BAD_REQUEST, "{name} {body}");
            assert_eq!(
                error_shape(&response),
                (code_expected.into(), Some(attr.into())),
                "{name} {body}"
            );
        }
        let (code, body) = patch(&world, "/api/users/@me/", &key, json!({"is_staff": true})).await;
        assert_eq!(
            (code, error_shape(&body).0.as_str()),
            (StatusCode::FORBIDDEN, "permission_denied"),
            "{name}"
        );
        let admin = world.bootstrap.user.uuid;
        let (code, _) = patch(
            &world,
            &format!("/api/users/{admin}/"),
            &key,
            json!({"first_name": "Mallory"}),
        )
        .await;
        assert_eq!(code, StatusCode::FORBIDDEN, "{name}");

        let (code, me) = patch(&world, "/api/users/@me/", &key, json!({
            "first_name": " Ada ", "last_name": "Lovelace", "theme_mode": "dark", "toolbar_mode": null,
            "anonymize_data": true, "notification_settings": {"plugin_disabled": false},
            "has_seen_product_intro_for": {"surveys": true}, "mascot_config": {"color": "green"},
            "allow_sidebar_suggestions": true, "shortcut_position": "above", "role_at_organization": "engineering",
            "events_column_config": {"active": ["event", "person"]},
            "uuid": "ignored-read-only", "date_joined": "ignored"
        })).await;
        assert_eq!(code, StatusCode::OK, "{name} {me}");
        let (_, me) = world.get("/api/users/@me/", Some(&key)).await;
        assert_eq!(me["first_name"], "Ada", "{name}");
        assert_eq!(me["theme_mode"], "dark", "{name}");
        assert_eq!(me["toolbar_mode"], Value::Null, "{name}");
        assert_eq!(me["anonymize_data"], true, "{name}");
        assert_eq!(
            me["notification_settings"]["plugin_disabled"], false,
            "{name}"
        );
        assert_eq!(me["has_seen_product_intro_for"]["surveys"], true, "{name}");
        assert_eq!(me["mascot_config"]["color"], "green", "{name}");
        assert_eq!(me["role_at_organization"], "engineering", "{name}");
        assert_eq!(me["events_column_config"]["active"][1], "person", "{name}");
        assert_eq!(me["uuid"], world.member.uuid.to_string(), "{name}");

        // A project of their own organization becomes current.
        let store = world.backend.state.store.as_ref();
        let second = common::provisioning::create_project(
            store,
            world.bootstrap.organization.id,
            "Second",
            "UTC",
        )
        .await
        .unwrap();
        let (code, me) = patch(
            &world,
            "/api/users/@me/",
            &key,
            json!({"set_current_team": second.id}),
        )
        .await;
        assert_eq!(
            (code, me["team"]["id"].as_i64()),
            (StatusCode::OK, Some(second.id)),
            "{name}"
        );
        let (_, current) = world.get("/api/projects/@current/", Some(&key)).await;
        assert_eq!(current["id"], second.id, "{name}");
    }
}
