//! A small per-process cache with a time to live, held in [`crate::AppState`]: the hot SDK paths
//! (capture's token look-up, `/flags`) read what the Store holds without a Store call per request.
//!
//! Values of any type share one cache: each key names its kind (`"token"`, `"flags"`...) and the
//! value comes back as the type it was stored as. Time comes from the caller (the state's clock), so
//! tests move it by hand. The cache is bounded: when full, expired entries go first, then the
//! entries closest to expiry. Every process has its own: a write made through another process is
//! seen here when the entry expires.

use std::any::Any;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};

use chrono::{DateTime, Duration, Utc};

/// Entries a cache holds unless told otherwise.
pub const DEFAULT_CAPACITY: usize = 10_000;

type Value = Arc<dyn Any + Send + Sync>;

/// Where an entry lives: its kind and its id within the kind.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct Key {
    kind: &'static str,
    id: String,
}

#[derive(Clone)]
struct Entry {
    value: Value,
    expires: DateTime<Utc>,
}

pub struct Cache {
    entries: RwLock<HashMap<Key, Entry>>,
    capacity: usize,
    /// Counts removals: a value loaded from the Store while one happened may be stale already.
    removals: AtomicU64,
}

/// When a load began, for [`Cache::insert_loaded`].
#[derive(Debug, Clone, Copy)]
pub struct Mark(u64);

impl std::fmt::Debug for Cache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cache")
            .field("entries", &self.len())
            .field("capacity", &self.capacity)
            .finish()
    }
}

impl Default for Cache {
    fn default() -> Self {
        Self::with_capacity(DEFAULT_CAPACITY)
    }
}

impl Cache {
    pub fn with_capacity(capacity: usize) -> Self {
        Self {
            entries: RwLock::new(HashMap::new()),
            capacity: capacity.max(1),
            removals: AtomicU64::new(0),
        }
    }

    /// The value stored under (`kind`, `id`) if it has not expired at `now` and is a `T`.
    pub fn get<T: Any + Send + Sync>(
        &self,
        kind: &'static str,
        id: &str,
        now: DateTime<Utc>,
    ) -> Option<Arc<T>> {
        let key = Key {
            kind,
            id: id.to_owned(),
        };
        // A poisoned lock only means a panic elsewhere mid-update of a map of plain values.
        let entries = self.entries.read().unwrap_or_else(|e| e.into_inner());
        let entry = entries.get(&key).filter(|entry| entry.expires > now)?;
        Arc::clone(&entry.value).downcast::<T>().ok()
    }

    /// Taken before reading what will be cached (see [`Cache::insert_loaded`]).
    pub fn mark(&self) -> Mark {
        Mark(self.removals.load(Ordering::SeqCst))
    }

    /// Stores `value` under (`kind`, `id`) until `now + ttl`.
    pub fn insert<T: Any + Send + Sync>(
        &self,
        kind: &'static str,
        id: &str,
        value: Arc<T>,
        ttl: Duration,
        now: DateTime<Utc>,
    ) {
        self.insert_if(kind, id, value, ttl, now, None);
    }

    /// [`Cache::insert`], unless something was removed since `mark`: a write that raced the load
    /// (and removed its entry) would otherwise be hidden behind the stale value until it expires.
    /// Returns whether the value was stored.
    pub fn insert_loaded<T: Any + Send + Sync>(
        &self,
        mark: Mark,
        kind: &'static str,
        id: &str,
        value: Arc<T>,
        ttl: Duration,
        now: DateTime<Utc>,
    ) -> bool {
        self.insert_if(kind, id, value, ttl, now, Some(mark))
    }

