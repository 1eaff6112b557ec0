//! Events as rows of a project's table. A parser (on any thread) fills every column but the
//! person ones; then, in event order, each row's person is resolved and their snapshot added.
//! The committer and the bulk importer share this path.

use std::collections::HashSet;
use std::sync::Arc;

use chrono::{DateTime, NaiveDate, Utc};
use common::staging::{PropertiesProbe, StagedEvent, StagedLine};
use deltalake_core::arrow::array::{
    Array, ArrayRef, Date32Builder, StringArray, StringBuilder, TimestampMicrosecondArray,
    TimestampMicrosecondBuilder,
};
use deltalake_core::arrow::record_batch::RecordBatch;
use serde_json::{Map, Value};
use uuid::Uuid;

use crate::group_types::SeenGroupTypes;
use common::models::definitions::Observed;

/// Events of one name in a batch whose properties are all read for the definitions.
const DEFINITIONS_READ_ALL: u64 = 256;
/// After those, one event in this many is read.
const DEFINITIONS_READ_EVERY: u64 = 64;
use crate::persons::{self, Persons};
use crate::table;
use lake_core::LakeError;

/// Rows per Arrow batch at most.
const ROWS_PER_BATCH: usize = 65_536;
/// Text bytes per Arrow batch at most (string offsets are 32-bit).
const BYTES_PER_BATCH: usize = 256 << 20;

/// One event, borrowed from wherever it was read, as the table stores it.
#[derive(Debug, Clone, Copy)]
pub struct EventFields<'a> {
    pub uuid: Uuid,
    pub event: &'a str,
    pub distinct_id: &'a str,
    /// A JSON object, as text.
    pub properties: &'a str,
    pub session_id: Option<&'a str>,
    pub timestamp: DateTime<Utc>,
    pub created_at: DateTime<Utc>,
    pub elements_chain: Option<&'a str>,
}

/// Every column but the person ones, for up to one Arrow batch.
struct Columns {
    uuid: StringBuilder,
    event: StringBuilder,
    distinct_id: StringBuilder,
    timestamp: TimestampMicrosecondBuilder,
    created_at: TimestampMicrosecondBuilder,
    properties: StringBuilder,
    session_id: StringBuilder,
    elements_chain: StringBuilder,
    date: Date32Builder,
    len: usize,
    bytes: usize,
}

impl Columns {
    /// Room for `rows` rows and `text` bytes of properties: growing a builder copies it.
    fn with_capacity(rows: usize, text: usize) -> Self {
        let utc = || TimestampMicrosecondBuilder::with_capacity(rows).with_timezone("UTC");
        let strings =
            |bytes_per_row: usize| StringBuilder::with_capacity(rows, rows * bytes_per_row);
        Self {
            uuid: strings(36),
            event: strings(16),
            distinct_id: strings(36),
            timestamp: utc(),
            created_at: utc(),
            properties: StringBuilder::with_capacity(rows, text),
            session_id: strings(36),
            elements_chain: strings(0),
            date: Date32Builder::with_capacity(rows),
            len: 0,
            bytes: 0,
        }
    }

    fn push(&mut self, fields: &EventFields) {
        let mut uuid = Uuid::encode_buffer();
        self.uuid
            .append_value(fields.uuid.hyphenated().encode_lower(&mut uuid));
        self.event.append_value(fields.event);
        self.distinct_id.append_value(fields.distinct_id);
        self.timestamp
            .append_value(fields.timestamp.timestamp_micros());
        self.created_at
            .append_value(fields.created_at.timestamp_micros());
        self.properties.append_value(fields.properties);
        self.session_id.append_option(fields.session_id);
        self.elements_chain.append_option(fields.elements_chain);
        self.date.append_value(days_since_epoch(fields.timestamp));
        self.len += 1;
        self.bytes += fields.properties.len()
            + fields.elements_chain.map_or(0, str::len)
            + fields.distinct_id.len()
            + fields.event.len();
    }

