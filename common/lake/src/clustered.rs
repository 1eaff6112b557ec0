//! The layout every bulk writer of the events tables writes (the importer, and compaction's
//! rewrite, so the committer's small files converge to it): the rows of a whole write sorted by
//! day, event, distinct id and time, one file per day (rolled at the target size), row groups
//! holding a contiguous run of events, so a filter on the event (or a person's events) skips
//! whole row groups by their statistics, and pages within them by the page index.
//!
//! Rows are first held by day: while the input comes a day at a time (an export, capture's log:
//! time order), a day is complete once a later one has arrived, and is then sorted in memory
//! (`day_sort`) and written by every core into its file (`day_file`), while the next day is
//! held. The first row for a day already written, or one day outgrowing
//! `DAY_MEMORY`, shows the input is not in that order or too large for it: from then on every
//! row, those held included, goes through DataFusion's external sort. Past `SORT_MEMORY` it
//! sorts the rows it holds and spills them to disk as a run (LZ4-compressed Arrow), and at
//! `close` merges the runs into one stream in order, cut into days and encoded. A write's
//! memory stays bounded however many rows it takes and however they are ordered.

use std::collections::{HashMap, HashSet};
use std::num::{NonZeroU64, NonZeroUsize};
use std::sync::{Arc, Mutex};

use common::clock::Clock;
use datafusion::arrow::compute::SortOptions;
use datafusion::common::config::SpillCompression;
use datafusion::datasource::listing::PartitionedFile;
use datafusion::datasource::physical_plan::parquet::{
    DefaultParquetFileReaderFactory, ParquetFileReaderFactory,
};
use datafusion::error::DataFusionError;
use datafusion::execution::memory_pool::{FairSpillPool, TrackConsumersPool};
use datafusion::execution::runtime_env::RuntimeEnvBuilder;
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::physical_expr::{LexOrdering, PhysicalSortExpr};
use datafusion::physical_plan::ExecutionPlan;
use datafusion::physical_plan::expressions::col;
use datafusion::physical_plan::metrics::ExecutionPlanMetricsSet;
use datafusion::physical_plan::sorts::sort::SortExec;
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::streaming::{PartitionStream, StreamingTableExec};
use datafusion::prelude::SessionConfig;
use delta_kernel::engine::arrow_conversion::TryIntoArrow;
use delta_kernel::expressions::Scalar;
use delta_kernel::table_properties::DataSkippingNumIndexedCols;
use deltalake_core::arrow::array::AsArray;
use deltalake_core::arrow::datatypes::{Schema, SchemaRef};
use deltalake_core::arrow::record_batch::RecordBatch;
use deltalake_core::datafile::writer::{DeltaWriter, WriterConfig};
use deltalake_core::kernel::Add;
use deltalake_core::logstore::ObjectStoreRef;
use deltalake_core::parquet::arrow::ProjectionMask;
use deltalake_core::parquet::arrow::async_reader::{
    AsyncFileReader, ParquetRecordBatchStreamBuilder,
};
use deltalake_core::{DeltaResult, DeltaTable, DeltaTableError};
use futures::StreamExt;
use indexmap::IndexMap;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use uuid::Uuid;

use crate::day_file::{DayFiles, DayWritten, without_held};
use crate::day_sort::{self, Days, SortedDay};
use crate::file_stats::StatsColumns;
use crate::table;

/// Memory a write's sort holds before it spills a sorted run. Half of it is set aside for
/// merging the rows held into a run (and, at the end, the runs): the merge holds a sorted copy of
/// each batch and each row's sort key in row format. With DataFusion's default, 10 MB, and the
/// importer's 65K-row batches, a 10M-event import failed with the merge out of memory (81.6 MB at
/// its peak, beside 124 MB of rows held); rows now also come in pieces (`pieces`).
const SORT_MEMORY: usize = 192 << 20;
/// Batches waiting for the sort (or the encoder): it takes them as fast as it copies them.
const INPUT_QUEUE: usize = 2;
/// Rows held by day at most, unless the writer is told otherwise: past it, with one day held,
/// that day (and the rest of the write) goes to the external sort. At 128 MB a write stays
/// within the memory the external sort has (compaction runs in a Lambda).
const DAY_MEMORY: usize = 128 << 20;
/// Past this much held, the earliest day is written once a later one has arrived: in a
/// time-ordered input it is complete, and holding it longer only costs memory.
const DAY_CLOSE_BYTES: usize = 64 << 20;

/// How much a writer holds by day (see `DAY_MEMORY` and `DAY_CLOSE_BYTES`).
#[derive(Debug, Clone, Copy)]
struct DayMemory {
    close_after: usize,
    at_most: usize,
}
/// Rows per batch out of the merge: what the Parquet writer takes at a time.
const OUTPUT_BATCH_ROWS: usize = 8 * 1024;
/// Files roll over at about this size.
pub const TARGET_FILE_BYTES: u64 = 256 * 1024 * 1024;

