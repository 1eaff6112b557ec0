//! One execution of a SQL node for a project: compile and prepare it once ([`Plan`]), serve from
//! the cache when fresh (the key needs no engine session), else open the sessions and run under
//! the configured limits; every execution leaves a query log record.

use std::future::Future;
use std::sync::Arc;
use std::time::Instant;

use chrono::{DateTime, Duration, Utc};
use common::AppState;
use common::models::Project;
use engine::{Limits, Output, QueryError};
use insights::experiments::ExperimentSpec;
use insights::nodes::Structured;
use lake_core::query_log::{self, QueryLogRecord};
use serde_json::{Value, json};

use crate::errors::log_exception;
use crate::{Caller, SqlNode};
use crate::{actions, cache, cohorts, experiments};

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

/// A service's own run of `node` (a survey's stats, an experiment's day, a flag check): logged,
/// served from the cache when fresh, never cancelled.
pub async fn run_logged(
    state: &AppState,
    project: &Project,
    query_id: &str,
    node: &SqlNode,
    caller: &Caller,
) -> Result<Value, QueryError> {
    let run = Run {
        state,
        project,
        query_id,
        node,
        caller,
        force: false,
        endpoint: "",
        log: true,
    };
    run_watched(run, std::future::pending(), &engine::Progress::new()).await
}

/// [`run_logged`] in one of the project's slots (waiting for one).
pub async fn run_logged_in_slot(
    state: &AppState,
    project: &Project,
    query_id: &str,
    node: &SqlNode,
    caller: &Caller,
) -> Result<Value, QueryError> {
    let slot = crate::slots::wait(state, project.id).await;
    let outcome = run_logged(state, project, query_id, node, caller).await;
    if let Some(slot) = slot {
        slot.release().await;
    }
    outcome
}

/// [`run`], each query's plan published to `progress` as it starts, so another task can read how
/// far it has got (an async query's `query_progress`).
pub async fn run_watched(
    run: Run<'_>,
    cancelled: impl Future<Output = ()>,
    progress: &engine::Progress,
) -> Result<Value, QueryError> {
    let clock = Instant::now();
    let mut record = log_record(&run, run.state.clock.now());
    let outcome = execute(&run, cancelled, progress, &mut record).await;
    record.query_duration_ms = clock.elapsed().as_secs_f64() * 1000.0;
    if let Err((error, before_start)) = &outcome {
        let (status, name, code) = log_exception(error, *before_start);
        record.status = status.into();
        record.exception_name = Some(name.into());
        record.exception_code = code;
        record.exception = Some(error.to_string());
    }
    // The cached answer (an object) and the log record (the Store) are written side by side:
    // each is a round trip of its own, and the response waits for both.
    let cache_write = async {
        if let Ok((response, Some(key))) = &outcome {
            cache::store(run.state, run.project.id, key, response).await;
        }
    };
    let log_write = async {
        if run.log
            && let Err(error) = query_log::record(run.state.store.as_ref(), &record).await
        {
            tracing::warn!(%error, "could not write the query log");
        }
    };
    tokio::join!(cache_write, log_write);
    outcome
        .map(|(response, _)| response)
        .map_err(|(error, _)| error)
}

/// The query log record of `run`, started at `started_at`, as a successful one until told
/// otherwise.
fn log_record(run: &Run<'_>, started_at: DateTime<Utc>) -> QueryLogRecord {
    QueryLogRecord {
        query_id: run.query_id.to_owned(),
        team_id: run.project.id,
        endpoint: run.endpoint.to_owned(),
        query: run.node.text.clone(),
        kind: run.node.kind().into(),
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
        engine: engine::remote::Engine::Local.as_str().into(),
    }
}

/// Logs an answer `run` got without executing its query (a materialized endpoint result read at
/// `started_at`), so the query log holds every run.
pub async fn log_served(run: &Run<'_>, output: &Output, started_at: DateTime<Utc>) {
    let mut record = log_record(run, started_at);
    record.query_duration_ms = (run.state.clock.now() - started_at)
        .num_microseconds()
        .unwrap_or(0) as f64
        / 1000.0;
    record.read_rows = output.read_rows;
    record.read_bytes = output.read_bytes;
    record.result_rows = output.results.len() as u64;
    record.result_bytes = output.result_bytes;
    if let Err(error) = query_log::record(run.state.store.as_ref(), &record).await {
        tracing::warn!(%error, "could not write the query log");
    }
}

