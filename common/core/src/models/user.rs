use argon2::Argon2;
use argon2::password_hash::{
    PasswordHash, PasswordHasher, PasswordVerifier, SaltString, rand_core::OsRng,
};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use uuid::Uuid;

use crate::store::{self, Condition, Item, Store, StoreError, WriteOp};

/// A person who signs in; the fields mirror PostHog's user payload.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct User {
    pub uuid: Uuid,
    pub distinct_id: String,
    pub email: String,
    #[serde(default)]
    pub first_name: String,
    #[serde(default)]
    pub last_name: String,
    /// Argon2 PHC string; `None` for users who cannot sign in with a password.
    #[serde(default)]
    pub password_hash: Option<String>,
    #[serde(default)]
    pub is_staff: bool,
    #[serde(default = "yes")]
    pub is_active: bool,
    #[serde(default)]
    pub is_email_verified: bool,
    #[serde(default)]
    pub pending_email: Option<String>,
    pub date_joined: DateTime<Utc>,
    #[serde(default)]
    pub current_organization_id: Option<Uuid>,
    #[serde(default)]
    pub current_team_id: Option<i64>,
    #[serde(default = "empty_object")]
    pub notification_settings: Value,
    #[serde(default)]
    pub anonymize_data: bool,
    #[serde(default)]
    pub toolbar_mode: Option<String>,
    #[serde(default)]
    pub events_column_config: Value,
    #[serde(default = "empty_object")]
    pub has_seen_product_intro_for: Value,
    #[serde(default)]
    pub theme_mode: Option<String>,
    #[serde(default)]
    pub mascot_config: Option<Value>,
    #[serde(default)]
    pub allow_sidebar_suggestions: Option<bool>,
    #[serde(default)]
    pub shortcut_position: Option<String>,
    #[serde(default)]
    pub role_at_organization: Option<String>,
}

fn yes() -> bool {
    true
}

fn empty_object() -> Value {
    Value::Object(Default::default())
}

pub struct NewUser<'a> {
    pub email: &'a str,
    pub first_name: &'a str,
    pub last_name: &'a str,
    pub password: Option<&'a str>,
    pub is_staff: bool,
}

/// The largest integer id: 2^53 - 1, so ids stay exact in JavaScript numbers.
const MAX_ID: u64 = (1 << 53) - 1;

/// The integer id of the user `uuid`, as PostHog shows users' `id` (UserBasicSerializer, the user
/// payload) and takes them in filters (`created_by_id`).
///
/// Users here are keyed by uuid alone; no counter hands out integers (a counter would need an
/// item every creation contends on, and a migration for the users already stored). The id is
/// derived instead: the first 53 bits of the SHA-256 of the uuid's bytes (0 becomes 1). It is
/// stable, needs no look-up either way a filter compares it, and is safe in JavaScript numbers.
/// Two of n users would share an id with a chance of about n²/2⁵⁴ (one in 18 000 for a million);
/// the uuid stays the user's key.
pub fn user_id(uuid: Uuid) -> i64 {
    let digest = <sha2::Sha256 as sha2::Digest>::digest(uuid.as_bytes());
    let mut first = [0u8; 8];
    first.copy_from_slice(&digest[..8]);
    let id = (u64::from_be_bytes(first) >> 11) & MAX_ID;
    id.max(1) as i64
}

/// A user named by a request (the `created_by_id` filters): by integer id, as PostHog's clients
/// send it, or by uuid.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UserKey {
    Id(i64),
    Uuid(Uuid),
}

impl UserKey {
    /// An integer id or a uuid; anything else is `None`.
    pub fn parse(text: &str) -> Option<Self> {
        let text = text.trim();
        if let Ok(id) = text.parse::<i64>() {
            return Some(UserKey::Id(id));
        }
        Uuid::parse_str(text).ok().map(UserKey::Uuid)
    }

    /// Whether this names the user `uuid`.
    pub fn matches(&self, uuid: Uuid) -> bool {
        match self {
            UserKey::Id(id) => user_id(uuid) == *id,
            UserKey::Uuid(key) => *key == uuid,
        }
    }
}

impl User {
    /// This user's integer id (see [`user_id`]).
    pub fn id(&self) -> i64 {
        user_id(self.uuid)
    }

    pub fn pk(uuid: Uuid) -> String {
        format!("USER#{uuid}")
    }

    fn email_pk(email: &str) -> String {
        format!("EMAIL#{}", email.to_lowercase())
    }

