//! Persons: distinct ids resolve to a person, `$identify` / `$create_alias` join or merge them,
//! `$set` / `$set_once` / `$unset` maintain their properties. Kept in the Store with conditional
//! writes, so concurrent committers stay consistent; person ids are derived from the first
//! distinct id and its first event's time, so a retried batch resolves to the same people.

use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::sync::Arc;

use chrono::{DateTime, Utc};
use common::clock::Clock;
use common::staging::StagedEvent;
use common::store::{
    self, Condition, Index, Item, MAX_TRANSACTION_ITEMS, Store, StoreError, WriteOp,
};
use lake_core::person_overrides::{override_item, persons_index};
use serde_json::{Map, Value};
use uuid::Uuid;

/// Namespace for the hashed part of person ids (UUIDv5 of `<team>:<distinct id>`).
const PERSON_NAMESPACE: Uuid = Uuid::from_u128(0x6a1c_4bd2_3f0e_4c55_9a57_8d1e_2b3c_4d5e);
const ATTEMPTS: usize = 8;
/// New persons per batched write: two items each, within a transaction's 100.
const PERSONS_PER_WRITE: usize = 50;
/// Transactions per grouped Store call (one SQLite commit). A bulk load's new persons land all
/// over the store's B-trees: the fewer commits, the fewer times each page is written again
/// (2,000 persons per commit wrote about 3,000 pages each); this bounds how long one commit holds
/// the embedded store's write lock.
const WRITES_PER_CALL: usize = 400;
/// Persons with staged updates before they are written (as many as one grouped call takes).
const PENDING_PERSONS: usize = MAX_TRANSACTION_ITEMS * WRITES_PER_CALL;

// The read side (the person, its keys, `person_of`) lives in common core, so functions that only
// read persons (flags) need not link the engine.
pub use common::models::person::Person;
use common::models::person::{
    DISTINCT_SK, DistinctId, PERSON_SK, distinct_ids_index, distinct_pk, person_pk,
};

fn person_item(person: &Person) -> Result<Item, StoreError> {
    Ok(
        Item::of(person_pk(person.team_id, person.uuid), PERSON_SK, person)?
            .with_gsi1(persons_index(person.team_id), person.uuid.to_string()),
    )
}

fn link_item(team_id: i64, distinct_id: &str, person: Uuid) -> Result<Item, StoreError> {
    let link = DistinctId {
        distinct_id: distinct_id.to_owned(),
        person,
    };
    Ok(
        Item::of(distinct_pk(team_id, distinct_id), DISTINCT_SK, &link)?
            .with_gsi1(distinct_ids_index(team_id, person), distinct_id.to_owned()),
    )
}

/// The distinct ids a join names (its own and the one it joins); none for other events.
pub fn ids_joined(event: &StagedEvent) -> Vec<&str> {
    if !joins_persons(&event.event) {
        return Vec::new();
    }
    let other = ["$anon_distinct_id", "alias"]
        .into_iter()
        .filter_map(|key| event.properties.get(key).and_then(Value::as_str));
    std::iter::once(event.distinct_id.as_str())
        .chain(other)
        .collect()
}

/// Events that join two distinct ids (and may merge their persons).
pub fn joins_persons(event: &str) -> bool {
    matches!(event, "$identify" | "$create_alias")
}

/// Whether applying the event can change a person: joins, identification or property updates.
/// Other events only need their person looked up.
pub fn changes_persons(event: &str, properties: &Map<String, Value>) -> bool {
    joins_persons(event)
        || ["$set", "$set_once", "$unset"]
            .iter()
            .any(|key| properties.contains_key(*key))
}

/// Resolves and updates the persons of one project while a batch is committed.
pub struct Persons {
    store: Arc<dyn Store>,
    /// When a merge happened (its override records it).
    clock: Arc<dyn Clock>,
    team_id: i64,
    /// (Looked up for every row: foldhash, fast and randomly seeded.)
    links: foldhash::HashMap<String, Uuid>,
    /// Properties as last read or written in this batch; most events change nothing.
    /// (serialized once: every row of the person carries the same text).
    snapshots: foldhash::HashMap<Uuid, Arc<str>>,
    /// Persons with updates not yet written (see [`Persons::flush`]).
    pending: HashMap<Uuid, Staged>,
    /// Persons this batch made, as written: their first update needs no read.
    made: HashMap<Uuid, (Item, Person)>,
}

