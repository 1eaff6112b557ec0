//! The console's login on both backends: the session and CSRF cookies, reads and writes with
//! them, CSRF refusals, logout, throttling per account and per address, and the second factor
//! (TOTP and backup codes) when 2FA is on. Personal API keys keep working beside it.

use std::collections::HashMap;
use std::net::IpAddr;

use api_tests::{World, error_shape, respond};
use axum::body::Body;
use axum::http::{Method, Request, StatusCode};
use common::client::ClientAddress;
use serde_json::{Value, json};
use totp_rs::TOTP;

const EMAIL: &str = "member@example.com";
const PASSWORD: &str = "hunter22";

/// A browser of one address: it keeps the cookies it is given and sends them back.
struct Browser<'a> {
    world: &'a World,
    address: IpAddr,
    https: bool,
    cookies: HashMap<String, String>,
    /// The `Set-Cookie` headers of the last response.
    set_cookies: Vec<String>,
}

impl<'a> Browser<'a> {
    fn new(world: &'a World, address: &str) -> Self {
        Self {
            world,
            address: address.parse().unwrap(),
            https: false,
            cookies: HashMap::new(),
            set_cookies: Vec::new(),
        }
    }

    fn csrf(&self) -> Option<String> {
        self.cookies.get("posthog_csrftoken").cloned()
    }

    /// Sends a request with the cookies held; `csrf` is the `X-CSRFToken` header to send.
    async fn send(
        &mut self,
        method: Method,
        uri: &str,
        body: Option<Value>,
        csrf: Option<&str>,
    ) -> (StatusCode, Value) {
        let mut request = Request::builder()
            .method(method)
            .uri(uri)
            .header("host", "testserver");
        if self.https {
            request = request.header("x-forwarded-proto", "https");
        }
        if !self.cookies.is_empty() {
            let header: Vec<String> = self
                .cookies
                .iter()
                .map(|(name, value)| format!("{name}={value}"))
                .collect();
            request = request.header("cookie", header.join("; "));
        }
        if let Some(token) = csrf {
            request = request.header("x-csrftoken", token);
        }
        let body = match body {
            Some(json) => {
                request = request.header("content-type", "application/json");
                Body::from(json.to_string())
            }
            None => Body::empty(),
        };
        let mut request = request.body(body).unwrap();
        request
            .extensions_mut()
            .insert(ClientAddress(Some(self.address)));
        let response = tower::ServiceExt::oneshot(self.world.app.clone(), request)
            .await
            .unwrap();
        self.set_cookies = response
            .headers()
            .get_all("set-cookie")
            .iter()
            .map(|value| value.to_str().unwrap().to_owned())
            .collect();
        for set in &self.set_cookies {
            let (pair, _) = set.split_once(';').unwrap_or((set, ""));
            let (name, value) = pair.split_once('=').unwrap();
            if value.is_empty() {
                self.cookies.remove(name);
            } else {
                self.cookies.insert(name.to_owned(), value.to_owned());
            }
        }
        let status = response.status();
        let bytes = http_body_util::BodyExt::collect(response.into_body())
            .await
            .unwrap()
            .to_bytes();
        let value = if bytes.is_empty() {
            Value::Null
        } else {
            serde_json::from_slice(&bytes).unwrap()
        };
        (status, value)
    }

    async fn login(&mut self, email: &str, password: &str) -> (StatusCode, Value) {
        self.send(
            Method::POST,
            "/api/login/",
            Some(json!({"email": email, "password": password})),
            None,
        )
        .await
    }

    async fn me(&mut self) -> (StatusCode, Value) {
        self.send(Method::GET, "/api/users/@me/", None, None).await
    }

    fn set_cookie(&self, name: &str) -> &str {
        self.set_cookies
            .iter()
            .find(|set| set.starts_with(&format!("{name}=")))
            .unwrap_or_else(|| panic!("no {name} cookie in {:?}", self.set_cookies))
    }
}

fn assert_error(body: &Value, status: StatusCode, expected: StatusCode, code: &str) {
    assert_eq!(status, expected, "{body}");
    assert_eq!(error_shape(body).0, code, "{body}");
}

