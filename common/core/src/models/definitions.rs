//! Event and property definitions: what ingestion has seen in a project (event names with their
//! first and last time and volume, event and person property names with the type PostHog would
//! infer, and which properties each event carries). The lake's writers record them
//! ([`record`]); the persons family serves them (`/event_definitions/`, `/property_definitions/`).
//!
//! All live in the project's partition: `EVENTDEF#<name>`, `PROPDEF#<kind>#<name>` and
//! `EVENTPROP#<event>\u{1f}<property>`.

use std::collections::{BTreeMap, BTreeSet};

use chrono::{DateTime, NaiveDate, NaiveDateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use uuid::Uuid;

use crate::repository::team_pk;
use crate::store::{self, Condition, Item, Store, StoreError};

const EVENT_PREFIX: &str = "EVENTDEF#";
const PROPERTY_PREFIX: &str = "PROPDEF#";
const EVENT_PROPERTY_PREFIX: &str = "EVENTPROP#";
/// Between an event's name and a property's in an event-property key: no name holds it.
const SEPARATOR: char = '\u{1f}';
/// Definition ids are uuids derived from the project and name, so every writer agrees.
const ID_NAMESPACE: Uuid = Uuid::from_u128(0x2f4e_8a7c_1b3d_4e5f_9a8b_7c6d_5e4f_3a2b);

/// What kind of property a definition is of (PostHog's `PropertyDefinition.Type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PropertyKind {
    Event,
    Person,
}

impl PropertyKind {
    fn key(self) -> &'static str {
        match self {
            PropertyKind::Event => "event",
            PropertyKind::Person => "person",
        }
    }
}

/// The types PostHog infers for a property from the first value it sees.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum PropertyType {
    String,
    Numeric,
    Boolean,
    DateTime,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EventDefinition {
    pub id: Uuid,
    pub name: String,
    /// When ingestion first saw it.
    pub created_at: DateTime<Utc>,
    /// The latest event time seen.
    pub last_seen_at: DateTime<Utc>,
    /// Events seen, all time.
    pub volume: u64,
    /// Events per day of their timestamp (UTC), for the days a 30-day volume still counts.
    #[serde(default)]
    pub daily_volume: BTreeMap<NaiveDate, u64>,
}

/// The days of event time a definition keeps daily counts for: PostHog's 30-day volume, with
/// a day to spare for an answer computed just after midnight.
const DAILY_VOLUME_DAYS: i64 = 31;

impl EventDefinition {
    /// Events whose time falls in the 30 days up to `now` (PostHog's `volume_30_day`).
    pub fn volume_30_day(&self, now: DateTime<Utc>) -> u64 {
        let since = now.date_naive() - chrono::Days::new(30);
        self.daily_volume
            .range(since..)
            .map(|(_, count)| count)
            .sum()
    }

