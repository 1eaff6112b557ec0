//! Surveys in the Store. A project's surveys live in its partition (`TEAM#<id>`) under
//! `SURVEY#<uuid v7>` (so a prefix query lists them in creation order), and each survey's name is
//! claimed by a `SURVEYNAME#<sha256 of the name>` item: the survey, its claim, its flags' writes
//! and its activity entry are one transaction, so two writers can never hold one name and no
//! change exists without its log entry. Writes are planned here and committed by the caller,
//! who may add the writes of the survey's flags ([`crate::flags`]).

use chrono::{DateTime, Utc};
use common::activity::Actor;
use common::repository::{self as entities, Entity, team_pk};
use common::store::{Condition, Item, Store, StoreError, WriteOp};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use uuid::Uuid;

use crate::Survey;

/// The activity log's scope for surveys (PostHog's model name).
pub const SCOPE: &str = "Survey";
/// PostHog's survey activities besides created / updated / deleted.
pub const LAUNCHED: &str = "launched";
pub const STOPPED: &str = "stopped";

const NAME_PREFIX: &str = "SURVEYNAME#";

/// Top-level fields that are bookkeeping, not changes worth a log line.
const IGNORED_IN_DIFFS: [&str; 9] = entities::bookkeeping_and(&[
    "headline_summary",
    "headline_response_count",
    "question_summaries",
]);

impl Entity for Survey {
    const PREFIX: &'static str = "SURVEY#";
    const SCOPE: &'static str = SCOPE;
    const IGNORED_IN_DIFFS: &'static [&'static str] = &IGNORED_IN_DIFFS;

    fn display_name(&self) -> String {
        self.name.clone()
    }
}

common::stamped!(Survey, Uuid);
common::entity_reads! { Survey, Uuid, Stored { survey, item_version } }

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

/// Why a survey's write was refused: another survey of the project has this name.
#[derive(Debug, thiserror::Error)]
#[error("another survey has this name")]
pub struct NameTaken;

/// Why a planned write did not happen: [`NameTaken`], or the survey (or one of its flags)
/// changed since it was read ([`entities::WriteError::Raced`]: read again), or the Store failed.
pub type WriteError = entities::WriteError<NameTaken>;

/// The writes that store a new survey (its `id`, `team_id` and `created_at` already set), its
/// name claim and its `created` entry.
pub fn plan_create(survey: &mut Survey, actor: &Actor) -> Result<Vec<WriteOp>, StoreError> {
    let (team_id, at) = (survey.team_id, survey.created_at);
    let mut ops = entities::plan_new(survey, team_id, actor, at)?;
    ops.push(claim_op(survey)?);
    Ok(ops)
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
    let mut ops = entities::plan_save(
        old.team_id,
        old,
        before.item_version,
        after,
        activity,
        actor,
        at,
    )?;
    if old.name != after.name {
        ops.push(WriteOp::Delete {
            pk: team_pk(old.team_id),
            sk: name_sk(&old.name),
            condition: Condition::None,
        });
        ops.push(claim_op(after)?);
    }
    Ok(ops)
}

/// Bookkeeping that is not a user's change (a stored summary): written under the item's
/// version, without an activity entry.
pub fn plan_bookkeeping(before: &Stored, after: &Survey) -> Result<WriteOp, StoreError> {
    entities::put_over(after, before.item_version)
}

/// The writes that remove a survey (PostHog deletes it for good), its name claim, and log
/// `deleted`; the caller adds its flags' and archives' removal.
pub fn plan_delete(
    before: &Stored,
    actor: &Actor,
    at: DateTime<Utc>,
) -> Result<Vec<WriteOp>, StoreError> {
    let survey = &before.survey;
    let mut ops = entities::plan_delete(survey, before.item_version, actor, at)?;
    ops.push(WriteOp::Delete {
        pk: team_pk(survey.team_id),
        sk: name_sk(&survey.name),
        condition: Condition::None,
    });
    Ok(ops)
}

/// Why a transaction holding this module's writes for `survey` failed its conditions: its name
/// is held by another survey ([`NameTaken`]), else something changed under it.
pub async fn failure(store: &dyn Store, survey: &Survey) -> WriteError {
    match store
        .get(&team_pk(survey.team_id), &name_sk(&survey.name))
        .await
    {
        Err(error) => error.into(),
        Ok(Some(item)) => match item.parse::<NameClaim>() {
            Ok(claim) if claim.survey_id != survey.id => WriteError::Refused(NameTaken),
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
    match entities::commit(store, ops).await? {
        true => Ok(()),
        false => Err(failure(store, survey).await),
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
