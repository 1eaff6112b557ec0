use chrono::{DateTime, Duration, Utc};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use uuid::Uuid;

use crate::store::{
    self, Condition, Contention, Index, Item, QueryOptions, Store, StoreError, WriteOp,
};

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
    /// When the secret was last replaced ([`PersonalApiKey::roll`]).
    #[serde(default)]
    pub last_rolled_at: Option<DateTime<Utc>>,
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
    /// Keys one user may hold at once (PostHog's `MAX_API_KEYS_PER_USER`).
    pub const MAX_PER_USER: usize = 10;

    /// The objects a scope may name (PostHog's `API_SCOPE_OBJECTS`).
    pub const SCOPE_OBJECTS: &[&str] = &[
        "action",
        "activity_log",
        "annotation",
        "batch_export",
        "cohort",
        "dashboard",
        "dashboard_template",
        "early_access_feature",
        "endpoint",
        "event_definition",
        "experiment",
        "export",
        "feature_flag",
        "group",
        "hog_function",
        "insight",
        "notebook",
        "organization",
        "organization_member",
        "person",
        "plugin",
        "project",
        "property_definition",
        "query",
        "session_recording",
        "session_recording_playlist",
        "sharing_configuration",
        "subscription",
        "survey",
        "user",
        "webhook",
        "personal_api_key",
    ];

    /// Whether a key may be given `scope`: `*`, or `object:read`/`object:write` for a known
    /// object.
    pub fn valid_scope(scope: &str) -> bool {
        if scope == "*" {
            return true;
        }
        let mut parts = scope.split(':');
        match (parts.next(), parts.next(), parts.next()) {
            (Some(object), Some(action), None) => {
                Self::SCOPE_OBJECTS.contains(&object) && matches!(action, "read" | "write")
            }
            _ => false,
        }
    }

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
            last_rolled_at: None,
        };
        (key, secret)
    }

    fn pk(secure_value: &str) -> String {
        format!("APIKEY#{secure_value}")
    }

    fn gsi1sk(id: Uuid) -> String {
        format!("APIKEY#{id}")
    }

    /// Addressed by hash; GSI1 lists a user's keys.
    pub fn put_op(&self) -> Result<WriteOp, StoreError> {
        let item = Item::of(Self::pk(&self.secure_value), "APIKEY", self)?
            .with_gsi1(super::User::pk(self.user_uuid), Self::gsi1sk(self.id));
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

    /// The keys a GSI1 query of `user_uuid` found with `sk_prefix`.
    async fn indexed(
        store: &dyn Store,
        user_uuid: Uuid,
        sk_prefix: String,
    ) -> Result<Vec<Self>, StoreError> {
        store::query_pages(
            store,
            &super::User::pk(user_uuid),
            QueryOptions {
                index: Index::Gsi1,
                sk_prefix,
                ..Default::default()
            },
        )
        .await?
        .iter()
        .map(Item::parse)
        .collect()
    }

    /// Every key of `user_uuid`, newest first.
    ///
    /// GSI1 is eventually consistent on DynamoDB: for a moment after a roll it may hold the key
    /// under both secrets, so a key appears once, as its latest roll left it.
    pub async fn list_of_user(store: &dyn Store, user_uuid: Uuid) -> Result<Vec<Self>, StoreError> {
        Ok(newest_first(
            Self::indexed(store, user_uuid, "APIKEY#".into()).await?,
        ))
    }

    /// The key `id` of `user_uuid` as stored now (read by its primary key, not the index), or
    /// `None` when there is none or it is another user's.
    pub async fn load_of_user(
        store: &dyn Store,
        user_uuid: Uuid,
        id: Uuid,
    ) -> Result<Option<Self>, StoreError> {
        for indexed in Self::indexed(store, user_uuid, Self::gsi1sk(id)).await? {
            if let Some(item) = store
                .get(&Self::pk(&indexed.secure_value), "APIKEY")
                .await?
            {
                let key: Self = item.parse()?;
                if key.user_uuid == user_uuid && key.id == id {
                    return Ok(Some(key));
                }
            }
        }
        Ok(None)
    }

    /// Applies `change` to the stored key under optimistic locking; `None` when the key is gone
    /// (deleted or rolled meanwhile). Its identity, owner and secret are kept whatever `change`
    /// does.
    pub async fn update(
        &self,
        store: &dyn Store,
        mut change: impl FnMut(&mut Self),
    ) -> Result<Option<Self>, StoreError> {
        let pk = Self::pk(&self.secure_value);
        let result = store::update(store, &pk, "APIKEY", |mut key: Self| {
            let (id, user_uuid, secure_value, mask_value) = (
                key.id,
                key.user_uuid,
                key.secure_value.clone(),
                key.mask_value.clone(),
            );
            change(&mut key);
            key.id = id;
            key.user_uuid = user_uuid;
            key.secure_value = secure_value;
            key.mask_value = mask_value;
            Ok(key)
        })
        .await;
        match result {
            Ok(key) => Ok(Some(key)),
            // `update` says the same when the item is missing and when it kept losing races.
            Err(StoreError::ConditionFailed) if store.get(&pk, "APIKEY").await?.is_none() => {
                Ok(None)
            }
            Err(other) => Err(other),
        }
    }

    /// Removes the key (its secret stops working at once); `false` when it was already gone.
    pub async fn delete(&self, store: &dyn Store) -> Result<bool, StoreError> {
        match store
            .delete(&Self::pk(&self.secure_value), "APIKEY", Condition::Exists)
            .await
        {
            Ok(()) => Ok(true),
            Err(StoreError::ConditionFailed) => Ok(false),
            Err(other) => Err(other),
        }
    }

    /// A new secret for the key: the key under the new hash and the old item's removal are one
    /// transaction, so the old secret stops working the moment the new one starts. Id, label,
    /// scopes and dates are kept; `last_rolled_at` is `now`. `None` when the key is gone.
    pub async fn roll(
        &self,
        store: &dyn Store,
        now: DateTime<Utc>,
    ) -> Result<Option<(Self, String)>, StoreError> {
        let pk = Self::pk(&self.secure_value);
        let mut contention = Contention::default();
        loop {
            let Some(item) = store.get(&pk, "APIKEY").await? else {
                return Ok(None);
            };
            let current: Self = item.parse()?;
            let secret = Self::generate_secret();
            let rolled = Self {
                secure_value: Self::secure_value_of(&secret),
                mask_value: Self::mask(&secret),
                last_rolled_at: Some(now),
                ..current
            };
            let ops = vec![
                rolled.put_op()?,
                WriteOp::Delete {
                    pk: pk.clone(),
                    sk: "APIKEY".into(),
                    condition: Condition::VersionEquals(item.version),
                },
            ];
            match store.transact_write(ops).await {
                Ok(()) => return Ok(Some((rolled, secret))),
                // A concurrent change of the old item (a use, an edit): read it again.
                Err(error) if lost_race(&error) => contention.lost(item.version).await?,
                Err(other) => return Err(other),
            }
        }
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

/// `keys` newest first, each id once (the latest roll of it when the index held two).
fn newest_first(mut keys: Vec<PersonalApiKey>) -> Vec<PersonalApiKey> {
    keys.sort_by(|a, b| {
        (b.created_at, b.id, b.last_rolled_at).cmp(&(a.created_at, a.id, a.last_rolled_at))
    });
    keys.dedup_by_key(|key| key.id);
    keys
}

/// A transaction lost to another writer (DynamoDB also cancels one that overlaps another in
/// flight): read again and retry.
fn lost_race(error: &StoreError) -> bool {
    match error {
        StoreError::ConditionFailed => true,
        StoreError::TransactionCancelled(reasons) => reasons.contains("TransactionConflict"),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::super::{Membership, MembershipLevel};
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

    #[test]
    fn scopes_are_valid_only_as_posthog_names_them() {
        for scope in ["*", "insight:read", "personal_api_key:write", "query:read"] {
            assert!(PersonalApiKey::valid_scope(scope), "{scope}");
        }
        for scope in [
            "",
            "invalid",
            "insight:invalid",
            "insight:read:write",
            "nonsense:read",
            "insight:",
            ":read",
            "Insight:read",
        ] {
            assert!(!PersonalApiKey::valid_scope(scope), "{scope}");
        }
    }

    fn at(seconds: i64) -> DateTime<Utc> {
        DateTime::from_timestamp(seconds, 0).unwrap()
    }

    async fn stored(
        store: &dyn Store,
        user: Uuid,
        label: &str,
        now: i64,
    ) -> (PersonalApiKey, String) {
        let (key, secret) = PersonalApiKey::create(
            user,
            label,
            vec!["insight:read".into()],
            None,
            None,
            at(now),
        );
        store
            .transact_write(vec![key.put_op().unwrap()])
            .await
            .unwrap();
        (key, secret)
    }

    #[tokio::test]
    async fn a_users_keys_are_listed_newest_first_and_loaded_only_by_their_owner() {
        let store = crate::store::SqliteStore::in_memory().unwrap();
        let (alice, bob) = (Uuid::now_v7(), Uuid::now_v7());
        let (old, _) = stored(&store, alice, "old", 100).await;
        let (new, _) = stored(&store, alice, "new", 200).await;
        let (bobs, _) = stored(&store, bob, "bob", 150).await;
        // A membership shares the user's GSI1 partition and is no key.
        let membership = Membership::new(Uuid::now_v7(), alice, MembershipLevel::Member, at(1));
        store
            .transact_write(vec![membership.put_op().unwrap()])
            .await
            .unwrap();

        let listed = PersonalApiKey::list_of_user(&store, alice).await.unwrap();
        assert_eq!(listed, vec![new.clone(), old.clone()]);
        assert_eq!(
            PersonalApiKey::load_of_user(&store, alice, old.id)
                .await
                .unwrap(),
            Some(old)
        );
        assert_eq!(
            PersonalApiKey::load_of_user(&store, alice, bobs.id)
                .await
                .unwrap(),
            None
        );
        assert_eq!(
            PersonalApiKey::load_of_user(&store, bob, bobs.id)
                .await
                .unwrap(),
            Some(bobs)
        );
        assert_eq!(
            PersonalApiKey::load_of_user(&store, alice, Uuid::now_v7())
                .await
                .unwrap(),
            None
        );
    }

    #[test]
    fn a_key_the_index_holds_twice_is_listed_once_as_rolled() {
        let (key, _) = PersonalApiKey::create(Uuid::nil(), "k", vec![], None, None, at(5));
        let rolled = PersonalApiKey {
            secure_value: "sha256$new".into(),
            last_rolled_at: Some(at(9)),
            ..key.clone()
        };
        let (newer, _) = PersonalApiKey::create(Uuid::nil(), "n", vec![], None, None, at(6));
        let listed = newest_first(vec![key.clone(), newer.clone(), rolled.clone()]);
        assert_eq!(listed, vec![newer, rolled]);
    }

    #[tokio::test]
    async fn an_update_keeps_the_keys_identity_and_secret() {
        let store = crate::store::SqliteStore::in_memory().unwrap();
        let user = Uuid::now_v7();
        let (key, secret) = stored(&store, user, "before", 1).await;
        let updated = key
            .update(&store, |changed| {
                changed.label = "after".into();
                changed.scopes = vec!["*".into()];
                changed.id = Uuid::nil();
                changed.secure_value = "sha256$other".into();
            })
            .await
            .unwrap()
            .unwrap();
        assert_eq!((updated.id, updated.label.as_str()), (key.id, "after"));
        assert_eq!(updated.scopes, ["*"]);
        assert_eq!(
            PersonalApiKey::find(&store, &secret).await.unwrap(),
            Some(updated)
        );

        assert!(key.delete(&store).await.unwrap());
        assert!(!key.delete(&store).await.unwrap(), "already gone");
        assert_eq!(PersonalApiKey::find(&store, &secret).await.unwrap(), None);
        assert_eq!(key.update(&store, |_| {}).await.unwrap(), None);
        assert!(
            PersonalApiKey::list_of_user(&store, user)
                .await
                .unwrap()
                .is_empty()
        );
    }

    #[tokio::test]
    async fn a_roll_replaces_the_secret_and_keeps_the_key() {
        let store = crate::store::SqliteStore::in_memory().unwrap();
        let user = Uuid::now_v7();
        let (key, old_secret) = stored(&store, user, "roll me", 1).await;
        let (rolled, new_secret) = key.roll(&store, at(50)).await.unwrap().unwrap();
        assert_ne!(new_secret, old_secret);
        assert!(new_secret.starts_with("phx_"));
        assert_eq!(
            (rolled.id, &rolled.label, &rolled.scopes),
            (key.id, &key.label, &key.scopes)
        );
        assert_eq!(
            (rolled.created_at, rolled.last_rolled_at),
            (at(1), Some(at(50)))
        );
        assert_ne!(rolled.mask_value, key.mask_value);

        assert_eq!(
            PersonalApiKey::find(&store, &old_secret).await.unwrap(),
            None
        );
        assert_eq!(
            PersonalApiKey::find(&store, &new_secret).await.unwrap(),
            Some(rolled.clone())
        );
        assert_eq!(
            PersonalApiKey::list_of_user(&store, user).await.unwrap(),
            vec![rolled.clone()]
        );
        assert_eq!(
            PersonalApiKey::load_of_user(&store, user, key.id)
                .await
                .unwrap(),
            Some(rolled)
        );
        // The old item is gone: rolling it again finds nothing.
        assert_eq!(key.roll(&store, at(60)).await.unwrap(), None);
    }
}
