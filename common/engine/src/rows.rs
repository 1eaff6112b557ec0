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

use crate::committer::CommitError;
use crate::lake;
use crate::persons::{self, Persons};

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
    fn new() -> Self {
        let utc = || TimestampMicrosecondBuilder::new().with_timezone("UTC");
        Self {
            uuid: StringBuilder::new(),
            event: StringBuilder::new(),
            distinct_id: StringBuilder::new(),
            timestamp: utc(),
            created_at: utc(),
            properties: StringBuilder::new(),
            session_id: StringBuilder::new(),
            elements_chain: StringBuilder::new(),
            date: Date32Builder::new(),
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

    /// An event that changes no person: no join and no property update.
    pub fn push(&mut self, fields: &EventFields) {
        let columns = self.current.get_or_insert_with(Columns::new);
        let before = columns.bytes;
        columns.push(fields);
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

    /// Resolves every row's person in event order (applying the updates) and returns the
    /// finished batches with each person's id and properties as of their event.
    pub async fn resolve(self, persons: &mut Persons) -> Result<Vec<RecordBatch>, CommitError> {
        let no_properties = Map::new();
        // Ids that joins name keep the one-at-a-time path, so their persons come out as in
        // event order; the others' new persons are made in batches first.
        let joined: HashSet<String> = self
            .updates
            .iter()
            .flat_map(|(_, event)| persons::ids_joined(event))
            .map(str::to_owned)
            .collect();
        let mut updates = self.updates.into_iter().peekable();
        let mut batches = Vec::with_capacity(self.full.len() + 1);
        let mut row = 0;
        for columns in self.full.into_iter().chain(self.current) {
            let columns = columns.finish();
            let count = columns.uuid.len();
            let first_seen: Vec<(&str, DateTime<Utc>)> = (0..count)
                .map(|i| (columns.distinct_id.value(i), i))
                .filter(|(id, _)| !joined.contains(*id))
                .map(|(id, i)| (id, micros(columns.timestamp.value(i))))
                .collect();
            persons.create_missing(&first_seen).await?;
            let mut person_ids = StringBuilder::with_capacity(count, count * 36);
            let mut snapshots = StringBuilder::new();
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
            batches.push(RecordBatch::try_new(lake::arrow_schema(), arrays)?);
        }
        // Person updates are written before the rows that carry them are committed.
        persons.flush().await?;
        Ok(batches)
    }
}
