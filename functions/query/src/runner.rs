//! One execution of a SQL node for a project: prepare, serve from cache when fresh, else run
//! under the configured limits; every execution leaves a query log record.

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, LazyLock, Mutex};
use std::time::Instant;

use chrono::{Duration, Utc};
use common::AppState;
use common::models::Project;
use engine::sql::query_log::{self, QueryLogRecord};
use engine::sql::{self, Limits, Output, QueryError};
use serde_json::{Value, json};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::cache;
use crate::errors::log_exception;
use crate::request::SqlNode;

/// Who asked, for the query log.
#[derive(Debug, Clone, Default)]
pub struct Caller {
    pub user: Option<String>,
    pub api_key_label: Option<String>,
    pub api_key_mask: Option<String>,
}

impl Caller {
    pub fn of(auth: &common::Authenticated) -> Self {
        Self {
            user: Some(auth.user.uuid.to_string()),
            api_key_label: Some(auth.key.label.clone()),
            api_key_mask: Some(auth.key.mask_value.clone()),
        }
    }
}

pub struct Run<'a> {
    pub state: &'a AppState,
    pub project: &'a Project,
    pub query_id: &'a str,
    pub node: &'a SqlNode,
    pub caller: &'a Caller,
    /// Compute even when a fresh cached result exists.
    pub force: bool,
    /// The endpoint's name when an endpoint run made the query.
    pub endpoint: &'a str,
    /// Write a query log record (the log's own reads do not).
    pub log: bool,
}

pub fn limits(state: &AppState) -> Limits {
    Limits {
        memory_bytes: state.config.query.memory_bytes,
        timeout: state.config.query.timeout,
    }
}

/// Per-project slots, by (configuration, project): the bound comes from the configuration.
struct Slots {
    config: std::sync::Weak<common::config::Config>,
    semaphore: Arc<Semaphore>,
}

static RUNNING: LazyLock<Mutex<HashMap<(usize, i64), Slots>>> = LazyLock::new(Default::default);

fn semaphore(state: &AppState, team_id: i64) -> Option<Arc<Semaphore>> {
    let key = (Arc::as_ptr(&state.config) as usize, team_id);
    let mut running = RUNNING.lock().ok()?;
    // Same address and still alive: the same configuration.
    let current = running
        .get(&key)
        .filter(|slots| {
            slots
                .config
                .upgrade()
                .is_some_and(|c| Arc::ptr_eq(&c, &state.config))
        })
        .map(|slots| slots.semaphore.clone());
    if let Some(semaphore) = current {
        return Some(semaphore);
    }
    running.retain(|_, slots| slots.config.strong_count() > 0);
    let semaphore = Arc::new(Semaphore::new(state.config.query.concurrency));
    running.insert(
        key,
        Slots {
            config: Arc::downgrade(&state.config),
            semaphore: semaphore.clone(),
        },
    );
    Some(semaphore)
}

/// A slot among the project's concurrent queries in this process, or None when all are taken.
pub fn slot(state: &AppState, team_id: i64) -> Option<OwnedSemaphorePermit> {
    semaphore(state, team_id)?.try_acquire_owned().ok()
}

/// A slot, once one frees up (queued async work waits its turn rather than failing).
pub async fn next_slot(state: &AppState, team_id: i64) -> Option<OwnedSemaphorePermit> {
    semaphore(state, team_id)?.acquire_owned().await.ok()
}

