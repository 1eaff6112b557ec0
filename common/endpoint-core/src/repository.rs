//! Endpoints in the Store, in the project's partition (`TEAM#<id>`):
//!
//! - `ENDPOINT#<name>`: the endpoint (the name is the key, so a name is held by one endpoint);
//! - `ENDPOINTV#<endpoint uuid>#<version, 10 digits>`: its versions, in order under one prefix;
//! - `ENDPOINTMAT#<endpoint uuid>#<version>`: a materialized version's state;
//! - `ENDPOINTRUN#<name>`: when it was last run;
//! - `ENDPOINTDELETED#<endpoint uuid>`: a soft-deleted endpoint.
//!
//! None of the other prefixes starts with `ENDPOINT#`, so listing endpoints reads only them.
//! Every change to an endpoint or its versions writes the endpoint item under its version in the
//! same transaction: the endpoint item is the lock of the whole aggregate, so two concurrent
//! updates never both commit on the same reads (and no change exists without its activity entry).

use chrono::{DateTime, Utc};
use common::ApiError;
use common::activity::{self, Actor};
use common::repository::{Entity, Fields, record, team_pk};
use common::store::{self, Condition, Item, MAX_TRANSACTION_ITEMS, Store, StoreError, WriteOp};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use uuid::Uuid;

use crate::model::{Endpoint, LastExecution, Materialization, Version};

/// The activity log's scope for endpoints (PostHog's model name).
pub const SCOPE: &str = "Endpoint";

const VERSION_PREFIX: &str = "ENDPOINTV#";
const MATERIALIZATION_PREFIX: &str = "ENDPOINTMAT#";
const RUN_PREFIX: &str = "ENDPOINTRUN#";
const DELETED_PREFIX: &str = "ENDPOINTDELETED#";

/// Bookkeeping fields, not changes worth a log line.
const IGNORED_IN_DIFFS: &[&str] = &[
    "id",
    "team_id",
    "endpoint_id",
    "created_at",
    "updated_at",
    "created_by",
];

/// Keyed by name: the name is held by one endpoint.
impl Fields for Endpoint {
    type Key = str;

    fn key(&self) -> &str {
        &self.name
    }

    fn team_id(&self) -> i64 {
        self.team_id
    }
}

/// Deleting an endpoint moves it aside ([`DELETED_PREFIX`]): every item under the prefix is live.
impl Entity for Endpoint {
    const PREFIX: &'static str = "ENDPOINT#";
    const SCOPE: &'static str = SCOPE;
    const IGNORED_IN_DIFFS: &'static [&'static str] = IGNORED_IN_DIFFS;

    fn display_name(&self) -> String {
        self.name.clone()
    }

    /// Its uuid: the name may be taken again by another endpoint.
    fn item_id(&self) -> String {
        self.id.to_string()
    }
}

common::entity_reads! { Endpoint, &str, Stored { endpoint, version } }

pub fn endpoint_sk(name: &str) -> String {
    Endpoint::sort_key(name)
}

/// Zero-padded so versions sort numerically under their prefix.
pub fn version_sk(endpoint_id: Uuid, version: u32) -> String {
    format!("{VERSION_PREFIX}{endpoint_id}#{version:010}")
}

pub fn materialization_sk(endpoint_id: Uuid, version: u32) -> String {
    format!("{MATERIALIZATION_PREFIX}{endpoint_id}#{version:010}")
}

pub fn run_sk(name: &str) -> String {
    format!("{RUN_PREFIX}{name}")
}

pub fn deleted_sk(endpoint_id: Uuid) -> String {
    format!("{DELETED_PREFIX}{endpoint_id}")
}

/// A soft-deleted endpoint, kept for the record.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Deleted {
    #[serde(flatten)]
    pub endpoint: Endpoint,
    pub deleted_at: DateTime<Utc>,
}

/// Every live endpoint of a project, by name.
pub async fn list(store: &dyn Store, team_id: i64) -> Result<Vec<Endpoint>, StoreError> {
    let mut endpoints = list_all(store, team_id).await?;
    endpoints.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(endpoints)
}

pub async fn version(
    store: &dyn Store,
    team_id: i64,
    endpoint_id: Uuid,
    n: u32,
) -> Result<Option<Version>, StoreError> {
    Ok(version_for_update(store, team_id, endpoint_id, n)
        .await?
        .map(|(version, _)| version))
}

