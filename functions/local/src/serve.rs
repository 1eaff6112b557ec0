//! `analytics serve`: one process, every route family, the configured backend.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;
use axum::extract::Request;
use common::AppState;
use common::config::Config;
use common::provisioning::{Bootstrap, bootstrap_if_empty};
use tokio::net::TcpListener;

/// The state for a data dir: configuration from the environment, `data_dir` from the command line.
pub async fn state_for(data_dir: PathBuf) -> anyhow::Result<AppState> {
    let mut config = Config::from_env()?;
    config.data_dir = data_dir;
    AppState::from_config(config)
        .await
        .context("cannot open the storage backend")
}

pub fn announce(bootstrap: &Bootstrap) {
    println!("Created a first organization, project and user on this empty store.");
    println!(
        "  user:    {} ({})",
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
}

pub async fn run(bind: SocketAddr, data_dir: PathBuf) -> anyhow::Result<()> {
    let state = state_for(data_dir).await?;
    if let Some(bootstrap) = bootstrap_if_empty(state.store.as_ref()).await? {
        announce(&bootstrap);
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
/// How often the events tables are compacted (optimize + vacuum).
const COMPACT_EVERY: Duration = Duration::from_secs(15 * 60);

/// Serves the app on a bound listener until Ctrl-C, with the committer running beside it
/// (it also picks up whatever an earlier run left staged).
pub async fn serve_on(listener: TcpListener, state: AppState) -> anyhow::Result<()> {
    let committer = tokio::spawn(engine::run_committer(state.clone(), COMMIT_EVERY));
    let compaction = tokio::spawn(engine::compaction::run_compaction(
        state.clone(),
        COMPACT_EVERY,
    ));
    let app = crate::app(state);
    let service = axum::ServiceExt::<Request>::into_make_service(app);
    axum::serve(listener, service)
        .with_graceful_shutdown(async {
            let _ = tokio::signal::ctrl_c().await;
        })
        .await
        .context("server stopped")?;
    committer.abort();
    compaction.abort();
    Ok(())
}