/// A node compiled for a project, once: its dialect queries prepared (parsed and rewritten; no
/// engine session yet), how a structured node assembles their answers, and what its cache key is
/// made of. An async request plans its node to check it and find a cached answer; the job that
/// runs it plans it once more, at its own "now".
pub struct Plan {
    queries: Vec<engine::Prepared>,
    compiled: Option<insights::Compiled>,
    /// `None` when the result is not cached (a query reads persons or the log, which change
    /// without a version).
    key: Option<cache::Key>,
}

/// What of the cohorts a node names a [`Plan`] reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cohorts {
    /// Definitions only: enough to know the node compiles (a node checked before it is queued).
    Definitions,
    /// Dynamic cohorts resolved to their members now, as a run (and its cache key) needs them.
    Members,
}

impl Plan {
    /// Compiles `node` for `project` (the one compilation of a request or of a job run).
    pub async fn new(
        state: &AppState,
        project: &Project,
        node: &SqlNode,
        cohorts: Cohorts,
    ) -> Result<Self, QueryError> {
        let experiment = experiments::spec_for(state, project, node).await?;
        let mut ctx = context(state, project, experiment.clone(), Arc::default());
        let resolve_at = (cohorts == Cohorts::Members).then_some(ctx.now);
        let cohorts = cohorts::for_node(state, project, node, resolve_at).await?;
        ctx.cohorts = cohorts.clone();
        let exposure = experiment
            .as_deref()
            .and_then(|e| e.exposure_criteria.as_ref());
        ctx.actions = actions::for_node(state, project, node, exposure).await?;
        let (compiled, queries) = match &node.structured {
            Some(structured) => {
                let (compiled, queries) = compile_with(&ctx, structured)?;
                (Some(compiled), queries)
            }
            None => (
                None,
                vec![engine::prepare_window(
                    &node.text,
                    &bindings(&ctx, node)?,
                    node.window,
                )?],
            ),
        };
        // The events table's version is in the key, so a cached result is never stale; queries
        // over persons or the log (which change without a version) are not cached. An
        // experiment's settings that shape the answer but not the SQL (stats_config, ...) are in
        // it too, and the versions of the cohorts its filters name.
        let cacheable = queries
            .iter()
            .all(|query| query.tables.iter().all(|t| t == "events"));
        let key = cacheable.then(|| {
            let mut extra = experiment
                .as_deref()
                .map(experiments::digest)
                .unwrap_or_default();
            if !cohorts.is_empty() {
                extra.push_str(";cohorts=");
                extra.push_str(&cohorts::digest(&cohorts));
            }
            cache::Key {
                team_id: project.id,
                timezone: project.timezone.clone(),
                node: node.canonical(),
                sql: joined(&queries, |query| &query.sql),
                extra,
                now: ctx.now,
                reads_events: queries
                    .iter()
                    .any(|query| query.tables.iter().any(|t| t == "events")),
            }
        });
        Ok(Plan {
            queries,
            compiled,
            key,
        })
    }

    /// What the cache key is made of; `None` when the result is not cached.
    pub(crate) fn cache_key(&self) -> Option<&cache::Key> {
        self.key.as_ref()
    }
}

fn joined(queries: &[engine::Prepared], text: impl Fn(&engine::Prepared) -> &str) -> String {
    queries.iter().map(text).collect::<Vec<_>>().join(";\n")
}

/// The cached result of `plan`, when a fresh one exists (`refresh: async` answers it at once
/// instead of queueing).
pub(crate) async fn cached(state: &AppState, plan: Option<&cache::Key>) -> Option<Value> {
    let key = plan?.current(state).await.ok()?;
    load_cached(state, plan?.team_id, &key).await
}

