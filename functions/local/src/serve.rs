//! `analytics serve`: one process, every route family, the configured backend.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;
use axum::extract::Request;
use common::AppState;
use common::config::Config;
use common::jobs::ScheduledJob;
use common::models::{User, hash_password};
use common::provisioning::{Bootstrap, bootstrap_if_empty};
use common::store::Store;
use tokio::net::TcpListener;
use tokio::sync::watch;

/// The state for a data dir: configuration from the environment, `data_dir` from the command line.
pub async fn state_for(data_dir: PathBuf) -> anyhow::Result<AppState> {
    AppState::from_config(config_for(data_dir)?)
        .await
        .context("cannot open the storage backend")
}

/// The environment's settings, with the data folder given on the command line.
pub fn config_for(data_dir: PathBuf) -> anyhow::Result<Config> {
    let mut config = Config::from_env()?;
    config.data_dir = data_dir;
    Ok(config)
}

/// Gives the first user a random password to log in to the console with; returns it (it is
/// stored only as a hash).
pub async fn first_password(store: &dyn Store, bootstrap: &Bootstrap) -> anyhow::Result<String> {
    let password = common::models::random_token("", 20);
    let hash = hash_password(&password).await?;
    User::update(store, bootstrap.user.uuid, |user| {
        user.password_hash = Some(hash.clone());
        Ok(())
    })
    .await?;
    Ok(password)
}

/// Prints what a first start created, with the first user's password and key (shown once).
pub async fn announce(store: &dyn Store, bootstrap: &Bootstrap) -> anyhow::Result<()> {
    let password = first_password(store, bootstrap).await?;
    println!("Created a first organization, project and user on this empty store.");
    println!(
        "  user:    {} ({}), console password (shown once): {password}",
        bootstrap.user.email, bootstrap.user.uuid
    );
    println!(
        "  project: {} (id {}, token {})",
        bootstrap.project.name, bootstrap.project.id, bootstrap.project.api_token
    );
    println!(
        "  personal API key (shown once, store it now): {}",
        bootstrap.key_secret
    );
    Ok(())
}

/// Serves on `bind`; with `cluster`, large queries run on that Ballista scheduler's cluster
/// (as `ANALYTICS_QUERY_CLUSTER` says).
pub async fn run(
    bind: SocketAddr,
    data_dir: PathBuf,
    cluster: Option<common::config::ClusterAddress>,
) -> anyhow::Result<()> {
    let mut config = config_for(data_dir)?;
    if cluster.is_some() {
        config.query.cluster = cluster;
    }
    let state = AppState::from_config(config)
        .await
        .context("cannot open the storage backend")?;
    if let Some(bootstrap) = bootstrap_if_empty(state.store.as_ref()).await? {
        announce(state.store.as_ref(), &bootstrap).await?;
    }
    let listener = TcpListener::bind(bind)
        .await
        .with_context(|| format!("cannot listen on {bind}"))?;
    let address = listener.local_addr()?;
    println!("Serving on http://{address}");
    serve_on(listener, state).await
}

/// How often the embedded committer looks for staged events (queryable within about this long).
const COMMIT_EVERY: Duration = Duration::from_millis(500);
/// How often the compaction schedule starts (one `compact` run per project: dedupe, squash,
/// optimize, vacuum), as the hourly EventBridge schedule does in AWS.
const COMPACT_EVERY: Duration = Duration::from_secs(15 * 60);
/// How often behavioural cohorts are calculated again (daily in AWS): the members flags read.
const RECALCULATE_COHORTS_EVERY: Duration = Duration::from_secs(60 * 60);
/// How often the endpoint materialization schedule starts (every 5 minutes in AWS): it queues a
/// run of each materialized endpoint version that is due (each has its own sync frequency).
const MATERIALIZE_ENDPOINTS_EVERY: Duration = Duration::from_secs(60);

/// How long a stop waits for the committer's run in progress before abandoning it (a run
/// abandoned half-way is recovered at the next start: claimed objects are picked up again).
const COMMIT_GRACE: Duration = Duration::from_secs(20);