/// The person an event belongs to, and their properties (JSON) once the event applied.
pub struct Resolved {
    pub person: Uuid,
    pub properties: Arc<str>,
}

impl Persons {
    pub fn new(store: Arc<dyn Store>, clock: Arc<dyn Clock>, team_id: i64) -> Self {
        Self {
            store,
            clock,
            team_id,
            links: foldhash::HashMap::default(),
            snapshots: foldhash::HashMap::default(),
            pending: HashMap::new(),
            made: HashMap::new(),
        }
    }

    async fn lookup(&mut self, distinct_id: &str) -> Result<Option<Uuid>, StoreError> {
        if let Some(person) = self.links.get(distinct_id) {
            return Ok(Some(*person));
        }
        let found = self
            .store
            .get(&distinct_pk(self.team_id, distinct_id), DISTINCT_SK)
            .await?
            .map(|item| item.parse::<DistinctId>())
            .transpose()?
            .map(|link| link.person);
        if let Some(person) = found {
            self.links.insert(distinct_id.to_owned(), person);
        }
        Ok(found)
    }

    pub async fn load(&self, person: Uuid) -> Result<Option<Person>, StoreError> {
        self.store
            .get(&person_pk(self.team_id, person), PERSON_SK)
            .await?
            .map(|item| item.parse())
            .transpose()
    }

    /// Links `distinct_id` to `person` unless it is linked already; returns its person either way.
    async fn link(&mut self, distinct_id: &str, person: Uuid) -> Result<Uuid, StoreError> {
        let item = link_item(self.team_id, distinct_id, person)?;
        match self.store.put(item, Condition::NotExists).await {
            Ok(()) => {
                self.links.insert(distinct_id.to_owned(), person);
                Ok(person)
            }
            Err(StoreError::ConditionFailed) => self
                .lookup(distinct_id)
                .await?
                .ok_or(StoreError::ConditionFailed),
            Err(other) => Err(other),
        }
    }

    /// The person a distinct id's first event makes: its id derives from the distinct id and
    /// the event's time, so a retried batch makes the same one. It is a UUIDv7 (time, then a hash
    /// of the id), as PostHog's person ids are time-ordered: new persons are appended to the
    /// store's indexes instead of landing all over them.
    fn new_person(&self, distinct_id: &str, at: DateTime<Utc>) -> Person {
        let hash = Uuid::new_v5(
            &PERSON_NAMESPACE,
            format!("{}:{distinct_id}", self.team_id).as_bytes(),
        );
        // The bytes of the hash that are not its version and variant.
        let hash = hash.as_bytes();
        let mut tail = [0u8; 10];
        tail[..6].copy_from_slice(&hash[..6]);
        tail[6..].copy_from_slice(&hash[12..]);
        let millis = u64::try_from(at.timestamp_millis()).unwrap_or(0);
        Person {
            uuid: uuid::Builder::from_unix_timestamp_millis(millis, &tail).into_uuid(),
            team_id: self.team_id,
            properties: Map::new(),
            is_identified: false,
            created_at: at,
        }
    }

    /// Makes the persons of distinct ids that have none, as [`Self::person_for`] would one at a
    /// time, in batched writes: a bulk load meets thousands of new ids. `first_seen` pairs each id
    /// with its first event's time. A batch another writer raced falls back to one at a time.
    pub async fn create_missing(
        &mut self,
        first_seen: &[(&str, DateTime<Utc>)],
    ) -> Result<(), StoreError> {
        let mut missing = Vec::new();
        let mut checked = foldhash::HashSet::default();
        for (distinct_id, at) in first_seen {
            if checked.insert(*distinct_id) && self.lookup(distinct_id).await?.is_none() {
                missing.push((*distinct_id, *at));
            }
        }
        for call in missing.chunks(PERSONS_PER_WRITE * WRITES_PER_CALL) {
            let mut writes = Vec::new();
            let mut made = Vec::new();
            for group in call.chunks(PERSONS_PER_WRITE) {
                let mut ops = Vec::with_capacity(group.len() * 2);
                let mut persons = Vec::with_capacity(group.len());
                for (distinct_id, at) in group {
                    let person = self.new_person(distinct_id, *at);
                    let item = person_item(&person)?;
                    ops.push(WriteOp::Put {
                        item: link_item(self.team_id, distinct_id, person.uuid)?,
                        condition: Condition::NotExists,
                    });
                    ops.push(WriteOp::Put {
                        item: item.clone(),
                        condition: Condition::NotExists,
                    });
                    persons.push((*distinct_id, *at, item, person));
                }
                writes.push(ops);
                made.push(persons);
            }
            let applied = self.store.transact_write_each(writes).await?;
            let empty: Arc<str> = Arc::from("{}");
            for (persons, applied) in made.into_iter().zip(applied) {
                for (distinct_id, at, item, person) in persons {
                    if applied {
                        self.links.insert(distinct_id.to_owned(), person.uuid);
                        self.snapshots.insert(person.uuid, empty.clone());
                        self.made.insert(person.uuid, (item, person));
                    } else {
                        // Another writer raced this group: one at a time sorts out who won.
                        self.person_for(distinct_id, at).await?;
                    }
                }
            }
        }
        Ok(())
    }

