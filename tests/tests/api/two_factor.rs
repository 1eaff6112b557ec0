//! TOTP two-factor on both backends: setup, validation with a code computed from the returned
//! secret, status, replay refusal, backup codes (single use, regeneration), throttling, disable.

use api_tests::{World, error_shape};
use axum::http::{Method, StatusCode};
use serde_json::{Value, json};
use totp_rs::TOTP;

fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

/// Waits out the last seconds of a 30 s step, so a code computed now is still current server-side.
async fn settle() {
    let into_step = now() % 30;
    if into_step >= 26 {
        tokio::time::sleep(std::time::Duration::from_secs(31 - into_step)).await;
    }
}

/// A six-digit code no authenticator accepts right now (not within ±1 step).
fn wrong_code(totp: &TOTP) -> String {
    let accepted: Vec<String> = [now() - 30, now(), now() + 30]
        .iter()
        .map(|t| totp.generate(*t))
        .collect();
    (0..1_000_000)
        .map(|n| format!("{n:06}"))
        .find(|code| !accepted.contains(code))
        .unwrap()
}

async fn post(world: &World, path: &str, key: &str, body: Value) -> (StatusCode, Value) {
    world
        .send(Method::POST, path, Some(key), Some(&body.to_string()))
        .await
}

async fn status_of(world: &World, key: &str) -> Value {
    world
        .get("/api/users/@me/two_factor_status/", Some(key))
        .await
        .1
}

async fn start(world: &World, key: &str) -> TOTP {
    start_at(world, key, "two_factor_start_setup").await
}

/// Starts a setup through `route` (the current name or PostHog's deprecated alias).
async fn start_at(world: &World, key: &str, route: &str) -> TOTP {
    settle().await;
    let (status, body) = world
        .get(&format!("/api/users/@me/{route}/"), Some(key))
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["success"], true);
    let secret = body["secret"].as_str().unwrap();
    assert!(secret.len() >= 32, "20 bytes of base32: {secret}");
    let totp = TOTP::from_url(body["otpauth_uri"].as_str().unwrap()).unwrap();
    assert_eq!(totp.get_secret_base32(), secret);
    totp
}

