//! Flags in the Store. A project's flags live in its partition (`TEAM#<id>`) under
//! `FLAG#<zero-padded id>`, so one prefix query lists them in id order. Ids come from a counter
//! item of the project, and each live flag's key is claimed by a `FLAGKEY#<key>` item: the flag,
//! its claim, the counter and the activity entry are one transaction, so two writers can never
//! hold one key and no change exists without its log entry.

use chrono::{DateTime, Utc};
use common::activity::Actor;
use common::repository::{self as entities, Entity, Numbered, retry, team_pk};
use common::store::{self, Condition, Item, Store, StoreError, WriteOp};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::FeatureFlag;
use crate::model::{EvaluationRuntime, FlagFilters};

/// The activity log's scope for flags (PostHog's model name).
pub const SCOPE: &str = "FeatureFlag";

impl Entity for FeatureFlag {
    const PREFIX: &'static str = "FLAG#";
    const SCOPE: &'static str = SCOPE;
    /// A deleted flag keeps its history (PostHog's flags viewset reads it with the deleted).
    const HISTORY_OUTLIVES_DELETE: bool = true;

    fn display_name(&self) -> String {
        self.key.clone()
    }
}

impl Numbered for FeatureFlag {
    const COUNTER: &'static str = "COUNTER#FLAG";
}

common::stamped!(FeatureFlag, i64, soft_deleted);
common::entity_reads! { FeatureFlag, i64, Stored { flag, item_version }, live }

fn key_sk(key: &str) -> String {
    format!("FLAGKEY#{key}")
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

/// Why a flag's write was refused.
#[derive(Debug, thiserror::Error)]
pub enum Refusal {
    /// Another live flag of the project holds the key.
    #[error("another flag holds this key")]
    KeyTaken,
    #[error("the flag does not exist")]
    NotFound,
}

/// Why a write did not happen: a [`Refusal`], or the flag changed since it was read
/// ([`entities::WriteError::Raced`]: read it again), or the Store failed.
pub type WriteError = entities::WriteError<Refusal>;

#[derive(Serialize, Deserialize)]
struct KeyClaim {
    flag_id: i64,
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
    let count = i64::try_from(new.len()).unwrap_or(i64::MAX);
    if count == 0 {
        return Ok((Vec::new(), Vec::new()));
    }
    let (first, counter) =
        store::claim_next_ids(store, &team_pk(team_id), FeatureFlag::COUNTER, count).await?;
    let mut ops = vec![counter];
    let mut flags = Vec::with_capacity(new.len());
    for (id, new) in (first..).zip(new) {
        let mut flag = FeatureFlag {
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
        ops.extend(entities::plan_new(&mut flag, team_id, actor, at)?);
        ops.push(claim_op(team_id, &flag)?);
        flags.push(flag);
    }
    Ok((flags, ops))
}

/// Why a transaction holding [`plan_create`]'s ops failed its conditions: the key is taken
/// ([`Refusal::KeyTaken`]), or else another writer took the id (`None`: plan again).
pub async fn create_failure(
    store: &dyn Store,
    team_id: i64,
    key: &str,
) -> Result<Option<WriteError>, StoreError> {
    Ok(store
        .get(&team_pk(team_id), &key_sk(key))
        .await?
        .map(|_| WriteError::Refused(Refusal::KeyTaken)))
}

/// Stores a new flag with the next id of the project, its key claim and its `created` entry.
/// A lost race on the counter is retried; a taken key is [`Refusal::KeyTaken`].
pub async fn create(
    store: &dyn Store,
    team_id: i64,
    new: NewFlag,
    actor: &Actor,
    at: DateTime<Utc>,
) -> Result<FeatureFlag, WriteError> {
    let new = &new;
    retry(
        store::UPDATE_ATTEMPTS,
        std::convert::identity,
        || async move {
            let planned = plan_create(store, team_id, new.clone(), actor, at).await?;
            if entities::commit(store, planned.ops).await? {
                return Ok(Ok(planned.flag));
            }
            if let Some(error) = create_failure(store, team_id, &planned.flag.key).await? {
                return Err(error);
            }
            // Another flag took this id first: count again.
            Ok(Err(WriteError::Raced))
        },
    )
    .await
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
    let old = &before.flag;
    let was_live = !old.deleted;
    let is_live = !after.deleted;
    let mut ops = entities::plan_edit(team_id, old, before.item_version, &mut after, actor, at)?;
    if was_live && (!is_live || old.key != after.key) {
        ops.push(WriteOp::Delete {
            pk: team_pk(team_id),
            sk: key_sk(&old.key),
            condition: Condition::None,
        });
    }
    if is_live && (!was_live || old.key != after.key) {
        ops.push(claim_op(team_id, &after)?);
    }
    Ok(Planned { flag: after, ops })
}

/// Why a transaction holding [`plan_save`]'s ops failed its conditions.
pub async fn save_failure(store: &dyn Store, team_id: i64, before: &Stored) -> WriteError {
    match store
        .get(&team_pk(team_id), &FeatureFlag::sort_key(&before.flag.id))
        .await
    {
        Err(error) => error.into(),
        Ok(None) => WriteError::Refused(Refusal::NotFound),
        Ok(Some(item)) if item.version != before.item_version => WriteError::Raced,
        // The flag is as read, so the new key's claim is what failed.
        Ok(Some(_)) => WriteError::Refused(Refusal::KeyTaken),
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
    match entities::commit(store, planned.ops).await? {
        true => Ok(planned.flag),
        false => Err(save_failure(store, team_id, before).await),
    }
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
    use chrono::TimeZone;
    use common::activity;
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
        let now = Utc.with_ymd_and_hms(2025, 1, 2, 3, 4, 5).unwrap();
        let a = create(&store, 1, new_flag("a"), &actor, now).await.unwrap();
        let b = create(&store, 1, new_flag("b"), &actor, now).await.unwrap();
        let other = create(&store, 2, new_flag("a"), &actor, now).await.unwrap();
        assert_eq!((a.id, b.id, other.id), (1, 2, 1));
        assert!(matches!(
            create(&store, 1, new_flag("a"), &actor, now).await,
            Err(WriteError::Refused(Refusal::KeyTaken))
        ));

        // Renaming onto a taken key fails; a stale read races.
        let stored_b = get(&store, 1, b.id).await.unwrap().unwrap();
        let mut renamed = stored_b.flag.clone();
        renamed.key = "a".into();
        assert!(matches!(
            save(&store, 1, &stored_b, renamed.clone(), &actor, now).await,
            Err(WriteError::Refused(Refusal::KeyTaken))
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
        assert!(FeatureFlag::sort_key(&9) < FeatureFlag::sort_key(&10));
        assert!(!FeatureFlag::sort_key(&1).starts_with("FLAGKEY#"));
    }
}
