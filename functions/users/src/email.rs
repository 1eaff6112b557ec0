//! E-mail verification and e-mail change: 6-digit codes, stored as keyed hashes, single use,
//! expiring, with throttles; unknown users get the same answers as known ones.

use axum::extract::State;
use chrono::{DateTime, Utc};
use common::error::{ApiError, ApiResult};
use common::http::Json;
use common::mailer::Mail;
use common::models::{Scope, User};
use common::store::{self, Condition, Item, StoreError};
use common::throttle::Throttle;
use common::{AppState, Authenticated};
use rand::Rng;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use uuid::Uuid;

use crate::two_factor;

const USER_WRITE: Scope = Scope::write("user");
const CODE_SECONDS: i64 = 60 * 60;
/// Wrong guesses one code survives before it is withdrawn.
const CODE_ATTEMPTS: u32 = 5;
const CODE_PURPOSE: &str = "email-code";
/// PostHog's UserEmailVerificationThrottle: 6 a day.
const REQUESTS: Throttle = Throttle::new("email-verification-request", 6, 24 * 60 * 60);
/// PostHog's UserVerifyEmailThrottle: 6 per 20 minutes, keyed by a hash of the uuid.
const VERIFICATIONS: Throttle = Throttle::new("email-verify", 6, 20 * 60);

/// The one live code of a user, for the address it verifies.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct EmailCode {
    mac: String,
    email: String,
    attempts: u32,
    created_at: DateTime<Utc>,
}

fn throttle_key(uuid: &str) -> String {
    hex::encode(Sha256::digest(uuid.as_bytes()))
}

/// Issues a new code for `email` (replacing any earlier one) and mails it there.
pub async fn send_code(state: &AppState, user: &User, email: &str) -> ApiResult<()> {
    let code = format!("{:06}", rand::thread_rng().gen_range(0..1_000_000));
    let now = state.clock.now();
    let stored = EmailCode {
        mac: state
            .secrets
            .mac(CODE_PURPOSE, &format!("{}:{code}", user.uuid)),
        email: email.to_owned(),
        attempts: 0,
        created_at: now,
    };
    let item = Item::of(User::pk(user.uuid), "EMAILCODE", &stored)?
        .with_expiry(now.timestamp() + CODE_SECONDS);
    state.store.put(item, Condition::None).await?;
    let mail = Mail {
        to: email.to_owned(),
        subject: format!("Your verification code: {code}"),
        text: format!(
            "Enter this code to verify {email}:\n\n    {code}\n\n\
             It expires in {} minutes and works once. If you did not ask for it, ignore this message.",
            CODE_SECONDS / 60
        ),
    };
    state.mailer.send(mail).await.map_err(|error| {
        tracing::error!(%error, "mail delivery failed");
        ApiError::bad_request("email_not_available", "Email could not be sent.")
    })
}

#[derive(Debug, Deserialize)]
pub struct RequestBody {
    uuid: Option<String>,
}

/// `POST /api/users/request_email_verification/` (no authentication, like PostHog).
pub async fn request_verification(
    State(state): State<AppState>,
    Json(body): Json<RequestBody>,
) -> ApiResult<axum::Json<Value>> {
    let Some(raw_uuid) = body.uuid else {
        return Err(ApiError::required("uuid"));
    };
    let store = state.store.as_ref();
    // Counted before the look-up, so probing costs the same budget as real use.
    REQUESTS.hit(store, &throttle_key(&raw_uuid)).await?;
    let user = match Uuid::parse_str(&raw_uuid) {
        Ok(uuid) => User::load(store, uuid).await?,
        Err(_) => None,
    };
    let Some(user) = user.filter(|user| user.is_active) else {
        return Ok(axum::Json(json!({ "success": true })));
    };
    let target = match &user.pending_email {
        Some(pending) => pending.clone(),
        None if user.is_email_verified => {
            return Err(ApiError::bad_request(
                "already_verified",
                "Email is already verified.",
            ));
        }
        None => user.email.clone(),
    };
    send_code(&state, &user, &target).await?;
    Ok(axum::Json(json!({ "success": true })))
}

#[derive(Debug, Deserialize)]
pub struct VerifyBody {
    uuid: Option<String>,
    code: Option<String>,
}

fn invalid_code() -> ApiError {
    ApiError::field(
        "code",
        "invalid_code",
        "This code is invalid or has expired.",
    )
}