#[tokio::test]
async fn two_factor_lifecycle() {
    for world in World::all().await {
        let name = world.name();
        let key = world.member_key.clone();
        let status = status_of(&world, &key).await;
        assert_eq!(status["is_enabled"], false, "{name}");
        assert_eq!(status["method"], Value::Null, "{name}");

        // No setup yet.
        let (code, body) = post(
            &world,
            "/api/users/@me/two_factor_validate/",
            &key,
            json!({"token": "123456"}),
        )
        .await;
        assert_eq!(code, StatusCode::BAD_REQUEST, "{name}");
        assert_eq!(error_shape(&body).0, "setup_expired", "{name}");
        let (code, body) = post(
            &world,
            "/api/users/@me/two_factor_validate/",
            &key,
            json!({}),
        )
        .await;
        assert_eq!(
            (code, error_shape(&body)),
            (
                StatusCode::BAD_REQUEST,
                ("required".into(), Some("token".into()))
            ),
            "{name}"
        );
        // Backup codes need an enabled device.
        let (code, body) = post(
            &world,
            "/api/users/@me/two_factor_backup_codes/",
            &key,
            json!({}),
        )
        .await;
        assert_eq!(
            (code, error_shape(&body).0.as_str()),
            (StatusCode::BAD_REQUEST, "2fa_not_enabled"),
            "{name}"
        );

        let totp = start(&world, &key).await;
        let (code, body) = post(
            &world,
            "/api/users/@me/validate_2fa/",
            &key,
            json!({"token": wrong_code(&totp)}),
        )
        .await;
        assert_eq!(
            (code, error_shape(&body).0.as_str()),
            (StatusCode::BAD_REQUEST, "token_invalid"),
            "{name}"
        );
        let current = totp.generate(now());
        let (code, body) = post(
            &world,
            "/api/users/@me/two_factor_validate/",
            &key,
            json!({"token": current}),
        )
        .await;
        assert_eq!(code, StatusCode::OK, "{name} {body}");
        assert_eq!(body["success"], true, "{name}");
        let first_codes: Vec<String> =
            serde_json::from_value(body["backup_codes"].clone()).unwrap();
        assert_eq!(first_codes.len(), 10, "{name}");

        // At rest the seed is sealed and the backup codes are keyed hashes.
        let store = world.backend.state.store.as_ref();
        let user_pk = common::models::User::pk(world.member.uuid);
        for sk in ["TOTP", "BACKUP"] {
            let stored = store
                .get(&user_pk, sk)
                .await
                .unwrap()
                .unwrap()
                .data
                .to_string();
            assert!(!stored.contains(&totp.get_secret_base32()), "{name} {sk}");
            assert!(
                first_codes.iter().all(|c| !stored.contains(c.as_str())),
                "{name} {sk}"
            );
        }

        let status = status_of(&world, &key).await;
        assert_eq!(status["is_enabled"], true, "{name}");
        assert_eq!(status["has_totp"], true, "{name}");
        assert_eq!(status["method"], "TOTP", "{name}");
        assert_eq!(status["backup_codes_remaining"], 10, "{name}");
        let (_, me) = world.get("/api/users/@me/", Some(&key)).await;
        assert_eq!(me["is_2fa_enabled"], true, "{name}");

        // The code that enabled the device cannot be replayed.
        let (code, body) = post(
            &world,
            "/api/users/@me/two_factor_disable/",
            &key,
            json!({"token": current}),
        )
        .await;
        assert_eq!(
            (code, error_shape(&body).0.as_str()),
            (StatusCode::BAD_REQUEST, "token_invalid"),
            "{name}"
        );

        // Regenerated codes replace the first set.
        let (code, body) = post(
            &world,
            "/api/users/@me/two_factor_backup_codes/",
            &key,
            json!({}),
        )
        .await;
        assert_eq!(code, StatusCode::OK, "{name}");
        let second_codes: Vec<String> =
            serde_json::from_value(body["backup_codes"].clone()).unwrap();
        assert_eq!(second_codes.len(), 10, "{name}");
        assert!(
            second_codes.iter().all(|c| !first_codes.contains(c)),
            "{name}"
        );
        let (code, _) = post(
            &world,
            "/api/users/@me/two_factor_disable/",
            &key,
            json!({"token": first_codes[0]}),
        )
        .await;
        assert_eq!(code, StatusCode::BAD_REQUEST, "{name}: an old backup code");
        assert_eq!(status_of(&world, &key).await["is_enabled"], true, "{name}");

        // A current backup code disables, and the device and codes are gone.
        let (code, body) = post(
            &world,
            "/api/users/@me/two_factor_disable/",
            &key,
            json!({"token": second_codes[3].to_uppercase()}),
        )
        .await;
        assert_eq!(code, StatusCode::OK, "{name} {body}");
        let status = status_of(&world, &key).await;
        assert_eq!(
            (
                status["is_enabled"].as_bool(),
                status["backup_codes_remaining"].as_u64()
            ),
            (Some(false), Some(0)),
            "{name}"
        );
        let (code, body) = post(
            &world,
            "/api/users/@me/two_factor_disable/",
            &key,
            json!({"token": second_codes[4]}),
        )
        .await;
        assert_eq!(
            (code, error_shape(&body).0.as_str()),
            (StatusCode::BAD_REQUEST, "2fa_not_enabled"),
            "{name}"
        );

        // Mail told the user both times; no message carries the secret.
        let outbox = world.backend.outbox();
        assert!(
            outbox
                .iter()
                .any(|m| m.contains("Two-factor authentication enabled")),
            "{name}"
        );
        assert!(
            outbox
                .iter()
                .any(|m| m.contains("Two-factor authentication disabled")),
            "{name}"
        );
        assert!(
            outbox
                .iter()
                .all(|m| !m.contains(&totp.get_secret_base32())),
            "{name}"
        );
    }
}

