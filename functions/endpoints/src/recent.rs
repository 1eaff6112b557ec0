//! `cache_age_seconds`: a version may answer a run with a result computed up to that many
//! seconds ago, even when new events have arrived since (the query service's own cache is keyed
//! by the events table's version, so it never serves a result older than the data). Kept in
//! object storage by endpoint, version, variables and page.

use chrono::{DateTime, Utc};
use common::AppState;
use object_store::path::Path;
use object_store::{ObjectStoreExt, PutPayload};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};
use uuid::Uuid;

/// What a run asked, as far as its answer goes.
pub struct Asked<'a> {
    pub team_id: i64,
    pub endpoint_id: Uuid,
    pub version: u32,
    pub variables: &'a Map<String, Value>,
    pub limit: Option<u64>,
    pub offset: Option<u64>,
}

#[derive(Serialize, Deserialize)]
struct Entry {
    at: DateTime<Utc>,
    response: Value,
}

fn path(asked: &Asked<'_>) -> Path {
    let mut hash = Sha256::new();
    hash.update(asked.endpoint_id.as_bytes());
    hash.update(asked.version.to_le_bytes());
    // serde_json's maps are sorted, so the same variables always make the same text.
    hash.update(Value::Object(asked.variables.clone()).to_string());
    hash.update(format!("{:?}/{:?}", asked.limit, asked.offset));
    Path::from(format!(
        "endpoint-cache/team_id={}/{}.json",
        asked.team_id,
        hex::encode(hash.finalize())
    ))
}

/// The answer computed for `asked` at most `max_age_seconds` ago.
pub async fn load(state: &AppState, asked: &Asked<'_>, max_age_seconds: u32) -> Option<Value> {
    let bytes = state
        .objects
        .get(&path(asked))
        .await
        .ok()?
        .bytes()
        .await
        .ok()?;
    let entry: Entry = serde_json::from_slice(&bytes).ok()?;
    let age = state.clock.now() - entry.at;
    (age < chrono::Duration::seconds(max_age_seconds.into())).then_some(entry.response)
}

pub async fn store(state: &AppState, asked: &Asked<'_>, response: &Value) {
    let entry = Entry {
        at: state.clock.now(),
        response: response.clone(),
    };
    let Ok(bytes) = serde_json::to_vec(&entry) else {
        return;
    };
    if let Err(error) = state
        .objects
        .put(&path(asked), PutPayload::from(bytes))
        .await
    {
        tracing::warn!(%error, "could not keep an endpoint's result");
    }
}
