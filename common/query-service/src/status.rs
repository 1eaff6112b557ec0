//! Async query status, kept in the Store (`TEAM#<id>` / `QUERY#<id>`, gone 20 minutes after it
//! ends), so any instance can answer a poll or a cancel. Results live in object storage (an item
//! is limited in size); the status names them.

use axum::http::StatusCode;
use chrono::{DateTime, Duration, Utc};
use common::AppState;
use common::store::{self, Condition, Item, StoreError};
use object_store::path::Path;
use object_store::{ObjectStoreExt, PutPayload};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use insights::nodes::Structured;

use crate::{Caller, SqlNode};

/// How long a finished status stays readable.
const KEEP_MINUTES: i64 = 20;

/// PostHog's `query_progress` (ClickHouse's `system.processes` for the query): rows and bytes
/// read, rows expected in all, whole seconds since the run started, and CPU time in microseconds.
/// Here they come from the running plans' metrics ([`engine::Progress`]).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Progress {
    pub bytes_read: u64,
    pub rows_read: u64,
    pub estimated_rows_total: u64,
    pub time_elapsed: u64,
    pub active_cpu_time: u64,
}

impl Progress {
    /// What the plans have done (`scanned`) after running for `elapsed`.
    pub fn of(scanned: engine::Scanned, elapsed: Duration) -> Self {
        Self {
            bytes_read: scanned.bytes,
            rows_read: scanned.rows,
            estimated_rows_total: scanned.estimated_rows.max(scanned.rows),
            time_elapsed: elapsed.num_seconds().max(0) as u64,
            active_cpu_time: scanned.compute_nanos / 1_000,
        }
    }
}

/// What the worker needs to run the query.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Job {
    pub text: String,
    pub name: Option<String>,
    pub values: Map<String, Value>,
    pub variables: Map<String, Value>,
    pub force: bool,
    pub user: Option<String>,
    pub api_key_label: Option<String>,
    pub api_key_mask: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub structured: Option<Structured>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub filters: Option<Value>,
    /// A SQL node's `modifiers.engine` (a structured node carries its own).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub engine: Option<String>,
}

impl Job {
    pub fn new(node: &SqlNode, caller: &Caller, force: bool) -> Self {
        Self {
            text: node.text.clone(),
            name: node.name.clone(),
            values: node.bindings.values.clone(),
            variables: node.bindings.variables.clone(),
            force,
            user: caller.user.clone(),
            api_key_label: caller.api_key_label.clone(),
            api_key_mask: caller.api_key_mask.clone(),
            structured: node.structured.clone(),
            filters: node.filters.clone(),
            engine: node.placement.modifier().map(str::to_owned),
        }
    }

    pub fn node(&self) -> SqlNode {
        SqlNode {
            text: self.text.clone(),
            name: self.name.clone(),
            bindings: engine::Bindings {
                values: self.values.clone(),
                variables: self.variables.clone(),
                ..Default::default()
            },
            structured: self.structured.clone(),
            filters: self.filters.clone(),
            experiment: None,
            window: Default::default(),
            placement: engine::remote::Placement::from_modifier(self.engine.as_deref()),
        }
    }