    /// The person of `distinct_id`, created (with the link) when there is none.
    async fn person_for(
        &mut self,
        distinct_id: &str,
        at: DateTime<Utc>,
    ) -> Result<Uuid, StoreError> {
        for _ in 0..ATTEMPTS {
            if let Some(person) = self.lookup(distinct_id).await? {
                return Ok(person);
            }
            let person = self.new_person(distinct_id, at);
            let uuid = person.uuid;
            let ops = vec![
                // A retried batch may find the person already made: overwriting an equal one is harmless,
                // and the link's condition decides who wins a race.
                WriteOp::Put {
                    item: person_item(&person)?,
                    condition: Condition::NotExists,
                },
                WriteOp::Put {
                    item: link_item(self.team_id, distinct_id, uuid)?,
                    condition: Condition::NotExists,
                },
            ];
            match self.store.transact_write(ops).await {
                Ok(()) => {
                    self.links.insert(distinct_id.to_owned(), uuid);
                    return Ok(uuid);
                }
                Err(StoreError::ConditionFailed) => {
                    // Either the link exists now (use it) or the person does without its link.
                    if self.load(uuid).await?.is_some() && self.lookup(distinct_id).await?.is_none()
                    {
                        return self.link(distinct_id, uuid).await;
                    }
                }
                Err(other) => return Err(other),
            }
        }
        Err(StoreError::ConditionFailed)
    }

    /// Moves every distinct id of `from` to `into`, merges properties (`into` wins), drops `from`.
    async fn merge(&mut self, from: Uuid, into: Uuid) -> Result<(), StoreError> {
        let Some(source) = self.load(from).await? else {
            return Ok(());
        };
        let links = store::query_all(
            self.store.as_ref(),
            &distinct_ids_index(self.team_id, from),
            Index::Gsi1,
        )
        .await?;
        for item in &links {
            let link: DistinctId = item.parse()?;
            self.store
                .put(
                    link_item(self.team_id, &link.distinct_id, into)?,
                    Condition::None,
                )
                .await?;
            self.links.insert(link.distinct_id, into);
        }
        store::update(
            self.store.as_ref(),
            &person_pk(self.team_id, into),
            PERSON_SK,
            |mut target: Person| {
                for (key, value) in &source.properties {
                    target
                        .properties
                        .entry(key.clone())
                        .or_insert_with(|| value.clone());
                }
                target.is_identified = true;
                target.created_at = target.created_at.min(source.created_at);
                Ok(target)
            },
        )
        .await?;
        self.snapshots.remove(&from);
        self.snapshots.remove(&into);
        self.store
            .put(
                override_item(self.team_id, from, into, self.clock.now())?,
                Condition::None,
            )
            .await?;
        self.store
            .delete(&person_pk(self.team_id, from), PERSON_SK, Condition::None)
            .await
    }

