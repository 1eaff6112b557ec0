//! TOTP two-factor authentication (RFC 6238) with single-use backup codes.
//! Seeds are sealed with the configured key; backup codes are stored as keyed hashes.

use axum::extract::{Path, State};
use chrono::{DateTime, Utc};
use common::error::{ApiError, ApiResult};
use common::http::Json;
use common::mailer::Mail;
use common::models::{Scope, Session, User};
use common::store::{self, Condition, Item, Store, StoreError, WriteOp};
use common::throttle::Throttle;
use common::{AppState, Authenticated};
use rand::Rng;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use totp_rs::{Algorithm, TOTP};

use crate::users::target_user;

const USER_READ: Scope = Scope::read("user");
const USER_WRITE: Scope = Scope::write("user");

/// A pending setup lasts as long as PostHog's session cache entry.
const SETUP_SECONDS: i64 = 600;
const STEP_SECONDS: u64 = 30;
const SEED_BYTES: usize = 20;
pub const BACKUP_CODES: usize = 10;
const BACKUP_CODE_CHARS: usize = 8;
const BACKUP_ALPHABET: &[u8] = b"abcdefghijklmnopqrstuvwxyz234567";
/// Failed codes per user (TOTP, backup or e-mail): PostHog's TwoFactorThrottle, 6 per 20 minutes.
pub const FAILURES: Throttle = Throttle::new("2fa-failures", 6, 20 * 60);
const ISSUER: &str = "Analytics";

