//! The console's login, as PostHog's: `POST /api/login/` with the e-mail and password, then,
//! when 2FA is on, `POST /api/login/token/` with a TOTP or backup code; `POST /api/logout/`.
//! A login is a session cookie (`HttpOnly`, `SameSite=Lax`, `Secure` over HTTPS) and a CSRF
//! cookie the console echoes on writes; a personal API key never reaches the browser.

use axum::extract::{FromRequestParts, State};
use axum::http::request::Parts;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{AppendHeaders, IntoResponse, Response};
use common::auth::{CSRF_COOKIE, SESSION_COOKIE, request_cookie};
use common::client::{ClientAddress, over_https};
use common::error::{ApiError, ApiResult, ErrorType};
use common::http::Json;
use common::models::{Session, Stage, User, check_against_no_user};
use common::throttle::Throttle;
use common::{AppState, Authenticated};
use serde::Deserialize;
use serde_json::json;
use sha2::{Digest, Sha256};

use crate::two_factor::{self, second_factor_proven};

/// Failed logins per account (PostHog's django-axes locks out after failures for ten minutes).
const ACCOUNT_FAILURES: Throttle = Throttle::new("login-account", 10, 10 * 60);
/// Failed logins per client address: a guesser working through many accounts.
const ADDRESS_FAILURES: Throttle = Throttle::new("login-address", 30, 10 * 60);

/// What the request says about its client and its cookies, for the login routes.
pub struct Client {
    address: ClientAddress,
    https: bool,
    /// The secret of the session cookie the request carries, if any.
    session_secret: Option<String>,
}

impl<S: Send + Sync> FromRequestParts<S> for Client {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        Ok(Client {
            address: ClientAddress::from_request_parts(parts, state).await?,
            https: over_https(parts),
            session_secret: request_cookie(parts, SESSION_COOKIE),
        })
    }
}

#[derive(Debug, Deserialize)]
pub struct LoginBody {
    email: Option<String>,
    password: Option<String>,
}

#[derive(Debug, Deserialize)]
pub struct TokenBody {
    token: Option<String>,
}

/// The cookies that carry `session` to the browser (or, for `None`, that remove them).
fn session_cookies(
    session: Option<(&Session, &str)>,
    https: bool,
) -> [(header::HeaderName, HeaderValue); 2] {
    let build = |name: &'static str, value: String, http_only: bool| {
        let max_age = session.map_or(0, |(session, _)| {
            (session.expires_at - session.created_at).num_seconds()
        });
        let cookie = cookie::Cookie::build((name, value))
            .path("/")
            .http_only(http_only)
            .secure(https)
            .same_site(cookie::SameSite::Lax)
            .max_age(cookie::time::Duration::seconds(max_age))
            .build();
        // A cookie's text is a valid header value: its parts were checked as they were built.
        let value = HeaderValue::from_str(&cookie.to_string())
            .unwrap_or_else(|_| HeaderValue::from_static(""));
        (header::SET_COOKIE, value)
    };
    let (secret, csrf) = session.map_or((String::new(), String::new()), |(session, secret)| {
        (secret.to_owned(), session.csrf_token.clone())
    });
    [
        build(SESSION_COOKIE, secret, true),
        // The console reads this one to echo it in `X-CSRFToken`, so it is not `HttpOnly`.
        build(CSRF_COOKIE, csrf, false),
    ]
}

/// The session a request's cookie names, whatever its stage (a new login replaces it).
async fn presented(state: &AppState, client: &Client) -> ApiResult<Option<Session>> {
    Ok(match &client.session_secret {
        Some(secret) => Session::find(state.store.as_ref(), secret).await?,
        None => None,
    })
}

/// Starts a session at `stage` for `user`, ending the one it `replaces`, and answers with its
/// cookies.
async fn start_session(
    state: &AppState,
    client: &Client,
    replaces: Option<Session>,
    user: &User,
    stage: Stage,
    status: StatusCode,
    body: serde_json::Value,
) -> ApiResult<Response> {
    if let Some(previous) = replaces {
        previous.end(state.store.as_ref()).await?;
    }
    let (session, secret) = Session::start(user.uuid, stage, state.clock.now());
    session.save(state.store.as_ref()).await?;
    let cookies = session_cookies(Some((&session, &secret)), client.https);
    Ok((status, AppendHeaders(cookies), axum::Json(body)).into_response())
}

/// A body field that must be there and not blank, else PostHog's `required` 400 naming it.
fn filled(value: Option<String>, attr: &str) -> ApiResult<String> {
    value
        .filter(|text| !text.trim().is_empty())
        .ok_or_else(|| ApiError::required(attr))
}

