//! Fixed-window rate limits kept in the store, so every instance (every Lambda) shares them.

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

    fn slot(&self, key: &str) -> (String, String, i64) {
        let now = chrono::Utc::now().timestamp();
        let window = now.div_euclid(self.window_seconds);
        let ends_at = (window + 1) * self.window_seconds;
        (
            format!("THROTTLE#{}#{key}", self.scope),
            window.to_string(),
            ends_at,
        )
    }

    fn throttled(&self, ends_at: i64) -> ApiError {
        let wait = (ends_at - chrono::Utc::now().timestamp()).max(1) as u64;
        ApiError::throttled(wait)
    }

    async fn count(&self, store: &dyn Store, key: &str) -> Result<(u64, i64), StoreError> {
        let (pk, sk, ends_at) = self.slot(key);
        let count = match store.get(&pk, &sk).await? {
            Some(item) => item.parse::<Counter>()?.count,
            None => 0,
        };
        Ok((count, ends_at))
    }

    async fn increment(&self, store: &dyn Store, key: &str) -> Result<(u64, i64), StoreError> {
        let (pk, sk, ends_at) = self.slot(key);
        let first = Item::of(&pk, &sk, &Counter { count: 1 })?.with_expiry(ends_at);
        match store.put(first, Condition::NotExists).await {
            Ok(()) => return Ok((1, ends_at)),
            Err(StoreError::ConditionFailed) => {}
            Err(other) => return Err(other),
        }
        let counter = store::update(store, &pk, &sk, |c: Counter| {
            Ok(Counter { count: c.count + 1 })
        })
        .await?;
        Ok((counter.count, ends_at))
    }

    /// Counts one request and answers 429 once the window holds more than `limit`.
    pub async fn hit(&self, store: &dyn Store, key: &str) -> ApiResult<()> {
        let (count, ends_at) = self.increment(store, key).await?;
        if count > self.limit {
            return Err(self.throttled(ends_at));
        }
        Ok(())
    }

    /// 429 when `limit` failures are already recorded in this window; counts nothing.
    pub async fn check(&self, store: &dyn Store, key: &str) -> ApiResult<()> {
        let (count, ends_at) = self.count(store, key).await?;
        if count >= self.limit {
            return Err(self.throttled(ends_at));
        }
        Ok(())
    }

    /// Records one failure (see `check`).
    pub async fn record(&self, store: &dyn Store, key: &str) -> ApiResult<()> {
        self.increment(store, key).await?;
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
