//! Command line: `analytics serve | admin | import | cluster`.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

use crate::{admin, cluster, import, serve};

#[derive(Debug, Parser)]
#[command(
    name = "analytics",
    version,
    about = "Product analytics with a PostHog-compatible API"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, clap::Args)]
pub struct DataDir {
    /// Holds store.sqlite and objects/ (embedded backend).
    #[arg(
        long,
        env = "ANALYTICS_DATA_DIR",
        default_value = ".analytics",
        global = true
    )]
    pub data_dir: PathBuf,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Serve every route family; on an empty store, create a first user and print their key.
    Serve {
        #[arg(long, env = "ANALYTICS_BIND", default_value = "127.0.0.1:8000")]
        bind: SocketAddr,
        /// A Ballista scheduler (`df://host:port`) large queries run on.
        #[arg(long, env = "ANALYTICS_QUERY_CLUSTER")]
        cluster: Option<common::config::ClusterAddress>,
        #[command(flatten)]
        data_dir: DataDir,
    },
    /// Create organizations, projects, users and keys.
    Admin {
        #[command(subcommand)]
        command: admin::AdminCommand,
        #[command(flatten)]
        data_dir: DataDir,
    },
    /// Bulk-load PostHog-shaped NDJSON events (plain or gzip) into a project.
    Import {
        /// The project's id.
        #[arg(long)]
        project: i64,
        /// NDJSON file, one event per line; gzip is detected.
        file: PathBuf,
        /// Rows per commit: an interrupted import keeps what it committed, and run again it
        /// skips the events the table already holds.
        #[arg(long, default_value_t = lake::import::ROWS_PER_COMMIT)]
        rows_per_commit: usize,
        #[command(flatten)]
        data_dir: DataDir,
    },
    /// Run the processes of a query cluster (Apache DataFusion Ballista) over the same lake.
    Cluster {
        #[command(subcommand)]
        command: cluster::ClusterCommand,
        #[command(flatten)]
        data_dir: DataDir,
    },
}

pub fn main() -> ExitCode {
    let cli = Cli::parse();
    run_command(async move {
        match cli.command {
            Command::Serve {
                bind,
                cluster,
                data_dir,
            } => serve::run(bind, data_dir.data_dir, cluster).await,
            Command::Admin { command, data_dir } => admin::run(command, data_dir.data_dir).await,
            Command::Import {
                project,
                file,
                rows_per_commit,
                data_dir,
            } => import::run(data_dir.data_dir, project, file, rows_per_commit).await,
            Command::Cluster { command, data_dir } => {
                cluster::run(command, data_dir.data_dir).await
            }
        }
    })
}

/// Runs a parsed command on a multi-threaded runtime with text logs, as `analytics` and
/// `analytics-bench` do: its error is printed, and the exit code says whether it failed.
pub fn run_command(command: impl Future<Output = anyhow::Result<()>>) -> ExitCode {
    common::telemetry::init_text();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("error: cannot start the runtime: {error}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(command) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {error:#}");
            ExitCode::FAILURE
        }
    }
}