async fn load_cached(state: &AppState, team_id: i64, key: &str) -> Option<Value> {
    let mut cached = cache::load(state, team_id, key).await?;
    cached["is_cached"] = Value::Bool(true);
    cached["query_status"] = Value::Null;
    Some(cached)
}

/// Plans the node, answers a fresh cached result when there is one, else opens a session per
/// query, runs them in turn (they share the time limit), then shapes the response: the SQL
/// answer, or the structured node's assembly of its tables, with the cache key to store a fresh
/// answer under (the caller writes it).
async fn execute(
    run: &Run<'_>,
    cancelled: impl Future<Output = ()>,
    progress: &engine::Progress,
    record: &mut QueryLogRecord,
) -> Result<(Value, Option<String>), (QueryError, bool)> {
    let started = Instant::now();
    let planned = Plan::new(run.state, run.project, run.node, Cohorts::Members)
        .await
        .map_err(|e| (e, true))?;
    // A forced run reads no cached answer: it need not look up the table's version for one (a
    // listing of the Delta log; the session finds the version it reads below).
    let key = match &planned.key {
        Some(key) if !run.force => Some(key.current(run.state).await.map_err(|e| (e, true))?),
        _ => None,
    };
    if let Some(key) = &key
        && let Some(cached) = load_cached(run.state, run.project.id, key).await
    {
        record.result_rows = cached["results"].as_array().map_or(0, |r| r.len() as u64);
        return Ok((cached, None));
    }
    let limits = limits(run.state);
    let mut sessions = Vec::with_capacity(planned.queries.len());
    for query in &planned.queries {
        let session = engine::open_session(
            run.state,
            run.project.id,
            &run.project.timezone,
            query,
            &limits,
        )
        .await
        .map_err(|e| (e, true))?
        .with_cluster(cluster(run.state), run.node.placement);
        sessions.push(session);
    }
    // Keyed by the version the session read (a commit may have landed since the key was made).
    let key = match (&planned.key, sessions.first()) {
        (Some(parts), Some(session)) if parts.reads_events => {
            Some(parts.at(session.events_version))
        }
        (Some(parts), _) if !parts.reads_events => Some(parts.at(None)),
        _ => key,
    };
    tokio::pin!(cancelled);
    let mut outputs = Vec::with_capacity(planned.queries.len());
    for (query, session) in planned.queries.iter().zip(&sessions) {
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
        if output.engine == engine::remote::Engine::Cluster {
            record.engine = output.engine.as_str().into();
        }
        outputs.push(output);
    }
    let cache_key = key.as_deref();
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
    Ok((response, key))
}

/// Checks a node (it compiles, its queries prepare), so a bad one is a 400 now rather than a
/// failed run later (an `ExperimentQuery`'s experiment is read for it).
pub async fn check(state: &AppState, project: &Project, node: &SqlNode) -> Result<(), QueryError> {
    Plan::new(state, project, node, Cohorts::Definitions)
        .await
        .map(drop)
}

/// The columns a SQL node answers (names and ClickHouse types), found by planning it.
pub async fn columns(
    state: &AppState,
    project: &Project,
    node: &SqlNode,
) -> Result<Vec<(String, String)>, QueryError> {
    let ctx = with_cohorts(state, project, node).await?;
    let prepared = engine::prepare_window(&node.text, &bindings(&ctx, node)?, node.window)?;
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
    let ctx = with_cohorts(state, project, node).await?;
    engine::materialize::plan(&node.text, &bindings(&ctx, node)?, variable)
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
    .await?
    .with_cluster(cluster(state), engine::remote::Placement::Auto);
    session.collect(&plan.prepared, &limits).await
}

/// The cluster large queries go to, when one is configured (`ANALYTICS_QUERY_CLUSTER`).
pub(crate) fn cluster(state: &AppState) -> Option<std::sync::Arc<dyn engine::remote::Cluster>> {
    let settings = &state.config.query;
    let address = settings.cluster.clone()?;
    Some(std::sync::Arc::new(cluster::Client::new(
        address,
        settings.cluster_min_bytes,
        state.http.clone(),
    )))
}

