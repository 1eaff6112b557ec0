//! Moves staged capture batches into each project's Delta table, exactly once.
//!
//! Each staged object is committed together with a Delta application transaction named after
//! it, in the same atomic commit as its rows. A committer that dies after the commit but before
//! deleting the object finds that marker on its next run and only deletes: nothing acknowledged
//! is lost, nothing is committed twice.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, NaiveDate, Utc};
use common::AppState;
use common::staging::{self, STAGING_ROOT, StagedEvent};
use deltalake_core::DeltaTableError;
use deltalake_core::arrow::array::{
    ArrayRef, Date32Builder, StringBuilder, TimestampMicrosecondBuilder,
};
use deltalake_core::arrow::record_batch::RecordBatch;
use deltalake_core::kernel::Transaction;
use deltalake_core::kernel::transaction::CommitProperties;
use deltalake_core::writer::{DeltaWriter, RecordBatchWriter};
use futures::TryStreamExt;
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt};
use serde_json::Value;

use crate::lake;
use crate::persons::Persons;

/// Staged objects folded into one Delta commit at most.
const BATCHES_PER_COMMIT: usize = 256;
/// Rows per Arrow batch handed to the Parquet writer.
const ROWS_PER_BATCH: usize = 65_536;
const QUARANTINE_ROOT: &str = "staging-rejected";

#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct CommitReport {
    pub team_id: i64,
    /// Staged objects whose events went into the table in this run.
    pub batches: usize,
    pub events: usize,
    /// Staged objects found already committed (a previous run died before deleting them).
    pub recovered: usize,
    /// Events dropped because an earlier event of this commit had the same uuid.
    pub duplicates: usize,
    /// Unreadable staged objects moved aside to `staging-rejected/`.
    pub rejected: usize,
    pub version: Option<i64>,
}

