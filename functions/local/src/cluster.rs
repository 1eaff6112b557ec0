//! `analytics cluster scheduler | executor | local`: the processes of a query cluster (Apache
//! DataFusion Ballista) reading the same lake as `serve`, configured by the same environment.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::Stdio;

use anyhow::Context;
use clap::Subcommand;
use cluster::{ExecutorOptions, SchedulerOptions};
use tokio::process::{Child, Command};

use crate::serve::config_for;

#[derive(Debug, Subcommand)]
pub enum ClusterCommand {
    /// The scheduler: takes the query service's plans, cuts them into stages, hands the tasks
    /// to executors (gRPC and its REST API on one port).
    Scheduler {
        #[arg(long, default_value = "0.0.0.0:50050")]
        bind: SocketAddr,
        /// The host executors and query services reach it at.
        #[arg(long, default_value = "localhost")]
        advertise_host: String,
    },
    /// An executor: runs the scheduler's tasks over the lake, serves results over Arrow Flight.
    Executor {
        /// The scheduler, as `host:port`.
        #[arg(long)]
        scheduler: String,
        #[arg(long, default_value = "0.0.0.0")]
        bind_host: String,
        /// The host the scheduler and query services reach it at (default: the address the
        /// scheduler sees it connect from, as on ECS, where a task learns its own only then).
        #[arg(long)]
        advertise_host: Option<String>,
        /// Arrow Flight port (results and shuffles).
        #[arg(long, default_value_t = 50051)]
        port: u16,
        /// gRPC port (tasks).
        #[arg(long, default_value_t = 50052)]
        grpc_port: u16,
        /// Tasks at once (default: the cores).
        #[arg(long)]
        concurrent_tasks: Option<usize>,
        /// Memory its tasks share, in MiB (operators that can spill do past it).
        #[arg(long, default_value_t = 4096)]
        memory_mb: u64,
        /// Shuffle files and spills (default: a folder under the system's temporary folder).
        #[arg(long)]
        work_dir: Option<PathBuf>,
    },
    /// A scheduler and `executors` executors on this machine (loopback), to try the cluster:
    /// then `analytics serve --cluster df://127.0.0.1:<port>`.
    Local {
        #[arg(long, default_value_t = 2)]
        executors: usize,
        /// The scheduler's port; executors take the ports after it.
        #[arg(long, default_value_t = 50050)]
        port: u16,
    },
}

pub async fn run(command: ClusterCommand, data_dir: PathBuf) -> anyhow::Result<()> {
    let config = config_for(data_dir.clone())?;
    match command {
        ClusterCommand::Scheduler {
            bind,
            advertise_host,
        } => {
            let options = SchedulerOptions {
                bind,
                advertise_host,
            };
            cluster::run_scheduler(options, &config).await?;
        }
        ClusterCommand::Executor {
            scheduler,
            bind_host,
            advertise_host,
            port,
            grpc_port,
            concurrent_tasks,
            memory_mb,
            work_dir,
        } => {
            let (scheduler_host, scheduler_port) = scheduler
                .rsplit_once(':')
                .and_then(|(host, port)| Some((host.to_owned(), port.parse().ok()?)))
                .with_context(|| format!("--scheduler is host:port, not {scheduler}"))?;
            let options = ExecutorOptions {
                scheduler_host,
                scheduler_port,
                bind_host,
                advertise_host,
                flight_port: port,
                grpc_port,
                concurrent_tasks: concurrent_tasks
                    .unwrap_or_else(|| std::thread::available_parallelism().map_or(2, |n| n.get())),
                memory_bytes: memory_mb << 20,
                work_dir: work_dir.unwrap_or_else(|| {
                    std::env::temp_dir().join(format!("analytics-executor-{port}"))
                }),
            };
            cluster::run_executor(options, &config).await?;
        }
        ClusterCommand::Local { executors, port } => {
            let mut children = Vec::with_capacity(executors);
            for index in 0..executors {
                let flight = port + 1 + 2 * index as u16;
                children.push(spawn_executor(&data_dir, port, flight)?);
            }
            println!(
                "A scheduler on df://127.0.0.1:{port} and {executors} executors: \
                 `analytics serve --cluster df://127.0.0.1:{port}` runs large queries there."
            );
            let options = SchedulerOptions {
                bind: SocketAddr::from(([127, 0, 0, 1], port)),
                advertise_host: "127.0.0.1".into(),
            };
            let scheduled = cluster::run_scheduler(options, &config);
            let outcome = tokio::select! {
                outcome = scheduled => outcome.map_err(anyhow::Error::from),
                _ = tokio::signal::ctrl_c() => Ok(()),
            };
            for mut child in children {
                let _ = child.kill().await;
            }
            outcome?;
        }
    }
    Ok(())
}

/// An executor process of this binary, joining the scheduler on loopback `port`.
fn spawn_executor(data_dir: &std::path::Path, port: u16, flight: u16) -> anyhow::Result<Child> {
    let binary = std::env::current_exe()?;
    Command::new(binary)
        .args(["cluster", "executor", "--scheduler"])
        .arg(format!("127.0.0.1:{port}"))
        .args(["--bind-host", "127.0.0.1", "--advertise-host", "127.0.0.1"])
        .arg("--port")
        .arg(flight.to_string())
        .arg("--grpc-port")
        .arg((flight + 1).to_string())
        .arg("--data-dir")
        .arg(data_dir)
        .stdin(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .context("cannot start an executor")
}
