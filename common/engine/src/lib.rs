//! The SQL dialect (HogQL-compatible, ClickHouse-flavoured) on DataFusion: parse, check and
//! rewrite the text, register only the project's own tables, run under memory and time limits.

mod aliases;
mod cast_types;
mod clickhouse_defaults;
mod clickhouse_syntax;
mod cohort_syntax;
mod conditions;
mod date_trunc;
mod day_bounds;
mod dense_groups;
mod event_names;
mod function_docs;
mod functions;
mod funnel;
mod in_frame;
mod limit_by;
pub mod materialize;
mod membership;
mod parse;
mod plain_scan;
mod progress;
mod results;
mod rewrite;
mod row_generators;
pub(crate) mod shredded;
pub(crate) mod tables;
mod template;
mod typing;
pub(crate) mod udfs;
mod uniq;

use std::error::Error;
use std::fmt;
use std::ops::ControlFlow;
use std::sync::{Arc, LazyLock};
use std::time::{Duration, Instant};

use common::AppState;
use datafusion::arrow::array::RecordBatch;
use datafusion::common::DataFusionError;
use datafusion::execution::SessionStateBuilder;
use datafusion::execution::cache::cache_manager::{CacheManagerConfig, FileMetadataCache};
use datafusion::execution::cache::default_cache::DefaultCache;
use datafusion::execution::runtime_env::RuntimeEnvBuilder;
use datafusion::physical_plan::{ExecutionPlan, collect};
use datafusion::prelude::{SessionConfig, SessionContext};
use datafusion::sql::parser::Statement as DfStatement;
use datafusion::sql::sqlparser::ast::{Expr, Statement, visit_expressions};

pub use cohort_syntax::{CohortRef, SUBJECT as COHORT_SUBJECT, references as cohort_references};
/// A materialization's result travels as Arrow from the engine to object storage.
pub use datafusion::arrow::array::RecordBatch as ArrowBatch;
pub use datafusion::arrow::datatypes::SchemaRef;
pub use function_docs::reference as function_reference;
/// What we were doing when a cause of ours failed (shared with the lake, which opens tables).
pub use lake_core::Context;
pub use progress::{Progress, Scanned};
pub use rewrite::{Bindings, DEFAULT_LIMIT, MAX_LIMIT, Page, Window};
pub use tables::ALL as TABLES;
/// The engine's scalar functions for a session in time zone `zone` (benches register them).
pub use udfs::all as hogql_functions;

#[derive(Debug, thiserror::Error)]
pub enum QueryError {
    /// The text does not parse.
    #[error("{0}")]
    Syntax(String),
    /// It parses but is not a valid query for this project (unknown table or function...).
    #[error("{0}")]
    Query(String),
    #[error(
        "Query has hit the max execution time before completing. See our docs for how to improve your query performance. You may need to materialize."
    )]
    Timeout,
    #[error(
        "Query has reached the max memory limit before completing. See our docs for how to improve your query performance. You may need to materialize."
    )]
    Memory,
    #[error("Query was cancelled")]
    Cancelled,
    /// A structured node that cannot be compiled: the field and what is wrong with it.
    #[error("{detail}")]
    Invalid { attr: String, detail: String },
    /// A failure on our side (storage, DataFusion, a broken invariant): a 500 whose cause is
    /// logged, never shown.
    #[error(transparent)]
    Internal(InternalCause),
}

impl QueryError {
    /// An internal failure caused by `cause` (a typed error, whose sources are kept, or a message).
    pub fn internal(cause: impl Into<Box<dyn Error + Send + Sync>>) -> Self {
        QueryError::Internal(InternalCause::new(cause))
    }

    /// PostHog's `code` for the 400s.
    pub fn code(&self) -> &'static str {
        match self {
            QueryError::Syntax(_) => "hogql_syntax_error",
            _ => "hogql_query_error",
        }
    }
}

/// The cause of a [`QueryError::Internal`], shared so that the error answered to the caller
/// (an `ApiError`, cloned from it) and the query log can both keep it. Transparent: it shows and
/// chains as the error it wraps.
#[derive(Debug, Clone)]
pub struct InternalCause(Arc<dyn Error + Send + Sync>);

