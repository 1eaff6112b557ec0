//! Results cached in object storage, keyed by project + time zone + rewritten query + events
//! table version.

use common::AppState;
use object_store::path::Path;
use object_store::{ObjectStoreExt, PutPayload};
use serde_json::Value;
use sha2::{Digest, Sha256};

/// The key of a result: what was asked, of which data, read in which time zone, and `extra`
/// (what shapes the answer beyond the SQL: an experiment's spec); a query that reads the clock
/// (`now()`, `today()`) is keyed by the minute too.
pub fn key(
    team_id: i64,
    timezone: &str,
    sql: &str,
    events_version: Option<u64>,
    extra: &str,
) -> String {
    let mut hash = Sha256::new();
    hash.update(team_id.to_le_bytes());
    hash.update(timezone.as_bytes());
    hash.update([0]);
    hash.update(sql.as_bytes());
    hash.update(events_version.map_or(-1, |v| v as i128).to_le_bytes());
    if !extra.is_empty() {
        hash.update([0]);
        hash.update(extra.as_bytes());
    }
    if sql.contains("now()") || sql.contains("current_date()") {
        hash.update(chrono::Utc::now().format("%Y-%m-%dT%H:%M").to_string());
    }
    format!("cache_{}", hex::encode(hash.finalize()))
}

fn path(team_id: i64, key: &str) -> Path {
    Path::from(format!("query-cache/team_id={team_id}/{key}.json"))
}

pub async fn load(state: &AppState, team_id: i64, key: &str) -> Option<Value> {
    let bytes = state
        .objects
        .get(&path(team_id, key))
        .await
        .ok()?
        .bytes()
        .await
        .ok()?;
    serde_json::from_slice(&bytes).ok()
}

pub async fn store(state: &AppState, team_id: i64, key: &str, response: &Value) {
    let Ok(bytes) = serde_json::to_vec(response) else {
        return;
    };
    if let Err(error) = state
        .objects
        .put(&path(team_id, key), PutPayload::from(bytes))
        .await
    {
        tracing::warn!(%error, "could not cache a query result");
    }
}
