//! Archived responses (PostHog's `SurveyResponseArchive`): a response is the representative
//! `survey sent` event of a submission, named by its uuid. An archive item lives in the team's
//! partition under `SURVEYARCHIVE#<survey id>#<response uuid>`, written with its activity entry
//! in one transaction; stats, counts and response lists can leave archived ones out.

use chrono::{DateTime, Utc};
use common::activity::Actor;
use common::store::{self, Condition, Item, Store, StoreError, WriteOp};
use serde::{Deserialize, Serialize};
use serde_json::json;
use uuid::Uuid;

use crate::Survey;
use common::repository::{record, team_pk};

pub const ARCHIVED: &str = "response_archived";
pub const UNARCHIVED: &str = "response_unarchived";

const PREFIX: &str = "SURVEYARCHIVE#";

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Archived {
    pub survey_id: Uuid,
    pub response_uuid: Uuid,
    pub archived_at: DateTime<Utc>,
}

fn survey_prefix(survey_id: Uuid) -> String {
    format!("{PREFIX}{survey_id}#")
}

fn archive_sk(survey_id: Uuid, response: Uuid) -> String {
    format!("{}{response}", survey_prefix(survey_id))
}

/// The archived response uuids of a survey.
pub async fn list(
    store: &dyn Store,
    team_id: i64,
    survey_id: Uuid,
) -> Result<Vec<Uuid>, StoreError> {
    let items: Vec<Archived> =
        store::list_prefix(store, &team_pk(team_id), &survey_prefix(survey_id)).await?;
    Ok(items.into_iter().map(|a| a.response_uuid).collect())
}

/// Every archived response of the project's surveys (one prefix query).
pub async fn list_all(store: &dyn Store, team_id: i64) -> Result<Vec<Archived>, StoreError> {
    store::list_prefix(store, &team_pk(team_id), PREFIX).await
}

/// Archives `response`; false when it already was (nothing written, nothing logged).
pub async fn archive(
    store: &dyn Store,
    survey: &Survey,
    response: Uuid,
    actor: &Actor,
    at: DateTime<Utc>,
) -> Result<bool, StoreError> {
    let archived = Archived {
        survey_id: survey.id,
        response_uuid: response,
        archived_at: at,
    };
    let after = json!({ "response_uuid": response });
    let ops = vec![
        WriteOp::Put {
            item: Item::of(
                team_pk(survey.team_id),
                archive_sk(survey.id, response),
                &archived,
            )?,
            condition: Condition::NotExists,
        },
        record(survey, actor, ARCHIVED, None, &after, at).put_op()?,
    ];
    match store.transact_write(ops).await {
        Ok(()) => Ok(true),
        Err(StoreError::ConditionFailed) => Ok(false),
        Err(other) => Err(other),
    }
}

/// Brings `response` back; false when it was not archived.
pub async fn unarchive(
    store: &dyn Store,
    survey: &Survey,
    response: Uuid,
    actor: &Actor,
    at: DateTime<Utc>,
) -> Result<bool, StoreError> {
    let before = json!({ "response_uuid": response });
    let ops = vec![
        WriteOp::Delete {
            pk: team_pk(survey.team_id),
            sk: archive_sk(survey.id, response),
            condition: Condition::Exists,
        },
        record(survey, actor, UNARCHIVED, None, &before, at).put_op()?,
    ];
    match store.transact_write(ops).await {
        Ok(()) => Ok(true),
        Err(StoreError::ConditionFailed) => Ok(false),
        Err(other) => Err(other),
    }
}

/// Removes every archive item of a deleted survey, a transaction at a time.
pub async fn remove_all(
    store: &dyn Store,
    team_id: i64,
    survey_id: Uuid,
) -> Result<(), StoreError> {
    let pk = team_pk(team_id);
    let uuids = list(store, team_id, survey_id).await?;
    for chunk in uuids.chunks(store::MAX_TRANSACTION_ITEMS) {
        let ops = chunk
            .iter()
            .map(|uuid| WriteOp::Delete {
                pk: pk.clone(),
                sk: archive_sk(survey_id, *uuid),
                condition: Condition::None,
            })
            .collect();
        store.transact_write(ops).await?;
    }
    Ok(())
}
