//! Which property keys a project shreds into columns of its own: one Store item per project,
//! `SHREDDED` in the project's partition. Entries are never removed: a dropped key only stops
//! being written, and its slot (the bit in each row's `__shred` mask) is never given to another
//! key, so a file written before the drop still says truthfully what it holds.

use chrono::{DateTime, Utc};
use common::models::group_types_pk;
use common::store::{Condition, Item, Store, StoreError, UPDATE_ATTEMPTS, conflict_backoff};
use serde::{Deserialize, Serialize};

const REGISTRY_SK: &str = "SHREDDED";
/// Keys written at once, at most (PostHog's materialized columns are a few dozen too).
pub const MAX_ACTIVE_KEYS: usize = 48;
/// Slots ever handed out: bits 0..=62 of a positive Int64 mask.
pub const MAX_SLOTS: u8 = 63;
/// Longest key shredded: column names stay readable and bounded.
const MAX_KEY_LENGTH: usize = 64;

/// The JSON column a key is read from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Source {
    /// The event's `properties`.
    Properties,
    /// The person's properties as of the event (`person.properties.x`).
    PersonProperties,
    /// The event's name, as an integer code (one entry, key `event`, column `event_code`):
    /// grouping and comparing integers is far cheaper than strings.
    Event,
}

impl Source {
    /// The table column holding the JSON text.
    pub fn column(self) -> &'static str {
        match self {
            Source::Properties => "properties",
            Source::PersonProperties => "person_properties",
            Source::Event => "event",
        }
    }

    fn prefix(self) -> &'static str {
        match self {
            Source::Properties => "p_",
            Source::PersonProperties => "pp_",
            Source::Event => "",
        }
    }
}

/// The Arrow type a shredded column is written with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ColumnType {
    String,
    Int64,
    Float64,
    Boolean,
}

impl ColumnType {
    fn suffix(self) -> &'static str {
        match self {
            ColumnType::String => "",
            ColumnType::Int64 => "__i64",
            ColumnType::Float64 => "__f64",
            ColumnType::Boolean => "__bool",
        }
    }
}

/// Why a key is shredded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Origin {
    /// Among the most frequent keys at ingestion.
    Ingestion,
    /// Read by slow queries (the query log).
    SlowQuery,
    /// Added by hand (`analytics admin shredded add`).
    Admin,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ShreddedKey {
    pub key: String,
    pub source: Source,
    pub column: String,
    #[serde(rename = "type")]
    pub column_type: ColumnType,
    /// The bit of `__shred` that says a row's file holds this key's column.
    pub slot: u8,
    pub active: bool,
    pub origin: Origin,
    pub added_at: DateTime<Utc>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Registry {
    pub keys: Vec<ShreddedKey>,
    /// Event names by code: code `n` is `events[n - 1]`. Codes never change.
    #[serde(default)]
    pub events: Vec<String>,
    /// More names were seen than [`MAX_EVENT_NAMES`]: those rows have no code.
    #[serde(default)]
    pub events_overflowed: bool,
}

/// The event key's entry and column.
pub const EVENT_KEY: &str = "event";
pub const EVENT_CODE_COLUMN: &str = "event_code";
/// Names coded at most (the registry is one Store item: DynamoDB items stop at 400 KB).
pub const MAX_EVENT_NAMES: usize = 2_000;

#[derive(Debug, thiserror::Error)]
pub enum RegistryError {
    #[error("{0}")]
    Invalid(String),
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Whether a key can name a column: Delta column names refuse spaces and `,;{}()=`.
pub fn shreddable(key: &str) -> bool {
    !key.is_empty()
        && key.len() <= MAX_KEY_LENGTH
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '$' | '_' | '-' | '.' | '@'))
}

impl Registry {
    pub fn active(&self) -> impl Iterator<Item = &ShreddedKey> {
        self.keys.iter().filter(|k| k.active)
    }

    pub fn find(&self, source: Source, key: &str) -> Option<&ShreddedKey> {
        self.keys
            .iter()
            .filter(|k| k.source == source && k.key == key)
            .max_by_key(|k| (k.active, k.slot))
    }

