//! The embedded stand-in for EventBridge schedules: a timer that starts a named job's run every
//! interval, through the same path the worker takes for `{"job": "<name>"}`.

use std::time::Duration;

use tokio::sync::watch;

use super::ScheduledJob;
use crate::state::AppState;

/// Starts `scheduled` every `interval` (the first after one interval) until `stop` turns true.
/// A run that fails is recorded and retried by the job runner; the timer goes on regardless.
pub async fn every(
    state: AppState,
    scheduled: ScheduledJob,
    interval: Duration,
    mut stop: watch::Receiver<bool>,
) {
    loop {
        tokio::select! {
            _ = tokio::time::sleep(interval) => {}
            _ = stop.wait_for(|stop| *stop) => return,
        }
        let job = scheduled.job.clone();
        match state
            .jobs
            .run_scheduled(&state, scheduled.clone(), None)
            .await
        {
            Ok(run) => tracing::debug!(%job, run = %run.id, status = ?run.status, "scheduled run"),
            Err(error) => tracing::error!(%job, %error, "scheduled job could not start"),
        }
    }
}