/// Runs (or serves from cache) and answers PostHog's HogQLQueryResponse; `cancelled`
/// resolving stops the query where it is.
pub async fn run(run: Run<'_>, cancelled: impl Future<Output = ()>) -> Result<Value, QueryError> {
    let started_at = Utc::now();
    let clock = Instant::now();
    let mut record = QueryLogRecord {
        query_id: run.query_id.to_owned(),
        team_id: run.project.id,
        endpoint: run.endpoint.to_owned(),
        query: run.node.text.clone(),
        kind: "HogQLQuery".into(),
        name: run.node.name.clone(),
        query_start_time: started_at,
        query_duration_ms: 0.0,
        created_by: run.caller.user.clone(),
        read_rows: 0,
        read_bytes: 0,
        result_rows: 0,
        result_bytes: 0,
        memory_usage: 0,
        status: "QueryFinish".into(),
        exception_code: 0,
        exception_name: None,
        exception: None,
        is_personal_api_key_request: run.caller.api_key_mask.is_some(),
        api_key_label: run.caller.api_key_label.clone(),
        api_key_mask: run.caller.api_key_mask.clone(),
    };
    let outcome = execute(&run, cancelled, &mut record).await;
    record.query_duration_ms = clock.elapsed().as_secs_f64() * 1000.0;
    if let Err((error, before_start)) = &outcome {
        let (status, name, code) = log_exception(error, *before_start);
        record.status = status.into();
        record.exception_name = Some(name.into());
        record.exception_code = code;
        record.exception = Some(error.to_string());
    }
    if run.log
        && let Err(error) = query_log::record(run.state.store.as_ref(), &record).await
    {
        tracing::warn!(%error, "could not write the query log");
    }
    outcome.map_err(|(error, _)| error)
}

async fn execute(
    run: &Run<'_>,
    cancelled: impl Future<Output = ()>,
    record: &mut QueryLogRecord,
) -> Result<Value, (QueryError, bool)> {
    let prepared = sql::prepare(&run.node.text, &run.node.bindings).map_err(|e| (e, true))?;
    let limits = limits(run.state);
    let session = sql::open_session(
        run.state,
        run.project.id,
        &run.project.timezone,
        &prepared,
        &limits,
    )
    .await
    .map_err(|e| (e, true))?;
    // The events table's version is in the key, so a cached result is never stale; queries over
    // persons or the log (which change without a version) are not cached.
    let cache_key = (prepared.tables.iter().all(|t| t == "events"))
        .then(|| cache::key(run.project.id, &prepared.sql, session.events_version));
    if let Some(key) = &cache_key
        && !run.force
        && let Some(mut cached) = cache::load(run.state, run.project.id, key).await
    {
        cached["is_cached"] = Value::Bool(true);
        cached["query_status"] = Value::Null;
        record.result_rows = cached["results"].as_array().map_or(0, |r| r.len() as u64);
        return Ok(cached);
    }
    let output = tokio::select! {
        output = session.execute(&prepared, &limits) => output.map_err(|e| (e, false))?,
        _ = cancelled => return Err((QueryError::Cancelled, false)),
    };
    record.read_rows = output.read_rows;
    record.read_bytes = output.read_bytes;
    record.result_rows = output.results.len() as u64;
    record.result_bytes = output.result_bytes;
    record.memory_usage = output.memory_usage;
    let response = response(run, &prepared, output, cache_key.as_deref());
    if let Some(key) = &cache_key {
        cache::store(run.state, run.project.id, key, &response).await;
    }
    Ok(response)
}

fn response(
    run: &Run<'_>,
    prepared: &sql::Prepared,
    output: Output,
    cache_key: Option<&str>,
) -> Value {
    let now = Utc::now();
    let hogql = match prepared.paginated {
        true => format!("{} LIMIT {}", prepared.hogql, sql::DEFAULT_LIMIT),
        false => prepared.hogql.clone(),
    };
    json!({
        "results": output.results,
        "columns": output.columns,
        "types": output.types.iter().map(|(name, kind)| json!([name, kind])).collect::<Vec<_>>(),
        "query": run.node.text,
        "hogql": hogql,
        "clickhouse": prepared.sql,
        "timings": output.timings.iter().map(|(k, t)| json!({"k": k, "t": t})).collect::<Vec<_>>(),
        "modifiers": {},
        "error": null,
        "explain": null,
        "metadata": null,
        "hasMore": output.has_more,
        "limit": output.limit,
        "offset": output.offset,
        "is_cached": false,
        "cache_key": cache_key,
        "last_refresh": now.to_rfc3339_opts(chrono::SecondsFormat::Micros, true),
        "next_allowed_client_refresh": (now + Duration::minutes(1)).to_rfc3339_opts(chrono::SecondsFormat::Micros, true),
        "cache_target_age": null,
        "timezone": run.project.timezone,
        "query_status": null,
    })
}