    /// Adds (or re-activates) a key. A key dropped earlier with the same type gets its old
    /// column and slot back: files that still hold them hold the right values.
    fn with_key(
        mut self,
        source: Source,
        key: &str,
        column_type: ColumnType,
        origin: Origin,
        now: DateTime<Utc>,
    ) -> Result<(Self, bool), RegistryError> {
        if !shreddable(key) {
            return Err(RegistryError::Invalid(format!(
                "`{key}` cannot be a column: keys are at most {MAX_KEY_LENGTH} characters of \
                 letters, digits and `$_-.@`"
            )));
        }
        if let Some(active) = self
            .find(source, key)
            .filter(|k| k.active && k.column_type != column_type)
        {
            return Err(RegistryError::Invalid(format!(
                "`{key}` is already shredded as {:?}; drop it first",
                active.column_type
            )));
        }
        if let Some(existing) = self
            .keys
            .iter_mut()
            .find(|k| k.source == source && k.key == key && k.column_type == column_type)
        {
            let changed = !existing.active;
            existing.active = true;
            return Ok((self, changed));
        }
        if self.active().count() >= MAX_ACTIVE_KEYS {
            return Err(RegistryError::Invalid(format!(
                "At most {MAX_ACTIVE_KEYS} keys are shredded per project; drop one first"
            )));
        }
        let slot = self.keys.iter().map(|k| k.slot + 1).max().unwrap_or(0);
        if slot >= MAX_SLOTS {
            return Err(RegistryError::Invalid(format!(
                "This project has used all {MAX_SLOTS} shredding slots"
            )));
        }
        let mut column = match source {
            Source::Event => EVENT_CODE_COLUMN.to_owned(),
            _ => format!("{}{key}{}", source.prefix(), column_type.suffix()),
        };
        if self.keys.iter().any(|k| k.column == column) {
            column = format!("{column}__{slot}");
        }
        self.keys.push(ShreddedKey {
            key: key.to_owned(),
            source,
            column,
            column_type,
            slot,
            active: true,
            origin,
            added_at: now,
        });
        Ok((self, true))
    }

    fn without_key(mut self, source: Source, key: &str) -> (Self, bool) {
        let mut changed = false;
        for entry in self
            .keys
            .iter_mut()
            .filter(|k| k.source == source && k.key == key && k.active)
        {
            entry.active = false;
            changed = true;
        }
        (self, changed)
    }
}

pub async fn load(store: &dyn Store, team_id: i64) -> Result<Registry, StoreError> {
    Ok(store
        .get(&group_types_pk(team_id), REGISTRY_SK)
        .await?
        .map(|item| item.parse())
        .transpose()?
        .unwrap_or_default())
}

/// Reads, changes and writes the registry under optimistic locking (created when absent).
async fn change(
    store: &dyn Store,
    team_id: i64,
    mut edit: impl FnMut(Registry) -> Result<(Registry, bool), RegistryError>,
) -> Result<Registry, RegistryError> {
    let pk = group_types_pk(team_id);
    for attempt in 0..UPDATE_ATTEMPTS {
        if attempt > 0 {
            tokio::time::sleep(conflict_backoff(attempt)).await;
        }
        let current = store.get(&pk, REGISTRY_SK).await?;
        let registry: Registry = match &current {
            Some(item) => item.parse()?,
            None => Registry::default(),
        };
        let (registry, changed) = edit(registry)?;
        if !changed {
            return Ok(registry);
        }
        let (item, condition) = match current {
            Some(mut item) => {
                let version = item.version;
                item.set_data(&registry)?;
                item.version = version + 1;
                (item, Condition::VersionEquals(version))
            }
            None => (
                Item::of(pk.clone(), REGISTRY_SK, &registry)?,
                Condition::NotExists,
            ),
        };
        match store.put(item, condition).await {
            Ok(()) => return Ok(registry),
            Err(StoreError::ConditionFailed) => continue,
            Err(other) => return Err(other.into()),
        }
    }
    Err(StoreError::ConditionFailed.into())
}

/// Shreds `key` from now on; older files get its column when compaction backfills them.
pub async fn add(
    store: &dyn Store,
    team_id: i64,
    source: Source,
    key: &str,
    column_type: ColumnType,
    origin: Origin,
    now: DateTime<Utc>,
) -> Result<Registry, RegistryError> {
    change(store, team_id, |registry| {
        registry.with_key(source, key, column_type, origin, now)
    })
    .await
}

/// Stops writing `key`'s column; queries read it from the JSON again where files lack it.
pub async fn drop_key(
    store: &dyn Store,
    team_id: i64,
    source: Source,
    key: &str,
) -> Result<Registry, RegistryError> {
    change(store, team_id, |registry| {
        Ok(registry.without_key(source, key))
    })
    .await
}