    fn finish(mut self) -> Finished {
        Finished {
            uuid: self.uuid.finish(),
            event: self.event.finish(),
            distinct_id: self.distinct_id.finish(),
            timestamp: self.timestamp.finish(),
            created_at: self.created_at.finish(),
            properties: self.properties.finish(),
            session_id: self.session_id.finish(),
            elements_chain: self.elements_chain.finish(),
            date: Arc::new(self.date.finish()),
        }
    }
}

struct Finished {
    uuid: StringArray,
    event: StringArray,
    distinct_id: StringArray,
    timestamp: TimestampMicrosecondArray,
    created_at: TimestampMicrosecondArray,
    properties: StringArray,
    session_id: StringArray,
    elements_chain: StringArray,
    date: ArrayRef,
}

fn micros(value: i64) -> DateTime<Utc> {
    DateTime::from_timestamp_micros(value).unwrap_or_default()
}

fn days_since_epoch(at: DateTime<Utc>) -> i32 {
    let epoch = NaiveDate::from_ymd_opt(1970, 1, 1).unwrap_or_default();
    (at.date_naive() - epoch).num_days() as i32
}

/// Rows whose persons are not resolved yet.
#[derive(Default)]
pub struct ParsedRows {
    full: Vec<Columns>,
    current: Option<Columns>,
    /// Rows whose event changes persons (joins, `$set`...), by position, with that event.
    updates: Vec<(usize, StagedEvent)>,
    len: usize,
    bytes: usize,
    /// Group type names the events name, for the project's mapping.
    group_types: SeenGroupTypes,
    /// Event names, properties and their types, for the project's definitions.
    definitions: Observed,
}

impl ParsedRows {
    /// Rows of already validated events.
    pub fn from_staged(events: impl IntoIterator<Item = StagedEvent>) -> Self {
        let mut rows = Self::default();
        for event in events {
            rows.push_staged(event);
        }
        rows
    }

    /// Rows expected to number about `rows`, with about `text` bytes of properties.
    pub fn with_capacity(rows: usize, text: usize) -> Self {
        let rows = rows.min(ROWS_PER_BATCH);
        Self {
            current: Some(Columns::with_capacity(rows, text.min(BYTES_PER_BATCH))),
            ..Self::default()
        }
    }

    /// Adds `other`'s rows after these.
    pub fn append(&mut self, other: ParsedRows) {
        let offset = self.len;
        self.full.extend(self.current.take());
        self.full
            .extend(other.full.into_iter().chain(other.current));
        self.updates.extend(
            other
                .updates
                .into_iter()
                .map(|(at, event)| (at + offset, event)),
        );
        self.len += other.len;
        self.bytes += other.bytes;
        self.group_types.append(other.group_types);
        self.definitions.merge(other.definitions);
    }

    /// An event that changes no person: no join and no property update.
    pub fn push(&mut self, fields: &EventFields) {
        self.observe_definitions(fields);
        let columns = self
            .current
            .get_or_insert_with(|| Columns::with_capacity(1024, 0));
        let before = columns.bytes;
        columns.push(fields);
        self.group_types.observe(fields.event, fields.properties);
        self.len += 1;
        self.bytes += columns.bytes - before;
        if columns.len >= ROWS_PER_BATCH || columns.bytes >= BYTES_PER_BATCH {
            self.full.extend(self.current.take());
        }
    }

    /// Any validated event; those that change persons are kept until their persons resolve.
    pub fn push_staged(&mut self, event: StagedEvent) {
        let properties = serde_json::to_string(&event.properties).unwrap_or_default();
        let session_id = match event.properties.get("$session_id") {
            Some(Value::String(id)) => Some(id.as_str()),
            _ => None,
        };
        self.push(&EventFields {
            uuid: event.uuid,
            event: &event.event,
            distinct_id: &event.distinct_id,
            properties: &properties,
            session_id,
            timestamp: event.timestamp,
            created_at: event.created_at,
            elements_chain: event.elements_chain.as_deref(),
        });
        if persons::changes_persons(&event.event, &event.properties) {
            self.updates.push((self.len - 1, event));
        }
    }

