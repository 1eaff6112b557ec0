//! The read side of persons: a person as the Store keeps it and where it lives. The lake's
//! committer writes them (`lake::persons`); the flags function reads them here without linking
//! the lake or the query engine.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use uuid::Uuid;

use crate::store::{Store, StoreError};

/// Sort key of a person item (its partition key is [`person_pk`]).
pub const PERSON_SK: &str = "PERSON";
/// Sort key of a distinct id's link to its person (partition key [`distinct_pk`]).
pub const DISTINCT_SK: &str = "DISTINCT";

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Person {
    pub uuid: Uuid,
    pub team_id: i64,
    pub properties: Map<String, Value>,
    pub is_identified: bool,
    pub created_at: DateTime<Utc>,
}

/// A distinct id and the person it belongs to.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct DistinctId {
    pub distinct_id: String,
    pub person: Uuid,
}

pub fn person_pk(team_id: i64, uuid: Uuid) -> String {
    format!("PERSON#{team_id}#{uuid}")
}

pub fn distinct_pk(team_id: i64, distinct_id: &str) -> String {
    format!("DISTINCT#{team_id}#{distinct_id}")
}

/// The person id a distinct id is linked to, if any.
pub async fn person_id_of(
    store: &dyn Store,
    team_id: i64,
    distinct_id: &str,
) -> Result<Option<Uuid>, StoreError> {
    store
        .get(&distinct_pk(team_id, distinct_id), DISTINCT_SK)
        .await?
        .map(|item| item.parse::<DistinctId>().map(|link| link.person))
        .transpose()
}

/// A person by id.
pub async fn load(
    store: &dyn Store,
    team_id: i64,
    uuid: Uuid,
) -> Result<Option<Person>, StoreError> {
    store
        .get(&person_pk(team_id, uuid), PERSON_SK)
        .await?
        .map(|item| item.parse())
        .transpose()
}

/// The person a distinct id belongs to, if any (two Store reads).
pub async fn person_of(
    store: &dyn Store,
    team_id: i64,
    distinct_id: &str,
) -> Result<Option<Person>, StoreError> {
    match person_id_of(store, team_id, distinct_id).await? {
        Some(uuid) => load(store, team_id, uuid).await,
        None => Ok(None),
    }
}
