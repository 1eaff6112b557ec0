//! Surveys in the Store. A project's surveys live in its partition (`TEAM#<id>`) under
//! `SURVEY#<uuid v7>` (so a prefix query lists them in creation order), and each survey's name is
//! claimed by a `SURVEYNAME#<sha256 of the name>` item: the survey, its claim, its flags' writes
//! and its activity entry are one transaction, so two writers can never hold one name and no
//! change exists without its log entry. Writes are planned here and committed by the caller,
//! who may add the writes of the survey's flags ([`crate::flags`]).

use chrono::{DateTime, Utc};
use common::activity::{self, Actor, Record};
use common::store::{self, Condition, Item, Store, StoreError, WriteOp};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};
use uuid::Uuid;

use crate::Survey;

/// The activity log's scope for surveys (PostHog's model name).
pub const SCOPE: &str = "Survey";
/// PostHog's survey activities besides created / updated / deleted.
pub const LAUNCHED: &str = "launched";
pub const STOPPED: &str = "stopped";

const SURVEY_PREFIX: &str = "SURVEY#";
const NAME_PREFIX: &str = "SURVEYNAME#";

/// Top-level fields that are bookkeeping, not changes worth a log line.
const IGNORED_IN_DIFFS: &[&str] = &[
    "id",
    "team_id",
    "version",
    "created_at",
    "updated_at",
    "created_by",
    "headline_summary",
    "headline_response_count",
    "question_summaries",
];

pub fn team_pk(team_id: i64) -> String {
    format!("TEAM#{team_id}")
}

pub fn survey_sk(id: Uuid) -> String {
    format!("{SURVEY_PREFIX}{id}")
}

/// Hashed: a name may be 400 characters, more than a sort key should carry.
fn name_sk(name: &str) -> String {
    format!(
        "{NAME_PREFIX}{}",
        hex::encode(Sha256::digest(name.as_bytes()))
    )
}

#[derive(Serialize, Deserialize)]
struct NameClaim {
    survey_id: Uuid,
}

/// A survey as read, with the Store item's version that a write must still find.
#[derive(Debug, Clone, PartialEq)]
pub struct Stored {
    pub survey: Survey,
    pub item_version: u64,
}