#[tokio::test]
async fn a_login_reads_and_writes_with_its_cookies_and_csrf_token() {
    for world in World::all().await {
        let name = world.name();
        let mut browser = Browser::new(&world, "198.51.100.1");

        let (status, body) = browser.me().await;
        assert_error(&body, status, StatusCode::UNAUTHORIZED, "not_authenticated");
        let (status, body) = browser.login(EMAIL, "wrong").await;
        assert_error(
            &body,
            status,
            StatusCode::BAD_REQUEST,
            "invalid_credentials",
        );
        assert_eq!(body["detail"], "Invalid email or password.", "{name}");
        // An unknown e-mail gets the same answer.
        let (status, body) = browser.login("nobody@example.com", PASSWORD).await;
        assert_error(
            &body,
            status,
            StatusCode::BAD_REQUEST,
            "invalid_credentials",
        );
        let (status, body) = browser
            .send(
                Method::POST,
                "/api/login/",
                Some(json!({"email": EMAIL})),
                None,
            )
            .await;
        assert_error(&body, status, StatusCode::BAD_REQUEST, "required");
        assert_eq!(body["attr"], "password", "{name}");

        let (status, body) = browser.login(EMAIL, PASSWORD).await;
        assert_eq!(
            (status, &body),
            (StatusCode::OK, &json!({"success": true})),
            "{name}"
        );
        let session = browser.set_cookie("sessionid").to_owned();
        assert!(session.contains("HttpOnly"), "{session}");
        assert!(session.contains("SameSite=Lax"), "{session}");
        assert!(!session.contains("Secure"), "plain HTTP: {session}");
        let csrf_cookie = browser.set_cookie("posthog_csrftoken").to_owned();
        assert!(
            !csrf_cookie.contains("HttpOnly"),
            "the app reads it: {csrf_cookie}"
        );

        let (status, me) = browser.me().await;
        assert_eq!(status, StatusCode::OK, "{name} {me}");
        assert_eq!(me["email"], EMAIL, "{name}");

        // Writes carry the CSRF token.
        let change = Some(json!({"first_name": "Changed"}));
        let (status, body) = browser
            .send(Method::PATCH, "/api/users/@me/", change.clone(), None)
            .await;
        assert_error(&body, status, StatusCode::FORBIDDEN, "permission_denied");
        assert_eq!(body["detail"], "CSRF Failed: CSRF token missing.", "{name}");
        let (status, body) = browser
            .send(
                Method::PATCH,
                "/api/users/@me/",
                change.clone(),
                Some("forged"),
            )
            .await;
        assert_error(&body, status, StatusCode::FORBIDDEN, "permission_denied");
        assert_eq!(
            body["detail"], "CSRF Failed: CSRF token incorrect.",
            "{name}"
        );
        let token = browser.csrf().unwrap();
        let (status, body) = browser
            .send(Method::PATCH, "/api/users/@me/", change, Some(&token))
            .await;
        assert_eq!(status, StatusCode::OK, "{name} {body}");
        assert_eq!(body["first_name"], "Changed", "{name}");

        // A project route, as the console reads it.
        let projects = format!("/api/projects/{}/", world.bootstrap.project.id);
        let (status, body) = browser.send(Method::GET, &projects, None, None).await;
        assert_eq!(status, StatusCode::OK, "{name} {body}");

        // A key keeps working with no cookie.
        let (status, _) = world.get("/api/users/@me/", Some(&world.member_key)).await;
        assert_eq!(status, StatusCode::OK, "{name}");

        // Logout is a write too; afterwards the old cookie opens nothing.
        let old_cookie = browser.cookies.clone();
        let (status, body) = browser.send(Method::POST, "/api/logout/", None, None).await;
        assert_error(&body, status, StatusCode::FORBIDDEN, "permission_denied");
        let (status, body) = browser
            .send(Method::POST, "/api/logout/", None, Some(&token))
            .await;
        assert_eq!(
            (status, &body),
            (StatusCode::OK, &json!({"success": true})),
            "{name}"
        );
        assert!(
            browser.set_cookie("sessionid").contains("Max-Age=0"),
            "{name}"
        );
        assert!(browser.cookies.is_empty(), "{name} {:?}", browser.cookies);
        browser.cookies = old_cookie;
        let (status, body) = browser.me().await;
        assert_error(&body, status, StatusCode::UNAUTHORIZED, "not_authenticated");

        // Over HTTPS (API Gateway says so), the cookies are `Secure`.
        let mut secure = Browser::new(&world, "198.51.100.2");
        secure.https = true;
        let (status, _) = secure.login(EMAIL, PASSWORD).await;
        assert_eq!(status, StatusCode::OK, "{name}");
        assert!(secure.set_cookie("sessionid").contains("Secure"), "{name}");
        assert!(
            secure.set_cookie("posthog_csrftoken").contains("Secure"),
            "{name}"
        );
    }
}