/// Gives codes to the names not coded yet (as many as fit under [`MAX_EVENT_NAMES`]), and makes
/// sure the event key is shredded.
pub async fn code_events(
    store: &dyn Store,
    team_id: i64,
    names: &[String],
    now: DateTime<Utc>,
) -> Result<Registry, RegistryError> {
    change(store, team_id, |mut registry| {
        let mut changed = false;
        if registry.find(Source::Event, EVENT_KEY).is_none() {
            let (with, _) = registry.with_key(
                Source::Event,
                EVENT_KEY,
                ColumnType::Int64,
                Origin::Ingestion,
                now,
            )?;
            registry = with;
            changed = true;
        }
        let known: std::collections::HashSet<&str> =
            registry.events.iter().map(String::as_str).collect();
        let mut new: Vec<String> = names
            .iter()
            .filter(|name| !known.contains(name.as_str()))
            .cloned()
            .collect();
        new.sort();
        new.dedup();
        for name in new {
            if registry.events.len() >= MAX_EVENT_NAMES {
                changed |= !registry.events_overflowed;
                registry.events_overflowed = true;
                break;
            }
            registry.events.push(name);
            changed = true;
        }
        Ok((registry, changed))
    })
    .await
}

/// Typed keys (by slot) whose values stopped fitting their type become text keys: a new column
/// every file can hold, so backfill can finish. (Each key is demoted at most once.)
pub async fn demote(
    store: &dyn Store,
    team_id: i64,
    slots: &[u8],
    now: DateTime<Utc>,
) -> Result<Registry, RegistryError> {
    change(store, team_id, |mut registry| {
        let mut changed = false;
        let misfits: Vec<(Source, String, Origin)> = registry
            .active()
            .filter(|k| slots.contains(&k.slot) && k.column_type != ColumnType::String)
            .map(|k| (k.source, k.key.clone(), k.origin))
            .collect();
        for (source, key, origin) in misfits {
            let (without, _) = registry.without_key(source, &key);
            let (with, _) = without.with_key(source, &key, ColumnType::String, origin, now)?;
            registry = with;
            changed = true;
        }
        Ok((registry, changed))
    })
    .await
}

/// Adds the candidates (most frequent first) that fit under the cap; keys that cannot be
/// columns, or are known already (dropped ones included: a person dropped them), are skipped.
pub async fn add_candidates(
    store: &dyn Store,
    team_id: i64,
    candidates: &[(Source, String, ColumnType)],
    origin: Origin,
    now: DateTime<Utc>,
) -> Result<Registry, RegistryError> {
    change(store, team_id, |mut registry| {
        let mut changed = false;
        for (source, key, column_type) in candidates {
            if registry.active().count() >= MAX_ACTIVE_KEYS {
                break;
            }
            if !shreddable(key) || registry.find(*source, key).is_some() {
                continue;
            }
            match registry
                .clone()
                .with_key(*source, key, *column_type, origin, now)
            {
                Ok((next, added)) => {
                    registry = next;
                    changed |= added;
                }
                Err(RegistryError::Invalid(_)) => break,
                Err(other) => return Err(other),
            }
        }
        Ok((registry, changed))
    })
    .await
}

#[cfg(test)]
mod tests {
    use super::*;

    fn now() -> DateTime<Utc> {
        DateTime::from_timestamp(1_700_000_000, 0).unwrap()
    }

    #[test]
    fn slots_are_never_reused_and_a_dropped_key_gets_its_column_back() {
        let registry = Registry::default();
        let (registry, _) = registry
            .with_key(
                Source::Properties,
                "$browser",
                ColumnType::String,
                Origin::Admin,
                now(),
            )
            .unwrap();
        let (registry, _) = registry
            .with_key(
                Source::Properties,
                "amount",
                ColumnType::Float64,
                Origin::Admin,
                now(),
            )
            .unwrap();
        let (registry, _) = registry.without_key(Source::Properties, "amount");
        let (registry, _) = registry
            .with_key(
                Source::Properties,
                "amount",
                ColumnType::String,
                Origin::Admin,
                now(),
            )
            .unwrap();
        let slots: Vec<(String, u8, bool)> = registry
            .keys
            .iter()
            .map(|k| (k.column.clone(), k.slot, k.active))
            .collect();
        assert_eq!(
            slots,
            vec![
                ("p_$browser".into(), 0, true),
                ("p_amount__f64".into(), 1, false),
                ("p_amount".into(), 2, true),
            ]
        );
        let (registry, _) = registry.without_key(Source::Properties, "amount");
        let (registry, changed) = registry
            .with_key(
                Source::Properties,
                "amount",
                ColumnType::Float64,
                Origin::Admin,
                now(),
            )
            .unwrap();
        assert!(changed);
        let amount = registry.find(Source::Properties, "amount").unwrap();
        assert_eq!((amount.column.as_str(), amount.slot), ("p_amount__f64", 1));
        assert!(
            registry
                .clone()
                .with_key(
                    Source::Properties,
                    "amount",
                    ColumnType::String,
                    Origin::Admin,
                    now()
                )
                .is_err()
        );
        assert!(
            registry
                .with_key(
                    Source::Properties,
                    "a b",
                    ColumnType::String,
                    Origin::Admin,
                    now()
                )
                .is_err()
        );
    }
}