    /// A new user; a password is hashed here, on the calling thread (tens of milliseconds), which
    /// suits the CLI and bootstrap. Request handlers hash with [`hash_password`].
    pub fn new(new: NewUser<'_>, now: DateTime<Utc>) -> Result<Self, StoreError> {
        let uuid = Uuid::now_v7();
        Ok(Self {
            uuid,
            distinct_id: crate::models::random_token("", 43),
            email: new.email.to_owned(),
            first_name: new.first_name.to_owned(),
            last_name: new.last_name.to_owned(),
            password_hash: new
                .password
                .map(hash_now)
                .transpose()
                .map_err(|e| StoreError::Encoding(format!("password hashing: {e}")))?,
            is_staff: new.is_staff,
            is_active: true,
            is_email_verified: false,
            pending_email: None,
            date_joined: now,
            current_organization_id: None,
            current_team_id: None,
            notification_settings: empty_object(),
            anonymize_data: false,
            toolbar_mode: Some("toolbar".into()),
            events_column_config: serde_json::json!({ "active": "DEFAULT" }),
            has_seen_product_intro_for: empty_object(),
            theme_mode: None,
            mascot_config: None,
            allow_sidebar_suggestions: None,
            shortcut_position: None,
            role_at_organization: None,
        })
    }

    /// The user and the claim on their e-mail address: a second user with the same address fails.
    pub fn put_ops(&self) -> Result<Vec<WriteOp>, StoreError> {
        Ok(vec![
            WriteOp::Put {
                item: Item::of(Self::pk(self.uuid), "USER", self)?,
                condition: Condition::NotExists,
            },
            WriteOp::Put {
                item: Item::new(
                    Self::email_pk(&self.email),
                    "EMAIL",
                    serde_json::json!({ "user_uuid": self.uuid }),
                ),
                condition: Condition::NotExists,
            },
        ])
    }

    pub async fn load(store: &dyn Store, uuid: Uuid) -> Result<Option<Self>, StoreError> {
        store
            .get(&Self::pk(uuid), "USER")
            .await?
            .map(|item| item.parse())
            .transpose()
    }

    pub async fn by_email(store: &dyn Store, email: &str) -> Result<Option<Self>, StoreError> {
        let Some(claim) = store.get(&Self::email_pk(email), "EMAIL").await? else {
            return Ok(None);
        };
        let uuid = claim
            .data
            .get("user_uuid")
            .and_then(Value::as_str)
            .and_then(|text| Uuid::parse_str(text).ok())
            .ok_or_else(|| StoreError::Encoding("e-mail claim without a user".into()))?;
        Self::load(store, uuid).await
    }

    /// Applies `change` under optimistic locking and returns the stored user.
    pub async fn update(
        store: &dyn Store,
        uuid: Uuid,
        mut change: impl FnMut(&mut User) -> Result<(), StoreError>,
    ) -> Result<Self, StoreError> {
        store::update(store, &Self::pk(uuid), "USER", |mut user: User| {
            change(&mut user)?;
            Ok(user)
        })
        .await
    }

    /// Makes `new_email` the user's address, moving the uniqueness claim in the same transaction.
    /// `Ok(None)` when another account holds the address.
    pub async fn change_email(
        store: &dyn Store,
        uuid: Uuid,
        new_email: &str,
        mut change: impl FnMut(&mut User),
    ) -> Result<Option<Self>, StoreError> {
        for attempt in 0..store::UPDATE_ATTEMPTS {
            if attempt > 0 {
                tokio::time::sleep(store::conflict_backoff(attempt)).await;
            }
            let Some(current) = store.get(&Self::pk(uuid), "USER").await? else {
                return Err(StoreError::ConditionFailed);
            };
            let mut user: User = current.parse()?;
            let old_email = std::mem::replace(&mut user.email, new_email.to_owned());
            change(&mut user);
            let mut item = Item::of(Self::pk(uuid), "USER", &user)?;
            item.version = current.version + 1;
            let mut ops = vec![WriteOp::Put {
                item,
                condition: Condition::VersionEquals(current.version),
            }];
            if Self::email_pk(&old_email) != Self::email_pk(new_email) {
                ops.push(WriteOp::Put {
                    item: Item::new(
                        Self::email_pk(new_email),
                        "EMAIL",
                        serde_json::json!({ "user_uuid": uuid }),
                    ),
                    condition: Condition::NotExists,
                });
                ops.push(WriteOp::Delete {
                    pk: Self::email_pk(&old_email),
                    sk: "EMAIL".into(),
                    condition: Condition::None,
                });
            }
            match store.transact_write(ops).await {
                Ok(()) => return Ok(Some(user)),
                Err(StoreError::ConditionFailed) => {
                    if let Some(holder) = Self::by_email(store, new_email).await?
                        && holder.uuid != uuid
                    {
                        return Ok(None);
                    }
                    // The user changed under us: read again.
                }
                Err(other) => return Err(other),
            }
        }
        Err(StoreError::ConditionFailed)
    }

    /// Whether `password` is this user's, checked on a blocking thread: Argon2 is made to be
    /// slow, and one login must not stall the other requests of its executor thread.
    pub async fn password_matches(&self, password: &str) -> Result<bool, PasswordError> {
        let Some(hash) = self.password_hash.clone() else {
            return Ok(false);
        };
        let password = password.to_owned();
        tokio::task::spawn_blocking(move || verify_now(&hash, &password))
            .await
            .map_err(PasswordError::Worker)
    }

