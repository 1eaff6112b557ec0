//! Results cached in object storage, keyed by what was asked (the node and the queries it
//! compiled to), of which data (the events table's version) and in which project, computed
//! without opening an engine session.

use chrono::{DateTime, Utc};
use common::AppState;
use engine::QueryError;
use object_store::path::Path;
use object_store::{ObjectStoreExt, PutPayload};
use serde_json::Value;
use sha2::{Digest, Sha256};

/// What a result's key is made of, but the events table's version (read when the key is made).
#[derive(Debug, Clone)]
pub struct Key {
    pub team_id: i64,
    /// The project's time zone: results are read in it.
    pub timezone: String,
    /// The node in its canonical text ([`crate::SqlNode::canonical`]): the response echoes it.
    pub node: String,
    /// The queries as they run (the node compiled, its relative dates resolved, its bindings
    /// and cohorts inlined, then rewritten by the engine), one per line.
    pub sql: String,
    /// What shapes the answer beyond the SQL: an experiment's spec, the versions of the cohorts
    /// the node names.
    pub extra: String,
    /// When the node was compiled: a query that reads the clock (`now()`, `today()`) is keyed
    /// by its minute too.
    pub now: DateTime<Utc>,
    /// Whether a query reads the events table (whose version is then in the key).
    pub reads_events: bool,
}

impl Key {
    /// The key over the events table as it is now: its version read from the table's log (no
    /// engine session opened).
    pub async fn current(&self, state: &AppState) -> Result<String, QueryError> {
        let version = match self.reads_events {
            true => lake_core::table::current(state, self.team_id)
                .await
                .map_err(QueryError::internal)?
                .and_then(|table| table.version()),
            false => None,
        };
        Ok(self.at(version))
    }

    /// The key of the result over the events table at `events_version` (`None`: no table yet,
    /// or the queries read none).
    pub fn at(&self, events_version: Option<u64>) -> String {
        let mut hash = Sha256::new();
        hash.update(self.team_id.to_le_bytes());
        hash.update(self.timezone.as_bytes());
        hash.update([0]);
        hash.update(self.node.as_bytes());
        hash.update([0]);
        hash.update(self.sql.as_bytes());
        hash.update(events_version.map_or(-1, |v| v as i128).to_le_bytes());
        if !self.extra.is_empty() {
            hash.update([0]);
            hash.update(self.extra.as_bytes());
        }
        if self.sql.contains("now()") || self.sql.contains("current_date()") {
            hash.update(self.now.format("%Y-%m-%dT%H:%M").to_string());
        }
        format!("cache_{}", hex::encode(hash.finalize()))
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    fn key() -> Key {
        Key {
            team_id: 1,
            timezone: "UTC".into(),
            node: r#"{"kind":"TrendsQuery"}"#.into(),
            sql: "SELECT count() FROM events".into(),
            extra: String::new(),
            now: "2026-11-28T10:00:30Z".parse().unwrap(),
            reads_events: true,
        }
    }

    #[test]
    fn same_inputs_hit_and_any_different_input_misses() {
        let base = key().at(Some(3));
        assert_eq!(key().at(Some(3)), base);
        // The clock matters only to a query that reads it.
        let later = Key {
            now: "2026-11-29T10:00:30Z".parse().unwrap(),
            ..key()
        };
        assert_eq!(later.at(Some(3)), base);
        let changed = [
            key().at(Some(4)),
            key().at(None),
            Key {
                team_id: 2,
                ..key()
            }
            .at(Some(3)),
            Key {
                timezone: "Europe/Paris".into(),
                ..key()
            }
            .at(Some(3)),
            Key {
                node: r#"{"kind":"TrendsQuery","interval":"week"}"#.into(),
                ..key()
            }
            .at(Some(3)),
            Key {
                sql: "SELECT count() FROM events WHERE 1".into(),
                ..key()
            }
            .at(Some(3)),
            Key {
                extra: "cohorts=1:2".into(),
                ..key()
            }
            .at(Some(3)),
        ];
        for other in &changed {
            assert_ne!(other, &base);
        }
        let clocked = Key {
            sql: "SELECT now()".into(),
            ..key()
        };
        let next_minute = Key {
            now: "2026-11-28T10:01:00Z".parse().unwrap(),
            ..clocked.clone()
        };
        assert_ne!(clocked.at(Some(3)), next_minute.at(Some(3)));
    }
}