/// Serves the app on a bound listener until Ctrl-C or SIGTERM, with the committer running beside
/// it (it also picks up whatever an earlier run left staged). On either signal it stops taking
/// connections, finishes the requests in flight, lets the committer finish its run in progress
/// and stops compaction where it is (an interrupted compaction leaves only files no table
/// version references, which the next vacuum removes).
pub async fn serve_on(listener: TcpListener, state: AppState) -> anyhow::Result<()> {
    serve_until(listener, state, shutdown_signal()).await
}

/// [`serve_on`], stopping the same way when `shutdown` resolves instead of on a signal (a bench
/// runs servers one after another in one process).
pub async fn serve_until(
    listener: TcpListener,
    state: AppState,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()> {
    let (stop, stopped) = watch::channel(false);
    // Every job runs in this process: the lake's (the compaction schedule's), async queries,
    // experiment timeseries, cohort calculations and endpoint materializations.
    crate::register_jobs(&state);
    // Runs an earlier process on this store left behind when it stopped (killed, crashed):
    // the ones it was running fail, the ones it had queued are queued here.
    match state.jobs.recover(&state).await {
        Ok(recovered) if recovered != Default::default() => {
            tracing::warn!(?recovered, "job runs of a process that stopped")
        }
        Ok(_) => {}
        Err(error) => tracing::error!(error = %common::error::Chain(&error),
            "cannot recover the job runs of earlier processes"),
    }
    let compaction = tokio::spawn(common::jobs::schedule::every(
        state.clone(),
        ScheduledJob {
            job: "compact".into(),
            team_id: None,
            payload: serde_json::Value::Null,
        },
        COMPACT_EVERY,
        stopped.clone(),
    ));
    let cohorts = tokio::spawn(common::jobs::schedule::every(
        state.clone(),
        ScheduledJob {
            job: cohort_core::calculation::JOB.into(),
            team_id: None,
            payload: serde_json::Value::Null,
        },
        RECALCULATE_COHORTS_EVERY,
        stopped.clone(),
    ));
    let materializations = tokio::spawn(common::jobs::schedule::every(
        state.clone(),
        ScheduledJob {
            job: query_service::endpoints::materialization::JOB.into(),
            team_id: None,
            payload: serde_json::Value::Null,
        },
        MATERIALIZE_ENDPOINTS_EVERY,
        stopped.clone(),
    ));
    let committer = tokio::spawn(lake::run_committer(state.clone(), COMMIT_EVERY, stopped));
    let app = crate::app(state);
    // The peer's address reaches handlers as `ConnectInfo` (login limits count per address).
    let service = axum::ServiceExt::<Request>::into_make_service_with_connect_info::<
        std::net::SocketAddr,
    >(app);
    let served = axum::serve(listener, service)
        .with_graceful_shutdown(shutdown)
        .await
        .context("server stopped");
    tracing::info!("requests finished; stopping background work");
    compaction.abort();
    cohorts.abort();
    materializations.abort();
    let _ = stop.send(true);
    match tokio::time::timeout(COMMIT_GRACE, committer).await {
        Ok(Ok(())) => tracing::info!("committer stopped"),
        Ok(Err(error)) => tracing::error!(%error, "committer task failed"),
        Err(_) => tracing::warn!(
            seconds = COMMIT_GRACE.as_secs(),
            "committer still running; abandoning its run (the next start recovers it)"
        ),
    }
    served
}

/// Resolves on the first Ctrl-C (SIGINT) or SIGTERM (what `docker stop`, systemd and Kubernetes
/// send). A signal that cannot be listened for is logged and never resolves: the server must
/// not stop because of it.
pub async fn shutdown_signal() {
    let interrupt = async {
        match tokio::signal::ctrl_c().await {
            Ok(()) => "SIGINT",
            Err(error) => {
                tracing::warn!(%error, "cannot listen for Ctrl-C");
                std::future::pending().await
            }
        }
    };
    #[cfg(unix)]
    let terminate = async {
        use tokio::signal::unix::{SignalKind, signal};
        match signal(SignalKind::terminate()) {
            Ok(mut terminate) => {
                terminate.recv().await;
                "SIGTERM"
            }
            Err(error) => {
                tracing::warn!(%error, "cannot listen for SIGTERM");
                std::future::pending().await
            }
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<&str>();
    let signal = tokio::select! {
        signal = interrupt => signal,
        signal = terminate => signal,
    };
    tracing::info!(
        signal,
        "shutting down: no new connections, finishing requests in flight"
    );
}
