//! The bound on a project's concurrent queries, held in the Store so that it holds across
//! processes (in AWS every Lambda instance runs one request at a time, so a bound kept in
//! memory would bound nothing). A slot is an item `TEAM#<id>`/`QSLOT#<k>`, k < the configured
//! concurrency, put only if absent; it expires on its own after the longest a query may run, so
//! a crashed holder cannot keep it.

use std::time::Duration;

use common::AppState;
use common::store::{Condition, Item, StoreError};
use serde_json::json;

/// How often queued async work looks for a free slot.
const RETRY: Duration = Duration::from_millis(250);
/// Kept past the query time limit, for the answer to be written.
const MARGIN_SECONDS: i64 = 60;

pub struct Slot {
    state: AppState,
    pk: String,
    sk: String,
    released: bool,
}

impl Slot {
    /// Frees the slot.
    pub async fn release(mut self) {
        self.released = true;
        free(&self.state, &self.pk, &self.sk).await;
    }
}

/// A slot dropped unreleased (the client went away mid-query) is freed in the background; were
/// even that lost, it expires.
impl Drop for Slot {
    fn drop(&mut self) {
        if self.released {
            return;
        }
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            let (state, pk, sk) = (self.state.clone(), self.pk.clone(), self.sk.clone());
            runtime.spawn(async move { free(&state, &pk, &sk).await });
        }
    }
}

async fn free(state: &AppState, pk: &str, sk: &str) {
    if let Err(error) = state.store.delete(pk, sk, Condition::None).await {
        tracing::warn!(%error, "could not free a query slot; it will expire");
    }
}

/// A free slot among the project's, or None when all are taken.
pub async fn acquire(state: &AppState, team_id: i64) -> Result<Option<Slot>, StoreError> {
    let pk = common::models::Project::pk(team_id);
    let expires_at = state.clock.now().timestamp()
        + state.config.query.timeout.as_secs() as i64
        + MARGIN_SECONDS;
    for index in 0..state.config.query.concurrency.max(1) {
        let sk = format!("QSLOT#{index}");
        let item = Item::new(pk.clone(), sk.clone(), json!({})).with_expiry(expires_at);
        match state.store.put(item, Condition::NotExists).await {
            Ok(()) => {
                return Ok(Some(Slot {
                    state: state.clone(),
                    pk,
                    sk,
                    released: false,
                }));
            }
            Err(StoreError::ConditionFailed) => continue,
            Err(other) => return Err(other),
        }
    }
    Ok(None)
}

/// A slot, once one frees up: queued async work waits its turn rather than failing. None only
/// when the Store cannot be reached (the job then runs unbounded rather than not at all).
pub async fn wait(state: &AppState, team_id: i64) -> Option<Slot> {
    loop {
        match acquire(state, team_id).await {
            Ok(Some(slot)) => return Some(slot),
            Ok(None) => tokio::time::sleep(RETRY).await,
            Err(error) => {
                tracing::warn!(%error, "cannot take a query slot");
                return None;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;

    #[tokio::test]
    async fn the_bound_holds_across_instances_sharing_the_store() {
        let test = common::testing::TestState::embedded().await;
        let mut config = (*test.state.config).clone();
        config.query.concurrency = 2;
        let first = AppState {
            config: Arc::new(config.clone()),
            ..test.state.clone()
        };
        // Another instance: its own configuration and memory, the same Store.
        let second = AppState {
            config: Arc::new(config),
            ..test.state.clone()
        };
        let a = acquire(&first, 7).await.unwrap().expect("a free slot");
        let b = acquire(&second, 7).await.unwrap().expect("a free slot");
        assert!(acquire(&first, 7).await.unwrap().is_none());
        assert!(acquire(&second, 7).await.unwrap().is_none());
        // Other projects have their own slots.
        assert!(acquire(&second, 8).await.unwrap().is_some());
        a.release().await;
        let c = acquire(&second, 7)
            .await
            .unwrap()
            .expect("freed by the first instance");
        drop(c);
        drop(b);
        // Dropped slots are freed in the background.
        tokio::time::sleep(Duration::from_millis(200)).await;
        assert!(acquire(&first, 7).await.unwrap().is_some());
    }
}