/// The plain context of `project` with the definitions of the cohorts and the actions `node`
/// names.
async fn with_cohorts(
    state: &AppState,
    project: &Project,
    node: &SqlNode,
) -> Result<insights::Context, QueryError> {
    let mut ctx = plain_context(project, state.clock.now());
    ctx.cohorts = cohorts::for_node(state, project, node, None).await?;
    ctx.actions = actions::for_node(state, project, node, None).await?;
    Ok(ctx)
}

/// What compiling in this project's terms needs: its time zone, "now" for this request (from
/// the state's clock), the experiment of an `ExperimentQuery` and the cohorts its filters name.
///
/// An experiment's open end is "now" rounded up to the next minute: results still include every
/// event so far, yet requests within a minute make the same SQL and share a cached answer (new
/// events change the events version in the key anyway).
fn context(
    state: &AppState,
    project: &Project,
    experiment: Option<Arc<ExperimentSpec>>,
    cohorts: Arc<insights::cohorts::Cohorts>,
) -> insights::Context {
    let now = state.clock.now();
    let mut ctx = plain_context(project, now);
    if experiment.is_some() {
        ctx.now = experiments::minute_ceiling(now);
    }
    ctx.experiment = experiment;
    ctx.cohorts = cohorts;
    ctx
}

/// Compiling in `project`'s terms at `now`, with no experiment and no cohorts.
pub(crate) fn plain_context(project: &Project, now: DateTime<Utc>) -> insights::Context {
    insights::Context {
        timezone: project.timezone.parse().unwrap_or(chrono_tz::UTC),
        now,
        week_start_day: project.week_start_day.unwrap_or(0),
        check_expression: engine::check_expression,
        experiment: None,
        cohorts: Default::default(),
        actions: Default::default(),
        test_account_filters: std::sync::Arc::new(project.test_account_filters.clone()),
        path_cleaning_rules: std::sync::Arc::new(
            project
                .path_cleaning_filters
                .iter()
                .map(|rule| insights::paths::CleaningRule {
                    regex: rule.regex.clone(),
                    alias: rule.alias.clone(),
                })
                .collect(),
        ),
    }
}

fn invalid(invalid: insights::Invalid) -> QueryError {
    QueryError::Invalid {
        attr: invalid.attr,
        detail: invalid.detail,
    }
}

/// The SQL node's bindings, with `{filters}` compiled in `ctx` (the project's, with the cohorts
/// the node names).
fn bindings(ctx: &insights::Context, node: &SqlNode) -> Result<engine::Bindings, QueryError> {
    let mut bindings = node.bindings.clone();
    if let Some(filters) = &node.filters {
        bindings.filters =
            Some(insights::hogql_filters::expression(filters, ctx).map_err(invalid)?);
    }
    // `IN COHORT` in the text: each cohort's membership, over the engine's subject column. One
    // that is not found is left out, for the engine's 400 naming it.
    for reference in engine::cohort_references(&node.text) {
        let Some(id) = cohorts::resolve(&ctx.cohorts, &reference) else {
            continue;
        };
        let condition = insights::cohorts::membership(id, engine::COHORT_SUBJECT, ctx, "query")
            .map_err(invalid)?;
        bindings.cohorts.insert(reference.key(), condition);
    }
    // `matchesAction(...)`: each action's condition; one not found is left out, for the
    // engine's 400 naming it.
    for reference in engine::action_references(&node.text) {
        let Some(action) = actions::resolve(&ctx.actions, &reference) else {
            continue;
        };
        let condition = insights::actions::condition(action, ctx, "query").map_err(invalid)?;
        bindings.actions.insert(reference.key(), condition);
    }
    Ok(bindings)
}

/// Compiles a structured node in `ctx` into its dialect queries, each prepared.
fn compile_with(
    ctx: &insights::Context,
    node: &Structured,
) -> Result<(insights::Compiled, Vec<engine::Prepared>), QueryError> {
    let compiled = node.compile(ctx).map_err(invalid)?;
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
    let now = run.state.clock.now();
    json!({
        "query": run.node.structured.as_ref().map_or_else(|| Value::String(run.node.text.clone()), |node| node.as_value().clone()),
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