/// Delta's default for how many leading columns get file statistics.
const DELTA_INDEXED_COLUMNS: u64 = 32;

/// Columns rows are sorted by, most significant first (the first of each choice the batch has):
/// the day (a file per day), the event's code where the table has one (integers compare faster
/// than names) or its name, the distinct id (a person's events together, so a filter on one
/// skips the rest), then the time.
const SORT_COLUMNS: [&[&str]; 4] = [
    &[table::PARTITION_COLUMN],
    &["event_code", "event"],
    &["distinct_id"],
    &["timestamp"],
];

/// What a write put in the table.
#[derive(Debug, Default)]
pub struct Written {
    pub adds: Vec<Add>,
    /// Rows left out because the table already held their uuid on their day.
    pub skipped: u64,
}

pub struct ClusteredWriter {
    store: ObjectStoreRef,
    config: WriterConfig,
    existing: Option<Arc<ExistingUuids>>,
    spill: SpillCompression,
    /// The first batch's: every batch is read as it.
    schema: Option<SchemaRef>,
    /// Rows held by day, while the input comes a day at a time.
    held: Days,
    /// False once a row showed the input is not in day order: every row then goes to `sort`.
    holding: bool,
    /// The last day written from memory.
    written_through: Option<i32>,
    day_memory: DayMemory,
    /// How a day sorted in memory is written: by every core, into a file of its own.
    day_files: Arc<DayFiles>,
    /// The day sorted in memory being written, if one is.
    writing: Option<JoinHandle<DeltaResult<DayWritten>>>,
    /// What the days sorted in memory put in the table so far.
    written: Written,
    /// The external sort, started by the first row it gets.
    sort: Option<RunningWrite>,
}

/// A task encoding the rows it is sent, in order, into day files.
struct RunningWrite {
    batches: mpsc::Sender<Result<RecordBatch, DataFusionError>>,
    done: JoinHandle<DeltaResult<Written>>,
}

impl ClusteredWriter {
    /// A writer for `table`'s current schema (shredded columns included) and statistics
    /// settings; `clock` stamps the files it adds.
    pub fn for_table(table: &DeltaTable, clock: Arc<dyn Clock>) -> DeltaResult<Self> {
        let snapshot = table.snapshot()?;
        let metadata = snapshot.metadata();
        let schema: Schema = (&metadata.parse_schema()?).try_into_arrow()?;
        let configuration = metadata.configuration();
        let indexed_columns = configuration
            .get("delta.dataSkippingNumIndexedCols")
            .and_then(|v| v.parse().ok())
            .map_or(
                DataSkippingNumIndexedCols::NumColumns(DELTA_INDEXED_COLUMNS),
                DataSkippingNumIndexedCols::NumColumns,
            );
        let stats_columns = configuration
            .get("delta.dataSkippingStatsColumns")
            .map(|v| v.split(',').map(str::to_owned).collect());
        let config = WriterConfig::new(
            Arc::new(schema),
            metadata.partition_columns().to_vec(),
            Some(table::writer_properties()),
            NonZeroU64::new(TARGET_FILE_BYTES),
            None,
            indexed_columns,
            stats_columns.clone(),
        );
        let day_files = DayFiles {
            store: table.object_store(),
            file_schema: config.file_schema(),
            properties: table::writer_properties(),
            stats: StatsColumns {
                indexed: indexed_columns,
                named: stats_columns,
            },
            target_bytes: TARGET_FILE_BYTES,
            clock,
            parallelism: std::thread::available_parallelism().map_or(2, |n| n.get().clamp(1, 8)),
        };
        Ok(Self {
            store: table.object_store(),
            config,
            existing: None,
            // Compaction runs in a Lambda too, whose /tmp is small.
            spill: SpillCompression::Lz4Frame,
            schema: None,
            held: Days::default(),
            holding: true,
            written_through: None,
            day_memory: DayMemory {
                close_after: DAY_CLOSE_BYTES,
                at_most: DAY_MEMORY,
            },
            day_files: Arc::new(day_files),
            writing: None,
            written: Written::default(),
            sort: None,
        })
    }

    /// Leaves out rows whose uuid `table` (as it is now) already holds on their day, so writing
    /// the same events again adds nothing; [`Written::skipped`] counts them.
    pub fn skipping_existing(mut self, table: &DeltaTable) -> DeltaResult<Self> {
        self.existing = Some(Arc::new(ExistingUuids::of(table)?));
        Ok(self)
    }

    /// Holds a day of up to `bytes` in memory (instead of `DAY_MEMORY`) before it takes the
    /// external sort: for a writer with the memory to spare, whose days are larger (the
    /// importer's one writer; compaction runs in a Lambda).
    pub fn holding_days_up_to(mut self, bytes: usize) -> Self {
        self.day_memory.at_most = bytes;
        self
    }