    fn insert_if<T: Any + Send + Sync>(
        &self,
        kind: &'static str,
        id: &str,
        value: Arc<T>,
        ttl: Duration,
        now: DateTime<Utc>,
        mark: Option<Mark>,
    ) -> bool {
        let key = Key {
            kind,
            id: id.to_owned(),
        };
        let entry = Entry {
            value,
            expires: now + ttl,
        };
        let mut entries = self.entries.write().unwrap_or_else(|e| e.into_inner());
        // Checked under the lock `remove` takes after counting, so no removal slips between.
        if let Some(Mark(at)) = mark
            && self.removals.load(Ordering::SeqCst) != at
        {
            return false;
        }
        if entries.len() >= self.capacity && !entries.contains_key(&key) {
            entries.retain(|_, entry| entry.expires > now);
            if entries.len() >= self.capacity {
                // Still full of live entries: drop the tenth closest to expiry, so a full cache
                // is not swept on every insert.
                let mut by_expiry: Vec<_> = entries
                    .iter()
                    .map(|(key, entry)| (entry.expires, key.clone()))
                    .collect();
                by_expiry.sort_by_key(|(expires, _)| *expires);
                let drop = (self.capacity / 10).max(1);
                for (_, key) in by_expiry.into_iter().take(drop) {
                    entries.remove(&key);
                }
            }
        }
        entries.insert(key, entry);
        true
    }

    /// Forgets (`kind`, `id`) in this process.
    pub fn remove(&self, kind: &'static str, id: &str) {
        let key = Key {
            kind,
            id: id.to_owned(),
        };
        let mut entries = self.entries.write().unwrap_or_else(|e| e.into_inner());
        self.removals.fetch_add(1, Ordering::SeqCst);
        entries.remove(&key);
    }

    /// Entries held, expired ones included until they are swept.
    pub fn len(&self) -> usize {
        self.entries.read().unwrap_or_else(|e| e.into_inner()).len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(seconds: i64) -> DateTime<Utc> {
        DateTime::from_timestamp(1_800_000_000 + seconds, 0).unwrap()
    }

    #[test]
    fn values_come_back_typed_until_they_expire() {
        let cache = Cache::default();
        cache.insert(
            "token",
            "phc_a",
            Arc::new(7_i64),
            Duration::seconds(30),
            at(0),
        );
        assert_eq!(
            cache.get::<i64>("token", "phc_a", at(29)).as_deref(),
            Some(&7)
        );
        assert_eq!(cache.get::<i64>("token", "phc_a", at(30)), None);
        // Another kind with the same id, or another type, is another thing.
        assert_eq!(cache.get::<i64>("flags", "phc_a", at(1)), None);
        assert_eq!(cache.get::<String>("token", "phc_a", at(1)), None);
    }

    #[test]
    fn removal_forgets_at_once() {
        let cache = Cache::default();
        cache.insert(
            "flags",
            "1",
            Arc::new("x".to_owned()),
            Duration::seconds(5),
            at(0),
        );
        cache.remove("flags", "1");
        assert_eq!(cache.get::<String>("flags", "1", at(0)), None);
    }

    #[test]
    fn a_load_that_raced_a_removal_is_not_stored() {
        let cache = Cache::default();
        let mark = cache.mark();
        // A write lands (and drops its entry) while the load reads the old value.
        cache.remove("flags", "1");
        let stored =
            cache.insert_loaded(mark, "flags", "1", Arc::new(1), Duration::seconds(5), at(0));
        assert!(!stored);
        assert_eq!(cache.get::<i32>("flags", "1", at(0)), None);
        let mark = cache.mark();
        assert!(cache.insert_loaded(mark, "flags", "1", Arc::new(2), Duration::seconds(5), at(0)));
        assert_eq!(cache.get::<i32>("flags", "1", at(0)).as_deref(), Some(&2));
    }

    #[test]
    fn a_full_cache_drops_expired_entries_then_the_oldest() {
        let cache = Cache::with_capacity(10);
        for i in 0..10_i64 {
            cache.insert(
                "k",
                &i.to_string(),
                Arc::new(i),
                Duration::seconds(i + 1),
                at(0),
            );
        }
        assert_eq!(cache.len(), 10);
        // At 3 s the entries 0, 1 and 2 have expired: they make room.
        cache.insert("k", "new", Arc::new(99), Duration::seconds(60), at(3));
        assert_eq!(cache.len(), 8);
        assert!(cache.get::<i64>("k", "9", at(3)).is_some());
        // Full of live entries: the one closest to expiry goes.
        for i in 0..3_i64 {
            cache.insert(
                "k",
                &format!("more{i}"),
                Arc::new(i),
                Duration::seconds(60),
                at(3),
            );
        }
        assert_eq!(cache.len(), 10);
        assert!(cache.get::<i64>("k", "3", at(3)).is_none());
        assert!(cache.get::<i64>("k", "more2", at(3)).is_some());
    }
}