/// A version and its Store item's version.
pub async fn version_for_update(
    store: &dyn Store,
    team_id: i64,
    endpoint_id: Uuid,
    n: u32,
) -> Result<Option<(Version, u64)>, StoreError> {
    store::get_versioned(store, &team_pk(team_id), &version_sk(endpoint_id, n)).await
}

/// Every version of an endpoint, newest first (PostHog's ordering).
pub async fn versions(
    store: &dyn Store,
    team_id: i64,
    endpoint_id: Uuid,
) -> Result<Vec<Version>, StoreError> {
    let mut versions: Vec<Version> =
        store::list_prefix(store, &team_pk(team_id), &versions_prefix(endpoint_id)).await?;
    versions.reverse();
    Ok(versions)
}

/// The version an endpoint points at; its absence is corrupt data.
pub async fn current(
    store: &dyn Store,
    team_id: i64,
    endpoint: &Endpoint,
) -> Result<Version, StoreError> {
    version(store, team_id, endpoint.id, endpoint.current_version)
        .await?
        .ok_or_else(|| missing_current(endpoint))
}

fn versions_prefix(endpoint_id: Uuid) -> String {
    format!("{VERSION_PREFIX}{endpoint_id}#")
}

fn missing_current(endpoint: &Endpoint) -> StoreError {
    StoreError::Encoding(format!(
        "endpoint {} ({}) has no version {}",
        endpoint.name, endpoint.id, endpoint.current_version
    ))
}