    /// Adds a batch's counts, dropping days too old for any 30-day volume from `now`.
    fn add(&mut self, seen: &EventSeen, now: DateTime<Utc>) {
        self.volume += seen.count;
        self.last_seen_at = self.last_seen_at.max(seen.last);
        for (day, count) in &seen.per_day {
            *self.daily_volume.entry(*day).or_default() += count;
        }
        let oldest = now.date_naive() - chrono::Days::new(DAILY_VOLUME_DAYS as u64);
        self.daily_volume = self.daily_volume.split_off(&oldest);
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PropertyDefinition {
    pub id: Uuid,
    pub name: String,
    pub kind: PropertyKind,
    /// `None` for values no type fits (objects, lists, null).
    pub property_type: Option<PropertyType>,
    pub created_at: DateTime<Utc>,
}

impl PropertyDefinition {
    pub fn is_numerical(&self) -> bool {
        self.property_type == Some(PropertyType::Numeric)
    }
}

/// What a batch of events showed: per event name its count and time span, and the properties
/// (and person properties, from `$set`/`$set_once`) with the type of the first value seen.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Observed {
    pub events: BTreeMap<String, EventSeen>,
    pub properties: BTreeMap<(PropertyKind, String), Option<PropertyType>>,
    /// (event, property) pairs.
    pub event_properties: BTreeSet<(String, String)>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct EventSeen {
    pub count: u64,
    pub first: DateTime<Utc>,
    pub last: DateTime<Utc>,
    /// The count per day of event time (UTC).
    pub per_day: BTreeMap<NaiveDate, u64>,
}

impl Observed {
    /// Counts one event (cheap: every event is counted; properties are looked at by
    /// [`Observed::properties_of`] for the events the caller samples).
    pub fn count(&mut self, event: &str, at: DateTime<Utc>) {
        match self.events.get_mut(event) {
            Some(seen) => {
                seen.count += 1;
                seen.first = seen.first.min(at);
                seen.last = seen.last.max(at);
                *seen.per_day.entry(at.date_naive()).or_default() += 1;
            }
            None => {
                self.events.insert(
                    event.to_owned(),
                    EventSeen {
                        count: 1,
                        first: at,
                        last: at,
                        per_day: BTreeMap::from([(at.date_naive(), 1)]),
                    },
                );
            }
        }
    }

    /// How many of this event the batch counted so far.
    pub fn counted(&self, event: &str) -> u64 {
        self.events.get(event).map_or(0, |seen| seen.count)
    }

    /// Looks at one event's properties: their names and types, and the person properties its
    /// `$set` and `$set_once` name.
    pub fn properties_of(&mut self, event: &str, properties: &serde_json::Map<String, Value>) {
        for (key, value) in properties {
            match key.as_str() {
                "$set" | "$set_once" => {
                    if let Value::Object(person) = value {
                        for (key, value) in person {
                            self.property(PropertyKind::Person, key, value);
                        }
                    }
                }
                key if is_hidden(key) => {}
                key => {
                    self.property(PropertyKind::Event, key, value);
                    if !self
                        .event_properties
                        .contains(&(event.to_owned(), key.to_owned()))
                    {
                        self.event_properties
                            .insert((event.to_owned(), key.to_owned()));
                    }
                }
            }
        }
    }

    fn property(&mut self, kind: PropertyKind, key: &str, value: &Value) {
        if key.is_empty() {
            return;
        }
        let detected = detect_type(key, value);
        match self.properties.get_mut(&(kind, key.to_owned())) {
            // The first value with a type decides, as in PostHog.
            Some(known @ None) => *known = detected,
            Some(Some(_)) => {}
            None => {
                self.properties.insert((kind, key.to_owned()), detected);
            }
        }
    }

    pub fn merge(&mut self, other: Observed) {
        for (event, seen) in other.events {
            match self.events.get_mut(&event) {
                Some(mine) => {
                    mine.count += seen.count;
                    mine.first = mine.first.min(seen.first);
                    mine.last = mine.last.max(seen.last);
                    for (day, count) in seen.per_day {
                        *mine.per_day.entry(day).or_default() += count;
                    }
                }
                None => {
                    self.events.insert(event, seen);
                }
            }
        }
        for (key, detected) in other.properties {
            let entry = self.properties.entry(key).or_insert(None);
            if entry.is_none() {
                *entry = detected;
            }
        }
        self.event_properties.extend(other.event_properties);
    }

    pub fn is_empty(&self) -> bool {
        self.events.is_empty()
    }
}

/// Properties ingestion writes for its own use, which PostHog shows in no list
/// (`HIDDEN_PROPERTY_DEFINITIONS`).
fn is_hidden(key: &str) -> bool {
    matches!(
        key,
        "distinct_id"
            | "$set"
            | "$set_once"
            | "$unset"
            | "$groups"
            | "$group_type"
            | "$group_key"
            | "$group_set"
            | "$elements_chain"
    ) || key
        .strip_prefix("$group_")
        .is_some_and(|rest| rest.parse::<u8>().is_ok())
}

/// PostHog's type detection: numbers are Numeric (a number under a key that says "time" and
/// reads as a Unix time in seconds or milliseconds since 2000 is a DateTime), booleans and
/// the strings "true"/"false" Boolean, strings that parse as dates DateTime, other strings
/// String; `utm_` and `$feature/` keys are always String.
pub fn detect_type(key: &str, value: &Value) -> Option<PropertyType> {
    if key.starts_with("utm_") || key.starts_with("$feature/") {
        return Some(PropertyType::String);
    }
    match value {
        Value::Bool(_) => Some(PropertyType::Boolean),
        Value::Number(number) => {
            let lower = key.to_ascii_lowercase();
            let seconds = number
                .as_f64()
                .map(|n| if n > 1e11 { n / 1000.0 } else { n });
            // 2000-01-01 to 2100-01-01, in seconds.
            let plausible = seconds.is_some_and(|s| (946_684_800.0..4_102_444_800.0).contains(&s));
            if (lower.contains("time") || lower.contains("timestamp")) && plausible {
                Some(PropertyType::DateTime)
            } else {
                Some(PropertyType::Numeric)
            }
        }
        Value::String(text) => {
            let trimmed = text.trim();
            if trimmed.eq_ignore_ascii_case("true") || trimmed.eq_ignore_ascii_case("false") {
                Some(PropertyType::Boolean)
            } else if is_date(trimmed) {
                Some(PropertyType::DateTime)
            } else {
                Some(PropertyType::String)
            }
        }
        Value::Null | Value::Array(_) | Value::Object(_) => None,
    }
}

fn is_date(text: &str) -> bool {
    // Cheap first: every accepted form starts with a four-digit year and a dash.
    let bytes = text.as_bytes();
    if bytes.len() < 10 || !bytes[..4].iter().all(u8::is_ascii_digit) || bytes[4] != b'-' {
        return false;
    }
    DateTime::parse_from_rfc3339(text).is_ok()
        || NaiveDate::parse_from_str(text, "%Y-%m-%d").is_ok()
        || [
            "%Y-%m-%d %H:%M:%S",
            "%Y-%m-%dT%H:%M:%S",
            "%Y-%m-%d %H:%M:%S%.f",
            "%Y-%m-%dT%H:%M:%S%.f",
        ]
        .iter()
        .any(|format| NaiveDateTime::parse_from_str(text, format).is_ok())
}

pub fn event_definition_id(team_id: i64, name: &str) -> Uuid {
    Uuid::new_v5(&ID_NAMESPACE, format!("{team_id}:event:{name}").as_bytes())
}

pub fn property_definition_id(team_id: i64, kind: PropertyKind, name: &str) -> Uuid {
    Uuid::new_v5(
        &ID_NAMESPACE,
        format!("{team_id}:{}:{name}", kind.key()).as_bytes(),
    )
}

fn event_sk(name: &str) -> String {
    format!("{EVENT_PREFIX}{name}")
}

fn property_prefix(kind: PropertyKind) -> String {
    format!("{PROPERTY_PREFIX}{}#", kind.key())
}

fn event_property_sk(event: &str, property: &str) -> String {
    format!("{EVENT_PROPERTY_PREFIX}{event}{SEPARATOR}{property}")
}

/// Writes what a batch showed: event definitions get their count and time span added
/// (optimistically, so concurrent writers add up); new properties and event-property pairs
/// are created once (`known` remembers what exists, so a process skips writing it again).
pub async fn record(
    store: &dyn Store,
    team_id: i64,
    observed: &Observed,
    known: &mut BTreeSet<String>,
    now: DateTime<Utc>,
) -> Result<(), StoreError> {
    let pk = team_pk(team_id);
    for (name, seen) in &observed.events {
        let sk = event_sk(name);
        let mut created = EventDefinition {
            id: event_definition_id(team_id, name),
            name: name.clone(),
            created_at: now,
            last_seen_at: seen.last,
            volume: 0,
            daily_volume: BTreeMap::new(),
        };
        created.add(seen, now);
        if !known.contains(&sk) {
            match store
                .put(Item::of(&pk, &sk, &created)?, Condition::NotExists)
                .await
            {
                Ok(()) => {
                    known.insert(sk);
                    continue;
                }
                Err(StoreError::ConditionFailed) => {}
                Err(other) => return Err(other),
            }
        }
        let added = store::update(store, &pk, &sk, |mut definition: EventDefinition| {
            definition.add(seen, now);
            Ok(definition)
        })
        .await;
        match added {
            Ok(_) => {}
            // Deleted since this writer saw it: ingestion makes it again.
            Err(StoreError::ConditionFailed) if store.get(&pk, &sk).await?.is_none() => match store
                .put(Item::of(&pk, &sk, &created)?, Condition::NotExists)
                .await
            {
                Ok(()) | Err(StoreError::ConditionFailed) => {}
                Err(other) => return Err(other),
            },
            Err(other) => return Err(other),
        }
        known.insert(sk);
    }
    for ((kind, name), detected) in &observed.properties {
        let sk = format!("{}{name}", property_prefix(*kind));
        if known.contains(&sk) {
            continue;
        }
        let definition = PropertyDefinition {
            id: property_definition_id(team_id, *kind, name),
            name: name.clone(),
            kind: *kind,
            property_type: *detected,
            created_at: now,
        };
        match store
            .put(Item::of(&pk, &sk, &definition)?, Condition::NotExists)
            .await
        {
            Ok(()) | Err(StoreError::ConditionFailed) => {}
            Err(other) => return Err(other),
        }
        // A definition first seen with no type takes the first typed value's.
        if detected.is_some() {
            store::update(store, &pk, &sk, |mut stored: PropertyDefinition| {
                stored.property_type = stored.property_type.or(*detected);
                Ok(stored)
            })
            .await?;
            known.insert(sk);
        }
    }
    for (event, property) in &observed.event_properties {
        let sk = event_property_sk(event, property);
        if known.contains(&sk) {
            continue;
        }
        let pair = EventProperty {
            event: event.clone(),
            property: property.clone(),
        };
        match store
            .put(Item::of(&pk, &sk, &pair)?, Condition::NotExists)
            .await
        {
            Ok(()) | Err(StoreError::ConditionFailed) => {}
            Err(other) => return Err(other),
        }
        known.insert(sk);
    }
    Ok(())
}

/// An event that carried a property.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EventProperty {
    pub event: String,
    pub property: String,
}

/// Every event definition of a project, by name.
pub async fn events(store: &dyn Store, team_id: i64) -> Result<Vec<EventDefinition>, StoreError> {
    store::list_prefix(store, &team_pk(team_id), EVENT_PREFIX).await
}

/// Every property definition of one kind, by name.
pub async fn properties(
    store: &dyn Store,
    team_id: i64,
    kind: PropertyKind,
) -> Result<Vec<PropertyDefinition>, StoreError> {
    store::list_prefix(store, &team_pk(team_id), &property_prefix(kind)).await
}

/// The properties seen on one event.
pub async fn properties_of_event(
    store: &dyn Store,
    team_id: i64,
    event: &str,
) -> Result<Vec<String>, StoreError> {
    let pairs: Vec<EventProperty> = store::list_prefix(
        store,
        &team_pk(team_id),
        &format!("{EVENT_PROPERTY_PREFIX}{event}{SEPARATOR}"),
    )
    .await?;
    Ok(pairs.into_iter().map(|pair| pair.property).collect())
}

/// Deletes an event definition (ingestion makes it again if the event comes back).
pub async fn delete_event(store: &dyn Store, team_id: i64, name: &str) -> Result<(), StoreError> {
    store
        .delete(&team_pk(team_id), &event_sk(name), Condition::None)
        .await
}

/// Deletes a property definition.
pub async fn delete_property(
    store: &dyn Store,
    team_id: i64,
    kind: PropertyKind,
    name: &str,
) -> Result<(), StoreError> {
    store
        .delete(
            &team_pk(team_id),
            &format!("{}{name}", property_prefix(kind)),
            Condition::None,
        )
        .await
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn types_are_detected_as_posthog_does() {
        let cases = [
            ("plan", json!("pro"), Some(PropertyType::String)),
            ("price", json!(9.5), Some(PropertyType::Numeric)),
            ("count", json!(3), Some(PropertyType::Numeric)),
            ("paid", json!(true), Some(PropertyType::Boolean)),
            ("paid", json!("FALSE"), Some(PropertyType::Boolean)),
            ("signup", json!("2026-11-20"), Some(PropertyType::DateTime)),
            (
                "at",
                json!("2026-11-20T10:00:00Z"),
                Some(PropertyType::DateTime),
            ),
            (
                "at",
                json!("2026-11-20 10:00:00"),
                Some(PropertyType::DateTime),
            ),
            (
                "timestamp",
                json!(1_764_000_000),
                Some(PropertyType::DateTime),
            ),
            (
                "event_time",
                json!(1_764_000_000_000_i64),
                Some(PropertyType::DateTime),
            ),
            ("timeout", json!(30), Some(PropertyType::Numeric)),
            ("utm_source", json!(5), Some(PropertyType::String)),
            ("$feature/beta", json!(true), Some(PropertyType::String)),
            ("version", json!("2026-1"), Some(PropertyType::String)),
            ("tags", json!(["a"]), None),
            ("nothing", json!(null), None),
        ];
        for (key, value, expected) in cases {
            assert_eq!(detect_type(key, &value), expected, "{key} {value}");
        }
    }

    #[test]
    fn the_30_day_volume_counts_event_days_in_the_window() {
        let day = |d: u32| chrono::TimeZone::with_ymd_and_hms(&Utc, 2026, 11, d, 12, 0, 0).unwrap();
        let mut batch = Observed::default();
        for d in [1, 1, 2, 20, 30] {
            batch.count("bought", day(d));
        }
        let mut other = Observed::default();
        other.count("bought", day(30));
        batch.merge(other);
        let seen = &batch.events["bought"];
        assert_eq!(seen.per_day.values().sum::<u64>(), 6);

        let mut definition = EventDefinition {
            id: Uuid::nil(),
            name: "bought".into(),
            created_at: day(1),
            last_seen_at: day(1),
            volume: 0,
            daily_volume: BTreeMap::new(),
        };
        definition.add(seen, day(30));
        assert_eq!(definition.volume, 6);
        assert_eq!(definition.last_seen_at, day(30));
        // 30 days up to Nov 30 start on Oct 31: every day counts.
        assert_eq!(definition.volume_30_day(day(30)), 6);
        // From Dec 2 on the window starts on Nov 2.
        let december = chrono::TimeZone::with_ymd_and_hms(&Utc, 2026, 12, 2, 0, 0, 0).unwrap();
        assert_eq!(definition.volume_30_day(december), 4);
        // A later batch drops the days no window reaches any more.
        definition.add(&batch.events["bought"], december + chrono::Days::new(10));
        assert_eq!(definition.volume, 12);
        assert_eq!(
            definition.daily_volume.keys().next(),
            Some(&NaiveDate::from_ymd_opt(2026, 11, 20).unwrap())
        );
    }

    #[test]
    fn a_batch_counts_events_and_keeps_first_types() {
        let at =
            |hour: u32| chrono::TimeZone::with_ymd_and_hms(&Utc, 2026, 11, 20, hour, 0, 0).unwrap();
        let mut observed = Observed::default();
        for (hour, properties) in [
            (
                10,
                json!({"plan": null, "$set": {"email": "a@b.co"}, "distinct_id": "x"}),
            ),
            (
                8,
                json!({"plan": "pro", "$group_0": "acme", "$set_once": {"first": 1}}),
            ),
            (12, json!({"plan": 3})),
        ] {
            observed.count("bought", at(hour));
            observed.properties_of("bought", properties.as_object().unwrap());
        }
        let seen = &observed.events["bought"];
        assert_eq!((seen.count, seen.first, seen.last), (3, at(8), at(12)));
        assert_eq!(
            observed.properties,
            BTreeMap::from([
                (
                    (PropertyKind::Event, "plan".into()),
                    Some(PropertyType::String)
                ),
                (
                    (PropertyKind::Person, "email".into()),
                    Some(PropertyType::String)
                ),
                (
                    (PropertyKind::Person, "first".into()),
                    Some(PropertyType::Numeric)
                ),
            ])
        );
        assert_eq!(
            observed.event_properties,
            BTreeSet::from([("bought".to_owned(), "plan".to_owned())])
        );
    }
}
