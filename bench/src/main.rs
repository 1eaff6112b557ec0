//! `analytics-bench`: load figures for docs/benchmarks.md, never a pass/fail test. It drives the
//! product as a library (`local`: the in-process server, the importer) and is neither installed
//! nor deployed with it. The DuckDB and ClickHouse (chDB) sides run `bench/scripts/*.py` with
//! `--python` (`ANALYTICS_BENCH_PYTHON`, default `python3`).

// Measuring takes the wall clock directly: this is no product code, no clock to inject.
#![allow(clippy::disallowed_methods)]

use std::net::SocketAddr;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use clap::{Parser, Subcommand};
use common::AppState;
use common::provisioning::Bootstrap;
use http_body_util::Full;
use hyper::body::Bytes;
use tokio::net::TcpListener;
use tokio::task::JoinHandle;

mod clickhouse;
mod client;
mod duckdb;
mod endpoints;
mod experiments;
mod flags;
mod generator;
mod import;
mod ingestion;
mod load;
mod queries;
mod query;
mod script;
mod surveys;

// The allocator `analytics` runs with, so import and query figures are the product's.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Debug, Parser)]
#[command(
    name = "analytics-bench",
    version,
    about = "Measure the analytics service (not a test: prints figures)"
)]
struct Cli {
    #[command(subcommand)]
    command: BenchCommand,
}

fn main() -> ExitCode {
    local::allocator::start_with_options();
    let cli = Cli::parse();
    local::cli::run_command(run(cli.command))
}

#[derive(Debug, Subcommand)]
enum BenchCommand {
    /// Requests/s and latency of `GET /api/users/@me/` over keep-alive connections.
    UsersMe {
        /// A running server (`analytics serve`); without it an embedded server is started in-process.
        #[arg(long, requires = "key")]
        address: Option<SocketAddr>,
        /// The personal API key for `--address`.
        #[arg(long)]
        key: Option<String>,
        #[arg(long, default_value_t = 32)]
        connections: usize,
        #[arg(long, default_value_t = 10)]
        seconds: u64,
    },
    /// Events/s through `POST /batch/` on an embedded server, and the time until the last
    /// acknowledged event is committed to the Delta table, with shredding off and on.
    Capture {
        #[arg(long, default_value_t = ingestion::CAPTURE_CONNECTIONS)]
        connections: usize,
        #[arg(long, default_value_t = 10)]
        seconds: u64,
        /// Events per request.
        #[arg(long, default_value_t = ingestion::CAPTURE_BATCH)]
        batch: usize,
        /// Runs with shredding off, on, or both (what shredding costs capture).
        #[arg(long, value_enum, default_value = "both")]
        shredding: ingestion::Shredding,
        /// Runs per setting; with both, each round alternates which goes first.
        #[arg(long, default_value_t = ingestion::CAPTURE_ROUNDS)]
        rounds: usize,
    },
    /// Events/s and peak RSS of `analytics import` on a generated PostHog export (gzip NDJSON),
    /// with shredding off and on, beside DuckDB converting the same file to Parquet and
    /// ClickHouse (chDB) loading it into PostHog's events table.
    Import(import::Args),
    /// Typical product-analytics queries through `POST /api/projects/:id/query/` over a
    /// generated events table, beside ClickHouse (chDB) holding the same events in PostHog's
    /// layout and DuckDB over the same Parquet files.
    Query(query::Args),
    /// Requests/s and latency of `POST /flags/?v=4` (posthog-python's call) on a project of 50
    /// flags created through the API, random distinct ids, over keep-alive connections.
    Flags(flags::Args),
    /// An `ExperimentQuery` (a mean and a funnel metric) through `POST /api/projects/:id/query/`
    /// over generated events with persons exposed to the experiment's flag, beside the same
    /// per-variant sums in DuckDB over the same Parquet files.
    Experiments(experiments::Args),
    /// `GET /api/projects/:id/surveys/:id/stats/` over generated events holding one survey's
    /// shown, dismissed and sent events, beside the route's two queries in DuckDB SQL over the
    /// same Parquet files.
    Surveys(surveys::Args),
    /// `POST /api/projects/:id/endpoints/:name/run/` of a saved query served from its
    /// materialized Parquet result, beside the same endpoint run inline (`refresh: force`), over
    /// generated events: latency percentiles, the speedup and the time to materialize.
    Endpoints(endpoints::Args),
}

