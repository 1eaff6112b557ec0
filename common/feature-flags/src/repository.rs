//! Flags in the Store. A project's flags live in its partition (`TEAM#<id>`) under
//! `FLAG#<zero-padded id>`, so one prefix query lists them in id order. Ids come from a counter
//! item of the project, and each live flag's key is claimed by a `FLAGKEY#<key>` item: the flag,
//! its claim, the counter and the activity entry are one transaction, so two writers can never
//! hold one key and no change exists without its log entry.

use chrono::{DateTime, Utc};
use common::activity::{self, Actor, Record};
use common::store::{self, Condition, Item, Store, StoreError, WriteOp};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::FeatureFlag;
use crate::model::{EvaluationRuntime, FlagFilters};

/// The activity log's scope for flags (PostHog's model name).
pub const SCOPE: &str = "FeatureFlag";

/// Top-level fields of a stored flag that are bookkeeping, not changes worth a log line.
const IGNORED_IN_DIFFS: &[&str] = &[
    "id",
    "team_id",
    "version",
    "created_at",
    "updated_at",
    "created_by",
];

const FLAG_PREFIX: &str = "FLAG#";
const COUNTER_SK: &str = "COUNTER#FLAG";

fn team_pk(team_id: i64) -> String {
    format!("TEAM#{team_id}")
}

/// Zero-padded so sort-key order is id order.
pub fn flag_sk(id: i64) -> String {
    format!("{FLAG_PREFIX}{id:019}")
}

fn key_sk(key: &str) -> String {
    format!("FLAGKEY#{key}")
}

/// A flag as read, with the Store item's version that a write must still find.
#[derive(Debug, Clone, PartialEq)]
pub struct Stored {
    pub flag: FeatureFlag,
    pub item_version: u64,
}

/// What a new flag holds; the rest (id, version, timestamps) the repository fills.
#[derive(Debug, Clone, PartialEq)]
pub struct NewFlag {
    pub key: String,
    pub name: String,
    pub filters: FlagFilters,
    pub active: bool,
    pub ensure_experience_continuity: bool,
    pub evaluation_runtime: EvaluationRuntime,
    pub evaluation_tags: Vec<String>,
    pub created_by: Option<Uuid>,
}