impl InternalCause {
    pub fn new(cause: impl Into<Box<dyn Error + Send + Sync>>) -> Self {
        Self(Arc::from(cause.into()))
    }
}

impl fmt::Display for InternalCause {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl Error for InternalCause {
    fn source(&self) -> Option<&(dyn Error + 'static)> {
        self.0.source()
    }
}

impl From<&str> for InternalCause {
    fn from(message: &str) -> Self {
        Self::new(message)
    }
}

impl From<String> for InternalCause {
    fn from(message: String) -> Self {
        Self::new(message)
    }
}

/// Bytes of Parquet footers (with their page indexes) kept between queries.
const PARQUET_FOOTER_CACHE_BYTES: usize = 64 << 20;

/// Footers of the tables' files, shared by every session of the process: files never change
/// once written (an entry is also checked against the file's size and time), and reading and
/// decoding the footers of every file was a fixed cost of each query (about 17 ms over 67
/// files on the bench table).
static PARQUET_FOOTERS: LazyLock<Arc<FileMetadataCache>> = LazyLock::new(|| {
    Arc::new(DefaultCache::new(PARQUET_FOOTER_CACHE_BYTES).with_name("parquet footers"))
});

/// Bounds every query runs under.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    pub memory_bytes: usize,
    pub timeout: Duration,
}

/// A checked, rewritten query, ready to run (and to key a cache with).
pub struct Prepared {
    /// The query as the user wrote it, normalized (`hogql` in responses).
    pub hogql: String,
    /// What DataFusion runs.
    pub sql: String,
    statement: Statement,
    pub tables: Vec<String>,
    /// The page the result is (its extra row tells `hasMore`), when it is one.
    pub page: Option<Page>,
    /// ClickHouse's defaults where SQL has NULLs (see `clickhouse_defaults`).
    clickhouse_defaults: bool,
}

impl Prepared {
    /// Keeps SQL's NULLs for aggregates over no rows and unmatched join columns: for the
    /// queries we compile from nodes, which are written (and checked against DuckDB) that way.
    pub fn with_sql_nulls(mut self) -> Self {
        self.clickhouse_defaults = false;
        self
    }
}

pub fn prepare(text: &str, bindings: &Bindings) -> Result<Prepared, QueryError> {
    prepare_window(text, bindings, Window::Query)
}

/// [`prepare`], with the top-level LIMIT set by `window` (a caller's page, or the whole result).
pub fn prepare_window(
    text: &str,
    bindings: &Bindings,
    window: Window,
) -> Result<Prepared, QueryError> {
    let parsed = parse::parse(text)?;
    prepare_parsed(parsed, bindings, window)
}

fn prepare_parsed(
    parsed: parse::Parsed,
    bindings: &Bindings,
    window: Window,
) -> Result<Prepared, QueryError> {
    let hogql = parsed.query.to_string().replace('`', "");
    let rewritten = rewrite::rewrite(
        *parsed.query,
        &parsed.placeholders,
        bindings,
        tables::ALL,
        window,
    )?;
    Ok(Prepared {
        hogql,
        sql: rewritten.query.to_string(),
        statement: Statement::Query(Box::new(rewritten.query)),
        tables: rewritten.tables,
        page: rewritten.page,
        clickhouse_defaults: true,
    })
}

/// Whether `text` is exactly one expression of the dialect (so that, put in parentheses inside a
/// compiled query, it cannot reshape that query).
pub fn check_expression(text: &str) -> Result<(), String> {
    use datafusion::sql::sqlparser::ast::SetExpr;
    let parsed = parse::parse(&format!("SELECT ({text})")).map_err(|e| e.to_string())?;
    let query = parsed.query;
    let single = match query.body.as_ref() {
        SetExpr::Select(select) => {
            select.projection.len() == 1
                && select.from.is_empty()
                && select.selection.is_none()
                && select.having.is_none()
                && select.prewhere.is_none()
                && select.distinct.is_none()
                && matches!(&select.group_by, datafusion::sql::sqlparser::ast::GroupByExpr::Expressions(e, m) if e.is_empty() && m.is_empty())
        }
        _ => false,
    };
    if !single
        || query.with.is_some()
        || query.order_by.is_some()
        || query.limit_clause.is_some()
        || !parsed.placeholders.is_empty()
    {
        return Err(format!("`{text}` is not a single expression"));
    }
    Ok(())
}

