//! Bulk loading: parsed rows straight into a project's Delta table. Persons are resolved in
//! event order on the caller's task; the rows go to an encoder task that shreds them and sorts
//! them into day files in the table's layout (`clustered`: a day held in memory, then written
//! by every core into one file), and every so many rows its files go into the table in one
//! commit, so memory stays flat however long (and
//! however ordered) the input is. Rows whose uuid the table already holds on their day are
//! left out, so an import run again (after an interruption, or by mistake) adds nothing.

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
use crate::definitions::KnownDefinitions;
use crate::group_types::KnownGroupTypes;
use crate::persons::Persons;
use crate::rows::ParsedRows;
use crate::shred::{KeyCounts, Shredder};
use crate::table;
use lake_core::LakeError;

/// Rows, and text bytes, per Delta commit at most, unless told otherwise: a commit bounds the
/// work an interrupted import loses (run again, it skips what was committed). Fewer, larger
/// commits make fewer, larger files.
pub const ROWS_PER_COMMIT: usize = 4_000_000;
const BYTES_PER_COMMIT: usize = 4 << 30;
/// Batches waiting for the encoder: enough that resolving the next rows overlaps encoding
/// these. Each is tens of megabytes; four made the import's peak RSS 150 MB higher and it no
/// faster.
const ENCODER_QUEUE: usize = 2;
/// A day the encoder holds in memory at most (past it, the rest of the commit takes the
/// external sort). A 10M-event export's days (333,000 events) count about 410 MB of Arrow; the
/// next day waits while one is written, so the rows held stay about one day's.
const DAY_MEMORY: usize = 512 << 20;
/// Persons (links and properties) kept from one commit to the next, at most, in bytes.
const PERSONS_CACHED_BYTES: usize = 64 << 20;
/// Rows whose persons are resolved together: their new persons and updates go to the Store in
/// a few large writes.
const ROWS_PER_RESOLVE: usize = 65_536;

#[derive(Debug, Default, Clone)]
pub struct ImportReport {
    pub rows: u64,
    pub commits: u64,
    pub files: u64,
    /// Rows left out because the table already held their uuid on their day (an import run
    /// again, or an export overlapping events already loaded).
    pub skipped: u64,
    pub seconds: f64,
}

/// What an encoder put in the table: its files' `add` actions, and the rows it left out.
type Encoded = (Vec<Action>, u64);

/// A task sorting batches into Parquet files of its own; their `add` actions come back
/// when it is closed.
struct Encoder {
    batches: mpsc::Sender<RecordBatch>,
    shredder: Arc<Shredder>,
    done: JoinHandle<Result<Encoded, LakeError>>,
}

impl Encoder {
    fn spawn(
        state: &AppState,
        table: &DeltaTable,
        shredder: Arc<Shredder>,
    ) -> Result<Self, LakeError> {
        let mut writer = ClusteredWriter::for_table(table, state.clock.clone())?
            .skipping_existing(table)?
            .holding_days_up_to(DAY_MEMORY)
            .spilling_uncompressed();
        let (batches, mut receiver) = mpsc::channel::<RecordBatch>(ENCODER_QUEUE);
        let task_shredder = shredder.clone();
        let done = tokio::spawn(async move {
            let shredder = task_shredder;
            while let Some(batch) = receiver.recv().await {
                // Shredding runs here, beside the resolving task.
                writer.write(&shredder.apply(&batch)?).await?;
            }
            let written = writer.close().await?;
            let adds = written.adds.into_iter().map(Action::Add).collect();
            Ok((adds, written.skipped))
        });
        Ok(Self {
            batches,
            shredder,
            done,
        })
    }

    async fn close(self) -> Result<Encoded, LakeError> {
        drop(self.batches);
        self.done.await.map_err(generic)?
    }
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
    /// The commit's encoder, from its first rows.
    encoder: Option<Encoder>,
    persons: Persons,
    store: Arc<dyn Store>,
    team_id: i64,
    group_types: KnownGroupTypes,
    definitions: KnownDefinitions,
    /// Rows waiting for their persons.
    parsed: ParsedRows,
    rows_in_commit: usize,
    bytes_in_commit: usize,
    rows_per_commit: usize,
    report: ImportReport,
    started: Instant,
}

impl Importer {
    pub async fn new(state: AppState, team_id: i64) -> Result<Self, LakeError> {
        let table = table::open_or_create(&state, team_id).await?;
        let persons = Persons::new(state.store.clone(), state.clock.clone(), team_id);
        Ok(Self {
            state: state.clone(),
            table,
            encoder: None,
            persons,
            store: state.store.clone(),
            team_id,
            group_types: KnownGroupTypes::default(),
            definitions: KnownDefinitions::default(),
            parsed: ParsedRows::default(),
            rows_in_commit: 0,
            bytes_in_commit: 0,
            rows_per_commit: ROWS_PER_COMMIT,
            report: ImportReport::default(),
            started: Instant::now(),
        })
    }

    /// Commits every `rows` rows (at least one resolve's worth) instead of `ROWS_PER_COMMIT`.
    pub fn with_rows_per_commit(mut self, rows: usize) -> Self {
        self.rows_per_commit = rows.max(1);
        self
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

    /// Resolves the waiting rows' persons and hands the rows to the encoder.
    async fn resolve(&mut self) -> Result<(), LakeError> {
        let mut rows = std::mem::take(&mut self.parsed);
        let (count, bytes) = (rows.len(), rows.bytes());
        self.group_types
            .record(self.store.as_ref(), self.team_id, &rows.take_group_types())
            .await?;
        self.definitions
            .record(
                self.store.as_ref(),
                self.team_id,
                &rows.take_definitions(),
                self.state.clock.now(),
            )
            .await?;
        let batches = rows.resolve(&mut self.persons).await?;
        let encoder = match &mut self.encoder {
            Some(encoder) => encoder,
            None => {
                let spawned = self.spawn_encoder(&batches).await?;
                self.encoder.insert(spawned)
            }
        };
        for batch in batches {
            if let Err(mpsc::error::SendError(_)) = encoder.batches.send(batch).await {
                // The encoder stopped on an error: closing it tells which.
                return self.fail().await;
            }
        }
        self.rows_in_commit += count;
        self.bytes_in_commit += bytes;
        if self.rows_in_commit >= self.rows_per_commit || self.bytes_in_commit >= BYTES_PER_COMMIT {
            // The next rows get a new encoder (and the registry as it is then).
            self.commit().await?;
        }
        Ok(())
    }

    async fn fail(&mut self) -> Result<(), LakeError> {
        if let Some(encoder) = self.encoder.take() {
            encoder.close().await?;
        }
        Err(generic("the encoder stopped"))
    }

    /// Puts every file the encoder wrote into the table in one commit.
    async fn commit(&mut self) -> Result<(), LakeError> {
        let Some(encoder) = self.encoder.take() else {
            return Ok(());
        };
        let shredder = encoder.shredder.clone();
        let (actions, skipped) = encoder.close().await?;
        self.report.skipped += skipped;
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
        crate::shred::settle(&self.state, self.team_id, &shredder).await?;
        self.rows_in_commit = 0;
        self.bytes_in_commit = 0;
        // Memory stays flat however many distinct ids the file holds.
        self.persons.forget_beyond(PERSONS_CACHED_BYTES).await?;
        Ok(())
    }

    /// The encoder of the next commit, shredding the keys the registry names once `first` (the
    /// commit's first rows) had their say on which keys are frequent.
    async fn spawn_encoder(&mut self, first: &[RecordBatch]) -> Result<Encoder, LakeError> {
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
        Encoder::spawn(&self.state, &self.table, shredder)
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