    /// Spills sorted runs as they are, not LZ4-compressed: for a machine with disk to spare (the
    /// importer), where compressing every row and inflating it again costs more CPU than
    /// writing it to the page cache.
    pub fn spilling_uncompressed(mut self) -> Self {
        self.spill = SpillCompression::Uncompressed;
        self
    }

    /// Takes `batch`'s rows (any days, any order).
    pub async fn write(&mut self, batch: &RecordBatch) -> DeltaResult<()> {
        if batch.num_rows() == 0 {
            return Ok(());
        }
        let schema = self.schema.get_or_insert_with(|| batch.schema()).clone();
        // Batches of one write share their columns; a schema that differs only in its fields'
        // flags or metadata is read as the first one's.
        let batch = if batch.schema() == schema {
            batch.clone()
        } else {
            RecordBatch::try_new(schema, batch.columns().to_vec())?
        };
        if !self.holding {
            return self.send_to_sort(&batch).await;
        }
        let days = day_sort::by_day(&batch)?;
        let earliest = days.first().map(|(day, _)| *day);
        if earliest.is_some_and(|day| self.written_through.is_some_and(|done| day <= done)) {
            // A row for a day already written: the input is not in day order.
            self.stop_holding().await?;
            return self.send_to_sort(&batch).await;
        }
        for (day, rows) in days {
            self.held.add(day, rows);
        }
        while self.held.len() > 1 && self.held.bytes() > self.day_memory.close_after {
            self.write_first_day().await?;
        }
        if self.held.bytes() > self.day_memory.close_after {
            // The next day waits for the one being written rather than growing beside it: the
            // rows held stay about one day's.
            self.wait_for_day().await?;
        }
        if self.held.bytes() > self.day_memory.at_most {
            // One day larger than the memory for it. (Writing it in sorted segments, one after
            // the other in its file, imported 10M events a fifth faster but made the per-person
            // questions over them 13-15% slower: a person's events no longer sit together.)
            self.stop_holding().await?;
        }
        Ok(())
    }

    /// Sorts, cuts into days and writes every row taken; the files written, as `add` actions.
    pub async fn close(mut self) -> DeltaResult<Written> {
        while self.held.len() > 0 {
            self.write_first_day().await?;
        }
        self.wait_for_day().await?;
        let mut written = std::mem::take(&mut self.written);
        if let Some(running) = self.sort.take() {
            let more = running.finish().await?;
            written.adds.extend(more.adds);
            written.skipped += more.skipped;
        }
        Ok(written)
    }

    /// Waits for the day being written, if one is: one day is written at a time.
    async fn wait_for_day(&mut self) -> DeltaResult<()> {
        if let Some(writing) = self.writing.take() {
            let started = std::time::Instant::now();
            let (adds, skipped) = writing
                .await
                .map_err(|error| DeltaTableError::generic(error.to_string()))??;
            tracing::debug!(
                waited_ms = started.elapsed().as_millis() as u64,
                "the day before written"
            );
            self.written.adds.extend(adds);
            self.written.skipped += skipped;
        }
        Ok(())
    }

    /// Sorts the earliest day held in memory and sends it to be encoded.
    async fn write_first_day(&mut self) -> DeltaResult<()> {
        let (Some(schema), Some((day, rows))) = (self.schema.clone(), self.held.pop_first()) else {
            return Ok(());
        };
        let keys: Vec<usize> = sort_columns(&schema)
            .into_iter()
            .filter(|name| *name != table::PARTITION_COLUMN)
            .map(|name| schema.index_of(name))
            .collect::<Result<_, _>>()?;
        let bytes: usize = rows.iter().map(RecordBatch::get_array_memory_size).sum();
        let count: usize = rows.iter().map(RecordBatch::num_rows).sum();
        let started = std::time::Instant::now();
        let sorted = Arc::new(SortedDay::new(&schema, &keys, rows)?);
        tracing::debug!(
            day,
            rows = count,
            bytes,
            sort_ms = started.elapsed().as_millis() as u64,
            "a day sorted in memory"
        );
        self.wait_for_day().await?;
        let (files, existing) = (self.day_files.clone(), self.existing.clone());
        self.writing = Some(tokio::spawn(async move {
            let held = match existing {
                Some(existing) => existing.on(day).await?,
                None => HashSet::new(),
            };
            files.write(day, sorted, Arc::new(held)).await
        }));
        self.written_through = Some(day);
        Ok(())
    }

    /// Every row held, and every row after, goes through the external sort.
    async fn stop_holding(&mut self) -> DeltaResult<()> {
        tracing::debug!(
            held_days = self.held.len(),
            held_bytes = self.held.bytes(),
            written_through = ?self.written_through,
            "rows not in day order, or a day past its memory: the rest of this write goes through the external sort"
        );
        self.holding = false;
        let held: Vec<RecordBatch> = self.held.drain().flat_map(|(_, rows)| rows).collect();
        for rows in held {
            self.send_to_sort(&rows).await?;
        }
        Ok(())
    }