/// A DataFusion session holding one project's tables.
pub struct Session {
    ctx: SessionContext,
    /// The events table's Delta version (None: no events yet).
    pub events_version: Option<u64>,
    zone: chrono_tz::Tz,
    /// Shredded columns the snapshot's files hold, read instead of the JSON.
    coverage: lake_core::shred::Coverage,
    /// Parquet filter pushdown for every query (`ANALYTICS_PARQUET_PUSHDOWN`), not only for those
    /// that read JSON text.
    pushdown_always: bool,
}

pub async fn open_session(
    state: &AppState,
    team_id: i64,
    timezone: &str,
    prepared: &Prepared,
    limits: &Limits,
) -> Result<Session, QueryError> {
    let zone: chrono_tz::Tz = timezone.parse().unwrap_or(chrono_tz::UTC);
    let mut config = SessionConfig::new()
        .with_information_schema(false)
        .with_create_default_catalog_and_schema(true)
        .set_bool("datafusion.sql_parser.enable_ident_normalization", false)
        // `now()`, `today()` and `yesterday()` in the project's time zone, as in PostHog.
        .set_str("datafusion.execution.time_zone", zone.name());
    if prepared.sql.contains(funnel::NAME) {
        // A funnel's partial aggregation reduces nothing (its state is every event it was
        // given) and held a second copy of them all: after its first batch, rows go straight
        // to the final aggregation.
        let execution = &mut config.options_mut().execution;
        execution.skip_partial_aggregation_probe_ratio_threshold = 0.0;
        execution.skip_partial_aggregation_probe_rows_threshold = 0;
    }
    let runtime = RuntimeEnvBuilder::new()
        .with_cache_manager(
            CacheManagerConfig::default()
                .with_file_metadata_cache(Some(PARQUET_FOOTERS.clone()))
                .with_metadata_cache_limit(PARQUET_FOOTER_CACHE_BYTES),
        )
        .with_memory_limit(limits.memory_bytes, 1.0)
        // No spilling: a query over its memory bound fails cleanly instead of filling the disk
        // (Lambda's /tmp is small).
        .with_disk_manager_builder(
            datafusion::execution::disk_manager::DiskManagerBuilder::default()
                .with_mode(datafusion::execution::disk_manager::DiskManagerMode::Disabled),
        )
        .build_arc()
        .map_err(QueryError::internal)?;
    let mut builder = SessionStateBuilder::new()
        .with_config(config)
        .with_runtime_env(runtime)
        .with_default_features()
        .with_physical_optimizer_rule(Arc::new(plain_scan::PlainDeltaScans))
        .with_physical_optimizer_rule(Arc::new(dense_groups::DenseGroups));
    if prepared.clickhouse_defaults {
        builder = builder.with_analyzer_rule(Arc::new(clickhouse_defaults::ClickHouseDefaults));
    }
    let session_state = builder.build();
    let mut ctx = SessionContext::new_with_state(session_state);
    // Our UDFs read naive date-time text in the project's time zone.
    for udf in udfs::all(zone) {
        ctx.register_udf(udf);
    }
    // `DateTime - DateTime` is a number of seconds, as in ClickHouse.
    datafusion::execution::FunctionRegistry::register_expr_planner(
        &mut ctx,
        Arc::new(udfs::DateTimeMinus::new(zone)),
    )
    .map_err(QueryError::internal)?;
    ctx.register_udf(date_trunc::date_trunc());
    for udf in typing::all() {
        ctx.register_udf(udf);
    }
    ctx.register_udaf(funnel::aggregate_funnel());
    ctx.register_udaf(uniq::aggregate_uniq());
    let registered = tables::register(&ctx, state, team_id, zone.name(), &prepared.tables).await?;
    if !registered.coverage.event_names.is_empty() {
        ctx.register_udf(event_names::event_name(
            registered.coverage.event_names.clone(),
        ));
    }
    Ok(Session {
        ctx,
        events_version: registered.events_version,
        zone,
        coverage: registered.coverage,
        pushdown_always: state.config.query.parquet_pushdown,
    })
}

