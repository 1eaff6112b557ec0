//! Running a prepared query: a DataFusion session holding only one project's tables, with the
//! dialect's functions, under memory and time limits, on a runtime of its own.

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

use crate::bindings::Page;
use crate::error::classify;
use crate::progress::{self, Progress};
use crate::{
    Prepared, QueryError, clickhouse_defaults, day_bounds, dense_groups, plain_scan, portable_scan,
    remote, results, shredded, single_phase, tables, udfs, unnest_uniqueness,
};
use remote::{Cluster, Engine, Placement};

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

/// A DataFusion session holding one project's tables.
pub struct Session {
    pub(crate) ctx: SessionContext,
    /// The events table's Delta version (None: no events yet).
    pub events_version: Option<u64>,
    zone: chrono_tz::Tz,
    /// Shredded columns the snapshot's files hold, read instead of the JSON.
    coverage: lake_core::shred::Coverage,
    /// Parquet filter pushdown for every query (`ANALYTICS_PARQUET_PUSHDOWN`), not only for those
    /// that read JSON text.
    pushdown_always: bool,
    /// The cluster large queries go to, and which ones do.
    cluster: Option<Arc<dyn Cluster>>,
    placement: Placement,
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
    if single_phase::calls_one_phase_aggregate(&prepared.sql) {
        // A funnel's or paths' partial aggregation reduces nothing (its state is every event it
        // was given) and held a second copy of them all. `single_phase` removes that phase; where
        // its rule does not apply, rows go straight to the final aggregation after the first
        // batch.
        let execution = &mut config.options_mut().execution;
        execution.skip_partial_aggregation_probe_ratio_threshold = 0.0;
        execution.skip_partial_aggregation_probe_rows_threshold = 0;
    }
    if prepared.sql.contains(" OVER (") {
        // Window functions sort whole partitions of rows. Sorted and repartitioned string views
        // keep pointing into the buffers they were cut from, and each batch is charged for all
        // of them: a lifecycle over 10M events was charged past 20 GB while holding 1 GB.
        // Plain strings are copied when cut, and charged what they hold.
        config = config.set_bool(
            "datafusion.execution.parquet.schema_force_view_types",
            false,
        );
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
        .with_optimizer_rules(unnest_uniqueness::optimizer_rules())
        .with_physical_optimizer_rule(Arc::new(plain_scan::PlainDeltaScans))
        .with_physical_optimizer_rule(Arc::new(dense_groups::DenseGroups))
        .with_physical_optimizer_rule(Arc::new(single_phase::SinglePhaseActorAggregates));
    if prepared.clickhouse_defaults {
        builder = builder.with_analyzer_rule(Arc::new(clickhouse_defaults::ClickHouseDefaults));
    }
    let session_state = builder.build();
    let mut ctx = SessionContext::new_with_state(session_state);
    // `DateTime - DateTime` is a number of seconds, as in ClickHouse.
    datafusion::execution::FunctionRegistry::register_expr_planner(
        &mut ctx,
        Arc::new(udfs::DateTimeMinus::new(zone)),
    )
    .map_err(QueryError::internal)?;
    for udaf in remote::aggregate_functions() {
        ctx.register_udaf(udaf);
    }
    let registered = tables::register(&ctx, state, team_id, zone.name(), &prepared.tables).await?;
    let event_names = (!registered.coverage.event_names.is_empty())
        .then(|| registered.coverage.event_names.clone());
    // Our UDFs read naive date-time text in the project's time zone.
    for udf in remote::scalar_functions(zone, event_names) {
        ctx.register_udf(udf);
    }
    Ok(Session {
        ctx,
        events_version: registered.events_version,
        zone,
        coverage: registered.coverage,
        pushdown_always: state.config.query.parquet_pushdown,
        cluster: None,
        placement: Placement::Auto,
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
    /// Where it ran.
    pub engine: Engine,
}

impl Output {
    /// A result as the response shows it: columns with their ClickHouse types, rows in the
    /// project's time zone, cut to `page` (whose extra row tells `hasMore`). What the scan read
    /// and the timings are the caller's to fill in.
    pub(crate) fn shaped(
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
            engine: Engine::Local,
        }
    }
}

impl Session {
    /// Runs large queries (or, with `Placement::Cluster`, every query) on `cluster`.
    pub fn with_cluster(mut self, cluster: Option<Arc<dyn Cluster>>, placement: Placement) -> Self {
        self.cluster = cluster;
        self.placement = placement;
        self
    }

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
        let (physical, planned, batches, engine) = self.run(prepared, limits, progress).await?;
        let executed = started.elapsed().as_secs_f64() - planned;
        let scanned = progress::scanned(physical.as_ref());
        Ok(Output {
            engine,
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
    ) -> Result<(Arc<dyn ExecutionPlan>, f64, Vec<RecordBatch>, Engine), QueryError> {
        let started = Instant::now();
        let cluster = match (self.placement, &self.cluster) {
            (Placement::Local, _) | (Placement::Auto, None) => None,
            (_, Some(cluster)) => Some((cluster.clone(), self.placement == Placement::Cluster)),
            (Placement::Cluster, None) => return Err(QueryError::ClusterUnavailable(
                "this query asked for the cluster, and none is configured (ANALYTICS_QUERY_CLUSTER)".into(),
            )),
        };
        // Unique, so the job can be found on the cluster (to cancel it).
        let job_name = uuid::Uuid::new_v4().to_string();
        let zone = self.zone.name().to_owned();
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
            let remote = cluster.filter(|(cluster, always)| {
                *always || remote::scan_bytes(&physical) > cluster.min_scan_bytes()
            });
            if remote.is_none() {
                progress.publish(physical.clone());
            }
            let ran = match remote {
                Some((cluster, always)) => {
                    // Dynamic filters tie a join's probe side to its build side in one
                    // process; Ballista's stages cannot carry them (its scheduler fails the
                    // stage), so the cluster's plan is made without them.
                    let mut distributed = state.clone();
                    distributed.config_mut().options_mut().set(
                        "datafusion.optimizer.enable_dynamic_filter_pushdown",
                        "false",
                    )?;
                    let planned = distributed.create_physical_plan(&plan).await?;
                    let portable = portable_scan::portable(planned)?;
                    let job = remote::Job {
                        name: job_name,
                        zone,
                        config: ctx.copied_config(),
                        progress: Arc::default(),
                    };
                    progress.publish_remote(physical.clone(), job.progress.clone());
                    match cluster.run(portable, job).await {
                        Err(error) if !always && remote::Unreachable::is(&error) => {
                            tracing::warn!(%error, "the cluster is unreachable: running the query here");
                            progress.publish(physical.clone());
                            None
                        }
                        ran => Some((ran?, Engine::Cluster)),
                    }
                }
                None => None,
            };
            let (batches, engine) = match ran {
                Some(ran) => ran,
                None => (
                    collect(physical.clone(), ctx.task_ctx()).await?,
                    Engine::Local,
                ),
            };
            Ok::<_, DataFusionError>((physical, planned, batches, engine))
        };
        let running = AbortOnDrop(query_runtime().spawn(work));
        let (physical, planned, batches, engine) =
            match tokio::time::timeout(limits.timeout, running).await {
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
        Ok((physical, planned, batches, engine))
    }

    /// The statement DataFusion runs: the prepared one, reading shredded columns where it can and
    /// bounding time by the `date` partitions where that is exact.
    pub(crate) fn statement(&self, prepared: &Prepared) -> Statement {
        match &prepared.statement {
            Statement::Query(query) => {
                let mut query = query.clone();
                shredded::apply(&mut query, &self.coverage);
                if self.zone == chrono_tz::UTC {
                    day_bounds::apply(&mut query);
                }
                let hidden = self.coverage.columns().chain([tables::DAY_COLUMN]);
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
        let (physical, _, batches, _) = self.run(prepared, limits, &Progress::new()).await?;
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
