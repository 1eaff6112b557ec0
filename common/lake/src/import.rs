//! Bulk loading: parsed rows straight into a project's Delta table. Persons are resolved in
//! event order on the caller's task; the rows go to one encoder task per core, each sorting
//! what it is given into day files in the table's layout (`clustered`), and every so many rows
//! all their files go into the table in one commit, so memory stays flat however long (and
//! however ordered) the input is. Rows whose uuid the table already holds on their day are
//! left out, so an import run again (after an interruption, or by mistake) adds nothing.

use std::sync::Arc;
use std::time::Instant;

use common::AppState;
use common::store::Store;
use deltalake_core::arrow::array::{AsArray, BooleanArray};
use deltalake_core::arrow::compute::filter_record_batch;
use deltalake_core::arrow::datatypes::Date32Type;
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

/// Rows, and text bytes, per Delta commit at most, unless told otherwise: a commit bounds the
/// work an interrupted import loses (run again, it skips what was committed). Fewer, larger
/// commits make fewer, larger files.
pub const ROWS_PER_COMMIT: usize = 4_000_000;
const BYTES_PER_COMMIT: usize = 4 << 30;
/// Batches waiting for each encoder: enough that resolving the next rows overlaps encoding
/// these. Each is tens of megabytes; four made the import's peak RSS 150 MB higher and it no
/// faster.
const ENCODER_QUEUE: usize = 2;
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
    fn spawn(table: &DeltaTable, shredder: Arc<Shredder>) -> Result<Self, LakeError> {
        let mut writer = ClusteredWriter::for_table(table)?
            .skipping_existing(table)?
            .spilling_uncompressed();
        let (batches, mut receiver) = mpsc::channel::<RecordBatch>(ENCODER_QUEUE);
        let task_shredder = shredder.clone();
        let done = tokio::spawn(async move {
            let shredder = task_shredder;
            while let Some(batch) = receiver.recv().await {
                // Shredding runs here, on the encoders' cores, not on the resolving task.
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

/// Closes every encoder at once: each flushes what it still holds while the others do.
async fn close_all(encoders: Vec<Encoder>) -> Result<Encoded, LakeError> {
    let closed = futures::future::try_join_all(encoders.into_iter().map(Encoder::close)).await?;
    Ok(closed
        .into_iter()
        .fold((Vec::new(), 0), |(mut adds, skipped), (more, left_out)| {
            adds.extend(more);
            (adds, skipped + left_out)
        }))
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
    persons: Persons,
    store: Arc<dyn Store>,
    team_id: i64,
    group_types: KnownGroupTypes,
    /// Rows waiting for their persons.
    parsed: ParsedRows,
    rows_in_commit: usize,
    bytes_in_commit: usize,
    rows_per_commit: usize,
    report: ImportReport,
    started: Instant,
}

/// `batch`'s rows for each of `encoders` encoders: a day's rows always go to the same one, so
/// each commit writes a day into one file (in a time-ordered input a batch is mostly one day:
/// it goes whole).
fn by_encoder(
    batch: &RecordBatch,
    encoders: usize,
) -> Result<Vec<(usize, RecordBatch)>, LakeError> {
    let days = batch
        .column_by_name(table::PARTITION_COLUMN)
        .and_then(|column| column.as_primitive_opt::<Date32Type>())
        .ok_or_else(|| generic("rows without a date partition"))?;
    let encoder_of = |day: i32| day.rem_euclid(encoders.max(1) as i32) as usize;
    let values = days.values();
    let Some(&first) = values.first() else {
        return Ok(Vec::new());
    };
    if values
        .iter()
        .all(|&day| encoder_of(day) == encoder_of(first))
    {
        return Ok(vec![(encoder_of(first), batch.clone())]);
    }
    (0..encoders)
        .map(|encoder| {
            let mine =
                BooleanArray::from_iter(values.iter().map(|&d| Some(encoder_of(d) == encoder)));
            Ok((encoder, filter_record_batch(batch, &mine)?))
        })
        .filter(|part| !matches!(part, Ok((_, rows)) if rows.num_rows() == 0))
        .collect()
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
            persons,
            store: state.store.clone(),
            team_id,
            group_types: KnownGroupTypes::default(),
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
            for (encoder, rows) in by_encoder(&batch, self.encoders.len())? {
                let encoder = &self.encoders[encoder];
                if let Err(mpsc::error::SendError(_)) = encoder.batches.send(rows).await {
                    // The encoder stopped on an error: closing it tells which.
                    return self.fail().await;
                }
            }
        }
        self.rows_in_commit += count;
        self.bytes_in_commit += bytes;
        if self.rows_in_commit >= self.rows_per_commit || self.bytes_in_commit >= BYTES_PER_COMMIT {
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
        // Every encoder of a commit shares one shredder.
        let shredder = self.encoders.first().map(|e| e.shredder.clone());
        let (actions, skipped) = close_all(std::mem::take(&mut self.encoders)).await?;
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
        if let Some(shredder) = shredder {
            crate::shred::settle(&self.state, self.team_id, &shredder).await?;
        }
        self.rows_in_commit = 0;
        self.bytes_in_commit = 0;
        // Memory stays flat however many distinct ids the file holds.
        self.persons.forget_beyond(PERSONS_CACHED_BYTES).await?;
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

#[cfg(test)]
mod tests {
    use deltalake_core::arrow::array::{Date32Array, Int64Array};
    use deltalake_core::arrow::datatypes::{DataType, Field, Schema};

    use super::*;

    fn rows(days: &[i32]) -> RecordBatch {
        let schema = Arc::new(Schema::new(vec![
            Field::new(table::PARTITION_COLUMN, DataType::Date32, false),
            Field::new("n", DataType::Int64, false),
        ]));
        let numbers: Vec<i64> = (0..days.len() as i64).collect();
        RecordBatch::try_new(
            schema,
            vec![
                Arc::new(Date32Array::from(days.to_vec())),
                Arc::new(Int64Array::from(numbers)),
            ],
        )
        .unwrap()
    }

    fn numbers(batch: &RecordBatch) -> Vec<i64> {
        batch
            .column(1)
            .as_primitive::<deltalake_core::arrow::datatypes::Int64Type>()
            .values()
            .to_vec()
    }

    #[test]
    fn a_day_always_goes_to_the_same_encoder() {
        let parts = by_encoder(&rows(&[10, 11, 12, 10, 13]), 2).unwrap();
        let found: Vec<(usize, Vec<i64>)> = parts.iter().map(|(e, b)| (*e, numbers(b))).collect();
        assert_eq!(found, vec![(0, vec![0, 2, 3]), (1, vec![1, 4])]);
        // One day: the batch goes whole; no encoder gets an empty batch.
        let whole = by_encoder(&rows(&[11, 11]), 2).unwrap();
        assert_eq!(whole.len(), 1);
        assert_eq!(whole[0].0, 1);
        assert!(by_encoder(&rows(&[]), 2).unwrap().is_empty());
    }
}
