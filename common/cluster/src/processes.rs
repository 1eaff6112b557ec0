//! Ballista's scheduler and executor processes, configured for our plans: our codec on every
//! side, the dialect's aggregate functions registered by name (its scalar functions travel with
//! their parameters), and the lake's object store on every executor.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use ballista_core::RuntimeProducer;
use ballista_core::extension::SessionConfigExt;
use ballista_core::registry::BallistaFunctionRegistry;
use ballista_executor::executor_process::{ExecutorProcessConfig, start_executor_process};
use ballista_scheduler::cluster::BallistaCluster;
use ballista_scheduler::config::SchedulerConfig;
use ballista_scheduler::scheduler_process::start_server;
use common::config::Config;
use datafusion::execution::disk_manager::{DiskManagerBuilder, DiskManagerMode};
use datafusion::execution::runtime_env::{RuntimeEnv, RuntimeEnvBuilder};
use datafusion::execution::{FunctionRegistry, SessionState, SessionStateBuilder};
use datafusion::prelude::SessionConfig;
use engine::remote;

use crate::codec::ClusterCodec;
use crate::stores;

/// How long the scheduler waits for an executor's heartbeat before it counts it lost and runs
/// its tasks elsewhere (Ballista's default, 180 s, would hold a query for minutes).
const EXECUTOR_TIMEOUT_SECONDS: u64 = 30;
const HEARTBEAT_SECONDS: u64 = 5;

/// Where a scheduler listens.
#[derive(Debug, Clone)]
pub struct SchedulerOptions {
    pub bind: SocketAddr,
    /// The host executors and clients reach it at.
    pub advertise_host: String,
}

/// Runs a scheduler until the process stops.
pub async fn run_scheduler(options: SchedulerOptions, config: &Config) -> Result<(), ClusterError> {
    let runtime = runtime(config, None)?;
    let codec = Arc::new(ClusterCodec::default());
    let scheduler = SchedulerConfig {
        bind_host: options.bind.ip().to_string(),
        bind_port: options.bind.port(),
        external_host: options.advertise_host,
        executor_timeout_seconds: EXECUTOR_TIMEOUT_SECONDS,
        expire_dead_executor_interval_seconds: HEARTBEAT_SECONDS,
        no_executors_grace_period_seconds: EXECUTOR_TIMEOUT_SECONDS,
        override_config_producer: Some(Arc::new(session_config)),
        override_session_builder: Some(Arc::new(move |config: SessionConfig| {
            let mut state = SessionStateBuilder::new()
                .with_default_features()
                .with_config(config)
                .with_runtime_env(runtime.clone())
                .build();
            for udaf in remote::aggregate_functions() {
                datafusion::execution::FunctionRegistry::register_udaf(&mut state, Arc::new(udaf))?;
            }
            Ok(state)
        })),
        override_physical_codec: Some(codec),
        ..SchedulerConfig::default()
    };
    let cluster = BallistaCluster::new_from_config(&scheduler).await?;
    start_server(cluster, options.bind, Arc::new(scheduler)).await?;
    Ok(())
}

/// Where an executor listens, which scheduler it joins, and what it may use.
#[derive(Debug, Clone)]
pub struct ExecutorOptions {
    pub scheduler_host: String,
    pub scheduler_port: u16,
    pub bind_host: String,
    /// The host the scheduler and clients reach it at (`None`: the address the scheduler sees
    /// it connect from).
    pub advertise_host: Option<String>,
    /// Arrow Flight (results and shuffles) and gRPC (tasks) ports.
    pub flight_port: u16,
    pub grpc_port: u16,
    /// Tasks at once (default: the cores).
    pub concurrent_tasks: usize,
    /// Memory its tasks share, in bytes (past it, operators that can spill do).
    pub memory_bytes: u64,
    /// Shuffle files and spills.
    pub work_dir: PathBuf,
}

/// Runs an executor until the process stops.
pub async fn run_executor(options: ExecutorOptions, config: &Config) -> Result<(), ClusterError> {
    std::fs::create_dir_all(&options.work_dir)?;
    let runtime = runtime(config, Some(options.work_dir.clone()))?;
    // DataFusion's functions (all of them: Ballista's default leaves out the nested ones, such
    // as `array_sort`) and the dialect's aggregates, found by name when a task is decoded.
    let functions =
        BallistaFunctionRegistry::from(&session_state(session_config(), runtime.clone())?);
    let producer: RuntimeProducer = Arc::new(move |_| Ok(runtime.clone()));
    let executor = ExecutorProcessConfig {
        bind_host: options.bind_host,
        external_host: options.advertise_host,
        port: options.flight_port,
        grpc_port: options.grpc_port,
        scheduler_host: options.scheduler_host,
        scheduler_port: options.scheduler_port,
        scheduler_connect_timeout_seconds: 30,
        vcores: options.concurrent_tasks,
        work_dir: Some(options.work_dir.display().to_string()),
        memory_pool_size: Some(options.memory_bytes),
        executor_heartbeat_interval_seconds: HEARTBEAT_SECONDS,
        print_thread_info: false,
        override_function_registry: Some(Arc::new(functions)),
        override_runtime_producer: Some(producer),
        override_config_producer: Some(Arc::new(session_config)),
        override_physical_codec: Some(Arc::new(ClusterCodec::default())),
        ..ExecutorProcessConfig::default()
    };
    start_executor_process(Arc::new(executor)).await?;
    Ok(())
}

/// A session with DataFusion's functions and the dialect's aggregates (its scalar functions
/// travel with their parameters, see `codec`), reading the lake through `runtime`.
fn session_state(
    config: SessionConfig,
    runtime: Arc<RuntimeEnv>,
) -> datafusion::common::Result<SessionState> {
    let mut state = SessionStateBuilder::new()
        .with_default_features()
        .with_config(config)
        .with_runtime_env(runtime)
        .build();
    for udaf in remote::aggregate_functions() {
        state.register_udaf(Arc::new(udaf))?;
    }
    Ok(state)
}

/// The settings every session of the cluster starts from (a query's own are applied on top).
fn session_config() -> SessionConfig {
    SessionConfig::new_with_ballista()
        .with_information_schema(false)
        // Our plans are planned (and optimised) by the query service; the scheduler only cuts
        // them into stages.
        .with_ballista_adaptive_query_planner(false)
}

/// A runtime reading the lake (spilling to `spill`, when given).
fn runtime(config: &Config, spill: Option<PathBuf>) -> Result<Arc<RuntimeEnv>, ClusterError> {
    let mut builder =
        RuntimeEnvBuilder::new().with_object_store_registry(stores::registry(config)?);
    builder = builder.with_disk_manager_builder(match spill {
        Some(folder) => {
            DiskManagerBuilder::default().with_mode(DiskManagerMode::Directories(vec![folder]))
        }
        None => DiskManagerBuilder::default().with_mode(DiskManagerMode::Disabled),
    });
    Ok(builder.build_arc()?)
}

#[derive(Debug, thiserror::Error)]
pub enum ClusterError {
    #[error(transparent)]
    Ballista(#[from] ballista_core::error::BallistaError),
    #[error(transparent)]
    DataFusion(#[from] datafusion::error::DataFusionError),
    #[error(transparent)]
    Objects(#[from] common::objects::ObjectsError),
    #[error(transparent)]
    Io(#[from] std::io::Error),
}