#[derive(Debug, thiserror::Error)]
pub enum CommitError {
    #[error("object storage: {0}")]
    Objects(#[from] object_store::Error),
    #[error("delta: {0}")]
    Delta(#[from] DeltaTableError),
    #[error("store: {0}")]
    Store(#[from] common::store::StoreError),
    #[error("arrow: {0}")]
    Arrow(#[from] deltalake_core::arrow::error::ArrowError),
}

fn app_id(path: &Path) -> String {
    format!("staging:{}", path.filename().unwrap_or_default())
}

/// Projects that have staged objects waiting.
pub async fn teams_with_staging(objects: &dyn ObjectStore) -> Result<Vec<i64>, CommitError> {
    match objects
        .list_with_delimiter(Some(&Path::from(STAGING_ROOT)))
        .await
    {
        Ok(listing) => Ok(listing
            .common_prefixes
            .iter()
            .filter_map(|prefix| prefix.filename()?.strip_prefix("team_id=")?.parse().ok())
            .collect()),
        Err(object_store::Error::NotFound { .. }) => Ok(Vec::new()),
        Err(other) => Err(other.into()),
    }
}

/// Commits every project's waiting batches.
pub async fn commit_all(state: &AppState) -> Result<Vec<CommitReport>, CommitError> {
    let mut reports = Vec::new();
    for team_id in teams_with_staging(state.objects.as_ref()).await? {
        reports.push(commit_team(state, team_id).await?);
    }
    Ok(reports)
}

/// The embedded committer: picks up staged batches (including any left from a previous run)
/// every `interval`, for as long as the process lives.
pub async fn run_committer(state: AppState, interval: Duration) {
    loop {
        match commit_all(&state).await {
            Ok(reports) => {
                for report in reports
                    .iter()
                    .filter(|r| r.batches + r.recovered + r.rejected > 0)
                {
                    tracing::info!(?report, "committed staged events");
                }
            }
            Err(error) => tracing::error!(%error, "committer run failed; retrying"),
        }
        tokio::time::sleep(interval).await;
    }
}

async fn staged_objects(objects: &dyn ObjectStore, team_id: i64) -> Result<Vec<Path>, CommitError> {
    let prefix = staging::team_prefix(team_id);
    let mut paths: Vec<Path> = match objects
        .list(Some(&prefix))
        .map_ok(|meta| meta.location)
        .try_collect()
        .await
    {
        Ok(paths) => paths,
        Err(object_store::Error::NotFound { .. }) => Vec::new(),
        Err(other) => return Err(other.into()),
    };
    paths.retain(|path| path.as_ref().ends_with(".ndjson.gz"));
    // UUIDv7 names: oldest first.
    paths.sort();
    paths.truncate(BATCHES_PER_COMMIT);
    Ok(paths)
}

/// Commits up to [`BATCHES_PER_COMMIT`] of one project's staged objects.
pub async fn commit_team(state: &AppState, team_id: i64) -> Result<CommitReport, CommitError> {
    let objects = state.objects.as_ref();
    let mut report = CommitReport {
        team_id,
        ..Default::default()
    };
    let paths = staged_objects(objects, team_id).await?;
    if paths.is_empty() {
        return Ok(report);
    }
    let mut table = lake::open_or_create(state, team_id).await?;
    let log_store = table.log_store();

    let mut pending = Vec::new();
    let mut done = Vec::new();
    for path in paths {
        let committed = table
            .snapshot()?
            .transaction_version(log_store.as_ref(), app_id(&path))
            .await?
            .is_some();
        if committed {
            report.recovered += 1;
            done.push(path);
            continue;
        }
        let bytes = objects.get(&path).await?.bytes().await?;
        match staging::decode(&path, &bytes) {
            Ok(events) => pending.push((path, events)),
            Err(error) => {
                // Never lose it, never let it block the others: set it aside for a person to look at.
                tracing::error!(%error, "staged object unreadable; moving it aside");
                let aside = Path::from(format!(
                    "{QUARANTINE_ROOT}/{}",
                    path.as_ref().trim_start_matches("staging/")
                ));
                objects.copy(&path, &aside).await?;
                objects.delete(&path).await?;
                report.rejected += 1;
            }
        }
    }

    if !pending.is_empty() {
        let mut persons = Persons::new(state.store.as_ref(), team_id);
        let mut seen = HashSet::new();
        let mut rows = Rows::default();
        for (_, events) in &pending {
            for event in events {
                if !seen.insert(event.uuid) {
                    report.duplicates += 1;
                    continue;
                }
                let resolved = persons
                    .apply(
                        &event.event,
                        &event.distinct_id,
                        &event.properties,
                        event.timestamp,
                    )
                    .await?;
                rows.push(
                    event,
                    &resolved.person.to_string(),
                    &Value::Object(resolved.properties).to_string(),
                );
            }
        }
        let transactions = pending
            .iter()
            .map(|(path, _)| Transaction::new(app_id(path), 1))
            .collect();
        let mut writer = RecordBatchWriter::for_table(&table)?.with_commit_properties(
            CommitProperties::default().with_application_transactions(transactions),
        );
        report.events = rows.len();
        for batch in rows.into_batches()? {
            writer.write(batch).await?;
        }
        report.version = Some(writer.flush_and_commit(&mut table).await? as i64);
        report.batches = pending.len();
        done.extend(pending.into_iter().map(|(path, _)| path));
    }
    for path in done {
        match objects.delete(&path).await {
            Ok(()) | Err(object_store::Error::NotFound { .. }) => {}
            Err(other) => return Err(other.into()),
        }
    }
    Ok(report)
}

/// Column builders for the events table, filled row by row and cut into Arrow batches.
#[derive(Default)]
struct Rows {
    batches: Vec<Vec<ArrayRef>>,
    current: Option<Builders>,
}

struct Builders {
    uuid: StringBuilder,
    event: StringBuilder,
    distinct_id: StringBuilder,
    person_id: StringBuilder,
    person_properties: StringBuilder,
    timestamp: TimestampMicrosecondBuilder,
    created_at: TimestampMicrosecondBuilder,
    properties: StringBuilder,
    session_id: StringBuilder,
    elements_chain: StringBuilder,
    date: Date32Builder,
    len: usize,
}

impl Builders {
    fn new() -> Self {
        let utc = || TimestampMicrosecondBuilder::new().with_timezone("UTC");
        Self {
            uuid: StringBuilder::new(),
            event: StringBuilder::new(),
            distinct_id: StringBuilder::new(),
            person_id: StringBuilder::new(),
            person_properties: StringBuilder::new(),
            timestamp: utc(),
            created_at: utc(),
            properties: StringBuilder::new(),
            session_id: StringBuilder::new(),
            elements_chain: StringBuilder::new(),
            date: Date32Builder::new(),
            len: 0,
        }
    }

    fn finish(mut self) -> Vec<ArrayRef> {
        vec![
            Arc::new(self.uuid.finish()),
            Arc::new(self.event.finish()),
            Arc::new(self.distinct_id.finish()),
            Arc::new(self.person_id.finish()),
            Arc::new(self.person_properties.finish()),
            Arc::new(self.timestamp.finish()),
            Arc::new(self.created_at.finish()),
            Arc::new(self.properties.finish()),
            Arc::new(self.session_id.finish()),
            Arc::new(self.elements_chain.finish()),
            Arc::new(self.date.finish()),
        ]
    }
}

fn days_since_epoch(at: DateTime<Utc>) -> i32 {
    let epoch = NaiveDate::from_ymd_opt(1970, 1, 1).unwrap_or_default();
    (at.date_naive() - epoch).num_days() as i32
}

impl Rows {
    fn push(&mut self, event: &StagedEvent, person_id: &str, person_properties: &str) {
        let builders = self.current.get_or_insert_with(Builders::new);
        builders.uuid.append_value(event.uuid.to_string());
        builders.event.append_value(&event.event);
        builders.distinct_id.append_value(&event.distinct_id);
        builders.person_id.append_value(person_id);
        builders.person_properties.append_value(person_properties);
        builders
            .timestamp
            .append_value(event.timestamp.timestamp_micros());
        builders
            .created_at
            .append_value(event.created_at.timestamp_micros());
        builders
            .properties
            .append_value(Value::Object(event.properties.clone()).to_string());
        match event.properties.get("$session_id") {
            Some(Value::String(id)) => builders.session_id.append_value(id),
            _ => builders.session_id.append_null(),
        }
        builders
            .elements_chain
            .append_option(event.elements_chain.as_deref());
        builders
            .date
            .append_value(days_since_epoch(event.timestamp));
        builders.len += 1;
        if builders.len >= ROWS_PER_BATCH
            && let Some(full) = self.current.take()
        {
            self.batches.push(full.finish());
        }
    }

    fn len(&self) -> usize {
        self.batches
            .iter()
            .map(|columns| columns[0].len())
            .sum::<usize>()
            + self.current.as_ref().map_or(0, |b| b.len)
    }

    fn into_batches(mut self) -> Result<Vec<RecordBatch>, CommitError> {
        if let Some(last) = self.current.take() {
            self.batches.push(last.finish());
        }
        let schema = lake::arrow_schema();
        Ok(self
            .batches
            .into_iter()
            .map(|columns| RecordBatch::try_new(schema.clone(), columns))
            .collect::<Result<_, _>>()?)
    }
}