/// `POST /api/users/verify_email/` with `{"uuid", "code"}` (no authentication).
pub async fn verify(
    State(state): State<AppState>,
    Json(body): Json<VerifyBody>,
) -> ApiResult<axum::Json<Value>> {
    let Some(raw_uuid) = body.uuid else {
        return Err(ApiError::required("uuid"));
    };
    let Some(code) = body.code else {
        return Err(ApiError::required("code"));
    };
    let code: String = code
        .chars()
        .filter(|c| !c.is_whitespace() && *c != '-')
        .collect();
    if code.len() != 6 || !code.bytes().all(|b| b.is_ascii_digit()) {
        return Err(ApiError::field(
            "code",
            "invalid_input",
            "Enter the 6-digit code from your email.",
        ));
    }
    let store = state.store.as_ref();
    VERIFICATIONS.hit(store, &throttle_key(&raw_uuid)).await?;
    let Ok(uuid) = Uuid::parse_str(&raw_uuid) else {
        return Err(invalid_code());
    };
    two_factor::FAILURES.check(store, &uuid.to_string()).await?;
    let Some(user) = User::load(store, uuid).await?.filter(|user| user.is_active) else {
        return Err(invalid_code());
    };

    // Every wrong guess is counted on the code itself, whichever instance answers.
    let presented = format!("{uuid}:{code}");
    let checked = store::update(
        store,
        &User::pk(uuid),
        "EMAILCODE",
        |mut stored: EmailCode| {
            if !state
                .secrets
                .verify_mac(CODE_PURPOSE, &presented, &stored.mac)
            {
                stored.attempts += 1;
            }
            Ok(stored)
        },
    )
    .await;
    let stored = match checked {
        Ok(stored) => stored,
        Err(StoreError::ConditionFailed) => return Err(invalid_code()),
        Err(other) => return Err(other.into()),
    };
    if !state
        .secrets
        .verify_mac(CODE_PURPOSE, &presented, &stored.mac)
    {
        two_factor::FAILURES
            .record(store, &uuid.to_string())
            .await?;
        if stored.attempts >= CODE_ATTEMPTS {
            store
                .delete(&User::pk(uuid), "EMAILCODE", Condition::None)
                .await?;
            return Err(ApiError::field(
                "code",
                "too_many_attempts",
                "Too many attempts. Request a new code.",
            ));
        }
        return Err(invalid_code());
    }
    // Single use: only the request that deletes this exact code goes on.
    match store
        .delete(&User::pk(uuid), "EMAILCODE", Condition::Exists)
        .await
    {
        Ok(()) => {}
        Err(StoreError::ConditionFailed) => return Err(invalid_code()),
        Err(other) => return Err(other.into()),
    }

    if user.pending_email.as_deref() == Some(stored.email.as_str()) {
        let old_email = user.email.clone();
        let changed = User::change_email(store, uuid, &stored.email, |user| {
            user.pending_email = None;
            user.is_email_verified = true;
        })
        .await?;
        let Some(changed) = changed else {
            return Err(ApiError::field(
                "email",
                "email_taken",
                "This email is already in use.",
            ));
        };
        for (to, text) in [
            (
                old_email.as_str(),
                format!(
                    "The e-mail address of your account was changed to {}.",
                    changed.email
                ),
            ),
            (
                changed.email.as_str(),
                "This is now the e-mail address of your account.".to_owned(),
            ),
        ] {
            let mail = Mail {
                to: to.to_owned(),
                subject: "Your e-mail address was changed".into(),
                text,
            };
            if let Err(error) = state.mailer.send(mail).await {
                tracing::warn!(%error, "could not send an e-mail change notice");
            }
        }
    } else if stored.email.eq_ignore_ascii_case(&user.email) {
        User::update(store, uuid, |user| {
            user.is_email_verified = true;
            Ok(())
        })
        .await?;
    } else {
        // A code for an address that is no longer pending (the change was cancelled or replaced).
        return Err(invalid_code());
    }
    if two_factor::device(store, &user).await?.is_some() {
        return Ok(axum::Json(json!({ "success": true, "requires_2fa": true })));
    }
    Ok(axum::Json(json!({ "success": true })))
}

/// `PATCH /api/users/cancel_email_change_request/`
pub async fn cancel_change(
    State(state): State<AppState>,
    auth: Authenticated,
) -> ApiResult<axum::Json<Value>> {
    auth.require(USER_WRITE)?;
    let store = state.store.as_ref();
    if auth.user.pending_email.is_none() {
        return Err(ApiError::bad_request(
            "email_change_request_not_found",
            "No active email change requests found.",
        ));
    }
    let updated = User::update(store, auth.user.uuid, |user| {
        user.pending_email = None;
        Ok(())
    })
    .await?;
    store
        .delete(&User::pk(auth.user.uuid), "EMAILCODE", Condition::None)
        .await?;
    Ok(axum::Json(crate::users::render(&state, &updated).await?))
}
