use chrono::{DateTime, Duration, Utc};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use uuid::Uuid;

use crate::store::{Condition, Item, Store, StoreError, WriteOp};

use super::random_token;

/// A personal API key. Only its SHA-256 is stored; the key itself is shown once, at creation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PersonalApiKey {
    pub id: Uuid,
    pub user_uuid: Uuid,
    pub label: String,
    /// `sha256$<hex>`.
    pub secure_value: String,
    /// `phx_...abcd`: enough to recognise the key, not to use it.
    pub mask_value: String,
    /// `object:action` strings or `*`; empty means full access (PostHog's legacy keys).
    pub scopes: Vec<String>,
    #[serde(default)]
    pub scoped_teams: Option<Vec<i64>>,
    #[serde(default)]
    pub scoped_organizations: Option<Vec<Uuid>>,
    pub created_at: DateTime<Utc>,
    #[serde(default)]
    pub last_used_at: Option<DateTime<Utc>>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScopeAction {
    Read,
    Write,
}

/// A required scope such as `project:read`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Scope {
    pub object: &'static str,
    pub action: ScopeAction,
}

impl Scope {
    pub const fn read(object: &'static str) -> Self {
        Self {
            object,
            action: ScopeAction::Read,
        }
    }

    pub const fn write(object: &'static str) -> Self {
        Self {
            object,
            action: ScopeAction::Write,
        }
    }
}

impl std::fmt::Display for Scope {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let action = match self.action {
            ScopeAction::Read => "read",
            ScopeAction::Write => "write",
        };
        write!(f, "{}:{action}", self.object)
    }
}

/// Labels are at most this long (PostHog's model).
pub const MAX_LABEL_CHARS: usize = 40;

impl PersonalApiKey {
    /// `phx_` + 47 base62 characters (about 280 bits, like PostHog's 35 random bytes).
    pub fn generate_secret() -> String {
        random_token("phx_", 47)
    }

    pub fn secure_value_of(secret: &str) -> String {
        format!("sha256${}", hex::encode(Sha256::digest(secret.as_bytes())))
    }

    pub fn mask(secret: &str) -> String {
        let chars: Vec<char> = secret.chars().collect();
        if chars.len() <= 8 {
            return "...".into();
        }
        let head: String = chars[..4].iter().collect();
        let tail: String = chars[chars.len() - 4..].iter().collect();
        format!("{head}...{tail}")
    }

    /// A new key and its secret; store the key with `put_op`, show the secret once.
    pub fn create(
        user_uuid: Uuid,
        label: &str,
        scopes: Vec<String>,
        scoped_teams: Option<Vec<i64>>,
        scoped_organizations: Option<Vec<Uuid>>,
        now: DateTime<Utc>,
    ) -> (Self, String) {
        let secret = Self::generate_secret();
        let key = Self {
            id: Uuid::now_v7(),
            user_uuid,
            label: label.to_owned(),
            secure_value: Self::secure_value_of(&secret),
            mask_value: Self::mask(&secret),
            scopes,
            scoped_teams,
            scoped_organizations,
            created_at: now,
            last_used_at: None,
        };
        (key, secret)
    }

    fn pk(secure_value: &str) -> String {
        format!("APIKEY#{secure_value}")
    }

    /// Addressed by hash; GSI1 lists a user's keys.
    pub fn put_op(&self) -> Result<WriteOp, StoreError> {
        let item = Item::of(Self::pk(&self.secure_value), "APIKEY", self)?.with_gsi1(
            super::User::pk(self.user_uuid),
            format!("APIKEY#{}", self.id),
        );
        Ok(WriteOp::Put {
            item,
            condition: Condition::NotExists,
        })
    }

    /// The stored key for a presented secret, if any.
    pub async fn find(store: &dyn Store, secret: &str) -> Result<Option<Self>, StoreError> {
        store
            .get(&Self::pk(&Self::secure_value_of(secret)), "APIKEY")
            .await?
            .map(|item| item.parse())
            .transpose()
    }

    /// Records use, at most hourly so reads stay reads (PostHog does the same).
    pub async fn touch(&self, store: &dyn Store) -> Result<(), StoreError> {
        let now = store.clock().now();
        if self
            .last_used_at
            .is_some_and(|at| now - at < Duration::hours(1))
        {
            return Ok(());
        }
        crate::store::update(
            store,
            &Self::pk(&self.secure_value),
            "APIKEY",
            |mut key: Self| {
                key.last_used_at = Some(now);
                Ok(key)
            },
        )
        .await
        .map(|_| ())
    }

    /// `*` allows everything, `X:write` implies `X:read`, no scopes at all is a legacy full-access key.
    pub fn allows(&self, scope: Scope) -> bool {
        if self.scopes.is_empty() {
            return true;
        }
        self.scopes.iter().any(|granted| {
            if granted == "*" {
                return true;
            }
            let Some((object, action)) = granted.split_once(':') else {
                return false;
            };
            object == scope.object
                && match scope.action {
                    ScopeAction::Read => action == "read" || action == "write",
                    ScopeAction::Write => action == "write",
                }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(scopes: &[&str]) -> PersonalApiKey {
        PersonalApiKey::create(
            Uuid::nil(),
            "t",
            scopes.iter().map(|s| s.to_string()).collect(),
            None,
            None,
            DateTime::UNIX_EPOCH,
        )
        .0
    }

    #[test]
    fn secrets_hash_and_mask_like_posthog() {
        let (key, secret) =
            PersonalApiKey::create(Uuid::nil(), "t", vec![], None, None, DateTime::UNIX_EPOCH);
        assert!(secret.starts_with("phx_") && secret.len() == 51);
        assert_eq!(key.secure_value.len(), "sha256$".len() + 64);
        assert_eq!(key.secure_value, PersonalApiKey::secure_value_of(&secret));
        assert!(key.mask_value.starts_with("phx_...") && key.mask_value.ends_with(&secret[47..]));
    }

    #[test]
    fn scopes_follow_posthog_rules() {
        assert!(key(&["*"]).allows(Scope::write("project")));
        assert!(key(&[]).allows(Scope::write("project")));
        assert!(key(&["project:write"]).allows(Scope::read("project")));
        assert!(key(&["project:read"]).allows(Scope::read("project")));
        assert!(!key(&["project:read"]).allows(Scope::write("project")));
        assert!(!key(&["user:read"]).allows(Scope::read("project")));
        assert!(!key(&["projectx:read", "project"]).allows(Scope::read("project")));
    }
}