    /// `$identify` (`merge_identified` false) and `$create_alias` (true) join two distinct ids.
    async fn join(
        &mut self,
        distinct_id: &str,
        other: &str,
        merge_identified: bool,
        at: DateTime<Utc>,
    ) -> Result<(), StoreError> {
        let (own, theirs) = (self.lookup(distinct_id).await?, self.lookup(other).await?);
        match (own, theirs) {
            (None, None) => {
                let person = self.person_for(distinct_id, at).await?;
                self.link(other, person).await?;
            }
            (None, Some(person)) => {
                self.link(distinct_id, person).await?;
            }
            (Some(person), None) => {
                self.link(other, person).await?;
            }
            (Some(person), Some(theirs)) if person != theirs => {
                let mergeable =
                    merge_identified || self.load(theirs).await?.is_some_and(|p| !p.is_identified);
                if mergeable {
                    self.merge(theirs, person).await?;
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// Forgets what was read or written so far (all of it is in the Store once flushed): a
    /// long import keeps memory to the persons of its latest rows, not of every row before.
    /// Writes what is pending, then forgets the persons known if they take more than `bytes`
    /// (an estimate): an import keeps them from one commit to the next (each would otherwise read
    /// every person back from the Store, twice) while memory stays bounded.
    pub async fn forget_beyond(&mut self, bytes: usize) -> Result<(), StoreError> {
        self.flush().await?;
        if self.cached_bytes() > bytes {
            self.links = foldhash::HashMap::default();
            self.snapshots = foldhash::HashMap::default();
        }
        Ok(())
    }

    fn cached_bytes(&self) -> usize {
        // A map slot, a key and a value header, and the allocator's rounding, per entry.
        const ENTRY: usize = 96;
        let links: usize = self.links.keys().map(|id| id.len() + ENTRY).sum();
        let snapshots: usize = self.snapshots.values().map(|p| p.len() + ENTRY).sum();
        links + snapshots
    }

    /// What [`Self::apply`] answers for an event that changes no person, when this batch already
    /// knows the distinct id's person and properties (most rows): no Store, no await.
    pub fn known(&self, distinct_id: &str) -> Option<Resolved> {
        let person = *self.links.get(distinct_id)?;
        let properties = self.snapshots.get(&person)?.clone();
        Some(Resolved { person, properties })
    }

    /// Applies one event: joins, identification and property updates; returns the snapshot.
    pub async fn apply(
        &mut self,
        event: &str,
        distinct_id: &str,
        properties: &Map<String, Value>,
        at: DateTime<Utc>,
    ) -> Result<Resolved, StoreError> {
        let text = |key: &str| {
            properties
                .get(key)
                .and_then(Value::as_str)
                .filter(|s| !s.is_empty())
        };
        let identify = event == "$identify";
        if joins_persons(event) {
            // A join reads and moves persons in the Store: it must see every update so far.
            self.flush().await?;
        }
        match event {
            "$identify" => {
                if let Some(anonymous) = text("$anon_distinct_id").filter(|a| *a != distinct_id) {
                    self.join(distinct_id, anonymous, false, at).await?;
                }
            }
            "$create_alias" => {
                if let Some(alias) = text("alias").filter(|a| *a != distinct_id) {
                    self.join(distinct_id, alias, true, at).await?;
                }
            }
            _ => {}
        }
        let person = self.person_for(distinct_id, at).await?;
        let properties = match PropertyUpdate::of(properties, identify) {
            Some(update) => self.stage(person, update).await?,
            None => match self.snapshots.get(&person) {
                Some(cached) => cached.clone(),
                None => {
                    let stored = self
                        .load(person)
                        .await?
                        .ok_or(StoreError::ConditionFailed)?;
                    serialize(&stored.properties)
                }
            },
        };
        self.snapshots.insert(person, properties.clone());
        Ok(Resolved { person, properties })
    }

    /// Applies an update to the person in memory (read once per batch) and returns their
    /// properties; [`Self::flush`] writes it.
    async fn stage(
        &mut self,
        person: Uuid,
        update: PropertyUpdate,
    ) -> Result<Arc<str>, StoreError> {
        let staged = match self.pending.entry(person) {
            Entry::Occupied(entry) => entry.into_mut(),
            Entry::Vacant(entry) => {
                let (item, current) = match self.made.remove(&person) {
                    Some(made) => made,
                    None => {
                        let item = self
                            .store
                            .get(&person_pk(self.team_id, person), PERSON_SK)
                            .await?
                            .ok_or(StoreError::ConditionFailed)?;
                        let current = item.parse()?;
                        (item, current)
                    }
                };
                entry.insert(Staged {
                    item,
                    person: current,
                    updates: Vec::new(),
                })
            }
        };
        update.apply_to(&mut staged.person);
        let properties = serialize(&staged.person.properties);
        staged.updates.push(update);
        if self.pending.len() >= PENDING_PERSONS {
            self.flush().await?;
        }
        Ok(properties)
    }

    /// Writes the staged person updates: up to a transaction's worth of persons per write, each
    /// conditional on the version it was read at. A person another writer changed meanwhile has
    /// its updates replayed on the current version, one at a time.
    pub async fn flush(&mut self) -> Result<(), StoreError> {
        // Persons made but never updated stay as written; a later read finds them.
        self.made.clear();
        let staged: Vec<Staged> = self.pending.drain().map(|(_, staged)| staged).collect();
        for call in staged.chunks(MAX_TRANSACTION_ITEMS * WRITES_PER_CALL) {
            let writes = call
                .chunks(MAX_TRANSACTION_ITEMS)
                .map(|group| group.iter().map(Staged::write).collect())
                .collect::<Result<Vec<Vec<_>>, StoreError>>()?;
            let applied = self.store.transact_write_each(writes).await?;
            for (group, applied) in call.chunks(MAX_TRANSACTION_ITEMS).zip(applied) {
                if !applied {
                    for staged in group {
                        self.replay(staged).await?;
                    }
                }
            }
        }
        Ok(())
    }

    /// Applies a person's staged updates on their current version (another writer changed them
    /// since they were read).
    async fn replay(&mut self, staged: &Staged) -> Result<(), StoreError> {
        let updated = store::update(
            self.store.as_ref(),
            &staged.item.pk,
            PERSON_SK,
            |mut current: Person| {
                for update in &staged.updates {
                    update.apply_to(&mut current);
                }
                Ok(current)
            },
        )
        .await?;
        self.snapshots
            .insert(updated.uuid, serialize(&updated.properties));
        Ok(())
    }
}

/// A person's properties as rows carry them (serialized once per change).
fn serialize(properties: &Map<String, Value>) -> Arc<str> {
    serde_json::to_string(properties).unwrap_or_default().into()
}

/// What one event does to its person: `$set`, `$set_once`, `$unset`, identification.
struct PropertyUpdate {
    set: Option<Map<String, Value>>,
    set_once: Option<Map<String, Value>>,
    unset: Vec<String>,
    identify: bool,
}

impl PropertyUpdate {
    /// The event's update, or `None` when it changes nothing.
    fn of(properties: &Map<String, Value>, identify: bool) -> Option<Self> {
        let object = |key: &str| properties.get(key).and_then(Value::as_object).cloned();
        let unset = match properties.get("$unset") {
            Some(Value::Array(keys)) => keys
                .iter()
                .filter_map(|k| k.as_str().map(str::to_owned))
                .collect(),
            Some(Value::Object(keys)) => keys.keys().cloned().collect(),
            _ => Vec::new(),
        };
        let update = Self {
            set: object("$set"),
            set_once: object("$set_once"),
            unset,
            identify,
        };
        let changes = update.identify
            || update.set.is_some()
            || update.set_once.is_some()
            || !update.unset.is_empty();
        changes.then_some(update)
    }

    fn apply_to(&self, person: &mut Person) {
        if let Some(values) = &self.set {
            person.properties.extend(values.clone());
        }
        if let Some(values) = &self.set_once {
            for (key, value) in values {
                person
                    .properties
                    .entry(key.clone())
                    .or_insert_with(|| value.clone());
            }
        }
        for key in &self.unset {
            person.properties.remove(key);
        }
        person.is_identified |= self.identify;
    }
}

/// A person read for updates, with the updates applied since.
struct Staged {
    item: Item,
    person: Person,
    updates: Vec<PropertyUpdate>,
}

impl Staged {
    /// The person's new version, on condition that nobody changed the one read.
    fn write(&self) -> Result<WriteOp, StoreError> {
        let mut item = self.item.clone();
        item.set_data(&self.person)?;
        item.version = self.item.version + 1;
        Ok(WriteOp::Put {
            item,
            condition: Condition::VersionEquals(self.item.version),
        })
    }
}

/// The person a distinct id belongs to, if any (for tests and the query engine).
pub async fn person_of(
    store: Arc<dyn Store>,
    team_id: i64,
    distinct_id: &str,
) -> Result<Option<Person>, StoreError> {
    common::models::person::person_of(store.as_ref(), team_id, distinct_id).await
}

#[cfg(test)]
mod tests {
    use common::clock::SystemClock;

    use super::*;

    fn at(minute: i64) -> DateTime<Utc> {
        DateTime::from_timestamp(1_790_000_000 + minute * 60, 0).unwrap()
    }

    #[tokio::test]
    async fn batched_creation_makes_what_one_at_a_time_makes_and_keeps_existing_links() {
        let store: Arc<dyn Store> = Arc::new(common::testing::memory_store());
        let mut joins = Persons::new(store.clone(), Arc::new(SystemClock), 1);
        let alias = serde_json::json!({"alias": "d"});
        joins
            .apply("$create_alias", "c", alias.as_object().unwrap(), at(0))
            .await
            .unwrap();
        joins.flush().await.unwrap();
        let joined = person_of(store.clone(), 1, "c").await.unwrap().unwrap();

        let mut batched = Persons::new(store.clone(), Arc::new(SystemClock), 1);
        batched
            .create_missing(&[("a", at(1)), ("d", at(2)), ("b", at(3)), ("a", at(4))])
            .await
            .unwrap();
        let mut single = Persons::new(
            Arc::new(common::testing::memory_store()),
            Arc::new(SystemClock),
            1,
        );
        let expected = single.person_for("a", at(1)).await.unwrap();
        let a = person_of(store.clone(), 1, "a").await.unwrap().unwrap();
        assert_eq!((a.uuid, a.created_at), (expected, at(1)));
        assert!(person_of(store.clone(), 1, "b").await.unwrap().is_some());
        // An id that had a person keeps it.
        let d = person_of(store.clone(), 1, "d").await.unwrap().unwrap();
        assert_eq!(d.uuid, joined.uuid);
        // Later events resolve through the cache to the same people.
        let resolved = batched
            .apply("$pageview", "a", &Map::new(), at(5))
            .await
            .unwrap();
        assert_eq!((resolved.person, &*resolved.properties), (a.uuid, "{}"));
    }
}

#[cfg(test)]
mod staged_updates {
    use common::clock::SystemClock;

    use super::*;

    fn properties(value: Value) -> Map<String, Value> {
        value.as_object().unwrap().clone()
    }

    #[tokio::test]
    async fn updates_are_written_at_flush_and_replayed_over_a_concurrent_change() {
        let store: Arc<dyn Store> = Arc::new(common::testing::memory_store());
        let at = DateTime::from_timestamp(1_790_000_000, 0).unwrap();
        let mut ours = Persons::new(store.clone(), Arc::new(SystemClock), 1);
        let first = ours
            .apply(
                "e",
                "d",
                &properties(serde_json::json!({"$set": {"a": 1}})),
                at,
            )
            .await
            .unwrap();
        assert_eq!(&*first.properties, r#"{"a":1}"#);
        let second = ours
            .apply(
                "e",
                "d",
                &properties(serde_json::json!({"$set_once": {"a": 2, "b": 2}, "$unset": ["x"]})),
                at,
            )
            .await
            .unwrap();
        assert_eq!(&*second.properties, r#"{"a":1,"b":2}"#);
        // Not written yet: another writer changes the person meanwhile.
        let stored = person_of(store.clone(), 1, "d").await.unwrap().unwrap();
        assert!(stored.properties.is_empty());
        let mut theirs = Persons::new(store.clone(), Arc::new(SystemClock), 1);
        theirs
            .apply(
                "e",
                "d",
                &properties(serde_json::json!({"$set": {"x": 9, "c": 3}})),
                at,
            )
            .await
            .unwrap();
        theirs.flush().await.unwrap();
        // Our flush loses the version race and replays our updates over theirs.
        ours.flush().await.unwrap();
        let stored = person_of(store.clone(), 1, "d").await.unwrap().unwrap();
        assert_eq!(
            Value::Object(stored.properties),
            serde_json::json!({"a": 1, "b": 2, "c": 3})
        );
        // A join sees staged updates: they are written before it.
        ours.apply(
            "e",
            "e2",
            &properties(serde_json::json!({"$set": {"z": 1}})),
            at,
        )
        .await
        .unwrap();
        ours.apply(
            "$identify",
            "d",
            &properties(serde_json::json!({"$anon_distinct_id": "e2"})),
            at,
        )
        .await
        .unwrap();
        ours.flush().await.unwrap();
        let merged = person_of(store.clone(), 1, "e2").await.unwrap().unwrap();
        assert_eq!(merged.uuid, stored.uuid);
        assert_eq!(merged.properties["z"], 1);
        assert!(merged.is_identified);
    }
}