    /// A staged line read in place (the committer's common case), with the whole event when it
    /// changes persons (see [`ParsedRows::needs_whole_event`]).
    pub fn push_staged_line(
        &mut self,
        staged: &StagedLine,
        probe: &PropertiesProbe,
        update: Option<StagedEvent>,
    ) {
        let session_id = probe.session_id();
        self.push(&EventFields {
            uuid: staged.uuid,
            event: &staged.event,
            distinct_id: &staged.distinct_id,
            properties: staged.properties.get(),
            session_id: session_id.as_deref(),
            timestamp: staged.timestamp,
            created_at: staged.created_at,
            elements_chain: staged.elements_chain.as_deref(),
        });
        if let Some(event) = update {
            self.updates.push((self.len - 1, event));
        }
    }

    /// Whether a row of this event needs its whole event for persons.
    pub fn needs_whole_event(staged: &StagedLine, probe: &PropertiesProbe) -> bool {
        probe.updates_person() || persons::joins_persons(&staged.event)
    }

    pub fn len(&self) -> usize {
        self.len
    }

    /// Text bytes held (properties, names, ids): what the Parquet files grow with.
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The group type names the rows' events name (taken: later calls see only newer rows).
    pub fn take_group_types(&mut self) -> SeenGroupTypes {
        std::mem::take(&mut self.group_types)
    }

    /// What the rows' events showed for the definitions (taken, as group types are).
    pub fn take_definitions(&mut self) -> Observed {
        std::mem::take(&mut self.definitions)
    }

    /// Counts every event; reads the properties of the first [`DEFINITIONS_READ_ALL`] events
    /// of each name in the rows, then of one in [`DEFINITIONS_READ_EVERY`]: parsing every
    /// event's properties again would cost bulk loads a third of their time, and a key seen
    /// once in a million events is still found over later batches.
    fn observe_definitions(&mut self, fields: &EventFields) {
        self.definitions.count(fields.event, fields.timestamp);
        let seen = self.definitions.counted(fields.event);
        if (seen <= DEFINITIONS_READ_ALL || seen.is_multiple_of(DEFINITIONS_READ_EVERY))
            && let Ok(properties) =
                serde_json::from_str::<serde_json::Map<String, Value>>(fields.properties)
        {
            self.definitions.properties_of(fields.event, &properties);
        }
    }

    /// Resolves every row's person in event order (applying the updates) and returns the
    /// finished batches with each person's id and properties as of their event.
    pub async fn resolve(self, persons: &mut Persons) -> Result<Vec<RecordBatch>, LakeError> {
        let no_properties = Map::new();
        // Ids that joins name keep the one-at-a-time path, so their persons come out as in
        // event order; the others' new persons are made in batches first.
        let joined: HashSet<String> = self
            .updates
            .iter()
            .flat_map(|(_, event)| persons::ids_joined(event))
            .map(str::to_owned)
            .collect();
        let finished: Vec<Finished> = self
            .full
            .into_iter()
            .chain(self.current)
            .filter(|columns| columns.len > 0)
            .map(Columns::finish)
            .collect();
        let first_seen: Vec<(&str, DateTime<Utc>)> = finished
            .iter()
            .flat_map(|columns| {
                (0..columns.uuid.len()).map(move |i| {
                    let at = micros(columns.timestamp.value(i));
                    (columns.distinct_id.value(i), at)
                })
            })
            .filter(|(id, _)| !joined.contains(*id))
            .collect();
        persons.create_missing(&first_seen).await?;
        drop(first_seen);
        let mut updates = self.updates.into_iter().peekable();
        let mut batches = Vec::with_capacity(finished.len());
        let mut row = 0;
        for columns in finished {
            let count = columns.uuid.len();
            let mut person_ids = StringBuilder::with_capacity(count, count * 36);
            let mut snapshots = StringBuilder::with_capacity(count, count * 64);
            let mut buffer = Uuid::encode_buffer();
            for i in 0..count {
                let resolved = match updates.next_if(|(at, _)| *at == row) {
                    Some((_, event)) => {
                        persons
                            .apply(
                                &event.event,
                                &event.distinct_id,
                                &event.properties,
                                event.timestamp,
                            )
                            .await?
                    }
                    None => match persons.known(columns.distinct_id.value(i)) {
                        Some(known) => known,
                        None => {
                            let at = micros(columns.timestamp.value(i));
                            persons
                                .apply(
                                    columns.event.value(i),
                                    columns.distinct_id.value(i),
                                    &no_properties,
                                    at,
                                )
                                .await?
                        }
                    },
                };
                person_ids.append_value(resolved.person.hyphenated().encode_lower(&mut buffer));
                snapshots.append_value(&*resolved.properties);
                row += 1;
            }
            let arrays: Vec<ArrayRef> = vec![
                Arc::new(columns.uuid),
                Arc::new(columns.event),
                Arc::new(columns.distinct_id),
                Arc::new(person_ids.finish()),
                Arc::new(snapshots.finish()),
                Arc::new(columns.timestamp),
                Arc::new(columns.created_at),
                Arc::new(columns.properties),
                Arc::new(columns.session_id),
                Arc::new(columns.elements_chain),
                columns.date,
            ];
            batches.push(RecordBatch::try_new(table::arrow_schema(), arrays)?);
        }
        // Person updates are written before the rows that carry them are committed.
        persons.flush().await?;
        Ok(batches)
    }
}