/// Why a create did not happen.
#[derive(Debug, thiserror::Error)]
pub enum CreateError {
    #[error("an endpoint of this name exists")]
    NameTaken,
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl From<CreateError> for ApiError {
    fn from(error: CreateError) -> Self {
        match error {
            CreateError::NameTaken => ApiError::field(
                "name",
                "unique",
                "An endpoint with this name already exists for this team.",
            ),
            CreateError::Store(error) => error.into(),
        }
    }
}

/// Stores a new endpoint and its first version, with its `created` entry, in one transaction.
pub async fn create(
    store: &dyn Store,
    endpoint: &Endpoint,
    version: &Version,
    actor: &Actor,
) -> Result<(), CreateError> {
    let pk = team_pk(endpoint.team_id);
    let after = view(endpoint, version, &[])?;
    let ops = vec![
        WriteOp::Put {
            item: Item::of(pk.clone(), endpoint_sk(&endpoint.name), endpoint)?,
            condition: Condition::NotExists,
        },
        WriteOp::Put {
            item: Item::of(pk, version_sk(endpoint.id, version.version), version)?,
            condition: Condition::NotExists,
        },
        record(
            endpoint,
            actor,
            activity::CREATED,
            None,
            &after,
            endpoint.created_at,
        )
        .put_op()?,
    ];
    match store.transact_write(ops).await {
        Ok(()) => Ok(()),
        // The version and the entry are keyed by fresh uuids: only the name can be held.
        Err(StoreError::ConditionFailed) => Err(CreateError::NameTaken),
        Err(other) => Err(other.into()),
    }
}

/// What an update makes of an endpoint, from its state as read.
#[derive(Debug, Clone, PartialEq)]
pub struct Change {
    /// The endpoint as it should be (its id, team, name and creation stay as read).
    pub endpoint: Endpoint,
    /// A new version (it must not exist yet), when the query changed.
    pub new_version: Option<Version>,
    /// Existing versions rewritten (`is_active`, `description`, ...).
    pub changed_versions: Vec<Version>,
}

/// What an update did.
#[derive(Debug, Clone, PartialEq)]
pub struct Updated {
    pub endpoint: Endpoint,
    pub before: Endpoint,
    pub new_version: Option<Version>,
    pub changed_versions: Vec<Version>,
}

#[derive(Debug, thiserror::Error)]
pub enum UpdateError {
    #[error("no such endpoint")]
    NotFound,
    /// The change was refused (bad input for this endpoint's state).
    #[error("update rejected: {0}")]
    Rejected(ApiError),
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl From<UpdateError> for ApiError {
    fn from(error: UpdateError) -> Self {
        match error {
            UpdateError::NotFound => ApiError::not_found(),
            UpdateError::Rejected(error) => error,
            UpdateError::Store(error) => error.into(),
        }
    }
}

/// Changes an endpoint under optimistic locking: reads it and its current version, asks
/// `change`, and commits the endpoint, the new version, the rewritten versions and the activity
/// entry in one transaction. An update that lost the race to another writer's commit reads
/// again and calls `change` again, however many writers go first
/// ([`store::Contention`]): no update fails for another's sake, and two updates
/// that each change the query make two versions, never one.
pub async fn update<F>(
    store: &dyn Store,
    team_id: i64,
    name: &str,
    actor: &Actor,
    mut change: F,
) -> Result<Updated, UpdateError>
where
    F: FnMut(&Endpoint, &Version) -> Result<Change, ApiError>,
{
    update_with_versions(store, team_id, name, actor, |endpoint, versions| {
        match versions
            .iter()
            .find(|v| v.version == endpoint.current_version)
        {
            Some(current) => change(endpoint, current),
            // Unreachable: `update_with_versions` checks the current version is there.
            None => Err(ApiError::internal(missing_current(endpoint))),
        }
    })
    .await
}

/// [`update`] for a change that needs every version (newest first), e.g. to rewrite a setting
/// on all of them: they are read again on every try, under the same lock.
pub async fn update_with_versions<F>(
    store: &dyn Store,
    team_id: i64,
    name: &str,
    actor: &Actor,
    mut change: F,
) -> Result<Updated, UpdateError>
where
    F: FnMut(&Endpoint, &[Version]) -> Result<Change, ApiError>,
{
    let pk = team_pk(team_id);
    let sk = endpoint_sk(name);
    let mut contention = store::Contention::default();
    loop {
        let Some((before, item_version)) =
            store::get_versioned::<Endpoint>(store, &pk, &sk).await?
        else {
            return Err(UpdateError::NotFound);
        };
        let items = store::query_prefix(store, &pk, &versions_prefix(before.id)).await?;
        let mut read = Vec::with_capacity(items.len());
        for item in items.iter().rev() {
            read.push((item.parse::<Version>()?, item.version));
        }
        let Some(current) = read
            .iter()
            .find(|(v, _)| v.version == before.current_version)
            .map(|(v, _)| v.clone())
        else {
            // A version is written with the endpoint that points at it: this is corrupt data.
            return Err(missing_current(&before).into());
        };
        let versions: Vec<Version> = read.iter().map(|(v, _)| v.clone()).collect();
        let mut planned = change(&before, &versions).map_err(UpdateError::Rejected)?;
        // What the key holds cannot change: the name is the key, the rest is history.
        planned.endpoint.id = before.id;
        planned.endpoint.team_id = before.team_id;
        planned.endpoint.name = before.name.clone();
        planned.endpoint.created_at = before.created_at;
        planned.endpoint.created_by = before.created_by;

        let ops = plan_update(&before, item_version, &current, &read, &planned, actor)?;
        match store.transact_write(ops).await {
            Ok(()) => {
                return Ok(Updated {
                    endpoint: planned.endpoint,
                    before,
                    new_version: planned.new_version,
                    changed_versions: planned.changed_versions,
                });
            }
            Err(error) if lost_race(&error) => contention.lost(item_version).await?,
            Err(error) => return Err(error.into()),
        }
    }
}

/// A transaction that failed because another writer got there first: read again and retry.
/// DynamoDB also cancels transactions that overlap one in flight (`TransactionConflict`).
fn lost_race(error: &StoreError) -> bool {
    match error {
        StoreError::ConditionFailed => true,
        StoreError::TransactionCancelled(reasons) => reasons.contains("TransactionConflict"),
        _ => false,
    }
}

fn plan_update(
    before: &Endpoint,
    item_version: u64,
    current: &Version,
    read: &[(Version, u64)],
    planned: &Change,
    actor: &Actor,
) -> Result<Vec<WriteOp>, StoreError> {
    let pk = team_pk(before.team_id);
    let after = &planned.endpoint;
    if planned.changed_versions.len() + 3 > MAX_TRANSACTION_ITEMS {
        return Err(StoreError::Invalid(format!(
            "an update rewrites at most {} versions, not {}",
            MAX_TRANSACTION_ITEMS - 3,
            planned.changed_versions.len()
        )));
    }
    let points_at_a_version = planned
        .new_version
        .iter()
        .map(|v| v.version)
        .chain(read.iter().map(|(v, _)| v.version))
        .any(|n| n == after.current_version);
    if !points_at_a_version {
        return Err(StoreError::Invalid(format!(
            "endpoint {} would point at version {}, which does not exist",
            before.name, after.current_version
        )));
    }
    let mut item = Item::of(pk.clone(), endpoint_sk(&before.name), after)?;
    item.version = item_version + 1;
    let mut ops = vec![WriteOp::Put {
        item,
        condition: Condition::VersionEquals(item_version),
    }];
    if let Some(new) = &planned.new_version {
        // An existing number fails the condition like a race does: the versions may have been
        // read after another update's commit, and only a fresh read tells.
        let mut new = new.clone();
        new.endpoint_id = before.id;
        ops.push(WriteOp::Put {
            item: Item::of(pk.clone(), version_sk(before.id, new.version), &new)?,
            condition: Condition::NotExists,
        });
    }
    for changed in &planned.changed_versions {
        let Some((_, stored)) = read.iter().find(|(v, _)| v.version == changed.version) else {
            return Err(StoreError::Invalid(format!(
                "endpoint {} has no version {} to rewrite",
                before.name, changed.version
            )));
        };
        let mut changed = changed.clone();
        changed.endpoint_id = before.id;
        let mut item = Item::of(pk.clone(), version_sk(before.id, changed.version), &changed)?;
        item.version = stored + 1;
        ops.push(WriteOp::Put {
            item,
            condition: Condition::VersionEquals(*stored),
        });
    }

    // The log shows the endpoint as the API does: its fields and its current version's, plus
    // any other version that was rewritten.
    let current_after = planned
        .new_version
        .iter()
        .chain(&planned.changed_versions)
        .find(|v| v.version == after.current_version)
        .unwrap_or(current);
    let others: Vec<&Version> = planned
        .changed_versions
        .iter()
        .filter(|v| v.version != current_after.version)
        .collect();
    let others_before: Vec<&Version> = others
        .iter()
        .filter_map(|o| read.iter().find(|(v, _)| v.version == o.version))
        .map(|(v, _)| v)
        .collect();
    let before_view = view(before, current, &others_before)?;
    let after_view = view(after, current_after, &others)?;
    let entry = record(
        after,
        actor,
        activity::UPDATED,
        Some(&before_view),
        &after_view,
        after.updated_at,
    )
    .entry();
    // A save that changed nothing (a PATCH repeating the stored values) is not logged.
    if entry.detail.changes.as_ref().is_some_and(|c| !c.is_empty()) {
        ops.push(entry.put_op(before.team_id)?);
    }
    Ok(ops)
}

/// Soft-deletes an endpoint at `at`: its name is freed, its record kept under its uuid, its
/// versions left (they are keyed by the uuid). `None` when there is no such endpoint. A delete
/// that lost the race to an update reads again and retries, as [`update`] does.
pub async fn delete(
    store: &dyn Store,
    team_id: i64,
    name: &str,
    actor: &Actor,
    at: DateTime<Utc>,
) -> Result<Option<Endpoint>, StoreError> {
    let pk = team_pk(team_id);
    let sk = endpoint_sk(name);
    let mut contention = store::Contention::default();
    loop {
        let Some((endpoint, item_version)) =
            store::get_versioned::<Endpoint>(store, &pk, &sk).await?
        else {
            return Ok(None);
        };
        let before = encode(&pk, &sk, &endpoint)?;
        let deleted = Deleted {
            endpoint: endpoint.clone(),
            deleted_at: at,
        };
        let ops = vec![
            WriteOp::Delete {
                pk: pk.clone(),
                sk: sk.clone(),
                condition: Condition::VersionEquals(item_version),
            },
            WriteOp::Put {
                item: Item::of(pk.clone(), deleted_sk(endpoint.id), &deleted)?,
                condition: Condition::None,
            },
            record(&endpoint, actor, activity::DELETED, None, &before, at).put_op()?,
        ];
        match store.transact_write(ops).await {
            Ok(()) => return Ok(Some(endpoint)),
            Err(error) if lost_race(&error) => contention.lost(item_version).await?,
            Err(error) => return Err(error),
        }
    }
}

pub async fn get_materialization(
    store: &dyn Store,
    team_id: i64,
    endpoint_id: Uuid,
    version: u32,
) -> Result<Option<Materialization>, StoreError> {
    let sk = materialization_sk(endpoint_id, version);
    match store.get(&team_pk(team_id), &sk).await? {
        Some(item) => Ok(Some(item.parse()?)),
        None => Ok(None),
    }
}

/// Writes a materialization's state (last writer wins: one job owns a version's runs).
pub async fn put_materialization(
    store: &dyn Store,
    team_id: i64,
    materialization: &Materialization,
) -> Result<(), StoreError> {
    let sk = materialization_sk(materialization.endpoint_id, materialization.version);
    let item = Item::of(team_pk(team_id), sk, materialization)?;
    store.put(item, Condition::None).await
}

pub async fn delete_materialization(
    store: &dyn Store,
    team_id: i64,
    endpoint_id: Uuid,
    version: u32,
) -> Result<(), StoreError> {
    let sk = materialization_sk(endpoint_id, version);
    store.delete(&team_pk(team_id), &sk, Condition::None).await
}

/// Every materialization of a project (the scheduler's view).
pub async fn list_materializations(
    store: &dyn Store,
    team_id: i64,
) -> Result<Vec<Materialization>, StoreError> {
    store::list_prefix(store, &team_pk(team_id), MATERIALIZATION_PREFIX).await
}

/// The materializations of one endpoint's versions, oldest version first.
pub async fn materializations_of(
    store: &dyn Store,
    team_id: i64,
    endpoint_id: Uuid,
) -> Result<Vec<Materialization>, StoreError> {
    let prefix = format!("{MATERIALIZATION_PREFIX}{endpoint_id}#");
    store::list_prefix(store, &team_pk(team_id), &prefix).await
}

/// Notes that `name` ran at `at`.
pub async fn record_execution(
    store: &dyn Store,
    team_id: i64,
    name: &str,
    at: DateTime<Utc>,
) -> Result<(), StoreError> {
    let run = LastExecution {
        name: name.to_owned(),
        last_executed_at: at,
    };
    let item = Item::of(team_pk(team_id), run_sk(name), &run)?;
    store.put(item, Condition::None).await
}

/// When each of `names` last ran, in the order asked; names never run are left out.
pub async fn last_executions(
    store: &dyn Store,
    team_id: i64,
    names: &[String],
) -> Result<Vec<LastExecution>, StoreError> {
    let pk = team_pk(team_id);
    let mut found = Vec::new();
    for name in names {
        if let Some(item) = store.get(&pk, &run_sk(name)).await? {
            found.push(item.parse()?);
        }
    }
    Ok(found)
}

fn encode<T: Serialize>(pk: &str, sk: &str, value: &T) -> Result<Value, StoreError> {
    serde_json::to_value(value).map_err(|source| StoreError::Encode {
        pk: pk.to_owned(),
        sk: sk.to_owned(),
        source,
    })
}

/// The endpoint as the activity log diffs it: its own fields, its current version's settings
/// and, under `versions`, other versions a change rewrote.
fn view(endpoint: &Endpoint, current: &Version, others: &[&Version]) -> Result<Value, StoreError> {
    let pk = team_pk(endpoint.team_id);
    let mut fields = match encode(&pk, &endpoint_sk(&endpoint.name), endpoint)? {
        Value::Object(map) => map,
        _ => Map::new(),
    };
    let version = encode(&pk, &version_sk(endpoint.id, current.version), current)?;
    for key in [
        "query",
        "description",
        "cache_age_seconds",
        "is_materialized",
        "sync_frequency",
        "columns",
    ] {
        fields.insert(key.into(), version.get(key).cloned().unwrap_or(Value::Null));
    }
    if !others.is_empty() {
        let mut map = Map::new();
        for other in others {
            let mut value = encode(&pk, &version_sk(endpoint.id, other.version), other)?;
            if let Value::Object(fields) = &mut value {
                fields.retain(|key, _| !IGNORED_IN_DIFFS.contains(&key.as_str()));
            }
            map.insert(other.version.to_string(), value);
        }
        fields.insert("versions".into(), Value::Object(map));
    }
    Ok(Value::Object(fields))
}
