//! Persons as the Store keeps them and where they live. The lake's committer resolves and merges
//! them (`lake::persons`); the flags function reads them, and the persons API lists, edits and
//! deletes them, here, without linking the lake or the query engine.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use uuid::Uuid;

use crate::store::{
    self, Condition, Index, MAX_TRANSACTION_ITEMS, QueryOptions, Store, StoreError, WriteOp,
};

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

/// Where a project's persons revision lives: a token the persons API rewrites with every edit
/// and delete. Ingestion's changes need none: they are written before the Delta commit of their
/// events, so the events table's version moves after them. Together the two say whether a
/// process's copy of the persons is current (the query engine's `persons` table).
const REVISION_PK: &str = "PERSONS_REVISION";
const REVISION_SK: &str = "REVISION";

#[derive(Serialize, Deserialize)]
struct Revision {
    revision: Uuid,
}

/// The write, in the transaction of an edit or delete, that marks the project's persons changed.
pub fn revision_bump(team_id: i64) -> Result<WriteOp, StoreError> {
    let revision = Revision {
        revision: Uuid::new_v4(),
    };
    Ok(WriteOp::Put {
        item: store::Item::of(format!("{REVISION_PK}#{team_id}"), REVISION_SK, &revision)?,
        condition: Condition::None,
    })
}

/// The project's persons revision (`None` until the API first edits or deletes a person).
pub async fn revision(store: &dyn Store, team_id: i64) -> Result<Option<Uuid>, StoreError> {
    let item = store
        .get(&format!("{REVISION_PK}#{team_id}"), REVISION_SK)
        .await?;
    Ok(match item {
        Some(item) => Some(item.parse::<Revision>()?.revision),
        None => None,
    })
}

/// Every person of a project is listed on GSI1 under this key, by uuid.
pub fn persons_index(team_id: i64) -> String {
    format!("PERSONS#{team_id}")
}