/// Why a write did not happen.
#[derive(Debug, thiserror::Error)]
pub enum WriteError {
    /// Another live flag of the project holds the key.
    #[error("another flag holds this key")]
    KeyTaken,
    /// The flag changed since it was read; read it again.
    #[error("the flag changed since it was read")]
    Raced,
    #[error("the flag does not exist")]
    NotFound,
    #[error(transparent)]
    Store(#[from] StoreError),
}

#[derive(Serialize, Deserialize)]
struct KeyClaim {
    flag_id: i64,
}

/// Every flag of a project that is not deleted (active or not), in id order.
pub async fn list_live(store: &dyn Store, team_id: i64) -> Result<Vec<FeatureFlag>, StoreError> {
    let mut flags: Vec<FeatureFlag> =
        store::list_prefix(store, &team_pk(team_id), FLAG_PREFIX).await?;
    flags.retain(|flag| !flag.deleted);
    Ok(flags)
}

/// One flag, deleted or not.
pub async fn get(store: &dyn Store, team_id: i64, id: i64) -> Result<Option<Stored>, StoreError> {
    let stored = store::get_versioned(store, &team_pk(team_id), &flag_sk(id)).await?;
    Ok(stored.map(|(flag, item_version)| Stored { flag, item_version }))
}

/// One flag unless it is deleted (what every read route shows).
pub async fn get_live(
    store: &dyn Store,
    team_id: i64,
    id: i64,
) -> Result<Option<FeatureFlag>, StoreError> {
    Ok(get(store, team_id, id)
        .await?
        .map(|stored| stored.flag)
        .filter(|flag| !flag.deleted))
}

/// The writes of a flag creation, built but not executed, so that another entity (an experiment)
/// can commit them in its own transaction: the counter bump, the flag, its key claim and its
/// `created` entry. The counter is read here; the ops fail as a whole if another writer took
/// the id or the key meanwhile ([`create_failure`] tells which).
#[derive(Debug)]
pub struct Planned {
    pub flag: FeatureFlag,
    pub ops: Vec<WriteOp>,
}

/// Plans the creation of `new` with the project's next flag id.
pub async fn plan_create(
    store: &dyn Store,
    team_id: i64,
    new: NewFlag,
    actor: &Actor,
    at: DateTime<Utc>,
) -> Result<Planned, StoreError> {
    let (mut flags, ops) = plan_create_many(store, team_id, vec![new], actor, at).await?;
    let flag = flags
        .pop()
        .ok_or_else(|| StoreError::Invalid("no flag planned".into()))?;
    Ok(Planned { flag, ops })
}

/// Plans the creation of several flags with the project's next ids (one counter write claims
/// them all), for an entity that owns several flags (a survey's targeting flags).
pub async fn plan_create_many(
    store: &dyn Store,
    team_id: i64,
    new: Vec<NewFlag>,
    actor: &Actor,
    at: DateTime<Utc>,
) -> Result<(Vec<FeatureFlag>, Vec<WriteOp>), StoreError> {
    let pk = team_pk(team_id);
    let count = i64::try_from(new.len()).unwrap_or(i64::MAX);
    if count == 0 {
        return Ok((Vec::new(), Vec::new()));
    }
    let (first, counter) = store::claim_next_ids(store, &pk, COUNTER_SK, count).await?;
    let mut ops = vec![counter];
    let mut flags = Vec::with_capacity(new.len());
    for (id, new) in (first..).zip(new) {
        let flag = FeatureFlag {
            id,
            team_id,
            key: new.key,
            name: new.name,
            filters: new.filters,
            active: new.active,
            deleted: false,
            ensure_experience_continuity: new.ensure_experience_continuity,
            evaluation_runtime: new.evaluation_runtime,
            evaluation_tags: new.evaluation_tags,
            version: 1,
            created_by: new.created_by,
            created_at: at,
            updated_at: Some(at),
        };
        let after = encode(&pk, &flag)?;
        ops.extend([
            WriteOp::Put {
                item: Item::of(pk.clone(), flag_sk(flag.id), &flag)?,
                condition: Condition::NotExists,
            },
            claim_op(team_id, &flag)?,
            record(team_id, actor, activity::CREATED, None, &after, &flag, at).put_op()?,
        ]);
        flags.push(flag);
    }
    Ok((flags, ops))
}

/// Why a transaction holding [`plan_create`]'s ops failed its conditions: the key is taken
/// ([`WriteError::KeyTaken`]), or else another writer took the id (`None`: plan again).
pub async fn create_failure(
    store: &dyn Store,
    team_id: i64,
    key: &str,
) -> Result<Option<WriteError>, StoreError> {
    Ok(store
        .get(&team_pk(team_id), &key_sk(key))
        .await?
        .map(|_| WriteError::KeyTaken))
}

/// Stores a new flag with the next id of the project, its key claim and its `created` entry.
/// A lost race on the counter is retried; a taken key is [`WriteError::KeyTaken`].
pub async fn create(
    store: &dyn Store,
    team_id: i64,
    new: NewFlag,
    actor: &Actor,
    at: DateTime<Utc>,
) -> Result<FeatureFlag, WriteError> {
    for attempt in 0..store::UPDATE_ATTEMPTS {
        if attempt > 0 {
            tokio::time::sleep(store::conflict_backoff(attempt)).await;
        }
        let planned = plan_create(store, team_id, new.clone(), actor, at).await?;
        match store.transact_write(planned.ops).await {
            Ok(()) => return Ok(planned.flag),
            Err(StoreError::ConditionFailed) => {
                if let Some(error) = create_failure(store, team_id, &planned.flag.key).await? {
                    return Err(error);
                }
                // Another flag took this id first: count again.
            }
            Err(other) => return Err(other.into()),
        }
    }
    Err(WriteError::Raced)
}

/// The writes that replace `before` (as read) by `after`, built but not executed: bumps
/// `version` and `updated_at`, moves or releases the key claim, and logs `updated` (or `deleted`
/// when this write soft-deletes). The flag's put requires the item version that was read.
pub fn plan_save(
    team_id: i64,
    before: &Stored,
    mut after: FeatureFlag,
    actor: &Actor,
    at: DateTime<Utc>,
) -> Result<Planned, StoreError> {
    let pk = team_pk(team_id);
    let old = &before.flag;
    after.id = old.id;
    after.team_id = team_id;
    after.version = old.version + 1;
    after.created_at = old.created_at;
    after.created_by = old.created_by;
    after.updated_at = Some(at);

    let mut item = Item::of(pk.clone(), flag_sk(old.id), &after)?;
    item.version = before.item_version + 1;
    let mut ops = vec![WriteOp::Put {
        item,
        condition: Condition::VersionEquals(before.item_version),
    }];
    let was_live = !old.deleted;
    let is_live = !after.deleted;
    if was_live && (!is_live || old.key != after.key) {
        ops.push(WriteOp::Delete {
            pk: pk.clone(),
            sk: key_sk(&old.key),
            condition: Condition::None,
        });
    }
    if is_live && (!was_live || old.key != after.key) {
        ops.push(claim_op(team_id, &after)?);
    }
    let before_value = encode(&pk, old)?;
    let after_value = encode(&pk, &after)?;
    let activity = if was_live && !is_live {
        activity::DELETED
    } else {
        activity::UPDATED
    };
    ops.push(
        record(
            team_id,
            actor,
            activity,
            Some(&before_value),
            &after_value,
            &after,
            at,
        )
        .put_op()?,
    );
    Ok(Planned { flag: after, ops })
}

/// Why a transaction holding [`plan_save`]'s ops failed its conditions.
pub async fn save_failure(store: &dyn Store, team_id: i64, before: &Stored) -> WriteError {
    match store.get(&team_pk(team_id), &flag_sk(before.flag.id)).await {
        Err(error) => error.into(),
        Ok(None) => WriteError::NotFound,
        Ok(Some(item)) if item.version != before.item_version => WriteError::Raced,
        // The flag is as read, so the new key's claim is what failed.
        Ok(Some(_)) => WriteError::KeyTaken,
    }
}

/// Replaces `before` (as read) by `after` in one attempt (see [`plan_save`]).
/// [`WriteError::Raced`] when the flag changed since `before` was read.
pub async fn save(
    store: &dyn Store,
    team_id: i64,
    before: &Stored,
    after: FeatureFlag,
    actor: &Actor,
    at: DateTime<Utc>,
) -> Result<FeatureFlag, WriteError> {
    let planned = plan_save(team_id, before, after, actor, at)?;
    match store.transact_write(planned.ops).await {
        Ok(()) => Ok(planned.flag),
        Err(StoreError::ConditionFailed) => Err(save_failure(store, team_id, before).await),
        Err(other) => Err(other.into()),
    }
}

fn encode(pk: &str, flag: &FeatureFlag) -> Result<serde_json::Value, StoreError> {
    serde_json::to_value(flag).map_err(|source| StoreError::Encode {
        pk: pk.to_owned(),
        sk: flag_sk(flag.id),
        source,
    })
}

fn claim_op(team_id: i64, flag: &FeatureFlag) -> Result<WriteOp, StoreError> {
    Ok(WriteOp::Put {
        item: Item::of(
            team_pk(team_id),
            key_sk(&flag.key),
            &KeyClaim { flag_id: flag.id },
        )?,
        condition: Condition::NotExists,
    })
}

fn record<'a>(
    team_id: i64,
    actor: &Actor,
    activity: &'a str,
    before: Option<&'a serde_json::Value>,
    after: &'a serde_json::Value,
    flag: &FeatureFlag,
    at: DateTime<Utc>,
) -> Record<'a> {
    Record {
        team_id,
        actor: actor.clone(),
        activity,
        scope: SCOPE,
        item_id: flag.id.to_string(),
        name: Some(flag.key.clone()),
        before,
        after,
        ignored_fields: IGNORED_IN_DIFFS,
        at,
    }
}

