//! Bulk loading: parsed rows straight into a project's Delta table. Persons are resolved in
//! event order on the caller's task; Parquet encoding runs on one task per core, each writing
//! its own day files (`clustered`), and every so many rows all their files go into the table in
//! one commit, so memory stays flat however long the input is.

use std::sync::Arc;
use std::time::Instant;

use common::AppState;
use common::store::Store;
use deltalake_core::arrow::record_batch::RecordBatch;
use deltalake_core::kernel::Action;
use deltalake_core::kernel::transaction::CommitBuilder;
use deltalake_core::protocol::{DeltaOperation, SaveMode};
use deltalake_core::{DeltaTable, DeltaTableError};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use crate::clustered::ClusteredWriter;
use crate::group_types::KnownGroupTypes;
use crate::persons::Persons;
use crate::rows::ParsedRows;
use crate::shred::{KeyCounts, Shredder};
use crate::table;
use lake_core::LakeError;

/// Rows, and text bytes, per Delta commit at most. Files stream to the store as they fill; a
/// commit bounds the persons cached (it forgets them) and the work a failure loses.
const ROWS_PER_COMMIT: usize = 4_000_000;
const BYTES_PER_COMMIT: usize = 4 << 30;
/// Batches waiting for each encoder: enough that resolving the next rows overlaps encoding
/// these. Each is tens of megabytes; four made the import's peak RSS 150 MB higher and it no
/// faster.
const ENCODER_QUEUE: usize = 2;
/// Rows whose persons are resolved together: their new persons and updates go to the Store in
/// a few large writes.
const ROWS_PER_RESOLVE: usize = 65_536;

#[derive(Debug, Default, Clone)]
pub struct ImportReport {
    pub rows: u64,
    pub commits: u64,
    pub files: u64,
    pub seconds: f64,
}

/// A task encoding batches into Parquet files of its own; their `add` actions come back
/// when it is closed.
struct Encoder {
    batches: mpsc::Sender<RecordBatch>,
    shredder: Arc<Shredder>,
    done: JoinHandle<Result<Vec<Action>, LakeError>>,
}

impl Encoder {
    fn spawn(table: &DeltaTable, shredder: Arc<Shredder>) -> Result<Self, LakeError> {
        let mut writer = ClusteredWriter::for_table(table)?;
        let (batches, mut receiver) = mpsc::channel::<RecordBatch>(ENCODER_QUEUE);
        let task_shredder = shredder.clone();
        let done = tokio::spawn(async move {
            let shredder = task_shredder;
            while let Some(batch) = receiver.recv().await {
                // Shredding runs here, on the encoders' cores, not on the resolving task.
                writer.write(&shredder.apply(&batch)?).await?;
            }
            let adds = writer.close().await?;
            Ok(adds.into_iter().map(Action::Add).collect())
        });
        Ok(Self {
            batches,
            shredder,
            done,
        })
    }

    async fn close(self) -> Result<Vec<Action>, LakeError> {
        drop(self.batches);
        self.done.await.map_err(generic)?
    }
}

/// Closes every encoder at once: each flushes what it still holds while the others do.
async fn close_all(encoders: Vec<Encoder>) -> Result<Vec<Action>, LakeError> {
    let closed = futures::future::try_join_all(encoders.into_iter().map(Encoder::close)).await?;
    Ok(closed.into_iter().flatten().collect())
}

/// Keeps the cause (a task that failed, or what went wrong) as the source.
fn generic(error: impl Into<Box<dyn std::error::Error + Send + Sync>>) -> LakeError {
    LakeError::Delta(DeltaTableError::GenericError {
        source: error.into(),
    })
}

pub struct Importer {
    state: AppState,
    table: DeltaTable,
    encoders: Vec<Encoder>,
    next_encoder: usize,
    persons: Persons,
    store: Arc<dyn Store>,
    team_id: i64,
    group_types: KnownGroupTypes,
    /// Rows waiting for their persons.
    parsed: ParsedRows,
    rows_in_commit: usize,
    bytes_in_commit: usize,
    report: ImportReport,
    started: Instant,
}

/// One encoder per core.
fn encoder_count() -> usize {
    std::thread::available_parallelism().map_or(2, |n| n.get().clamp(1, 8))
}

