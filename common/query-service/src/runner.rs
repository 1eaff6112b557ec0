//! One execution of a SQL node for a project: prepare, serve from cache when fresh, else run
//! under the configured limits; every execution leaves a query log record.

use std::future::Future;
use std::sync::Arc;
use std::time::Instant;

use chrono::{Duration, Utc};
use common::AppState;
use common::models::Project;
use engine::{Limits, Output, QueryError};
use insights::experiments::ExperimentSpec;
use lake_core::query_log::{self, QueryLogRecord};
use serde_json::{Value, json};

use crate::errors::log_exception;
use crate::{Caller, SqlNode};
use crate::{cache, cohorts, experiments};

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

/// Runs (or serves from cache) and answers PostHog's HogQLQueryResponse; `cancelled`
/// resolving stops the query where it is.
pub async fn run(run: Run<'_>, cancelled: impl Future<Output = ()>) -> Result<Value, QueryError> {
    run_watched(run, cancelled, &engine::Progress::new()).await
}

/// [`run`], each query's plan published to `progress` as it starts, so another task can read how
/// far it has got (an async query's `query_progress`).
pub async fn run_watched(
    run: Run<'_>,
    cancelled: impl Future<Output = ()>,
    progress: &engine::Progress,
) -> Result<Value, QueryError> {
    let clock = Instant::now();
    let mut record = log_record(&run, Utc::now());
    let outcome = execute(&run, cancelled, progress, &mut record).await;
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

/// The query log record of `run`, started at `started_at`, as a successful one until told
/// otherwise.
fn log_record(run: &Run<'_>, started_at: chrono::DateTime<Utc>) -> QueryLogRecord {
    QueryLogRecord {
        query_id: run.query_id.to_owned(),
        team_id: run.project.id,
        endpoint: run.endpoint.to_owned(),
        query: run.node.text.clone(),
        kind: run
            .node
            .structured
            .as_ref()
            .and_then(|node| node["kind"].as_str())
            .unwrap_or("HogQLQuery")
            .into(),
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
    }
}

/// Logs an answer `run` got without executing its query (a materialized endpoint result read at
/// `started_at`), so the query log holds every run.
pub async fn log_served(run: &Run<'_>, output: &Output, started_at: chrono::DateTime<Utc>) {
    let mut record = log_record(run, started_at);
    record.query_duration_ms =
        (Utc::now() - started_at).num_microseconds().unwrap_or(0) as f64 / 1000.0;
    record.read_rows = output.read_rows;
    record.read_bytes = output.read_bytes;
    record.result_rows = output.results.len() as u64;
    record.result_bytes = output.result_bytes;
    if let Err(error) = query_log::record(run.state.store.as_ref(), &record).await {
        tracing::warn!(%error, "could not write the query log");
    }
}

/// What a run needs before executing: its prepared queries (one for SQL, one or more for a
/// structured node), a session for each, and the cache key when the result may be cached.
struct Planned {
    queries: Vec<engine::Prepared>,
    sessions: Vec<engine::Session>,
    compiled: Option<insights::Compiled>,
    cache_key: Option<String>,
}

async fn plan(state: &AppState, project: &Project, node: &SqlNode) -> Result<Planned, QueryError> {
    let experiment = experiments::spec_for(state, project, node).await?;
    let mut ctx = context(state, project, experiment.clone(), Arc::default());
    let cohorts = cohorts::for_node(state, project, node, Some(ctx.now)).await?;
    ctx.cohorts = cohorts.clone();
    let (compiled, queries) = match &node.structured {
        Some(structured) => {
            let (compiled, queries) = compile_with(&ctx, structured)?;
            (Some(compiled), queries)
        }
        None => (
            None,
            vec![engine::prepare_window(
                &node.text,
                &bindings(project, node, cohorts.clone())?,
                node.window,
            )?],
        ),
    };
    let limits = limits(state);
    let mut sessions = Vec::with_capacity(queries.len());
    for query in &queries {
        sessions.push(
            engine::open_session(state, project.id, &project.timezone, query, &limits).await?,
        );
    }
    // The events table's version is in the key, so a cached result is never stale; queries over
    // persons or the log (which change without a version) are not cached. An experiment's
    // settings that shape the answer but not the SQL (stats_config, ...) are in it too, and
    // the versions of the cohorts its filters name.
    let cacheable = queries
        .iter()
        .all(|query| query.tables.iter().all(|t| t == "events"));
    let cache_key = cacheable.then(|| {
        let mut extra = experiment
            .as_deref()
            .map(experiments::digest)
            .unwrap_or_default();
        if !cohorts.is_empty() {
            extra.push_str(";cohorts=");
            extra.push_str(&cohorts::digest(&cohorts));
        }
        cache::key(
            project.id,
            &project.timezone,
            &joined(&queries, |query| &query.sql),
            sessions.first().and_then(|s| s.events_version),
            &extra,
        )
    });
    Ok(Planned {
        queries,
        sessions,
        compiled,
        cache_key,
    })
}

fn joined(queries: &[engine::Prepared], text: impl Fn(&engine::Prepared) -> &str) -> String {
    queries.iter().map(text).collect::<Vec<_>>().join(";\n")
}

/// The cached result of this node, when a fresh one exists (`refresh: async` answers it at
/// once instead of queueing).
pub async fn cached(state: &AppState, project: &Project, node: &SqlNode) -> Option<Value> {
    let planned = plan(state, project, node).await.ok()?;
    load_cached(state, project.id, planned.cache_key.as_deref()?).await
}

async fn load_cached(state: &AppState, team_id: i64, key: &str) -> Option<Value> {
    let mut cached = cache::load(state, team_id, key).await?;
    cached["is_cached"] = Value::Bool(true);
    cached["query_status"] = Value::Null;
    Some(cached)
}

/// Runs the planned queries in turn (they share the time limit), then shapes the response: the
/// SQL answer, or the structured node's assembly of its tables.
async fn execute(
    run: &Run<'_>,
    cancelled: impl Future<Output = ()>,
    progress: &engine::Progress,
    record: &mut QueryLogRecord,
) -> Result<Value, (QueryError, bool)> {
    let started = Instant::now();
    let planned = plan(run.state, run.project, run.node)
        .await
        .map_err(|e| (e, true))?;
    if let Some(key) = &planned.cache_key
        && !run.force
        && let Some(cached) = load_cached(run.state, run.project.id, key).await
    {
        record.result_rows = cached["results"].as_array().map_or(0, |r| r.len() as u64);
        return Ok(cached);
    }
    let limits = limits(run.state);
    tokio::pin!(cancelled);
    let mut outputs = Vec::with_capacity(planned.queries.len());
    for (query, session) in planned.queries.iter().zip(&planned.sessions) {
        let left = limits.timeout.saturating_sub(started.elapsed());
        if left.is_zero() {
            return Err((QueryError::Timeout, false));
        }
        let bounded = Limits {
            timeout: left,
            ..limits
        };
        let output = tokio::select! {
            output = session.execute_watched(query, &bounded, progress) => output.map_err(|e| (e, false))?,
            _ = &mut cancelled => return Err((QueryError::Cancelled, false)),
        };
        record.read_rows += output.read_rows;
        record.read_bytes += output.read_bytes;
        record.result_bytes += output.result_bytes;
        record.memory_usage = record.memory_usage.max(output.memory_usage);
        outputs.push(output);
    }
    let cache_key = planned.cache_key.as_deref();
    let response = match planned.compiled {
        None => match (planned.queries.first(), outputs.pop()) {
            (Some(query), Some(output)) => response(run, query, output, cache_key),
            _ => return Err((QueryError::Internal("no query was run".into()), false)),
        },
        Some(compiled) => {
            structured_response(run, &planned.queries, compiled, outputs, started, cache_key)
                .map_err(|e| (e, false))?
        }
    };
    record.result_rows = response["results"]
        .as_array()
        .map_or(0, |rows| rows.len() as u64);
    if let Some(key) = cache_key {
        cache::store(run.state, run.project.id, key, &response).await;
    }
    Ok(response)
}

/// Checks a node before it is queued, so a bad one is a 400 now rather than a failed job later
/// (an `ExperimentQuery`'s experiment is read for it).
pub async fn check(state: &AppState, project: &Project, node: &SqlNode) -> Result<(), QueryError> {
    // Definitions are enough to know the node compiles; members are resolved when it runs.
    let cohorts = cohorts::for_node(state, project, node, None).await?;
    match &node.structured {
        Some(structured) => {
            let experiment = experiments::spec_for(state, project, node).await?;
            compile_with(&context(state, project, experiment, cohorts), structured).map(|_| ())
        }
        None => engine::prepare(&node.text, &bindings(project, node, cohorts)?).map(|_| ()),
    }
}

/// The columns a SQL node answers (names and ClickHouse types), found by planning it.
pub async fn columns(
    state: &AppState,
    project: &Project,
    node: &SqlNode,
) -> Result<Vec<(String, String)>, QueryError> {
    let cohorts = cohorts::for_node(state, project, node, None).await?;
    let prepared =
        engine::prepare_window(&node.text, &bindings(project, node, cohorts)?, node.window)?;
    let session = engine::open_session(
        state,
        project.id,
        &project.timezone,
        &prepared,
        &limits(state),
    )
    .await?;
    session.columns(&prepared).await
}

/// The plan of a SQL node's materialization, `variable` turned into a column (a query that
/// cannot be materialized is a `QueryError::Query` saying why).
pub async fn materialization_plan(
    state: &AppState,
    project: &Project,
    node: &SqlNode,
    variable: Option<&str>,
) -> Result<engine::materialize::Plan, QueryError> {
    let cohorts = cohorts::for_node(state, project, node, None).await?;
    engine::materialize::plan(&node.text, &bindings(project, node, cohorts)?, variable)
}

/// Runs a materialization plan under the configured limits: the whole result, in Arrow.
pub async fn collect(
    state: &AppState,
    project: &Project,
    plan: &engine::materialize::Plan,
) -> Result<(engine::SchemaRef, Vec<engine::ArrowBatch>), QueryError> {
    let limits = limits(state);
    let session = engine::open_session(
        state,
        project.id,
        &project.timezone,
        &plan.prepared,
        &limits,
    )
    .await?;
    session.collect(&plan.prepared, &limits).await
}

/// What compiling in this project's terms needs: its time zone, "now" for this request, the
/// experiment of an `ExperimentQuery` and the cohorts its filters name.
///
/// An experiment's open end is "now" rounded up to the next minute (from the state's clock):
/// results still include every event so far, yet requests within a minute make the same SQL
/// and share a cached answer (new events change the events version in the key anyway).
fn context(
    state: &AppState,
    project: &Project,
    experiment: Option<Arc<ExperimentSpec>>,
    cohorts: Arc<insights::cohorts::Cohorts>,
) -> insights::Context {
    let mut ctx = plain_context(project);
    if experiment.is_some() {
        ctx.now = experiments::minute_ceiling(state.clock.now());
    }
    ctx.experiment = experiment;
    ctx.cohorts = cohorts;
    ctx
}

pub(crate) fn plain_context(project: &Project) -> insights::Context {
    insights::Context {
        timezone: project.timezone.parse().unwrap_or(chrono_tz::UTC),
        now: Utc::now(),
        week_start_day: project.week_start_day.unwrap_or(0),
        check_expression: engine::check_expression,
        experiment: None,
        cohorts: Default::default(),
    }
}

fn invalid(invalid: insights::Invalid) -> QueryError {
    QueryError::Invalid {
        attr: invalid.attr,
        detail: invalid.detail,
    }
}

/// The SQL node's bindings, with `{filters}` compiled for this project.
fn bindings(
    project: &Project,
    node: &SqlNode,
    cohorts: Arc<insights::cohorts::Cohorts>,
) -> Result<engine::Bindings, QueryError> {
    let mut bindings = node.bindings.clone();
    let mut ctx = plain_context(project);
    ctx.cohorts = cohorts;
    if let Some(filters) = &node.filters {
        bindings.filters =
            Some(insights::hogql_filters::expression(filters, &ctx).map_err(invalid)?);
    }
    // `IN COHORT` in the text: each cohort's membership, over the engine's subject column. One
    // that is not found is left out, for the engine's 400 naming it.
    for reference in engine::cohort_references(&node.text) {
        let Some(id) = cohorts::resolve(&ctx.cohorts, &reference) else {
            continue;
        };
        let condition = insights::cohorts::membership(id, engine::COHORT_SUBJECT, &ctx, "query")
            .map_err(invalid)?;
        bindings.cohorts.insert(reference.key(), condition);
    }
    Ok(bindings)
}

/// Compiles a structured node for this project into its dialect queries, each prepared (an
/// `ExperimentQuery` needs `experiment`: see [`experiments::spec_for`]).
pub fn compile_structured(
    project: &Project,
    node: &Value,
    experiment: Option<Arc<ExperimentSpec>>,
) -> Result<(insights::Compiled, Vec<engine::Prepared>), QueryError> {
    let mut ctx = plain_context(project);
    ctx.experiment = experiment;
    compile_with(&ctx, node)
}

fn compile_with(
    ctx: &insights::Context,
    node: &Value,
) -> Result<(insights::Compiled, Vec<engine::Prepared>), QueryError> {
    let compiled = insights::compile(node, ctx).map_err(invalid)?;
    let prepared = compiled
        .queries
        .iter()
        .map(|text| {
            engine::prepare(text, &engine::Bindings::default())
                .map(engine::Prepared::with_sql_nulls)
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok((compiled, prepared))
}

/// A structured node's response: its queries' tables assembled by the node, with the common
/// fields (the timings name each query).
fn structured_response(
    run: &Run<'_>,
    queries: &[engine::Prepared],
    compiled: insights::Compiled,
    outputs: Vec<Output>,
    started: Instant,
    cache_key: Option<&str>,
) -> Result<Value, QueryError> {
    let mut timings = Vec::new();
    let mut tables = Vec::with_capacity(outputs.len());
    for (index, output) in outputs.into_iter().enumerate() {
        timings.extend(
            output
                .timings
                .iter()
                .map(|(k, t)| (format!("./query_{index}{}", k.trim_start_matches('.')), *t)),
        );
        tables.push(insights::Table {
            columns: output.columns,
            types: output.types,
            rows: output.results,
        });
    }
    timings.push((".".into(), started.elapsed().as_secs_f64()));
    let assembled = compiled.assemble(tables).map_err(invalid)?;
    let mut response = common_fields(
        run,
        &joined(queries, |query| &query.hogql),
        &joined(queries, |query| &query.sql),
        &timings,
        cache_key,
    );
    if let (Value::Object(fields), Value::Object(specific)) = (&mut response, assembled) {
        fields.extend(specific);
    }
    Ok(response)
}

fn response(
    run: &Run<'_>,
    prepared: &engine::Prepared,
    output: Output,
    cache_key: Option<&str>,
) -> Value {
    let hogql = match prepared.page {
        Some(page) if page.offset == 0 => format!("{} LIMIT {}", prepared.hogql, page.limit),
        Some(page) => format!(
            "{} LIMIT {} OFFSET {}",
            prepared.hogql, page.limit, page.offset
        ),
        None => prepared.hogql.clone(),
    };
    let mut response = common_fields(run, &hogql, &prepared.sql, &output.timings, cache_key);
    if let Value::Object(fields) = &mut response {
        fields.extend([
            ("results".into(), json!(output.results)),
            ("columns".into(), json!(output.columns)),
            (
                "types".into(),
                json!(
                    output
                        .types
                        .iter()
                        .map(|(name, kind)| json!([name, kind]))
                        .collect::<Vec<_>>()
                ),
            ),
            ("hasMore".into(), json!(output.has_more)),
            ("limit".into(), json!(output.limit)),
            ("offset".into(), json!(output.offset)),
        ]);
    }
    response
}

/// What every query response carries: the query, timings and the cache fields.
fn common_fields(
    run: &Run<'_>,
    hogql: &str,
    sql: &str,
    timings: &[(String, f64)],
    cache_key: Option<&str>,
) -> Value {
    let now = Utc::now();
    json!({
        "query": run.node.structured.clone().unwrap_or_else(|| Value::String(run.node.text.clone())),
        "hogql": hogql,
        "clickhouse": sql,
        "timings": timings.iter().map(|(k, t)| json!({"k": k, "t": t})).collect::<Vec<_>>(),
        "modifiers": {},
        "error": null,
        "explain": null,
        "metadata": null,
        "is_cached": false,
        "cache_key": cache_key,
        "last_refresh": now.to_rfc3339_opts(chrono::SecondsFormat::Micros, true),
        "next_allowed_client_refresh": (now + Duration::minutes(1)).to_rfc3339_opts(chrono::SecondsFormat::Micros, true),
        "cache_target_age": null,
        "timezone": run.project.timezone,
        "query_status": null,
    })
}