fn locked_out(error: ApiError) -> ApiError {
    let minutes = error.retry_after.map_or(10, |seconds| seconds.div_ceil(60));
    let mut locked = ApiError::new(
        StatusCode::FORBIDDEN,
        ErrorType::AuthenticationError,
        "too_many_failed_attempts",
        format!("Too many failed login attempts. Please try again in {minutes} minutes."),
    );
    locked.retry_after = error.retry_after;
    locked
}

/// An account's throttle key: a hash of the e-mail as typed, lower-cased, so the store holds
/// no address.
fn account_key(email: &str) -> String {
    hex::encode(Sha256::digest(email.trim().to_lowercase().as_bytes()))
}

/// `POST /api/login/`: `{"email", "password"}` → `{"success": true}` and a session; with 2FA on,
/// 401 `2fa_required` and a session that waits for the code.
pub async fn login(
    State(state): State<AppState>,
    client: Client,
    Json(body): Json<LoginBody>,
) -> ApiResult<Response> {
    let email = filled(body.email, "email")?;
    let password = body
        .password
        .filter(|password| !password.is_empty())
        .ok_or_else(|| ApiError::required("password"))?;
    let store = state.store.as_ref();
    let (account, address) = (account_key(&email), client.address.key());
    ACCOUNT_FAILURES
        .check(store, &account)
        .await
        .map_err(locked_out)?;
    ADDRESS_FAILURES
        .check(store, &address)
        .await
        .map_err(locked_out)?;
    let user = User::by_email(store, email.trim()).await?;
    let matches = match &user {
        Some(user) => user.is_active && user.password_matches(&password).await?,
        None => {
            check_against_no_user(&password).await?;
            false
        }
    };
    let Some(user) = user.filter(|_| matches) else {
        ACCOUNT_FAILURES.record(store, &account).await?;
        ADDRESS_FAILURES.record(store, &address).await?;
        return Err(ApiError::bad_request(
            "invalid_credentials",
            "Invalid email or password.",
        ));
    };
    let replaces = presented(&state, &client).await?;
    if two_factor::device(store, &user).await?.is_some() {
        // PostHog's TwoFactorRequired: a 401 whose code the app looks for.
        let required = ApiError::new(
            StatusCode::UNAUTHORIZED,
            ErrorType::ServerError,
            "2fa_required",
            "2FA is required.",
        );
        let body = serde_json::to_value(&required.body).map_err(ApiError::internal)?;
        return start_session(
            &state,
            &client,
            replaces,
            &user,
            Stage::SecondFactor,
            StatusCode::UNAUTHORIZED,
            body,
        )
        .await;
    }
    start_session(
        &state,
        &client,
        replaces,
        &user,
        Stage::LoggedIn,
        StatusCode::OK,
        json!({ "success": true }),
    )
    .await
}

fn login_expired() -> ApiError {
    ApiError::bad_request(
        "2fa_expired",
        "Login attempt has expired. Re-enter username/password.",
    )
}

/// `POST /api/login/token/`: `{"token"}`, a TOTP or backup code, completes a login that
/// `POST /api/login/` left waiting for it.
pub async fn second_factor(
    State(state): State<AppState>,
    client: Client,
    Json(body): Json<TokenBody>,
) -> ApiResult<Response> {
    let token = filled(body.token, "token")?;
    let store = state.store.as_ref();
    let pending = presented(&state, &client)
        .await?
        .filter(|session| session.stage == Stage::SecondFactor)
        .ok_or_else(login_expired)?;
    let user = User::load(store, pending.user_uuid)
        .await?
        .filter(|user| user.is_active)
        .ok_or_else(login_expired)?;
    let key = user.uuid.to_string();
    if two_factor::FAILURES.check(store, &key).await.is_err() {
        return Err(ApiError::bad_request(
            "2fa_too_many_attempts",
            "Too many attempts.",
        ));
    }
    if !second_factor_proven(&state, &user, &token).await? {
        two_factor::FAILURES.record(store, &key).await?;
        return Err(ApiError::bad_request(
            "2fa_invalid",
            "Invalid authentication code",
        ));
    }
    start_session(
        &state,
        &client,
        Some(pending),
        &user,
        Stage::LoggedIn,
        StatusCode::OK,
        json!({ "success": true }),
    )
    .await
}

/// `POST /api/logout/`: ends the session (a write, so it carries the CSRF token) and removes
/// its cookies.
pub async fn logout(
    State(state): State<AppState>,
    auth: Authenticated,
    client: Client,
) -> ApiResult<Response> {
    if let Some(session) = &auth.session {
        session.end(state.store.as_ref()).await?;
    }
    let cookies = session_cookies(None, client.https);
    Ok((
        AppendHeaders(cookies),
        axum::Json(json!({ "success": true })),
    )
        .into_response())
}