/// A person's distinct-id links are listed on GSI1 under this key.
pub fn distinct_ids_index(team_id: i64, person: Uuid) -> String {
    format!("PDIDS#{team_id}#{person}")
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

/// One page of a project's persons, newest uuid first (person ids start with their first
/// event's time), and the cursor of the next page when there may be one.
pub async fn page(
    store: &dyn Store,
    team_id: i64,
    limit: usize,
    cursor: Option<String>,
) -> Result<(Vec<Person>, Option<String>), StoreError> {
    let page = store
        .query(
            &persons_index(team_id),
            QueryOptions {
                index: Index::Gsi1,
                limit: Some(limit),
                cursor,
                descending: true,
                ..Default::default()
            },
        )
        .await?;
    let persons = page
        .items
        .iter()
        .map(|item| item.parse())
        .collect::<Result<_, _>>()?;
    Ok((persons, page.cursor))
}

/// A person's distinct ids, in key order.
pub async fn distinct_ids(
    store: &dyn Store,
    team_id: i64,
    person: Uuid,
) -> Result<Vec<String>, StoreError> {
    store::query_all(store, &distinct_ids_index(team_id, person), Index::Gsi1)
        .await?
        .iter()
        .map(|item| item.parse::<DistinctId>().map(|link| link.distinct_id))
        .collect()
}

/// Sets and then unsets properties of a person as a `$set`/`$unset` event would (`None`: no
/// such person). `with` gives the writes that go in the same transaction, from the person as
/// read and as changed (the activity entry). Optimistic: a concurrent commit of the same person
/// is retried over.
pub async fn update_properties<F>(
    store: &dyn Store,
    team_id: i64,
    uuid: Uuid,
    set: &Map<String, Value>,
    unset: &[String],
    with: F,
) -> Result<Option<Person>, StoreError>
where
    F: Fn(&Person, &Person) -> Result<Vec<WriteOp>, StoreError>,
{
    let pk = person_pk(team_id, uuid);
    for attempt in 0..store::UPDATE_ATTEMPTS {
        if attempt > 0 {
            tokio::time::sleep(store::conflict_backoff(attempt)).await;
        }
        let Some(current) = store.get(&pk, PERSON_SK).await? else {
            return Ok(None);
        };
        let before: Person = current.parse()?;
        let mut after = before.clone();
        after
            .properties
            .extend(set.iter().map(|(key, value)| (key.clone(), value.clone())));
        for key in unset {
            after.properties.remove(key);
        }
        let mut item = current.clone();
        item.set_data(&after)?;
        item.version = current.version + 1;
        let mut ops = vec![
            WriteOp::Put {
                item,
                condition: Condition::VersionEquals(current.version),
            },
            revision_bump(team_id)?,
        ];
        ops.extend(with(&before, &after)?);
        match store.transact_write(ops).await {
            Ok(()) => return Ok(Some(after)),
            Err(StoreError::ConditionFailed) => continue,
            Err(other) => return Err(other),
        }
    }
    Err(StoreError::ConditionFailed)
}

/// Deletes a person and every distinct-id link to them, with `with` (the activity entry) in the
/// transaction that deletes the person; returns the distinct ids it had. An event for one of
/// them later makes a new person, as in PostHog.
pub async fn delete(
    store: &dyn Store,
    team_id: i64,
    uuid: Uuid,
    with: Vec<WriteOp>,
) -> Result<Vec<String>, StoreError> {
    let ids = distinct_ids(store, team_id, uuid).await?;
    let mut links: Vec<WriteOp> = ids
        .iter()
        .map(|distinct_id| WriteOp::Delete {
            pk: distinct_pk(team_id, distinct_id),
            sk: DISTINCT_SK.to_owned(),
            condition: Condition::None,
        })
        .collect();
    let mut last = vec![
        WriteOp::Delete {
            pk: person_pk(team_id, uuid),
            sk: PERSON_SK.to_owned(),
            condition: Condition::None,
        },
        revision_bump(team_id)?,
    ];
    last.extend(with);
    // The links first, the person last (with as many links as fit beside it): a delete cut
    // short leaves a person that can be deleted again, never links to nobody.
    let room = MAX_TRANSACTION_ITEMS.saturating_sub(last.len());
    let beside = links.split_off(links.len().saturating_sub(room));
    for chunk in links.chunks(MAX_TRANSACTION_ITEMS) {
        store.transact_write(chunk.to_vec()).await?;
    }
    store.transact_write([beside, last].concat()).await?;
    Ok(ids)
}

/// Person reads in flight at once when a page of persons is shown.
const CONCURRENT_READS: usize = 16;

/// Properties PostHog shows as a person's name, first found wins
/// (`PERSON_DEFAULT_DISPLAY_NAME_PROPERTIES`).
const DISPLAY_NAME_PROPERTIES: [&str; 8] = [
    "email", "Email", "$email", "name", "Name", "username", "Username", "UserName",
];

/// A person as PostHog's `PersonSerializer` shows them. `id` is the uuid: persons here have no
/// other id, and every route that takes an id takes the uuid (as PostHog's do).
#[derive(Debug, Clone, Serialize)]
pub struct PersonView {
    pub id: Uuid,
    pub name: String,
    /// Identified ids first, anonymous (uuid-shaped) ones after, as PostHog sorts them.
    pub distinct_ids: Vec<String>,
    pub properties: Map<String, Value>,
    pub created_at: DateTime<Utc>,
    pub uuid: Uuid,
}

impl PersonView {
    pub fn new(person: Person, mut distinct_ids: Vec<String>) -> Self {
        distinct_ids.sort_by_key(|id| is_anonymous_id(id));
        let name = DISPLAY_NAME_PROPERTIES
            .iter()
            .find_map(|key| match person.properties.get(*key) {
                Some(Value::String(text)) if !text.is_empty() => Some(text.clone()),
                Some(value) if !value.is_null() && value.as_bool() != Some(false) => {
                    Some(value.to_string())
                }
                _ => None,
            })
            .or_else(|| distinct_ids.first().cloned())
            .unwrap_or_else(|| person.uuid.to_string());
        Self {
            id: person.uuid,
            name,
            distinct_ids,
            properties: person.properties,
            created_at: person.created_at,
            uuid: person.uuid,
        }
    }

    /// Each person with their distinct ids (read concurrently), in the given order.
    pub async fn many(
        store: &dyn Store,
        team_id: i64,
        persons: Vec<Person>,
    ) -> Result<Vec<Self>, StoreError> {
        use futures::stream::{self, StreamExt, TryStreamExt};
        stream::iter(persons)
            .map(|person| async move {
                let ids = distinct_ids(store, team_id, person.uuid).await?;
                Ok::<_, StoreError>(Self::new(person, ids))
            })
            .buffered(CONCURRENT_READS)
            .try_collect()
            .await
    }
}

/// PostHog's `is_anonymous_id`: SDKs make anonymous ids as uuids.
fn is_anonymous_id(distinct_id: &str) -> bool {
    Uuid::try_parse(distinct_id).is_ok()
}

/// Sort-key prefix of a pending deletion of a deleted person's events, in the project's
/// partition (`TEAM#<id>`).
const EVENT_DELETION_PREFIX: &str = "EVENT_DELETION#";

/// A deleted person whose events are to be deleted from the lake. Compaction does it (PostHog
/// batches these too) and then drops the request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EventDeletion {
    pub person: Uuid,
    pub requested_at: DateTime<Utc>,
}

/// Records that `person`'s events are to go (again is harmless: one request per person).
pub async fn request_event_deletion(
    store: &dyn Store,
    team_id: i64,
    deletion: &EventDeletion,
) -> Result<(), StoreError> {
    let item = crate::store::Item::of(
        crate::repository::team_pk(team_id),
        format!("{EVENT_DELETION_PREFIX}{}", deletion.person),
        deletion,
    )?;
    store.put(item, Condition::None).await
}

/// The project's pending event deletions.
pub async fn event_deletions(
    store: &dyn Store,
    team_id: i64,
) -> Result<Vec<EventDeletion>, StoreError> {
    store::list_prefix(
        store,
        &crate::repository::team_pk(team_id),
        EVENT_DELETION_PREFIX,
    )
    .await
}

/// Drops requests whose events are gone.
pub async fn forget_event_deletions(
    store: &dyn Store,
    team_id: i64,
    persons: &[Uuid],
) -> Result<(), StoreError> {
    for person in persons {
        store
            .delete(
                &crate::repository::team_pk(team_id),
                &format!("{EVENT_DELETION_PREFIX}{person}"),
                Condition::None,
            )
            .await?;
    }
    Ok(())
}