    async fn send_to_sort(&mut self, batch: &RecordBatch) -> DeltaResult<()> {
        let sort = match &mut self.sort {
            Some(sort) => sort,
            None => self.sort.insert(RunningWrite::sorting(
                batch.schema(),
                self.store.clone(),
                self.config.clone(),
                self.existing.clone(),
                self.spill,
            )?),
        };
        for piece in pieces(batch)? {
            if !sort.send(piece).await {
                return Err(RunningWrite::stopped(self.sort.take()).await);
            }
        }
        Ok(())
    }
}

impl RunningWrite {
    /// Sorts what it is sent (in `SORT_MEMORY`, spilling past it), then encodes it.
    fn sorting(
        schema: SchemaRef,
        store: ObjectStoreRef,
        config: WriterConfig,
        existing: Option<Arc<ExistingUuids>>,
        spill: SpillCompression,
    ) -> DeltaResult<Self> {
        let (batches, receiver) = mpsc::channel(INPUT_QUEUE);
        let sorted = sorted_stream(&schema, receiver, spill, SORT_MEMORY)?;
        let done = tokio::spawn(write_days(sorted, store, config, existing));
        Ok(Self { batches, done })
    }

    /// False when the task has stopped (on an error: [`RunningWrite::stopped`] tells which).
    async fn send(&self, batch: RecordBatch) -> bool {
        self.batches.send(Ok(batch)).await.is_ok()
    }

    /// The error a task that took no more rows stopped on.
    async fn stopped(running: Option<Self>) -> DeltaTableError {
        let finished = match running {
            Some(running) => running.finish().await,
            None => Ok(Written::default()),
        };
        finished.err().unwrap_or_else(|| {
            DeltaTableError::generic("the sort or encoder of a write stopped early")
        })
    }

    async fn finish(self) -> DeltaResult<Written> {
        drop(self.batches);
        self.done
            .await
            .map_err(|error| DeltaTableError::generic(error.to_string()))?
    }
}

/// The columns rows are sorted by (`SORT_COLUMNS` as `schema` has them), most significant first.
fn sort_columns(schema: &Schema) -> Vec<&'static str> {
    SORT_COLUMNS
        .iter()
        .filter_map(|choices| choices.iter().find(|name| schema.index_of(name).is_ok()))
        .copied()
        .collect()
}

/// The sort's expressions: `SORT_COLUMNS` as `schema` has them, ascending.
fn sort_order(schema: &Schema) -> DeltaResult<Vec<PhysicalSortExpr>> {
    sort_columns(schema)
        .into_iter()
        .map(|name| {
            let column = col(name, schema).map_err(sort_error)?;
            Ok(PhysicalSortExpr::new(column, SortOptions::default()))
        })
        .collect()
}

/// `batch` in pieces of at most `OUTPUT_BATCH_ROWS` rows, each copied into buffers of its own. The
/// sort sorts each batch it holds into a copy before merging them, and counts a batch's memory
/// by its buffers: an importer's batch of 65K rows (tens of MB) left the merge no room, where
/// slices would each have counted the whole batch.
fn pieces(batch: &RecordBatch) -> DeltaResult<Vec<RecordBatch>> {
    use deltalake_core::arrow::array::UInt32Array;
    use deltalake_core::arrow::compute::take_record_batch;
    let rows = batch.num_rows();
    if rows <= OUTPUT_BATCH_ROWS {
        return Ok(vec![batch.clone()]);
    }
    (0..rows)
        .step_by(OUTPUT_BATCH_ROWS)
        .map(|start| {
            let end = (start + OUTPUT_BATCH_ROWS).min(rows);
            let indices = UInt32Array::from_iter_values(start as u32..end as u32);
            Ok(take_record_batch(batch, &indices)?)
        })
        .collect()
}

/// The batches `receiver` gives, sorted in `memory` bytes (spilling past them).
fn sorted_stream(
    schema: &SchemaRef,
    receiver: mpsc::Receiver<Result<RecordBatch, DataFusionError>>,
    spill: SpillCompression,
    memory: usize,
) -> DeltaResult<SendableRecordBatchStream> {
    let source = Arc::new(ChannelSource {
        schema: schema.clone(),
        receiver: Mutex::new(Some(receiver)),
    });
    let input = StreamingTableExec::try_new(schema.clone(), vec![source], None, [], false, None)
        .map_err(sort_error)?;
    let ordering = LexOrdering::new(sort_order(schema)?)
        .ok_or_else(|| DeltaTableError::generic("no columns to sort rows by"))?;
    let sort = SortExec::new(ordering, Arc::new(input));
    sort.execute(0, sort_context(spill, memory)?)
        .map_err(sort_error)
}