/// The claim of `key` in a project, if a live flag holds it: the holder's id.
pub async fn key_holder(
    store: &dyn Store,
    team_id: i64,
    key: &str,
) -> Result<Option<i64>, StoreError> {
    store
        .get(&team_pk(team_id), &key_sk(key))
        .await?
        .map(|item| item.parse::<KeyClaim>().map(|claim| claim.flag_id))
        .transpose()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn sample_filters(rollout_percentage: f64) -> FlagFilters {
        serde_json::from_value(
            json!({"groups": [{"properties": [], "rollout_percentage": rollout_percentage}]}),
        )
        .unwrap()
    }

    fn new_flag(key: &str) -> NewFlag {
        NewFlag {
            key: key.into(),
            name: String::new(),
            filters: sample_filters(50.0),
            active: true,
            ensure_experience_continuity: false,
            evaluation_runtime: EvaluationRuntime::All,
            evaluation_tags: Vec::new(),
            created_by: None,
        }
    }

    #[tokio::test]
    async fn ids_keys_updates_and_soft_deletes() {
        let store = common::testing::memory_store();
        let actor = Actor::system();
        let now = Utc::now();
        let a = create(&store, 1, new_flag("a"), &actor, now).await.unwrap();
        let b = create(&store, 1, new_flag("b"), &actor, now).await.unwrap();
        let other = create(&store, 2, new_flag("a"), &actor, now).await.unwrap();
        assert_eq!((a.id, b.id, other.id), (1, 2, 1));
        assert!(matches!(
            create(&store, 1, new_flag("a"), &actor, now).await,
            Err(WriteError::KeyTaken)
        ));

        // Renaming onto a taken key fails; a stale read races.
        let stored_b = get(&store, 1, b.id).await.unwrap().unwrap();
        let mut renamed = stored_b.flag.clone();
        renamed.key = "a".into();
        assert!(matches!(
            save(&store, 1, &stored_b, renamed.clone(), &actor, now).await,
            Err(WriteError::KeyTaken)
        ));
        renamed.key = "c".into();
        let saved = save(&store, 1, &stored_b, renamed.clone(), &actor, now)
            .await
            .unwrap();
        assert_eq!(saved.version, 2);
        assert!(matches!(
            save(&store, 1, &stored_b, renamed, &actor, now).await,
            Err(WriteError::Raced)
        ));
        assert_eq!(key_holder(&store, 1, "b").await.unwrap(), None);
        assert_eq!(key_holder(&store, 1, "c").await.unwrap(), Some(b.id));

        // Soft delete releases the key, which a new flag may take.
        let stored_a = get(&store, 1, a.id).await.unwrap().unwrap();
        let mut deleted = stored_a.flag.clone();
        deleted.deleted = true;
        save(&store, 1, &stored_a, deleted, &actor, now)
            .await
            .unwrap();
        assert_eq!(get_live(&store, 1, a.id).await.unwrap(), None);
        let again = create(&store, 1, new_flag("a"), &actor, now).await.unwrap();
        assert_eq!(again.id, 3);
        let keys: Vec<String> = list_live(&store, 1)
            .await
            .unwrap()
            .into_iter()
            .map(|f| f.key)
            .collect();
        assert_eq!(keys, ["c", "a"]);

        let history = activity::list(&store, 1, SCOPE, Some("1")).await.unwrap();
        let kinds: Vec<&str> = history.iter().map(|e| e.activity.as_str()).collect();
        assert_eq!(kinds, ["deleted", "created"]);
        let change = &history[0].detail.changes.as_ref().unwrap()[0];
        assert_eq!(
            (change.field.as_str(), &change.before, &change.after),
            ("deleted", &json!(false), &json!(true))
        );
    }

    #[test]
    fn sort_keys_order_by_id() {
        assert!(flag_sk(9) < flag_sk(10));
        assert!(!flag_sk(1).starts_with("FLAGKEY#"));
    }
}