    /// [`User::password_matches`] on the calling thread, for tests and the CLI.
    pub fn verify_password(&self, password: &str) -> bool {
        self.password_hash
            .as_deref()
            .is_some_and(|hash| verify_now(hash, password))
    }
}

/// As long as checking `password` against a stored hash takes, for a login whose e-mail matches
/// no user: a faster answer would tell which e-mails have accounts.
pub async fn check_against_no_user(password: &str) -> Result<(), PasswordError> {
    static DECOY: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    let password = password.to_owned();
    tokio::task::spawn_blocking(move || {
        let decoy = DECOY.get_or_init(|| hash_now("decoy").unwrap_or_default());
        verify_now(decoy, &password);
    })
    .await
    .map_err(PasswordError::Worker)
}

/// Hashing or checking a password failed.
#[derive(Debug, thiserror::Error)]
pub enum PasswordError {
    #[error("password hashing failed")]
    Hash(#[source] argon2::password_hash::Error),
    #[error("password worker thread failed")]
    Worker(#[source] tokio::task::JoinError),
}

impl From<PasswordError> for crate::error::ApiError {
    fn from(error: PasswordError) -> Self {
        Self::internal(error)
    }
}

/// The Argon2 PHC string of `password`, computed on a blocking thread.
pub async fn hash_password(password: &str) -> Result<String, PasswordError> {
    let password = password.to_owned();
    tokio::task::spawn_blocking(move || hash_now(&password))
        .await
        .map_err(PasswordError::Worker)?
        .map_err(PasswordError::Hash)
}

fn hash_now(password: &str) -> Result<String, argon2::password_hash::Error> {
    let salt = SaltString::generate(&mut OsRng);
    Argon2::default()
        .hash_password(password.as_bytes(), &salt)
        .map(|hash| hash.to_string())
}

/// A stored hash that does not parse matches nothing.
fn verify_now(hash: &str, password: &str) -> bool {
    PasswordHash::new(hash).is_ok_and(|parsed| {
        Argon2::default()
            .verify_password(password.as_bytes(), &parsed)
            .is_ok()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integer_ids_are_stable_positive_and_name_their_user() {
        let uuid = Uuid::parse_str("0190a4b2-7c3e-7d4f-8a1b-2c3d4e5f6a7b").unwrap();
        let id = user_id(uuid);
        assert_eq!(id, user_id(uuid), "the same uuid, the same id");
        assert!((1..=MAX_ID as i64).contains(&id), "{id}");
        // Uuids made in the same millisecond (v7) or differing in one byte get distinct ids.
        let ids: std::collections::HashSet<i64> =
            (0..10_000).map(|_| user_id(Uuid::now_v7())).collect();
        assert_eq!(ids.len(), 10_000);
        let key = UserKey::parse(&id.to_string()).unwrap();
        assert!(key.matches(uuid) && !key.matches(Uuid::now_v7()));
        let by_uuid = UserKey::parse(&uuid.to_string()).unwrap();
        assert_eq!(by_uuid, UserKey::Uuid(uuid));
        assert!(by_uuid.matches(uuid));
        assert_eq!(UserKey::parse("someone"), None);
    }

    #[test]
    fn passwords_verify_only_against_their_hash() {
        let user = User::new(
            NewUser {
                email: "a@example.com",
                first_name: "A",
                last_name: "",
                password: Some("correct horse"),
                is_staff: false,
            },
            DateTime::UNIX_EPOCH,
        )
        .unwrap();
        let hash = user.password_hash.as_deref().unwrap();
        assert!(hash.starts_with("$argon2"));
        assert!(user.verify_password("correct horse"));
        assert!(!user.verify_password("wrong"));
    }

    /// On a one-thread runtime another task keeps running while a password is hashed and
    /// checked: Argon2 runs on the blocking pool, not on the executor's only thread.
    #[tokio::test(flavor = "current_thread")]
    async fn hashing_leaves_the_executor_free() {
        let ticker = crate::testing::Ticker::start();
        let hash = hash_password("correct horse").await.unwrap();
        let after_hashing = ticker.ticks.get();
        assert!(
            after_hashing > 0,
            "the other task did not run while hashing"
        );
        let mut user = User::new(
            NewUser {
                email: "a@example.com",
                first_name: "A",
                last_name: "",
                password: None,
                is_staff: false,
            },
            DateTime::UNIX_EPOCH,
        )
        .unwrap();
        assert!(!user.password_matches("correct horse").await.unwrap());
        user.password_hash = Some(hash);
        assert!(user.password_matches("correct horse").await.unwrap());
        assert!(!user.password_matches("wrong").await.unwrap());
        assert!(
            ticker.ticks.get() > after_hashing,
            "the other task did not run while checking"
        );
    }
}
