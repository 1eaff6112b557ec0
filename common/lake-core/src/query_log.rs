//! The query log: one record per execution (sync, async, endpoint run), kept in the Store under
//! the project (`TEAM#<id>` / `QLOG#<start>#<id>`) for 30 days; also the `query_log` SQL table.

use std::sync::Arc;

use chrono::{DateTime, Duration, Utc};
use common::store::{Condition, Item, QueryOptions, Store, StoreError};
use serde::{Deserialize, Serialize};

const RETENTION_DAYS: i64 = 30;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QueryLogRecord {
    pub query_id: String,
    pub team_id: i64,
    /// The endpoint's name when an endpoint run made the query, else empty.
    pub endpoint: String,
    pub query: String,
    pub kind: String,
    pub name: Option<String>,
    pub query_start_time: DateTime<Utc>,
    pub query_duration_ms: f64,
    /// The uuid of the user whose key ran it.
    pub created_by: Option<String>,
    pub read_rows: u64,
    pub read_bytes: u64,
    pub result_rows: u64,
    pub result_bytes: u64,
    pub memory_usage: u64,
    /// QueryFinish, ExceptionBeforeStart or ExceptionWhileProcessing (ClickHouse's names).
    pub status: String,
    pub exception_code: i64,
    pub exception_name: Option<String>,
    pub exception: Option<String>,
    pub is_personal_api_key_request: bool,
    pub api_key_label: Option<String>,
    pub api_key_mask: Option<String>,
    /// Which engine ran it: `local` (the query function's process) or `cluster` (Ballista).
    #[serde(default = "local_engine")]
    pub engine: String,
}

fn local_engine() -> String {
    "local".into()
}

fn partition(team_id: i64) -> String {
    format!("TEAM#{team_id}")
}

const PREFIX: &str = "QLOG#";

pub async fn record(store: &dyn Store, entry: &QueryLogRecord) -> Result<(), StoreError> {
    let sort = format!(
        "{PREFIX}{}#{}",
        entry.query_start_time.format("%Y-%m-%dT%H:%M:%S%.6fZ"),
        entry.query_id
    );
    let expires = (entry.query_start_time + Duration::days(RETENTION_DAYS)).timestamp();
    let item = Item::of(partition(entry.team_id), sort, entry)?.with_expiry(expires);
    store.put(item, Condition::None).await
}

/// Records since `since`, oldest first.
pub async fn since(
    store: &Arc<dyn Store>,
    team_id: i64,
    since: DateTime<Utc>,
) -> Result<Vec<QueryLogRecord>, StoreError> {
    let mut out = Vec::new();
    let mut cursor = None;
    let floor = format!("{PREFIX}{}", since.format("%Y-%m-%dT%H:%M:%S%.6fZ"));
    loop {
        let page = store
            .query(
                &partition(team_id),
                QueryOptions {
                    sk_prefix: PREFIX.into(),
                    limit: Some(1000),
                    cursor,
                    descending: true,
                    ..Default::default()
                },
            )
            .await?;
        let mut reached_floor = false;
        for item in &page.items {
            if item.sk < floor {
                reached_floor = true;
                break;
            }
            out.push(item.parse::<QueryLogRecord>()?);
        }
        match page.cursor {
            Some(next) if !reached_floor => cursor = Some(next),
            _ => break,
        }
    }
    out.reverse();
    Ok(out)
}
