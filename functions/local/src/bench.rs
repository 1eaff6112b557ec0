//! `analytics bench`: load figures for the issue notes, never a pass/fail test.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use clap::Subcommand;
use hdrhistogram::Histogram;
use http_body_util::{BodyExt, Empty};
use hyper::body::Bytes;
use hyper_util::rt::TokioIo;
use tokio::net::{TcpListener, TcpStream};

#[derive(Debug, Subcommand)]
pub enum BenchCommand {
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
}

pub async fn run(command: BenchCommand) -> anyhow::Result<()> {
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
            let report = load(
                address,
                "/api/users/@me/",
                &key,
                connections,
                Duration::from_secs(seconds),
            )
            .await?;
            println!("{report}");
            Ok(())
        }
    }
}

/// A server on an ephemeral port over a fresh data dir, with its bootstrap key.
async fn start_embedded(data_dir: std::path::PathBuf) -> anyhow::Result<(SocketAddr, String)> {
    let state = crate::serve::state_for(data_dir).await?;
    let bootstrap = common::provisioning::bootstrap_if_empty(state.store.as_ref())
        .await?
        .context("a fresh store bootstraps")?;
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let address = listener.local_addr()?;
    tokio::spawn(crate::serve::serve_on(listener, state));
    Ok((address, bootstrap.key_secret))
}

pub struct Report {
    requests: u64,
    errors: u64,
    elapsed: Duration,
    latency_us: Histogram<u64>,
    connections: usize,
}

impl std::fmt::Display for Report {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let seconds = self.elapsed.as_secs_f64();
        let ms = |q: f64| self.latency_us.value_at_quantile(q) as f64 / 1000.0;
        write!(
            f,
            "{} requests ({} errors) in {seconds:.1} s over {} connections: {:.0} req/s; \
             latency p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms",
            self.requests,
            self.errors,
            self.connections,
            self.requests as f64 / seconds,
            ms(0.5),
            ms(0.99),
            self.latency_us.max() as f64 / 1000.0,
        )
    }
}

/// `connections` keep-alive connections sending GETs back to back for `duration`.
pub async fn load(
    address: SocketAddr,
    path: &str,
    key: &str,
    connections: usize,
    duration: Duration,
) -> anyhow::Result<Report> {
    if connections == 0 {
        bail!("--connections must be at least 1");
    }
    let started = Instant::now();
    let deadline = started + duration;
    let mut workers = Vec::new();
    for _ in 0..connections {
        let (path, key) = (path.to_owned(), key.to_owned());
        workers.push(tokio::spawn(async move {
            worker(address, &path, &key, deadline).await
        }));
    }
    let mut latency_us = Histogram::<u64>::new(3)?;
    let (mut requests, mut errors) = (0, 0);
    for worker in workers {
        let (histogram, worker_errors) = worker.await??;
        requests += histogram.len();
        errors += worker_errors;
        latency_us.add(&histogram)?;
    }
    Ok(Report {
        requests,
        errors,
        elapsed: started.elapsed(),
        latency_us,
        connections,
    })
}

async fn worker(
    address: SocketAddr,
    path: &str,
    key: &str,
    deadline: Instant,
) -> anyhow::Result<(Histogram<u64>, u64)> {
    let stream = TcpStream::connect(address).await?;
    stream.set_nodelay(true)?;
    let (mut sender, connection) =
        hyper::client::conn::http1::handshake(TokioIo::new(stream)).await?;
    tokio::spawn(connection);
    let mut histogram = Histogram::<u64>::new(3)?;
    let mut errors = 0;
    let authorization = format!("Bearer {key}");
    while Instant::now() < deadline {
        let request = hyper::Request::get(path)
            .header("host", address.to_string())
            .header("authorization", &authorization)
            .body(Empty::<Bytes>::new())?;
        let sent = Instant::now();
        let response = sender.send_request(request).await?;
        let ok = response.status().is_success();
        response.into_body().collect().await?;
        histogram.record(sent.elapsed().as_micros() as u64)?;
        if !ok {
            errors += 1;
        }
    }
    Ok((histogram, errors))
}