impl Importer {
    pub async fn new(state: AppState, team_id: i64) -> Result<Self, LakeError> {
        let table = table::open_or_create(&state, team_id).await?;
        let persons = Persons::new(state.store.clone(), state.clock.clone(), team_id);
        Ok(Self {
            state: state.clone(),
            table,
            encoders: Vec::new(),
            next_encoder: 0,
            persons,
            store: state.store.clone(),
            team_id,
            group_types: KnownGroupTypes::default(),
            parsed: ParsedRows::default(),
            rows_in_commit: 0,
            bytes_in_commit: 0,
            report: ImportReport::default(),
            started: Instant::now(),
        })
    }

    /// Adds rows, their persons resolved (and updated) as the committer would.
    pub async fn push(&mut self, rows: ParsedRows) -> Result<(), LakeError> {
        self.report.rows += rows.len() as u64;
        self.parsed.append(rows);
        if self.parsed.len() >= ROWS_PER_RESOLVE {
            self.resolve().await?;
        }
        Ok(())
    }

    /// Resolves the waiting rows' persons and hands the rows to the encoders.
    async fn resolve(&mut self) -> Result<(), LakeError> {
        let mut rows = std::mem::take(&mut self.parsed);
        let (count, bytes) = (rows.len(), rows.bytes());
        self.group_types
            .record(self.store.as_ref(), self.team_id, &rows.take_group_types())
            .await?;
        let batches = rows.resolve(&mut self.persons).await?;
        if self.encoders.is_empty() {
            self.encoders = self.spawn_encoders(&batches).await?;
        }
        for batch in batches {
            let encoder = &self.encoders[self.next_encoder];
            self.next_encoder = (self.next_encoder + 1) % self.encoders.len();
            if let Err(mpsc::error::SendError(_)) = encoder.batches.send(batch).await {
                // The encoder stopped on an error: closing it tells which.
                return self.fail().await;
            }
        }
        self.rows_in_commit += count;
        self.bytes_in_commit += bytes;
        if self.rows_in_commit >= ROWS_PER_COMMIT || self.bytes_in_commit >= BYTES_PER_COMMIT {
            // The next rows get new encoders (and the registry as it is then).
            self.commit().await?;
        }
        Ok(())
    }

    async fn fail(&mut self) -> Result<(), LakeError> {
        close_all(std::mem::take(&mut self.encoders)).await?;
        Err(generic("an encoder stopped"))
    }

    /// Puts every file the encoders wrote into the table in one commit.
    async fn commit(&mut self) -> Result<(), LakeError> {
        let mut actions = Vec::new();
        // Every encoder of a commit shares one shredder.
        let shredder = self.encoders.first().map(|e| e.shredder.clone());
        actions.extend(close_all(std::mem::take(&mut self.encoders)).await?);
        if !actions.is_empty() {
            self.report.files += actions.len() as u64;
            let operation = DeltaOperation::Write {
                mode: SaveMode::Append,
                partition_by: Some(vec![table::PARTITION_COLUMN.to_owned()]),
                predicate: None,
            };
            let snapshot = self.table.snapshot()?;
            CommitBuilder::default()
                .with_actions(actions)
                .build(Some(snapshot), self.table.log_store(), operation)
                .await?;
            self.table.update_incremental(None).await?;
            self.report.commits += 1;
        }
        if let Some(shredder) = shredder {
            crate::shred::settle(&self.state, self.team_id, &shredder).await?;
        }
        self.rows_in_commit = 0;
        self.bytes_in_commit = 0;
        // Memory stays flat however many distinct ids the file holds.
        self.persons.forget().await?;
        Ok(())
    }

    /// Encoders for the next commit, shredding the keys the registry names once `first` (the
    /// commit's first rows) had their say on which keys are frequent.
    async fn spawn_encoders(&mut self, first: &[RecordBatch]) -> Result<Vec<Encoder>, LakeError> {
        let mut counts = KeyCounts::default();
        if crate::shred::enabled(&self.state) {
            for batch in first {
                counts.observe(batch);
            }
        }
        let shredder = Arc::new(
            crate::shred::prepare(&self.state, self.team_id, &mut self.table, Some(&counts))
                .await?,
        );
        (0..encoder_count())
            .map(|_| Encoder::spawn(&self.table, shredder.clone()))
            .collect()
    }

    /// Rows accepted so far.
    pub fn rows(&self) -> u64 {
        self.report.rows
    }

    pub async fn finish(mut self) -> Result<ImportReport, LakeError> {
        self.resolve().await?;
        self.commit().await?;
        self.report.seconds = self.started.elapsed().as_secs_f64();
        Ok(self.report)
    }
}