/// A query's answer, shaped as PostHog's HogQLQueryResponse needs it.
#[derive(Debug, Clone)]
pub struct Output {
    pub columns: Vec<String>,
    pub types: Vec<(String, String)>,
    pub results: Vec<Vec<serde_json::Value>>,
    pub has_more: Option<bool>,
    pub limit: Option<u64>,
    pub offset: Option<u64>,
    pub read_rows: u64,
    pub read_bytes: u64,
    pub result_bytes: u64,
    pub memory_usage: u64,
    pub timings: Vec<(String, f64)>,
}

impl Output {
    /// A result as the response shows it: columns with their ClickHouse types, rows in the
    /// project's time zone, cut to `page` (whose extra row tells `hasMore`). What the scan read
    /// and the timings are the caller's to fill in.
    fn shaped(
        schema: &datafusion::arrow::datatypes::Schema,
        batches: &[RecordBatch],
        zone: chrono_tz::Tz,
        page: Option<Page>,
    ) -> Output {
        let columns = schema.fields().iter().map(|f| f.name().clone()).collect();
        let types = results::column_types(schema.fields(), zone.name());
        let mut rows = results::rows(batches, zone);
        let (has_more, limit, offset) = match page {
            Some(page) => {
                let more = rows.len() as u64 > page.limit;
                rows.truncate(page.limit as usize);
                (Some(more), Some(page.limit), Some(page.offset))
            }
            None => (None, None, None),
        };
        Output {
            columns,
            types,
            results: rows,
            has_more,
            limit,
            offset,
            read_rows: 0,
            read_bytes: 0,
            result_bytes: batches
                .iter()
                .map(|b| b.get_array_memory_size() as u64)
                .sum(),
            memory_usage: 0,
            timings: Vec::new(),
        }
    }
}

impl Session {
    pub async fn execute(
        &self,
        prepared: &Prepared,
        limits: &Limits,
    ) -> Result<Output, QueryError> {
        self.execute_watched(prepared, limits, &Progress::new())
            .await
    }

    /// [`Session::execute`], its plan published to `progress` once planned, so its metrics can
    /// be read while it runs.
    pub async fn execute_watched(
        &self,
        prepared: &Prepared,
        limits: &Limits,
        progress: &Progress,
    ) -> Result<Output, QueryError> {
        let started = Instant::now();
        let (physical, planned, batches) = self.run(prepared, limits, progress).await?;
        let executed = started.elapsed().as_secs_f64() - planned;
        let scanned = progress::scanned(physical.as_ref());
        Ok(Output {
            read_rows: scanned.rows,
            read_bytes: scanned.bytes,
            memory_usage: self.ctx.runtime_env().memory_pool.reserved() as u64,
            timings: vec![
                ("./plan".into(), planned),
                ("./execute".into(), executed),
                (".".into(), started.elapsed().as_secs_f64()),
            ],
            ..Output::shaped(&physical.schema(), &batches, self.zone, prepared.page)
        })
    }
}

/// Whether `statement` reads properties from JSON text (a key no shredded column covers).
fn reads_json_text(statement: &Statement) -> bool {
    visit_expressions(statement, |expr| match expr {
        Expr::Function(function)
            if function
                .name
                .0
                .last()
                .and_then(|part| part.as_ident())
                .is_some_and(|name| udfs::reads_json(&name.value)) =>
        {
            ControlFlow::Break(())
        }
        _ => ControlFlow::Continue(()),
    })
    .is_break()
}