/// A task context of the sort's own: its memory bound (of which half is for merging, as said
/// at `SORT_MEMORY`), spills to the OS temporary directory.
fn sort_context(spill: SpillCompression, memory: usize) -> DeltaResult<Arc<TaskContext>> {
    let runtime = RuntimeEnvBuilder::new()
        // Tracked: a sort out of memory names what held it.
        .with_memory_pool(Arc::new(TrackConsumersPool::new(
            FairSpillPool::new(memory),
            NonZeroUsize::new(5).expect("5 is not zero"),
        )))
        .build_arc()
        .map_err(sort_error)?;
    let mut config = SessionConfig::new().with_batch_size(OUTPUT_BATCH_ROWS);
    let execution = &mut config.options_mut().execution;
    execution.spill_compression = spill;
    execution.sort_spill_reservation_bytes = memory / 2;
    Ok(Arc::new(
        TaskContext::default()
            .with_session_config(config)
            .with_runtime(runtime),
    ))
}

fn sort_error(error: DataFusionError) -> DeltaTableError {
    DeltaTableError::GenericError {
        source: Box::new(error),
    }
}

/// The batches a writer is given, as the one partition of the sort's input.
#[derive(Debug)]
struct ChannelSource {
    schema: SchemaRef,
    receiver: Mutex<Option<mpsc::Receiver<Result<RecordBatch, DataFusionError>>>>,
}

impl PartitionStream for ChannelSource {
    fn schema(&self) -> &SchemaRef {
        &self.schema
    }

    fn execute(&self, _: Arc<TaskContext>) -> SendableRecordBatchStream {
        match self.receiver.lock().ok().and_then(|mut held| held.take()) {
            Some(receiver) => channel_stream(&self.schema, receiver),
            None => Box::pin(RecordBatchStreamAdapter::new(
                self.schema.clone(),
                futures::stream::empty(),
            )),
        }
    }
}

/// The batches `receiver` gives, as a stream.
fn channel_stream(
    schema: &SchemaRef,
    receiver: mpsc::Receiver<Result<RecordBatch, DataFusionError>>,
) -> SendableRecordBatchStream {
    let batches = futures::stream::unfold(receiver, |mut receiver| async move {
        let batch = receiver.recv().await?;
        Some((batch, receiver))
    });
    Box::pin(RecordBatchStreamAdapter::new(schema.clone(), batches))
}

/// The day being written: its file, and the uuids it already held.
struct OpenDay {
    date: i32,
    file: DeltaWriter,
    held: HashSet<u128>,
}

/// Writes the sorted rows, a file per day (they come a day at a time).
async fn write_days(
    mut sorted: SendableRecordBatchStream,
    store: ObjectStoreRef,
    config: WriterConfig,
    existing: Option<Arc<ExistingUuids>>,
) -> DeltaResult<Written> {
    let mut written = Written::default();
    let mut open: Option<OpenDay> = None;
    while let Some(batch) = sorted.next().await {
        let batch = batch.map_err(sort_error)?;
        for (date, rows) in split_by_day(&batch)? {
            let day = match open.take() {
                Some(day) if day.date == date => open.insert(day),
                other => {
                    if let Some(done) = other {
                        written.adds.extend(done.file.close().await?);
                    }
                    let held = match &existing {
                        Some(existing) => existing.on(date).await?,
                        None => HashSet::new(),
                    };
                    open.insert(OpenDay {
                        date,
                        file: DeltaWriter::new(store.clone(), config.clone()),
                        held,
                    })
                }
            };
            let rows = if day.held.is_empty() {
                rows
            } else {
                let kept = without_held(&rows, &day.held)?;
                written.skipped += (rows.num_rows() - kept.num_rows()) as u64;
                kept
            };
            if rows.num_rows() > 0 {
                let partition: IndexMap<String, Scalar> =
                    IndexMap::from([(table::PARTITION_COLUMN.to_owned(), Scalar::Date(date))]);
                day.file.write_partition(rows, &partition).await?;
            }
        }
    }
    if let Some(day) = open {
        written.adds.extend(day.file.close().await?);
    }
    Ok(written)
}

/// The table's files by day (path and size), as a write found them, for the uuids each day
/// already holds.
struct ExistingUuids {
    files: HashMap<i32, Vec<(String, u64)>>,
    readers: DefaultParquetFileReaderFactory,
}

impl ExistingUuids {
    fn of(table: &DeltaTable) -> DeltaResult<Self> {
        let mut files: HashMap<i32, Vec<(String, u64)>> = HashMap::new();
        for (path, size) in crate::rewrite::file_sizes(table)? {
            if let Some(day) = crate::rewrite::partition_day(&path) {
                files
                    .entry(day)
                    .or_default()
                    .push((path, size.max(0) as u64));
            }
        }
        Ok(Self {
            files,
            readers: DefaultParquetFileReaderFactory::new(table.object_store()),
        })
    }