    pub fn caller(&self) -> Caller {
        Caller {
            user: self.user.clone(),
            api_key_label: self.api_key_label.clone(),
            api_key_mask: self.api_key_mask.clone(),
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct QueryStatus {
    pub id: String,
    pub team_id: i64,
    pub query_async: bool,
    pub complete: bool,
    pub error: bool,
    pub error_message: Option<String>,
    pub start_time: DateTime<Utc>,
    pub pickup_time: Option<DateTime<Utc>>,
    pub end_time: Option<DateTime<Utc>>,
    pub expiration_time: DateTime<Utc>,
    pub task_id: Option<String>,
    pub insight_id: Option<i64>,
    pub dashboard_id: Option<i64>,
    pub labels: Option<Vec<String>>,
    pub query_progress: Option<Progress>,
    /// Set by DELETE; the runner stops when it sees it.
    #[serde(default)]
    pub cancelled: bool,
    /// Where the finished result is (object storage).
    #[serde(default)]
    pub results_path: Option<String>,
    /// The query to run.
    pub job: Job,
}

fn sort_key(id: &str) -> String {
    format!("QUERY#{id}")
}

fn partition(team_id: i64) -> String {
    format!("TEAM#{team_id}")
}

fn item(status: &QueryStatus) -> Result<Item, StoreError> {
    Ok(
        Item::of(partition(status.team_id), sort_key(&status.id), status)?
            .with_expiry(status.expiration_time.timestamp()),
    )
}

impl QueryStatus {
    /// A status queued at `now` (the state's clock).
    pub fn new(
        team_id: i64,
        id: &str,
        job: Job,
        now: DateTime<Utc>,
        longest_run: Duration,
    ) -> Self {
        Self {
            id: id.to_owned(),
            team_id,
            query_async: true,
            complete: false,
            error: false,
            error_message: None,
            start_time: now,
            pickup_time: None,
            end_time: None,
            expiration_time: now + longest_run + Duration::minutes(KEEP_MINUTES),
            task_id: Some(uuid::Uuid::now_v7().to_string()),
            insight_id: None,
            dashboard_id: None,
            labels: None,
            query_progress: None,
            cancelled: false,
            results_path: None,
            job,
        }
    }

    /// A new status; refused when one with this id is still around.
    pub async fn create(&self, state: &AppState) -> Result<(), StoreError> {
        state.store.put(item(self)?, Condition::NotExists).await
    }

    pub async fn load(
        state: &AppState,
        team_id: i64,
        id: &str,
    ) -> Result<Option<Self>, StoreError> {
        state
            .store
            .get(&partition(team_id), &sort_key(id))
            .await?
            .map(|item| item.parse())
            .transpose()
    }

    /// Changes the stored status under optimistic locking.
    pub async fn update(
        state: &AppState,
        team_id: i64,
        id: &str,
        change: impl FnMut(Self) -> Result<Self, StoreError>,
    ) -> Result<Self, StoreError> {
        store::update(
            state.store.as_ref(),
            &partition(team_id),
            &sort_key(id),
            change,
        )
        .await
    }

    /// PostHog's answer code for this status: 202 running, 200 done, 400 failed with a message
    /// for the caller, 500 failed without one.
    pub fn http_status(&self) -> StatusCode {
        if !self.complete {
            StatusCode::ACCEPTED
        } else if self.error && self.error_message.is_some() {
            StatusCode::BAD_REQUEST
        } else if self.error {
            StatusCode::INTERNAL_SERVER_ERROR
        } else {
            StatusCode::OK
        }
    }

    /// The status as PostHog answers it, results included when finished.
    pub async fn payload(&self, state: &AppState) -> Value {
        let results = match &self.results_path {
            Some(path) => match state.objects.get(&Path::from(path.as_str())).await {
                Ok(found) => match found.bytes().await {
                    Ok(bytes) => serde_json::from_slice(&bytes).unwrap_or(Value::Null),
                    Err(_) => Value::Null,
                },
                Err(_) => Value::Null,
            },
            None => Value::Null,
        };
        self.answer(results).to_json()
    }

    /// This status as answered, with `results`.
    pub fn answer(&self, results: Value) -> StatusAnswer {
        StatusAnswer {
            id: self.id.clone(),
            team_id: self.team_id,
            query_async: self.query_async,
            complete: self.complete,
            error: self.error,
            error_message: self.error_message.clone(),
            results,
            start_time: Some(self.start_time),
            pickup_time: self.pickup_time,
            end_time: self.end_time,
            expiration_time: Some(self.expiration_time),
            task_id: self.task_id.clone(),
            insight_id: self.insight_id,
            dashboard_id: self.dashboard_id,
            labels: self.labels.clone(),
            query_progress: self.query_progress.clone(),
        }
    }
}

/// PostHog's QueryStatus as the API answers it, all sixteen fields: the async status route
/// (`query/:id`) renders through it, and so do answers shaped as a status without a job behind
/// them (endpoints' `last_execution_times`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StatusAnswer {
    pub id: String,
    pub team_id: i64,
    pub query_async: bool,
    pub complete: bool,
    pub error: bool,
    pub error_message: Option<String>,
    pub results: Value,
    pub start_time: Option<DateTime<Utc>>,
    pub pickup_time: Option<DateTime<Utc>>,
    pub end_time: Option<DateTime<Utc>>,
    pub expiration_time: Option<DateTime<Utc>>,
    pub task_id: Option<String>,
    pub insight_id: Option<i64>,
    pub dashboard_id: Option<i64>,
    pub labels: Option<Vec<String>>,
    pub query_progress: Option<Progress>,
}

impl StatusAnswer {
    /// A complete answer with `results` and no job behind it: PostHog's QueryStatus defaults for
    /// the rest (an empty id, no times, no progress).
    pub fn complete(team_id: i64, results: Value) -> Self {
        Self {
            id: String::new(),
            team_id,
            query_async: true,
            complete: true,
            error: false,
            error_message: None,
            results,
            start_time: None,
            pickup_time: None,
            end_time: None,
            expiration_time: None,
            task_id: None,
            insight_id: None,
            dashboard_id: None,
            labels: None,
            query_progress: None,
        }
    }

    pub fn to_json(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }
}

pub async fn store_results(
    state: &AppState,
    team_id: i64,
    id: &str,
    results: &Value,
) -> Result<String, object_store::Error> {
    let path = format!("query-results/team_id={team_id}/{id}.json");
    let bytes = serde_json::to_vec(results).unwrap_or_default();
    state
        .objects
        .put(&Path::from(path.as_str()), PutPayload::from(bytes))
        .await?;
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn progress_is_posthogs_units() {
        let scanned = engine::Scanned {
            rows: 50,
            bytes: 4096,
            estimated_rows: 40,
            compute_nanos: 2_500_000,
        };
        let progress = Progress::of(scanned, Duration::milliseconds(2_900));
        assert_eq!(
            progress,
            Progress {
                bytes_read: 4096,
                rows_read: 50,
                estimated_rows_total: 50,
                time_elapsed: 2,
                active_cpu_time: 2_500,
            }
        );
    }

    #[test]
    fn a_status_answers_sixteen_fields_and_no_internals() {
        let node = SqlNode::sql("select 1", Default::default());
        let caller = Caller {
            user: None,
            api_key_label: None,
            api_key_mask: None,
        };
        let now: DateTime<Utc> = "2026-11-28T10:00:00Z".parse().unwrap();
        let status = QueryStatus::new(
            7,
            "q",
            Job::new(&node, &caller, false),
            now,
            Duration::minutes(1),
        );
        let answer = status.answer(Value::Null).to_json();
        let keys: Vec<&str> = answer
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(keys.len(), 16, "{answer}");
        for internal in ["job", "cancelled", "results_path"] {
            assert!(answer.get(internal).is_none(), "{internal}");
        }
        let borrowed = StatusAnswer::complete(7, Value::Array(vec![])).to_json();
        let mut borrowed_keys: Vec<&str> = borrowed
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        let mut keys = keys;
        keys.sort_unstable();
        borrowed_keys.sort_unstable();
        assert_eq!(keys, borrowed_keys);
        assert_eq!(answer["start_time"], json_time(now));
    }

    fn json_time(time: DateTime<Utc>) -> Value {
        serde_json::to_value(time).unwrap()
    }
}