#[tokio::test]
async fn failed_logins_lock_out_the_account_and_the_address() {
    for world in World::all().await {
        let name = world.name();
        // Ten failures for one account, from different addresses...
        for attempt in 0..10 {
            let mut browser = Browser::new(&world, &format!("203.0.113.{attempt}"));
            let (status, body) = browser.login(EMAIL, "wrong").await;
            assert_error(
                &body,
                status,
                StatusCode::BAD_REQUEST,
                "invalid_credentials",
            );
        }
        // ...lock it, even with the right password, from anywhere.
        let mut browser = Browser::new(&world, "203.0.113.200");
        let (status, body) = browser.login(EMAIL, PASSWORD).await;
        assert_error(
            &body,
            status,
            StatusCode::FORBIDDEN,
            "too_many_failed_attempts",
        );
        assert!(
            body["detail"]
                .as_str()
                .unwrap()
                .starts_with("Too many failed login attempts. Please try again in"),
            "{name} {body}"
        );
        // Another account is not locked.
        let admin = world.bootstrap.user.email.clone();
        let (status, body) = browser.login(&admin, "wrong").await;
        assert_error(
            &body,
            status,
            StatusCode::BAD_REQUEST,
            "invalid_credentials",
        );

        // Thirty failures from one address, over many accounts, lock that address only.
        let mut guesser = Browser::new(&world, "192.0.2.9");
        for attempt in 0..30 {
            let (status, body) = guesser
                .login(&format!("guess{attempt}@example.com"), "wrong")
                .await;
            assert_error(
                &body,
                status,
                StatusCode::BAD_REQUEST,
                "invalid_credentials",
            );
        }
        let (status, body) = guesser.login("guess@example.com", "wrong").await;
        assert_error(
            &body,
            status,
            StatusCode::FORBIDDEN,
            "too_many_failed_attempts",
        );
    }
}

/// Enables 2FA for the member with their key; returns the authenticator and the backup codes.
async fn enable_two_factor(world: &World) -> (TOTP, Vec<String>) {
    let key = world.member_key.clone();
    let (status, body) = world
        .get("/api/users/@me/two_factor_start_setup/", Some(&key))
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let totp = TOTP::from_url(body["otpauth_uri"].as_str().unwrap()).unwrap();
    let now = unix_now();
    let (status, body) = world
        .send(
            Method::POST,
            "/api/users/@me/two_factor_validate/",
            Some(&key),
            Some(&json!({"token": totp.generate(now)}).to_string()),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let codes = body["backup_codes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|code| code.as_str().unwrap().to_owned())
        .collect();
    (totp, codes)
}

fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

#[tokio::test]
async fn with_two_factor_on_a_login_waits_for_a_code() {
    for world in World::all().await {
        let name = world.name();
        // Logged in before 2FA was turned on: that login ends when it is.
        let mut before = Browser::new(&world, "198.51.100.20");
        assert_eq!(
            before.login(EMAIL, PASSWORD).await.0,
            StatusCode::OK,
            "{name}"
        );
        let (totp, backup_codes) = enable_two_factor(&world).await;
        let (status, _) = before.me().await;
        assert_eq!(status, StatusCode::UNAUTHORIZED, "{name}");

        let mut browser = Browser::new(&world, "198.51.100.21");
        // No password accepted yet: nothing to complete.
        let (status, body) = browser
            .send(
                Method::POST,
                "/api/login/token/",
                Some(json!({"token": "123456"})),
                None,
            )
            .await;
        assert_error(&body, status, StatusCode::BAD_REQUEST, "2fa_expired");

        let (status, body) = browser.login(EMAIL, PASSWORD).await;
        assert_error(&body, status, StatusCode::UNAUTHORIZED, "2fa_required");
        assert_eq!(body["detail"], "2FA is required.", "{name}");
        // The password alone opens nothing.
        let (status, _) = browser.me().await;
        assert_eq!(status, StatusCode::UNAUTHORIZED, "{name}");

        let (status, body) = browser
            .send(
                Method::POST,
                "/api/login/token/",
                Some(json!({"token": "000000x"})),
                None,
            )
            .await;
        assert_error(&body, status, StatusCode::BAD_REQUEST, "2fa_invalid");
        // The next step's code (the setup used this step's; a code is never accepted twice).
        let code = totp.generate(unix_now() + 30);
        let (status, body) = browser
            .send(
                Method::POST,
                "/api/login/token/",
                Some(json!({"token": code})),
                None,
            )
            .await;
        assert_eq!(
            (status, &body),
            (StatusCode::OK, &json!({"success": true})),
            "{name}"
        );
        let (status, me) = browser.me().await;
        assert_eq!(status, StatusCode::OK, "{name} {me}");

        // A backup code works once.
        let mut other = Browser::new(&world, "198.51.100.22");
        let (status, _) = other.login(EMAIL, PASSWORD).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED, "{name}");
        let backup = Some(json!({"token": backup_codes[0]}));
        let (status, body) = other
            .send(Method::POST, "/api/login/token/", backup.clone(), None)
            .await;
        assert_eq!(status, StatusCode::OK, "{name} {body}");
        assert_eq!(other.me().await.0, StatusCode::OK, "{name}");
        let mut again = Browser::new(&world, "198.51.100.23");
        again.login(EMAIL, PASSWORD).await;
        let (status, body) = again
            .send(Method::POST, "/api/login/token/", backup, None)
            .await;
        assert_error(&body, status, StatusCode::BAD_REQUEST, "2fa_invalid");
    }
}

#[tokio::test]
async fn a_login_body_that_is_not_json_is_a_400() {
    for world in World::all().await {
        let request = Request::post("/api/login/")
            .header("content-type", "application/json")
            .body(Body::from("{not json"))
            .unwrap();
        let (status, body) = respond(world.app.clone(), request).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{} {body}", world.name());
        error_shape(&body);
    }
}