    /// The uuids the table's files of `date` hold (only their uuid column is read).
    async fn on(&self, date: i32) -> DeltaResult<HashSet<u128>> {
        let mut held = HashSet::new();
        let metrics = ExecutionPlanMetricsSet::new();
        for (path, size) in self.files.get(&date).into_iter().flatten() {
            let file = PartitionedFile::new(path.clone(), *size);
            // The trait is `Send` itself: its box reads as the reader Parquet's builder takes.
            let reader: Box<dyn AsyncFileReader> = self
                .readers
                .create_reader(0, file, None, &metrics)
                .map_err(sort_error)?;
            let builder = ParquetRecordBatchStreamBuilder::new(reader).await?;
            let Ok(index) = builder.schema().index_of("uuid") else {
                continue;
            };
            let projection = ProjectionMask::roots(builder.parquet_schema(), [index]);
            let mut batches = builder.with_projection(projection).build()?;
            while let Some(batch) = batches.next().await {
                let batch = batch?;
                if let Some(uuids) = batch.column(0).as_string_opt::<i32>() {
                    held.extend(
                        uuids
                            .iter()
                            .flatten()
                            .filter_map(|u| Uuid::parse_str(u).ok())
                            .map(|u| u.as_u128()),
                    );
                }
            }
        }
        Ok(held)
    }
}

/// `batch`'s rows by day partition (one slice, no copy, when they share a day, as the sorted
/// rows mostly do).
fn split_by_day(batch: &RecordBatch) -> DeltaResult<Vec<(i32, RecordBatch)>> {
    let values = day_sort::dates(batch)?.values();
    let mut days = Vec::new();
    let mut start = 0;
    // Sorted rows come in runs of a day: each run is a slice.
    for end in 1..=values.len() {
        if end == values.len() || values[end] != values[start] {
            days.push((values[start], batch.slice(start, end - start)));
            start = end;
        }
    }
    Ok(days)
}

#[cfg(test)]
mod tests {
    use deltalake_core::arrow::array::{
        ArrayRef, Date32Array, Int64Array, StringArray, new_null_array,
    };
    use deltalake_core::arrow::datatypes::{DataType, Date32Type, Field, Int64Type};

    use super::*;

    fn batch(dates: &[i32], codes: &[i64]) -> RecordBatch {
        let schema = Arc::new(Schema::new(vec![
            Field::new("date", DataType::Date32, false),
            Field::new("event_code", DataType::Int64, true),
            Field::new("event", DataType::Utf8, false),
            Field::new("timestamp", DataType::Int64, false),
        ]));
        let names: Vec<String> = codes.iter().map(|c| format!("e{c}")).collect();
        RecordBatch::try_new(
            schema,
            vec![
                Arc::new(Date32Array::from(dates.to_vec())),
                Arc::new(Int64Array::from(codes.to_vec())),
                Arc::new(StringArray::from(names)),
                Arc::new(Int64Array::from(codes.to_vec())),
            ],
        )
        .unwrap()
    }

    /// A sort whose keys are wide (a 60-character distinct id) and whose rows are several times
    /// its memory spills runs and merges them within that memory, every row in order. (The
    /// out-of-memory merge this configuration fixes was seen on a 10M-event import; at this
    /// scale DataFusion's default reservation happens to pass too.)
    #[tokio::test]
    async fn a_sort_with_wide_keys_merges_within_its_memory() {
        let schema = Arc::new(Schema::new(vec![
            Field::new("date", DataType::Date32, false),
            Field::new("event_code", DataType::Int64, false),
            Field::new("distinct_id", DataType::Utf8, false),
            Field::new("timestamp", DataType::Int64, false),
            Field::new("properties", DataType::Utf8, false),
        ]));
        let (sender, receiver) = mpsc::channel(INPUT_QUEUE);
        let mut sorted =
            sorted_stream(&schema, receiver, SpillCompression::Uncompressed, 16 << 20).unwrap();
        let (batches, rows_per_batch) = (60u64, 1_000u64);
        let feed_schema = schema.clone();
        let feed = tokio::spawn(async move {
            for b in 0..batches {
                let n = |r: u64| (b * rows_per_batch + r).wrapping_mul(0x9e37_79b9_7f4a_7c15);
                let rows = 0..rows_per_batch;
                let days: Vec<i32> = rows.clone().map(|r| (n(r) % 3) as i32).collect();
                let codes: Vec<i64> = rows.clone().map(|r| (n(r) >> 8) as i64 % 5).collect();
                let ids: Vec<String> = rows
                    .clone()
                    .map(|r| format!("{:060}", n(r) >> 20))
                    .collect();
                let times: Vec<i64> = rows.clone().map(|r| (n(r) >> 4) as i64).collect();
                let payload: Vec<String> =
                    rows.map(|r| "x".repeat(400 + (r % 200) as usize)).collect();
                let batch = RecordBatch::try_new(
                    feed_schema.clone(),
                    vec![
                        Arc::new(Date32Array::from(days)),
                        Arc::new(Int64Array::from(codes)),
                        Arc::new(StringArray::from(ids)),
                        Arc::new(Int64Array::from(times)),
                        Arc::new(StringArray::from(payload)),
                    ],
                )
                .unwrap();
                sender.send(Ok(batch)).await.unwrap();
            }
        });
        let mut keys = Vec::new();
        while let Some(batch) = sorted.next().await {
            let batch = batch.expect("the sort stays within its memory");
            let days = batch.column(0).as_primitive::<Date32Type>();
            let codes = batch.column(1).as_primitive::<Int64Type>();
            let ids = batch.column(2).as_string::<i32>();
            for row in 0..batch.num_rows() {
                keys.push((days.value(row), codes.value(row), ids.value(row).to_owned()));
            }
        }
        feed.await.unwrap();
        assert_eq!(keys.len() as u64, batches * rows_per_batch);
        assert!(
            keys.windows(2).all(|pair| pair[0] <= pair[1]),
            "rows in order"
        );
    }

