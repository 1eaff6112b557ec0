//! Rate limits kept in the store, so every instance (every Lambda) shares them. A sliding-window
//! counter: the current window's count plus the previous window's, weighted by how much of it
//! still overlaps the last `window_seconds`, so a burst cannot straddle a window boundary.

use serde::{Deserialize, Serialize};

use crate::error::{ApiError, ApiResult};
use crate::store::{self, Condition, Item, Store, StoreError};

/// At most `limit` events per `window_seconds` for one key in one scope.
#[derive(Debug, Clone, Copy)]
pub struct Throttle {
    pub scope: &'static str,
    pub limit: u64,
    pub window_seconds: i64,
}

#[derive(Serialize, Deserialize)]
struct Counter {
    count: u64,
}

impl Throttle {
    pub const fn new(scope: &'static str, limit: u64, window_seconds: i64) -> Self {
        Self {
            scope,
            limit,
            window_seconds,
        }
    }

    fn pk(&self, key: &str) -> String {
        format!("THROTTLE#{}#{key}", self.scope)
    }

    /// The current window's number and when it ends, at `now` (milliseconds).
    fn window(&self, now_ms: i64) -> (i64, i64) {
        let window = now_ms.div_euclid(self.window_seconds * 1000);
        (window, (window + 1) * self.window_seconds)
    }

    async fn stored_count(
        &self,
        store: &dyn Store,
        key: &str,
        window: i64,
    ) -> Result<u64, StoreError> {
        Ok(match store.get(&self.pk(key), &window.to_string()).await? {
            Some(item) => item.parse::<Counter>()?.count,
            None => 0,
        })
    }

    /// `current` plus the overlapping share of the previous window.
    async fn estimate(
        &self,
        store: &dyn Store,
        key: &str,
        current: u64,
        window: i64,
        now_ms: i64,
    ) -> Result<f64, StoreError> {
        let previous = self.stored_count(store, key, window - 1).await?;
        let into_window = now_ms - window * self.window_seconds * 1000;
        let overlap = 1.0 - into_window as f64 / (self.window_seconds * 1000) as f64;
        Ok(current as f64 + previous as f64 * overlap.clamp(0.0, 1.0))
    }

    fn throttled(&self, ends_at: i64, now_ms: i64) -> ApiError {
        let wait = (ends_at - now_ms.div_euclid(1000)).max(1) as u64;
        ApiError::throttled(wait)
    }

    /// Adds one to the current window; returns the new count.
    async fn increment(
        &self,
        store: &dyn Store,
        key: &str,
        window: i64,
        ends_at: i64,
    ) -> Result<u64, StoreError> {
        let (pk, sk) = (self.pk(key), window.to_string());
        // Kept one window longer: the next window still weighs it.
        let expires = ends_at + self.window_seconds;
        let first = Item::of(&pk, &sk, &Counter { count: 1 })?.with_expiry(expires);
        match store.put(first, Condition::NotExists).await {
            Ok(()) => return Ok(1),
            Err(StoreError::ConditionFailed) => {}
            Err(other) => return Err(other),
        }
        let counter = store::update(store, &pk, &sk, |c: Counter| {
            Ok(Counter { count: c.count + 1 })
        })
        .await?;
        Ok(counter.count)
    }

    /// Counts one request and answers 429 once the last window holds more than `limit`.
    pub async fn hit(&self, store: &dyn Store, key: &str) -> ApiResult<()> {
        let now_ms = store.clock().now().timestamp_millis();
        let (window, ends_at) = self.window(now_ms);
        let count = self.increment(store, key, window, ends_at).await?;
        if self.estimate(store, key, count, window, now_ms).await? > self.limit as f64 {
            return Err(self.throttled(ends_at, now_ms));
        }
        Ok(())
    }

    /// 429 when `limit` failures are already recorded in the last window; counts nothing.
    pub async fn check(&self, store: &dyn Store, key: &str) -> ApiResult<()> {
        let now_ms = store.clock().now().timestamp_millis();
        let (window, ends_at) = self.window(now_ms);
        let count = self.stored_count(store, key, window).await?;
        if self.estimate(store, key, count, window, now_ms).await? >= self.limit as f64 {
            return Err(self.throttled(ends_at, now_ms));
        }
        Ok(())
    }

    /// Records one failure (see `check`).
    pub async fn record(&self, store: &dyn Store, key: &str) -> ApiResult<()> {
        let (window, ends_at) = self.window(store.clock().now().timestamp_millis());
        self.increment(store, key, window, ends_at).await?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn hits_beyond_the_limit_are_429_with_retry_after() {
        let store = crate::testing::memory_store();
        let throttle = Throttle::new("test", 3, 3600);
        for _ in 0..3 {
            throttle.hit(&store, "k").await.unwrap();
        }
        let error = throttle.hit(&store, "k").await.unwrap_err();
        assert_eq!(error.status, 429);
        assert_eq!(error.body.code, "throttled");
        assert!(error.retry_after.is_some_and(|s| (1..=3600).contains(&s)));
        // Other keys and scopes have their own budget.
        throttle.hit(&store, "other").await.unwrap();
        Throttle::new("else", 3, 3600)
            .hit(&store, "k")
            .await
            .unwrap();
    }

    #[tokio::test]
    async fn a_burst_cannot_straddle_a_window_boundary() {
        let store = crate::testing::memory_store();
        let throttle = Throttle::new("straddle", 2, 60);
        let now_ms = store.clock().now().timestamp_millis();
        let (window, ends_at) = throttle.window(now_ms);
        // Three hits late in the previous window...
        for _ in 0..3 {
            throttle
                .increment(&store, "k", window - 1, ends_at - 60)
                .await
                .unwrap();
        }
        // ...still count against a hit early in this one.
        let into = now_ms - window * 60_000;
        if into < 30_000 {
            assert_eq!(throttle.hit(&store, "k").await.unwrap_err().status, 429);
        }
    }

    #[tokio::test]
    async fn failures_are_checked_before_they_are_counted() {
        let store = crate::testing::memory_store();
        let throttle = Throttle::new("failures", 2, 3600);
        throttle.check(&store, "u").await.unwrap();
        throttle.record(&store, "u").await.unwrap();
        throttle.check(&store, "u").await.unwrap();
        throttle.record(&store, "u").await.unwrap();
        assert_eq!(throttle.check(&store, "u").await.unwrap_err().status, 429);
    }
}