/// Why a planned write did not happen.
#[derive(Debug, thiserror::Error)]
pub enum WriteError {
    /// Another survey of the project has this name.
    #[error("another survey has this name")]
    NameTaken,
    /// The survey (or one of its flags) changed since it was read; read again.
    #[error("the survey changed since it was read")]
    Raced,
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Every survey of a project, oldest first.
pub async fn list(store: &dyn Store, team_id: i64) -> Result<Vec<Survey>, StoreError> {
    store::list_prefix(store, &team_pk(team_id), SURVEY_PREFIX).await
}

pub async fn get(store: &dyn Store, team_id: i64, id: Uuid) -> Result<Option<Stored>, StoreError> {
    let stored = store::get_versioned(store, &team_pk(team_id), &survey_sk(id)).await?;
    Ok(stored.map(|(survey, item_version)| Stored {
        survey,
        item_version,
    }))
}

/// The writes that store a new survey (its `id`, `team_id` and `created_at` already set), its
/// name claim and its `created` entry.
pub fn plan_create(survey: &mut Survey, actor: &Actor) -> Result<Vec<WriteOp>, StoreError> {
    let pk = team_pk(survey.team_id);
    survey.version = 1;
    survey.updated_at = Some(survey.created_at);
    let after = encode(&pk, survey)?;
    Ok(vec![
        WriteOp::Put {
            item: Item::of(pk.clone(), survey_sk(survey.id), &*survey)?,
            condition: Condition::NotExists,
        },
        claim_op(survey)?,
        record(
            actor,
            activity::CREATED,
            None,
            &after,
            survey,
            survey.created_at,
        )
        .put_op()?,
    ])
}

/// The writes that replace `before` (as read) by `after`, logged as `activity` (`updated`,
/// `launched`, ...): bumps `version` and `updated_at` and moves the name claim when renamed.
pub fn plan_save(
    before: &Stored,
    after: &mut Survey,
    activity: &str,
    actor: &Actor,
    at: DateTime<Utc>,
) -> Result<Vec<WriteOp>, StoreError> {
    let old = &before.survey;
    let pk = team_pk(old.team_id);
    after.id = old.id;
    after.team_id = old.team_id;
    after.created_at = old.created_at;
    after.created_by = old.created_by;
    after.version = old.version + 1;
    after.updated_at = Some(at);
    let mut item = Item::of(pk.clone(), survey_sk(old.id), &*after)?;
    item.version = before.item_version + 1;
    let mut ops = vec![WriteOp::Put {
        item,
        condition: Condition::VersionEquals(before.item_version),
    }];
    if old.name != after.name {
        ops.push(WriteOp::Delete {
            pk: pk.clone(),
            sk: name_sk(&old.name),
            condition: Condition::None,
        });
        ops.push(claim_op(after)?);
    }
    let before_value = encode(&pk, old)?;
    let after_value = encode(&pk, after)?;
    ops.push(
        record(
            actor,
            activity,
            Some(&before_value),
            &after_value,
            after,
            at,
        )
        .put_op()?,
    );
    Ok(ops)
}

/// Bookkeeping that is not a user's change (a stored summary): written under the item's
/// version, without an activity entry.
pub fn plan_bookkeeping(before: &Stored, after: &Survey) -> Result<WriteOp, StoreError> {
    let mut item = Item::of(team_pk(after.team_id), survey_sk(before.survey.id), after)?;
    item.version = before.item_version + 1;
    Ok(WriteOp::Put {
        item,
        condition: Condition::VersionEquals(before.item_version),
    })
}

/// The writes that remove a survey (PostHog deletes it for good), its name claim, and log
/// `deleted`; the caller adds its flags' and archives' removal.
pub fn plan_delete(
    before: &Stored,
    actor: &Actor,
    at: DateTime<Utc>,
) -> Result<Vec<WriteOp>, StoreError> {
    let survey = &before.survey;
    let pk = team_pk(survey.team_id);
    let before_value = encode(&pk, survey)?;
    Ok(vec![
        WriteOp::Delete {
            pk: pk.clone(),
            sk: survey_sk(survey.id),
            condition: Condition::VersionEquals(before.item_version),
        },
        WriteOp::Delete {
            pk,
            sk: name_sk(&survey.name),
            condition: Condition::None,
        },
        record(actor, activity::DELETED, None, &before_value, survey, at).put_op()?,
    ])
}

/// Why a transaction holding this module's writes for `survey` failed its conditions: its name
/// is held by another survey ([`WriteError::NameTaken`]), else something changed under it.
pub async fn failure(store: &dyn Store, survey: &Survey) -> WriteError {
    match store
        .get(&team_pk(survey.team_id), &name_sk(&survey.name))
        .await
    {
        Err(error) => error.into(),
        Ok(Some(item)) => match item.parse::<NameClaim>() {
            Ok(claim) if claim.survey_id != survey.id => WriteError::NameTaken,
            Ok(_) => WriteError::Raced,
            Err(error) => error.into(),
        },
        Ok(None) => WriteError::Raced,
    }
}

/// Commits `ops` (planned for `survey`), telling a taken name from a race.
pub async fn commit(
    store: &dyn Store,
    survey: &Survey,
    ops: Vec<WriteOp>,
) -> Result<(), WriteError> {
    match store.transact_write(ops).await {
        Ok(()) => Ok(()),
        Err(StoreError::ConditionFailed) => Err(failure(store, survey).await),
        Err(other) => Err(other.into()),
    }
}

fn claim_op(survey: &Survey) -> Result<WriteOp, StoreError> {
    Ok(WriteOp::Put {
        item: Item::of(
            team_pk(survey.team_id),
            name_sk(&survey.name),
            &NameClaim {
                survey_id: survey.id,
            },
        )?,
        condition: Condition::NotExists,
    })
}

fn encode(pk: &str, survey: &Survey) -> Result<Value, StoreError> {
    serde_json::to_value(survey).map_err(|source| StoreError::Encode {
        pk: pk.to_owned(),
        sk: survey_sk(survey.id),
        source,
    })
}

/// An activity entry about `survey`.
pub fn record<'a>(
    actor: &Actor,
    activity: &'a str,
    before: Option<&'a Value>,
    after: &'a Value,
    survey: &Survey,
    at: DateTime<Utc>,
) -> Record<'a> {
    Record {
        team_id: survey.team_id,
        actor: actor.clone(),
        activity,
        scope: SCOPE,
        item_id: survey.id.to_string(),
        name: Some(survey.name.clone()),
        before,
        after,
        ignored_fields: IGNORED_IN_DIFFS,
        at,
    }
}