impl Session {
    /// Plans and runs `prepared` under `limits`: the physical plan (with its metrics), the
    /// seconds planning took, and the result batches. The plan is published to `progress` before
    /// it runs.
    async fn run(
        &self,
        prepared: &Prepared,
        limits: &Limits,
        progress: &Progress,
    ) -> Result<(Arc<dyn ExecutionPlan>, f64, Vec<RecordBatch>), QueryError> {
        let started = Instant::now();
        let ctx = self.ctx.clone();
        let progress = progress.clone();
        let statement = self.statement(prepared);
        // Filters evaluated while decoding (other columns decoded only for the rows kept) pay
        // off where a row's cost is parsing its JSON properties: on the bench table, 10-25% less
        // for properties behind an event filter. For shredded and plain columns they gained
        // nothing, and on files in time order (before the importer sorted by event) they lost:
        // 1.45 s against 0.9 s. Row groups are pruned by statistics either way.
        ctx.state_ref()
            .write()
            .config_mut()
            .options_mut()
            .execution
            .parquet
            .pushdown_filters = self.pushdown_always || reads_json_text(&statement);
        // Planning (which folds constants) and execution run on the query runtime, so a long
        // query never starves the server (or the poll that cancels it); dropping this future
        // aborts the task there.
        let work = async move {
            let state = ctx.state();
            let plan = state
                .statement_to_plan(DfStatement::Statement(Box::new(statement)))
                .await?;
            let physical = state.create_physical_plan(&plan).await?;
            let planned = started.elapsed().as_secs_f64();
            progress.publish(physical.clone());
            let batches = collect(physical.clone(), ctx.task_ctx()).await?;
            Ok::<_, DataFusionError>((physical, planned, batches))
        };
        let running = AbortOnDrop(query_runtime().spawn(work));
        let (physical, planned, batches) = match tokio::time::timeout(limits.timeout, running).await
        {
            Ok(Ok(result)) => result.map_err(classify)?,
            Ok(Err(join)) => return Err(QueryError::internal(join)),
            Err(_) => return Err(QueryError::Timeout),
        };
        // The plan with each operator's rows and time, for finding what a slow query spends on.
        if tracing::enabled!(target: "engine::plan", tracing::Level::DEBUG) {
            let shown = datafusion::physical_plan::display::DisplayableExecutionPlan::with_metrics(
                physical.as_ref(),
            )
            .indent(true)
            .to_string();
            tracing::debug!(target: "engine::plan", "executed plan:\n{shown}");
        }
        Ok((physical, planned, batches))
    }

    /// The statement DataFusion runs: the prepared one, reading shredded columns where it can and
    /// bounding time by the `date` partitions where that is exact.
    fn statement(&self, prepared: &Prepared) -> Statement {
        match &prepared.statement {
            Statement::Query(query) => {
                let mut query = query.clone();
                shredded::apply(&mut query, &self.coverage);
                if self.zone == chrono_tz::UTC {
                    day_bounds::apply(&mut query);
                }
                let hidden = self.coverage.columns().chain([day_bounds::DAY_COLUMN]);
                shredded::hide_columns(&mut query, hidden);
                Statement::Query(query)
            }
            other => other.clone(),
        }
    }

    /// Runs `prepared` and answers its Arrow result as is (a materialization stores it).
    pub async fn collect(
        &self,
        prepared: &Prepared,
        limits: &Limits,
    ) -> Result<(datafusion::arrow::datatypes::SchemaRef, Vec<RecordBatch>), QueryError> {
        let (physical, _, batches) = self.run(prepared, limits, &Progress::new()).await?;
        Ok((physical.schema(), batches))
    }

    /// The result's columns and their types, found by planning `prepared` without running it.
    pub async fn columns(&self, prepared: &Prepared) -> Result<Vec<(String, String)>, QueryError> {
        let statement = DfStatement::Statement(Box::new(self.statement(prepared)));
        let plan = self
            .ctx
            .state()
            .statement_to_plan(statement)
            .await
            .map_err(classify)?;
        Ok(results::column_types(
            plan.schema().inner().fields(),
            self.zone.name(),
        ))
    }
}