    /// A test row: day, event, distinct id, microseconds into the day.
    type Row<'a> = (i32, &'a str, &'a str, i64);

    /// Events table rows, one per `rows`.
    fn events(rows: &[Row]) -> RecordBatch {
        use deltalake_core::arrow::array::{Date32Array, TimestampMicrosecondArray};
        let schema = lake_core::table::arrow_schema();
        let micros = |&(day, _, _, at): &Row| day as i64 * 86_400_000_000 + at;
        let columns = schema
            .fields()
            .iter()
            .map(|field| -> ArrayRef {
                let text = |pick: &dyn Fn(&Row) -> String| {
                    Arc::new(StringArray::from_iter_values(rows.iter().map(pick))) as ArrayRef
                };
                match field.name().as_str() {
                    "date" => Arc::new(Date32Array::from_iter_values(rows.iter().map(|r| r.0))),
                    "timestamp" | "created_at" => Arc::new(
                        TimestampMicrosecondArray::from_iter_values(rows.iter().map(micros))
                            .with_timezone("UTC"),
                    ),
                    "uuid" => {
                        text(&|r| Uuid::from_u64_pair(r.0 as u64, micros(r) as u64).to_string())
                    }
                    "event" => text(&|r| r.1.to_owned()),
                    "distinct_id" => text(&|r| r.2.to_owned()),
                    "properties" => text(&|_| "{}".to_owned()),
                    _ => new_null_array(field.data_type(), rows.len()),
                }
            })
            .collect();
        RecordBatch::try_new(schema, columns).unwrap()
    }

    /// Writes `batches` into a fresh table through a writer with `memory`; per file written,
    /// its day and its rows as (event, distinct id, microseconds into the day), in file order;
    /// and whether the external sort ran.
    async fn write_all(
        batches: &[RecordBatch],
        memory: Option<DayMemory>,
    ) -> (Vec<(i32, Vec<(String, String, i64)>)>, bool) {
        use deltalake_core::arrow::array::TimestampMicrosecondArray;
        use deltalake_core::parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
        use object_store::ObjectStoreExt;
        let test = common::testing::TestState::embedded().await;
        let table = table::open_or_create(&test.state, 1).await.unwrap();
        let mut writer =
            ClusteredWriter::for_table(&table, Arc::new(common::clock::SystemClock)).unwrap();
        if let Some(memory) = memory {
            writer.day_memory = memory;
        }
        for batch in batches {
            writer.write(batch).await.unwrap();
        }
        let sorted = writer.sort.is_some();
        let written = writer.close().await.unwrap();
        let mut files = Vec::new();
        for add in &written.adds {
            let path = object_store::path::Path::from(add.path.as_str());
            let bytes = table
                .object_store()
                .get(&path)
                .await
                .unwrap()
                .bytes()
                .await
                .unwrap();
            let reader = ParquetRecordBatchReaderBuilder::try_new(bytes)
                .unwrap()
                .build()
                .unwrap();
            let mut rows = Vec::new();
            let mut day = None;
            for batch in reader {
                let batch = batch.unwrap();
                let column =
                    |name: &str| batch.column(batch.schema().index_of(name).unwrap()).clone();
                let (events, ids) = (column("event"), column("distinct_id"));
                let times = column("timestamp");
                let times = times
                    .as_any()
                    .downcast_ref::<TimestampMicrosecondArray>()
                    .unwrap();
                for row in 0..batch.num_rows() {
                    let micros = times.value(row);
                    day = Some(micros.div_euclid(86_400_000_000) as i32);
                    rows.push((
                        events.as_string::<i32>().value(row).to_owned(),
                        ids.as_string::<i32>().value(row).to_owned(),
                        micros.rem_euclid(86_400_000_000),
                    ));
                }
            }
            files.push((day.unwrap(), rows));
        }
        files.sort_by_key(|(day, _)| *day);
        (files, sorted)
    }

    /// A day is written as soon as a later one arrives, and any day fits.
    const EAGER: DayMemory = DayMemory {
        close_after: 0,
        at_most: 1 << 30,
    };