#[cfg(test)]
mod tests {
    use deltalake_core::arrow::array::AsArray;
    use serde_json::json;

    use super::*;

    fn event(distinct_id: &str, properties: Value, minute: i64) -> StagedEvent {
        let at = DateTime::from_timestamp(1_700_000_000 + minute * 60, 0).unwrap();
        StagedEvent {
            uuid: Uuid::now_v7(),
            event: "$pageview".into(),
            distinct_id: distinct_id.into(),
            properties: properties.as_object().unwrap().clone(),
            timestamp: at,
            created_at: at,
            elements_chain: None,
        }
    }

    #[tokio::test]
    async fn appended_rows_keep_their_order_and_their_person_updates() {
        let mut rows = ParsedRows::from_staged([
            event("a", json!({}), 0),
            event("a", json!({"$set": {"plan": "pro"}}), 1),
        ]);
        rows.append(ParsedRows::with_capacity(0, 0));
        rows.append(ParsedRows::from_staged([
            event("a", json!({}), 2),
            event("b", json!({"$set": {"plan": "free"}}), 3),
            event("a", json!({"$unset": ["plan"]}), 4),
        ]));
        assert_eq!(rows.len(), 5);
        let store = Arc::new(common::testing::memory_store());
        let mut persons = Persons::new(store.clone(), Arc::new(common::clock::SystemClock), 1);
        let batches = rows.resolve(&mut persons).await.unwrap();
        let column = |name: &str| -> Vec<String> {
            batches
                .iter()
                .flat_map(|batch| {
                    let strings = batch.column_by_name(name).unwrap().as_string::<i32>();
                    strings
                        .iter()
                        .map(|s| s.unwrap().to_owned())
                        .collect::<Vec<_>>()
                })
                .collect()
        };
        assert_eq!(column("distinct_id"), ["a", "a", "a", "b", "a"]);
        assert_eq!(
            column("person_properties"),
            [
                "{}",
                r#"{"plan":"pro"}"#,
                r#"{"plan":"pro"}"#,
                r#"{"plan":"free"}"#,
                "{}"
            ]
        );
        let people = column("person_id");
        assert!(people[0] == people[4] && people[0] != people[3]);
        let stored = persons::person_of(store, 1, "b").await.unwrap().unwrap();
        assert_eq!(stored.properties["plan"], "free");
        // Person ids are time-ordered: b's first event came after a's.
        assert!(people[3] > people[0]);
    }
}