#[tokio::test]
async fn disabling_with_a_fresh_totp_code_or_the_password() {
    for world in World::all().await {
        let name = world.name();
        let key = world.member_key.clone();
        let totp = start(&world, &key).await;
        // Enable with the previous step's code, disable with the current one: both accepted once.
        let previous = totp.generate(now() - 30);
        let current = totp.generate(now());
        let (code, _) = post(
            &world,
            "/api/users/@me/two_factor_validate/",
            &key,
            json!({"token": previous}),
        )
        .await;
        assert_eq!(code, StatusCode::OK, "{name}");
        if current != previous {
            let (code, body) = post(
                &world,
                "/api/users/@me/two_factor_disable/",
                &key,
                json!({"token": current}),
            )
            .await;
            assert_eq!(code, StatusCode::OK, "{name} {body}");
        } else {
            let (code, _) = post(
                &world,
                "/api/users/@me/two_factor_disable/",
                &key,
                json!({"current_password": "hunter22"}),
            )
            .await;
            assert_eq!(code, StatusCode::OK, "{name}");
        }

        let totp = start(&world, &key).await;
        let (code, _) = post(
            &world,
            "/api/users/@me/two_factor_validate/",
            &key,
            json!({"token": totp.generate(now())}),
        )
        .await;
        assert_eq!(code, StatusCode::OK, "{name}");
        let (code, body) = post(
            &world,
            "/api/users/@me/two_factor_disable/",
            &key,
            json!({"current_password": "wrong password"}),
        )
        .await;
        assert_eq!(
            (code, error_shape(&body).1.as_deref()),
            (StatusCode::BAD_REQUEST, Some("current_password")),
            "{name}"
        );
        let (code, _) = post(
            &world,
            "/api/users/@me/two_factor_disable/",
            &key,
            json!({"current_password": "hunter22"}),
        )
        .await;
        assert_eq!(code, StatusCode::OK, "{name}");
    }
}

#[tokio::test]
async fn failed_codes_are_throttled() {
    for world in World::all().await {
        let name = world.name();
        let key = world.member_key.clone();
        let totp = start(&world, &key).await;
        let wrong = wrong_code(&totp);
        for attempt in 0..6 {
            let (code, _) = post(
                &world,
                "/api/users/@me/two_factor_validate/",
                &key,
                json!({"token": wrong}),
            )
            .await;
            assert_eq!(code, StatusCode::BAD_REQUEST, "{name} attempt {attempt}");
        }
        // Even the right code waits now: brute force gets nowhere.
        let (code, body) = post(
            &world,
            "/api/users/@me/two_factor_validate/",
            &key,
            json!({"token": totp.generate(now())}),
        )
        .await;
        assert_eq!(code, StatusCode::TOO_MANY_REQUESTS, "{name}");
        assert_eq!(body["type"], "throttled_error", "{name}");
        assert_eq!(error_shape(&body).0, "throttled", "{name}");
        // Another user is not affected.
        let (code, _) = world
            .get(
                "/api/users/@me/two_factor_start_setup/",
                Some(world.admin_key()),
            )
            .await;
        assert_eq!(code, StatusCode::OK, "{name}");
    }
}

#[tokio::test]
async fn two_factor_routes_guard_other_users_and_scopes() {
    for world in World::all().await {
        let name = world.name();
        let admin = world.bootstrap.user.uuid;
        let (code, _) = world
            .get(
                &format!("/api/users/{admin}/two_factor_status/"),
                Some(&world.member_key),
            )
            .await;
        assert_eq!(code, StatusCode::FORBIDDEN, "{name}");
        let read_only = world.key(&["user:read"], None).await;
        let (code, body) = world
            .get("/api/users/@me/two_factor_start_setup/", Some(&read_only))
            .await;
        assert_eq!(code, StatusCode::FORBIDDEN, "{name}");
        assert_eq!(
            body["detail"], "API key missing required scope 'user:write'",
            "{name}"
        );
        let (code, _) = world
            .get("/api/users/@me/two_factor_status/", Some(&read_only))
            .await;
        assert_eq!(code, StatusCode::OK, "{name}");
        let (code, _) = world.get("/api/users/@me/two_factor_status/", None).await;
        assert_eq!(code, StatusCode::UNAUTHORIZED, "{name}");
    }
}
