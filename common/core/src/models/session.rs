//! A console login: the cookie's secret is shown to the browser once and only its SHA-256 is
//! stored, like a personal API key's. A session that has passed the password but not yet the
//! second factor authenticates nothing.

use chrono::{DateTime, Duration, Utc};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use uuid::Uuid;

use crate::store::{self, Condition, Index, Item, QueryOptions, Store, StoreError};

use super::random_token;

/// How long a login lasts (Django's `SESSION_COOKIE_AGE` as PostHog sets it: two weeks).
pub const SESSION_AGE: Duration = Duration::days(14);
/// How long a password stays accepted while the second factor is asked for (PostHog's
/// `TWO_FACTOR_LOGIN_TIMEOUT`).
pub const SECOND_FACTOR_WINDOW: Duration = Duration::minutes(10);

const SK: &str = "SESSION";

/// Where a login is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Stage {
    /// The password was right; the second factor is still owed.
    SecondFactor,
    LoggedIn,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Session {
    pub id: Uuid,
    pub user_uuid: Uuid,
    /// `sha256$<hex>` of the cookie's secret.
    pub secure_value: String,
    /// What a cookie-authenticated write must echo in `X-CSRFToken`.
    pub csrf_token: String,
    pub stage: Stage,
    pub created_at: DateTime<Utc>,
    pub expires_at: DateTime<Utc>,
}

impl Session {
    fn secure_value_of(secret: &str) -> String {
        format!("sha256${}", hex::encode(Sha256::digest(secret.as_bytes())))
    }

    fn pk(secure_value: &str) -> String {
        format!("SESSION#{secure_value}")
    }

    fn user_partition(user_uuid: Uuid) -> String {
        super::User::pk(user_uuid)
    }

    /// A new session at `stage` and the cookie secret that opens it (store it with `save`).
    pub fn start(user_uuid: Uuid, stage: Stage, now: DateTime<Utc>) -> (Self, String) {
        let secret = random_token("", 48);
        let expires_at = now
            + match stage {
                Stage::SecondFactor => SECOND_FACTOR_WINDOW,
                Stage::LoggedIn => SESSION_AGE,
            };
        let session = Self {
            id: Uuid::now_v7(),
            user_uuid,
            secure_value: Self::secure_value_of(&secret),
            csrf_token: random_token("", 48),
            stage,
            created_at: now,
            expires_at,
        };
        (session, secret)
    }

    /// Stored until it expires; GSI1 lists a user's sessions (to end them all).
    pub async fn save(&self, store: &dyn Store) -> Result<(), StoreError> {
        let item = Item::of(Self::pk(&self.secure_value), SK, self)?
            .with_gsi1(
                Self::user_partition(self.user_uuid),
                format!("SESSION#{}", self.id),
            )
            .with_expiry(self.expires_at.timestamp());
        store.put(item, Condition::NotExists).await
    }

    /// The live session a cookie's secret opens, if any.
    pub async fn find(store: &dyn Store, secret: &str) -> Result<Option<Self>, StoreError> {
        let now = store.clock().now();
        let found = store
            .get(&Self::pk(&Self::secure_value_of(secret)), SK)
            .await?
            .map(|item| item.parse::<Self>())
            .transpose()?;
        Ok(found.filter(|session| session.expires_at > now))
    }

    pub async fn end(&self, store: &dyn Store) -> Result<(), StoreError> {
        store
            .delete(&Self::pk(&self.secure_value), SK, Condition::None)
            .await
    }

    /// Ends every session of `user_uuid` but `keep` (a password or second factor changed).
    pub async fn end_all_of(
        store: &dyn Store,
        user_uuid: Uuid,
        keep: Option<Uuid>,
    ) -> Result<(), StoreError> {
        let items = store::query_pages(
            store,
            &Self::user_partition(user_uuid),
            QueryOptions {
                index: Index::Gsi1,
                sk_prefix: "SESSION#".into(),
                ..Default::default()
            },
        )
        .await?;
        for item in items {
            let session: Self = item.parse()?;
            if Some(session.id) != keep {
                session.end(store).await?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_session_is_found_by_its_secret_until_it_ends() {
        let store = crate::testing::memory_store();
        let now = store.clock().now();
        let user = Uuid::now_v7();
        let (session, secret) = Session::start(user, Stage::LoggedIn, now);
        assert!(!session.secure_value.contains(&secret));
        session.save(&store).await.unwrap();
        assert_eq!(
            Session::find(&store, &secret).await.unwrap(),
            Some(session.clone())
        );
        assert_eq!(Session::find(&store, "other").await.unwrap(), None);

        let (kept, kept_secret) = Session::start(user, Stage::LoggedIn, now);
        kept.save(&store).await.unwrap();
        Session::end_all_of(&store, user, Some(kept.id))
            .await
            .unwrap();
        assert_eq!(Session::find(&store, &secret).await.unwrap(), None);
        assert!(Session::find(&store, &kept_secret).await.unwrap().is_some());
    }
}