/// An enabled authenticator.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TotpDevice {
    seed_sealed: String,
    confirmed_at: DateTime<Utc>,
    /// The newest time step already accepted: older or equal ones are replays.
    last_step: u64,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct PendingSetup {
    seed_sealed: String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct BackupCodes {
    /// Keyed hashes of the codes still unused.
    macs: Vec<String>,
    created_at: DateTime<Utc>,
}

fn pk(user: &User) -> String {
    User::pk(user.uuid)
}

fn backup_purpose(user: &User) -> String {
    format!("backup-code:{}", user.uuid)
}

fn totp(seed: Vec<u8>, account: &str) -> Result<TOTP, ApiError> {
    TOTP::new(
        Algorithm::SHA1,
        6,
        1,
        STEP_SECONDS,
        seed,
        Some(ISSUER.to_owned()),
        account.to_owned(),
    )
    .map_err(|e| ApiError::internal(format!("TOTP: {e:?}")))
}

/// The time step (±1 around now) whose code is `token`, compared in constant time.
fn matching_step(totp: &TOTP, token: &str, now: u64) -> Option<u64> {
    let current = now / STEP_SECONDS;
    [current.saturating_sub(1), current, current + 1]
        .into_iter()
        .find(|step| {
            let expected = totp.generate(step * STEP_SECONDS);
            expected.len() == token.len()
                && expected
                    .bytes()
                    .zip(token.bytes())
                    .fold(0u8, |acc, (a, b)| acc | (a ^ b))
                    == 0
        })
}

fn unix_now(state: &AppState) -> u64 {
    state.clock.now().timestamp().max(0) as u64
}

/// A code as typed: spaces and dashes dropped, lower case.
fn normalize(token: &str) -> String {
    token
        .chars()
        .filter(|c| !c.is_whitespace() && *c != '-')
        .collect::<String>()
        .to_ascii_lowercase()
}

fn is_totp_shape(token: &str) -> bool {
    token.len() == 6 && token.bytes().all(|b| b.is_ascii_digit())
}

pub async fn device(store: &dyn Store, user: &User) -> Result<Option<TotpDevice>, StoreError> {
    store
        .get(&pk(user), "TOTP")
        .await?
        .map(|item| item.parse())
        .transpose()
}

async fn backup_codes(store: &dyn Store, user: &User) -> Result<Option<BackupCodes>, StoreError> {
    store
        .get(&pk(user), "BACKUP")
        .await?
        .map(|item| item.parse())
        .transpose()
}

/// Ten fresh codes: their keyed hashes replace any earlier set; the codes are returned once.
async fn issue_backup_codes(state: &AppState, user: &User) -> ApiResult<Vec<String>> {
    let (store, secrets) = (state.store.as_ref(), &state.secrets);
    let codes: Vec<String> = {
        // ThreadRng must not live across an await.
        let mut rng = rand::thread_rng();
        (0..BACKUP_CODES)
            .map(|_| {
                (0..BACKUP_CODE_CHARS)
                    .map(|_| BACKUP_ALPHABET[rng.gen_range(0..BACKUP_ALPHABET.len())] as char)
                    .collect()
            })
            .collect()
    };
    let stored = BackupCodes {
        macs: codes
            .iter()
            .map(|code| secrets.mac(&backup_purpose(user), code))
            .collect(),
        created_at: state.clock.now(),
    };
    store
        .put(Item::of(pk(user), "BACKUP", &stored)?, Condition::None)
        .await?;
    Ok(codes)
}

/// Checks a TOTP code against the device and records its step, so it can never be used again.
async fn accept_totp(state: &AppState, user: &User, token: &str) -> ApiResult<bool> {
    let store = state.store.as_ref();
    let Some(current) = device(store, user).await? else {
        return Ok(false);
    };
    let seed = state
        .secrets
        .decrypt(&current.seed_sealed)
        .map_err(ApiError::internal)?;
    let Some(step) = matching_step(&totp(seed, &user.email)?, token, unix_now(state)) else {
        return Ok(false);
    };
    let result = store::update(store, &pk(user), "TOTP", |mut device: TotpDevice| {
        if step <= device.last_step {
            return Err(StoreError::ConditionFailed);
        }
        device.last_step = step;
        Ok(device)
    })
    .await;
    // Refused: a replay, or a concurrent request that used the same code first.
    accepted(result)
}

/// Whether a code-consuming update went through; a failed condition means the code was refused.
fn accepted<T>(result: Result<T, StoreError>) -> ApiResult<bool> {
    match result {
        Ok(_) => Ok(true),
        Err(StoreError::ConditionFailed) => Ok(false),
        Err(other) => Err(other.into()),
    }
}

/// Whether `token` (as typed) is the user's current TOTP code or one of their unused backup
/// codes; either is then used up.
pub async fn second_factor_proven(state: &AppState, user: &User, token: &str) -> ApiResult<bool> {
    let token = normalize(token);
    if is_totp_shape(&token) {
        accept_totp(state, user, &token).await
    } else {
        consume_backup_code(state, user, &token).await
    }
}

/// Consumes a backup code if it is one of the user's unused codes.
pub async fn consume_backup_code(state: &AppState, user: &User, code: &str) -> ApiResult<bool> {
    let store = state.store.as_ref();
    let purpose = backup_purpose(user);
    let result = store::update(store, &pk(user), "BACKUP", |mut codes: BackupCodes| {
        let position = codes
            .macs
            .iter()
            .position(|mac| state.secrets.verify_mac(&purpose, code, mac))
            .ok_or(StoreError::ConditionFailed)?;
        codes.macs.remove(position);
        Ok(codes)
    })
    .await;
    accepted(result)
}

/// Tells the user 2FA was `change`d (enabled, disabled); a failed delivery does not undo it.
async fn notify(state: &AppState, user: &User, change: &str) {
    let mail = Mail {
        to: user.email.clone(),
        subject: format!("Two-factor authentication {change}"),
        text: format!(
            "Two-factor authentication was {change} on your account. If this was not you, \
             reset your password and contact your administrator."
        ),
    };
    if let Err(error) = state.mailer.send(mail).await {
        tracing::warn!(%error, user = %user.uuid, "could not send a security notice");
    }
}

fn token_invalid() -> ApiError {
    ApiError::bad_request("token_invalid", "Token is not valid").with_attr("token")
}

/// `GET /api/users/:uuid/two_factor_start_setup` (and the deprecated `start_2fa_setup`).
pub async fn start_setup(
    State(state): State<AppState>,
    auth: Authenticated,
    Path(uuid): Path<String>,
) -> ApiResult<axum::Json<Value>> {
    let user = target_user(&state, &auth, &uuid, USER_WRITE).await?;
    let mut seed = vec![0u8; SEED_BYTES];
    rand::thread_rng().fill(&mut seed[..]);
    let sealed = state.secrets.encrypt(&seed);
    let totp = totp(seed, &user.email)?;
    let pending = Item::of(
        pk(&user),
        "TOTP_SETUP",
        &PendingSetup {
            seed_sealed: sealed,
        },
    )?
    .with_expiry(state.clock.now().timestamp() + SETUP_SECONDS);
    state.store.put(pending, Condition::None).await?;
    Ok(axum::Json(json!({
        "success": true,
        "secret": totp.get_secret_base32(),
        "otpauth_uri": totp.get_url(),
        "expires_in": SETUP_SECONDS,
    })))
}

#[derive(Debug, Deserialize)]
pub struct TokenBody {
    token: Option<String>,
    current_password: Option<String>,
}

/// `POST /api/users/:uuid/two_factor_validate` (and `validate_2fa`): `{"token"}` enables 2FA.
pub async fn validate(
    State(state): State<AppState>,
    auth: Authenticated,
    Path(uuid): Path<String>,
    Json(body): Json<TokenBody>,
) -> ApiResult<axum::Json<Value>> {
    let user = target_user(&state, &auth, &uuid, USER_WRITE).await?;
    let store = state.store.as_ref();
    let Some(token) = body.token.as_deref().map(normalize) else {
        return Err(ApiError::required("token"));
    };
    let key = user.uuid.to_string();
    FAILURES.check(store, &key).await?;
    let Some(pending) = store.get(&pk(&user), "TOTP_SETUP").await? else {
        return Err(ApiError::bad_request(
            "setup_expired",
            "2FA setup session expired. Please start setup again.",
        ));
    };
    let pending: PendingSetup = pending.parse()?;
    let seed = state
        .secrets
        .decrypt(&pending.seed_sealed)
        .map_err(ApiError::internal)?;
    let step = is_totp_shape(&token)
        .then(|| totp(seed, &user.email))
        .transpose()?
        .and_then(|totp| matching_step(&totp, &token, unix_now(&state)));
    let Some(step) = step else {
        FAILURES.record(store, &key).await?;
        return Err(token_invalid());
    };
    let device = TotpDevice {
        seed_sealed: pending.seed_sealed,
        confirmed_at: state.clock.now(),
        last_step: step,
    };
    store
        .transact_write(vec![
            WriteOp::Put {
                item: Item::of(pk(&user), "TOTP", &device)?,
                condition: Condition::None,
            },
            // The pending seed must still be the one just checked.
            WriteOp::Delete {
                pk: pk(&user),
                sk: "TOTP_SETUP".into(),
                condition: Condition::Exists,
            },
        ])
        .await
        .map_err(|error| match error {
            StoreError::ConditionFailed => ApiError::bad_request(
                "setup_expired",
                "2FA setup session expired. Please start setup again.",
            ),
            other => other.into(),
        })?;
    let codes = issue_backup_codes(&state, &user).await?;
    // As PostHog: turning 2FA on logs out every other browser, which logged in without it.
    let keep = auth.session.as_ref().map(|session| session.id);
    Session::end_all_of(store, user.uuid, keep).await?;
    notify(&state, &user, "enabled").await;
    Ok(axum::Json(
        json!({ "success": true, "backup_codes": codes }),
    ))
}

/// `GET /api/users/:uuid/two_factor_status`
pub async fn status(
    State(state): State<AppState>,
    auth: Authenticated,
    Path(uuid): Path<String>,
) -> ApiResult<axum::Json<Value>> {
    let user = target_user(&state, &auth, &uuid, USER_READ).await?;
    let store = state.store.as_ref();
    let enabled = device(store, &user).await?.is_some();
    let remaining = if enabled {
        backup_codes(store, &user)
            .await?
            .map_or(0, |codes| codes.macs.len())
    } else {
        0
    };
    Ok(axum::Json(json!({
        "is_enabled": enabled,
        "backup_codes_remaining": remaining,
        "method": if enabled { Some("TOTP") } else { None },
        "has_passkeys": false,
        "has_totp": enabled,
        "passkeys_enabled_for_2fa": false,
    })))
}

fn not_enabled() -> ApiError {
    ApiError::bad_request("2fa_not_enabled", "2FA must be enabled first")
}

/// `POST /api/users/:uuid/two_factor_backup_codes`: a fresh set, shown once; older codes stop working.
pub async fn regenerate_backup_codes(
    State(state): State<AppState>,
    auth: Authenticated,
    Path(uuid): Path<String>,
) -> ApiResult<axum::Json<Value>> {
    let user = target_user(&state, &auth, &uuid, USER_WRITE).await?;
    if device(state.store.as_ref(), &user).await?.is_none() {
        return Err(not_enabled());
    }
    let codes = issue_backup_codes(&state, &user).await?;
    Ok(axum::Json(json!({ "backup_codes": codes })))
}

/// `POST /api/users/:uuid/two_factor_disable` with a TOTP code, a backup code or the password.
pub async fn disable(
    State(state): State<AppState>,
    auth: Authenticated,
    Path(uuid): Path<String>,
    Json(body): Json<TokenBody>,
) -> ApiResult<axum::Json<Value>> {
    let user = target_user(&state, &auth, &uuid, USER_WRITE).await?;
    let store = state.store.as_ref();
    if device(store, &user).await?.is_none() {
        return Err(not_enabled());
    }
    let key = user.uuid.to_string();
    FAILURES.check(store, &key).await?;
    let proven = match (&body.token, &body.current_password) {
        (Some(token), _) => second_factor_proven(&state, &user, token).await?,
        (None, Some(password)) => user.password_matches(password).await?,
        (None, None) => return Err(ApiError::required("token")),
    };
    if !proven {
        FAILURES.record(store, &key).await?;
        return Err(match body.token {
            Some(_) => token_invalid(),
            None => ApiError::field(
                "current_password",
                "invalid_input",
                "Your current password is incorrect.",
            ),
        });
    }
    store
        .transact_write(vec![
            WriteOp::Delete {
                pk: pk(&user),
                sk: "TOTP".into(),
                condition: Condition::None,
            },
            WriteOp::Delete {
                pk: pk(&user),
                sk: "BACKUP".into(),
                condition: Condition::None,
            },
            WriteOp::Delete {
                pk: pk(&user),
                sk: "TOTP_SETUP".into(),
                condition: Condition::None,
            },
        ])
        .await?;
    notify(&state, &user, "disabled").await;
    Ok(axum::Json(json!({ "success": true })))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_match_their_own_step_and_its_neighbours_only() {
        let totp = totp(b"12345678901234567890".to_vec(), "a@example.com").unwrap();
        // RFC 6238 test vector (SHA-1, T = 59 s): 94287082, last six digits.
        assert_eq!(totp.generate(59), "287082");
        let now = 1_000_000_000;
        let current = totp.generate(now);
        assert_eq!(matching_step(&totp, &current, now), Some(now / 30));
        let previous = totp.generate(now - 30);
        assert_eq!(matching_step(&totp, &previous, now), Some(now / 30 - 1));
        let stale = totp.generate(now - 90);
        if stale != current && stale != previous && stale != totp.generate(now + 30) {
            assert_eq!(matching_step(&totp, &stale, now), None);
        }
        assert_eq!(matching_step(&totp, "12345", now), None);
    }

    #[test]
    fn typed_codes_are_normalized() {
        assert_eq!(normalize(" 123 456 "), "123456");
        assert_eq!(normalize("ABCD-EFGH"), "abcdefgh");
        assert!(is_totp_shape("012345"));
        assert!(!is_totp_shape("01234a"));
    }
}