    fn in_order(rows: &[(String, String, i64)]) -> bool {
        rows.windows(2).all(|pair| pair[0] <= pair[1])
    }

    /// Rows of `day`, in an order that is not the sort's.
    fn shuffled_day(day: i32, count: i64) -> Vec<Row<'static>> {
        let ids = ["carol", "alice", "bob"];
        let names = ["$pageview", "purchase"];
        (0..count)
            .map(|i| {
                let n = (i * 7919) % count;
                (
                    day,
                    names[(n % 2) as usize],
                    ids[(n % 3) as usize],
                    count - n,
                )
            })
            .collect()
    }

    #[tokio::test]
    async fn a_time_ordered_input_is_sorted_a_day_at_a_time_in_memory() {
        let batches: Vec<RecordBatch> = [10, 11, 12]
            .iter()
            .flat_map(|&day| {
                let rows = shuffled_day(day, 40);
                [events(&rows[..25]), events(&rows[25..])]
            })
            .collect();
        let (files, sorted) = write_all(&batches, Some(EAGER)).await;
        assert!(!sorted, "no external sort");
        let days: Vec<i32> = files.iter().map(|(day, _)| *day).collect();
        assert_eq!(days, [10, 11, 12], "a file per day");
        for (day, rows) in &files {
            assert_eq!(rows.len(), 40, "day {day}");
            assert!(in_order(rows), "day {day}: {rows:?}");
        }
    }

    #[tokio::test]
    async fn rows_out_of_day_order_go_through_the_external_sort_and_none_is_lost() {
        let (first, second) = (shuffled_day(10, 30), shuffled_day(11, 30));
        let batches = [
            events(&first[..10]),
            events(&second[..10]),
            // Day 10 was written when day 11 came: these rows show the input is not in order.
            events(&first[10..]),
            events(&second[10..]),
            events(&shuffled_day(12, 5)),
        ];
        let (files, sorted) = write_all(&batches, Some(EAGER)).await;
        assert!(sorted);
        let per_day = |day: i32| -> usize {
            files
                .iter()
                .filter(|(d, _)| *d == day)
                .map(|(_, rows)| rows.len())
                .sum()
        };
        assert_eq!((per_day(10), per_day(11), per_day(12)), (30, 30, 5));
        // Day 10: its first rows from memory, the rest from the sort.
        assert_eq!(files.iter().filter(|(d, _)| *d == 10).count(), 2);
        assert_eq!(files.len(), 4);
        assert!(files.iter().all(|(_, rows)| in_order(rows)));
    }

    #[tokio::test]
    async fn a_day_larger_than_its_memory_goes_through_the_external_sort() {
        let rows = shuffled_day(10, 50);
        let batches = [events(&rows[..20]), events(&rows[20..])];
        let memory = DayMemory {
            close_after: 0,
            at_most: 1,
        };
        let (files, sorted) = write_all(&batches, Some(memory)).await;
        assert!(sorted);
        assert_eq!(files.len(), 1);
        assert_eq!(files[0].1.len(), 50);
        assert!(in_order(&files[0].1));
    }

    #[test]
    fn large_batches_go_to_the_sort_in_pieces_of_their_own() {
        let codes: Vec<i64> = (0..20_000).collect();
        let rows = batch(&vec![1; codes.len()], &codes);
        let pieces = pieces(&rows).unwrap();
        let sizes: Vec<usize> = pieces.iter().map(RecordBatch::num_rows).collect();
        assert_eq!(
            sizes,
            [
                OUTPUT_BATCH_ROWS,
                OUTPUT_BATCH_ROWS,
                20_000 - 2 * OUTPUT_BATCH_ROWS
            ]
        );
        // Copies, not views of the whole batch.
        let timestamps = pieces[1].column(3).as_primitive::<Int64Type>();
        assert_eq!(timestamps.values().inner().len(), OUTPUT_BATCH_ROWS * 8);
        assert_eq!(timestamps.value(0), OUTPUT_BATCH_ROWS as i64);
    }

    #[test]
    fn sorted_rows_split_into_a_slice_per_day() {
        let rows = batch(&[1, 1, 2, 3, 3], &[10, 11, 12, 13, 14]);
        let days = split_by_day(&rows).unwrap();
        let found: Vec<(i32, usize)> = days.iter().map(|(d, b)| (*d, b.num_rows())).collect();
        assert_eq!(found, vec![(1, 2), (2, 1), (3, 2)]);
        assert!(split_by_day(&batch(&[], &[])).unwrap().is_empty());
    }

    #[test]
    fn rows_sort_by_day_then_event_code_then_time() {
        let rows = batch(&[1], &[1]);
        let order: Vec<String> = sort_order(&rows.schema())
            .unwrap()
            .iter()
            .map(|expr| expr.expr.to_string())
            .collect();
        // The code, not the name; no distinct id column here, so none is sorted by.
        assert_eq!(order, ["date@0", "event_code@1", "timestamp@3"]);
    }
}