/// DataFusion's errors, sorted into what the user did and what went wrong on our side. The
/// cause may be wrapped (an optimizer rule's `Context`, `Shared` across partitions, `External`
/// from a function), so the whole chain is looked at: a bad regular expression, a cast of a
/// constant that cannot convert, a division by zero are the query's fault (400s); only failures
/// of our own (I/O, storage, internal invariants) are 500s.
fn classify(error: DataFusionError) -> QueryError {
    let text = error.to_string();
    let mut current: Option<&(dyn Error + 'static)> = Some(&error);
    while let Some(cause) = current {
        if let Some(DataFusionError::ResourcesExhausted(_)) =
            cause.downcast_ref::<DataFusionError>()
        {
            return QueryError::Memory;
        }
        if let Some(arrow) = cause.downcast_ref::<datafusion::arrow::error::ArrowError>()
            && matches!(arrow, datafusion::arrow::error::ArrowError::MemoryError(_))
        {
            return QueryError::Memory;
        }
        current = cause.source();
    }
    if let Some(message) = regex_message(&text) {
        return QueryError::Query(message);
    }
    let root = error.find_root();
    let user_error = match root {
        DataFusionError::Plan(_) | DataFusionError::SchemaError(_, _) => {
            Some(QueryError::Query(clean(&root.to_string())))
        }
        DataFusionError::SQL(e, _) => Some(QueryError::Query(clean(&e.to_string()))),
        DataFusionError::NotImplemented(message)
            if message.contains("does not support logical expression") =>
        {
            // The planner's debug print of the expression means nothing to the user.
            Some(QueryError::Query(
                "Not supported: a subquery (IN, EXISTS) in this position; use it in the select list, WHERE or HAVING".into(),
            ))
        }
        DataFusionError::NotImplemented(message) => {
            Some(QueryError::Query(format!("Not supported: {message}")))
        }
        DataFusionError::Execution(message) => Some(QueryError::Query(clean(message))),
        DataFusionError::ArrowError(e, _) => arrow_error(e),
        DataFusionError::External(inner) => inner
            .downcast_ref::<datafusion::arrow::error::ArrowError>()
            .and_then(arrow_error),
        _ => None,
    };
    // Ours: the whole DataFusion error, wrappers and all, goes to the log.
    user_error.unwrap_or_else(|| QueryError::internal(error))
}

/// Arrow's errors: bad values (casts, arithmetic, parsing, arguments) are the query's fault
/// (`None`: ours).
fn arrow_error(error: &datafusion::arrow::error::ArrowError) -> Option<QueryError> {
    use datafusion::arrow::error::ArrowError;
    match error {
        ArrowError::CastError(_)
        | ArrowError::ComputeError(_)
        | ArrowError::DivideByZero
        | ArrowError::ArithmeticOverflow(_)
        | ArrowError::ParseError(_)
        | ArrowError::InvalidArgumentError(_)
        | ArrowError::NotYetImplemented(_)
        | ArrowError::JsonError(_)
        | ArrowError::CsvError(_) => Some(QueryError::Query(clean(&error.to_string()))),
        _ => None,
    }
}

/// The `regex` crate's parse error, wherever it is in a message, as one clear line:
/// "Invalid regular expression `(`: unclosed group".
fn regex_message(text: &str) -> Option<String> {
    let start = text.find("regex parse error:")?;
    let lines: Vec<&str> = text[start..].lines().map(str::trim).collect();
    let pattern = lines.get(1).copied().unwrap_or_default();
    let reason = lines
        .iter()
        .find_map(|line| line.strip_prefix("error: "))
        .unwrap_or("cannot be parsed");
    Some(format!("Invalid regular expression `{pattern}`: {reason}"))
}

/// Drops DataFusion's own prefixes, its advice to its developers and its lists of signatures,
/// and hides our internal names.
fn clean(message: &str) -> String {
    let mut text = message.to_owned();
    for prefix in [
        "Error during planning: ",
        "Schema error: ",
        "Execution error: ",
        "Arrow error: ",
        "Internal error: ",
    ] {
        text = text.replace(prefix, "");
    }
    for tail in [
        "\nThis issue was likely caused by a bug in DataFusion's code",
        "This issue was likely caused by a bug in DataFusion's code",
        " You might need to add explicit type casts",
        "\n\tCandidate functions:",
    ] {
        if let Some(at) = text.find(tail) {
            text.truncate(at);
        }
    }
    text.trim_end().replace("__events_raw", "events")
}

/// The runtime queries execute on: as many threads as cores, apart from the one serving HTTP.
fn query_runtime() -> &'static tokio::runtime::Runtime {
    static RUNTIME: std::sync::OnceLock<tokio::runtime::Runtime> = std::sync::OnceLock::new();
    RUNTIME.get_or_init(|| {
        let threads = std::thread::available_parallelism().map_or(2, |n| n.get());
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(threads)
            .thread_name("query")
            .enable_all()
            .build()
            .unwrap_or_else(|error| panic!("cannot start the query runtime: {error}"))
    })
}