async fn run(command: BenchCommand) -> anyhow::Result<()> {
    match command {
        BenchCommand::UsersMe {
            address,
            key,
            connections,
            seconds,
        } => {
            let _dir;
            let (address, key) = match (address, key) {
                (Some(address), Some(key)) => (address, key),
                _ => {
                    let dir = tempfile::tempdir()?;
                    let started = start_embedded(dir.path().to_path_buf()).await?;
                    _dir = dir;
                    started
                }
            };
            let shot = Shot {
                method: hyper::Method::GET,
                path: "/api/users/@me/".into(),
                headers: vec![("authorization".into(), format!("Bearer {key}"))],
                body: Bytes::new(),
            };
            let report = shot
                .load(address, connections, Duration::from_secs(seconds))
                .await?;
            println!("{report}");
            Ok(())
        }
        BenchCommand::Capture {
            connections,
            seconds,
            batch,
            shredding,
            rounds,
        } => {
            let load = ingestion::CaptureLoad {
                connections,
                seconds,
                batch,
            };
            ingestion::capture(load, shredding, rounds).await
        }
        BenchCommand::Import(args) => import::run(args).await,
        BenchCommand::Query(args) => query::run(args).await,
        BenchCommand::Flags(args) => flags::run(args).await,
        BenchCommand::Experiments(args) => experiments::run(args).await,
        BenchCommand::Surveys(args) => surveys::run(args).await,
        BenchCommand::Endpoints(args) => endpoints::run(args).await,
    }
}

/// One request, sent again and again.
#[derive(Clone)]
pub struct Shot {
    pub method: hyper::Method,
    pub path: String,
    pub headers: Vec<(String, String)>,
    pub body: Bytes,
}

impl Shot {
    fn request(&self, address: SocketAddr) -> anyhow::Result<load::Request> {
        let mut request = hyper::Request::builder()
            .method(self.method.clone())
            .uri(&self.path)
            .header("host", address.to_string());
        for (name, value) in &self.headers {
            request = request.header(name, value);
        }
        Ok(request.body(Full::new(self.body.clone()))?)
    }

    /// `connections` keep-alive connections sending this request back to back for `duration`.
    async fn load(
        self,
        address: SocketAddr,
        connections: usize,
        duration: Duration,
    ) -> anyhow::Result<load::Report> {
        load::load(address, connections, duration, || {
            let shot = self.clone();
            move || shot.request(address)
        })
        .await
    }
}

/// A server on an ephemeral port over a fresh data dir, with its bootstrap key.
async fn start_embedded(data_dir: std::path::PathBuf) -> anyhow::Result<(SocketAddr, String)> {
    let state = local::serve::state_for(data_dir).await?;
    let (address, bootstrap) = serve_fresh(state).await?;
    Ok((address, bootstrap.key_secret))
}

/// Bootstraps the empty store of `state` and serves it on an ephemeral port (until a signal).
async fn serve_fresh(state: AppState) -> anyhow::Result<(SocketAddr, Bootstrap)> {
    let (address, bootstrap, _server) =
        serve_fresh_until(state, local::serve::shutdown_signal()).await?;
    Ok((address, bootstrap))
}

/// [`serve_fresh`] until `shutdown` resolves; the server's task ends once it has stopped.
async fn serve_fresh_until(
    state: AppState,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> anyhow::Result<(SocketAddr, Bootstrap, JoinHandle<anyhow::Result<()>>)> {
    let bootstrap = common::provisioning::bootstrap_if_empty(state.store.as_ref())
        .await?
        .context("a fresh store bootstraps")?;
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let address = listener.local_addr()?;
    let server = tokio::spawn(local::serve::serve_until(listener, state, shutdown));
    Ok((address, bootstrap, server))
}