/// A task handle that aborts the task when dropped (a timeout, a cancel, a client gone).
struct AbortOnDrop<T>(tokio::task::JoinHandle<T>);

impl<T> Drop for AbortOnDrop<T> {
    fn drop(&mut self) {
        self.0.abort();
    }
}

impl<T> std::future::Future for AbortOnDrop<T> {
    type Output = Result<T, tokio::task::JoinError>;

    fn poll(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Self::Output> {
        std::pin::Pin::new(&mut self.0).poll(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Whether an error of type `T` is anywhere in `error`'s chain.
    fn caused_by<T: Error + 'static>(error: &(dyn Error + 'static)) -> bool {
        let mut current = Some(error);
        while let Some(cause) = current {
            if cause.is::<T>() {
                return true;
            }
            current = cause.source();
        }
        false
    }

    #[test]
    fn our_failures_keep_their_typed_cause_and_the_querys_are_shown() {
        let io = DataFusionError::IoError(std::io::Error::other("disk gone"));
        let error = classify(DataFusionError::Context(
            "reading events".into(),
            Box::new(io),
        ));
        assert!(matches!(error, QueryError::Internal(_)), "{error:?}");
        assert!(caused_by::<std::io::Error>(&error), "{error:?}");
        // Shared, so the answer and the log can each hold it.
        let QueryError::Internal(cause) = &error else {
            unreachable!()
        };
        assert!(caused_by::<std::io::Error>(&cause.clone()));

        let error = classify(DataFusionError::Plan("No field named nope".into()));
        assert!(
            matches!(&error, QueryError::Query(message) if message == "No field named nope"),
            "{error:?}"
        );
        let error = classify(DataFusionError::ArrowError(
            Box::new(datafusion::arrow::error::ArrowError::DivideByZero),
            None,
        ));
        assert!(matches!(error, QueryError::Query(_)), "{error:?}");
    }

    #[test]
    fn messages_lose_datafusions_advice_and_signature_lists() {
        let raw = "Internal error: Function 'sum' failed to match any signature.\nThis issue was likely caused by a bug in DataFusion's code. Please help us. No function matches 'sum(Boolean)'. You might need to add explicit type casts.\n\tCandidate functions:\n\tsum(Int64)";
        assert_eq!(
            super::clean(raw),
            "Function 'sum' failed to match any signature."
        );
    }

    #[test]
    fn a_broken_template_names_itself_and_keeps_the_parser_error() {
        let error = template::expr("f(", &[]).expect_err("does not parse");
        assert!(error.to_string().starts_with("template f("), "{error}");
        assert!(
            caused_by::<datafusion::sql::sqlparser::parser::ParserError>(&error),
            "{error:?}"
        );
    }

    #[test]
    fn filters_are_pushed_down_for_queries_that_read_json_text() {
        let statement = |sql: &str| {
            datafusion::sql::sqlparser::parser::Parser::parse_sql(
                &datafusion::sql::sqlparser::dialect::GenericDialect {},
                sql,
            )
            .unwrap()
            .remove(0)
        };
        for sql in [
            "select hogql_prop(properties, 'plan') from events where event = 'x'",
            "select count() from events where hogql_json_float(properties, 'n') > 1",
            "select * from (select sum(toFloat(hogql_prop(properties, 'a'))) from events) t",
        ] {
            assert!(reads_json_text(&statement(sql)), "{sql}");
        }
        for sql in [
            "select count() from events where event = 'x'",
            "select \"p_$browser\", count() from events group by 1",
            "select 'hogql_prop(properties)' from events",
        ] {
            assert!(!reads_json_text(&statement(sql)), "{sql}");
        }
    }
}
