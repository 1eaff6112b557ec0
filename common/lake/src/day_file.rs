//! A day's sorted rows written as one Parquet file (rolled at the target size) by every core:
//! each column of each row group is gathered and encoded as a job of its own (a day has a few
//! row groups and thirty-odd columns: the cores stay busy to the end), on blocking threads side
//! by side; the row groups are appended to the file in order, which streams to the object store; its `add` action
//! comes from its footer (`file_stats`). The file is the one delta-rs's writer makes of the same
//! rows (the same properties, row groups and pages), but that writer encodes a file's row
//! groups one after the other on one core.

use std::collections::HashSet;
use std::io::Write;
use std::sync::{Arc, Mutex};

use common::clock::Clock;
use delta_kernel::expressions::Scalar;
use deltalake_core::arrow::array::Array;
use deltalake_core::arrow::array::{AsArray, BooleanArray};
use deltalake_core::arrow::compute::filter_record_batch;
use deltalake_core::arrow::datatypes::FieldRef;
use deltalake_core::arrow::datatypes::SchemaRef;
use deltalake_core::arrow::record_batch::RecordBatch;
use deltalake_core::kernel::Add;
use deltalake_core::logstore::ObjectStoreRef;
use deltalake_core::parquet::arrow::arrow_writer::{
    ArrowColumnChunk, ArrowColumnWriter, ArrowRowGroupWriterFactory, compute_leaves,
};
use deltalake_core::parquet::arrow::{ArrowSchemaConverter, ArrowWriter};
use deltalake_core::parquet::basic::Compression;
use deltalake_core::parquet::file::properties::WriterProperties;
use deltalake_core::parquet::file::writer::SerializedFileWriter;
use deltalake_core::parquet::schema::types::ColumnPath;
use deltalake_core::{DeltaResult, DeltaTableError};
use futures::StreamExt;
use indexmap::IndexMap;
use object_store::buffered::BufWriter;
use object_store::path::Path;
use tokio::io::AsyncWriteExt;
use uuid::Uuid;

use crate::day_sort::SortedDay;
use crate::file_stats::{self, StatsColumns};
use crate::table;

/// Rows gathered at a time into a row group's column writers: a data page's worth.
const PIECE_ROWS: usize = 8 * 1024;

/// The `add` actions of a day's files, and how many of its rows were left out.
pub(crate) type DayWritten = (Vec<Add>, u64);

/// How a table's day files are written.
pub(crate) struct DayFiles {
    pub(crate) store: ObjectStoreRef,
    /// The table's columns but its partition column: what a file holds.
    pub(crate) file_schema: SchemaRef,
    pub(crate) properties: WriterProperties,
    pub(crate) stats: StatsColumns,
    pub(crate) target_bytes: u64,
    pub(crate) clock: Arc<dyn Clock>,
    /// Row groups encoded at once.
    pub(crate) parallelism: usize,
}

/// A file being written: the Parquet writer appends to `buffer`, which goes to `upload` after
/// each row group.
struct OpenFile {
    path: Path,
    writer: SerializedFileWriter<SharedBuffer>,
    buffer: SharedBuffer,
    upload: BufWriter,
    bytes: u64,
}

/// Bytes the Parquet writer wrote and the upload has not taken yet.
#[derive(Clone, Default)]
struct SharedBuffer(Arc<Mutex<Vec<u8>>>);

impl SharedBuffer {
    fn take(&self) -> Vec<u8> {
        self.0
            .lock()
            .map(|mut bytes| std::mem::take(&mut *bytes))
            .unwrap_or_default()
    }
}

impl Write for SharedBuffer {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0
            .lock()
            .map_err(|_| std::io::Error::other("a file's buffer was poisoned"))?
            .extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl DayFiles {
    /// Writes `rows` (every row of `date`, sorted) but those whose uuid is in `held`: the files'
    /// `add` actions, and how many rows were left out.
    pub(crate) async fn write(
        &self,
        date: i32,
        rows: Arc<SortedDay>,
        held: Arc<HashSet<u128>>,
    ) -> DeltaResult<DayWritten> {
        let group_rows = self
            .properties
            .max_row_group_row_count()
            .unwrap_or(table::ROW_GROUP_ROWS)
            .max(1);
        let planned = rows.clone();
        let (groups, skipped) =
            tokio::task::spawn_blocking(move || row_groups(&planned, group_rows, &held))
                .await
                .map_err(|error| DeltaTableError::generic(error.to_string()))??;
        let factory = self.factory()?;
        let fields = self.file_schema.fields().len();
        let leaves = leaves_per_field(&self.file_schema)?;
        let mut jobs = Vec::with_capacity(groups.len() * fields);
        for (index, places) in groups.iter().enumerate() {
            for (field, writers) in field_writers(&self.file_schema, &leaves, &factory, index)? {
                let (rows, places) = (rows.clone(), places.clone());
                let column = rows.schema().index_of(field.name())?;
                jobs.push(move || encode_column(&rows, column, &field, writers, &places));
            }
        }
        // Unordered, so a long column (the properties) holds one core, not the queue: each row
        // group is appended once all its columns are in.
        let mut encoded = futures::stream::iter(jobs.into_iter().enumerate())
            .map(|(job, encode)| async move { (job, tokio::task::spawn_blocking(encode).await) })
            .buffer_unordered(self.parallelism.max(1));
        let mut finished: Vec<Option<Vec<ArrowColumnChunk>>> = Vec::new();
        finished.resize_with(groups.len() * fields, || None);
        let mut adds = Vec::new();
        let mut open: Option<OpenFile> = None;
        let outcome: DeltaResult<()> = async {
            for group in 0..groups.len() {
                let columns = group * fields..(group + 1) * fields;
                while finished[columns.clone()].iter().any(Option::is_none) {
                    let (job, chunks) = encoded
                        .next()
                        .await
                        .ok_or_else(|| DeltaTableError::generic("a column was not encoded"))?;
                    let chunks =
                        chunks.map_err(|error| DeltaTableError::generic(error.to_string()))??;
                    finished[job] = Some(chunks);
                }
                let file = match &mut open {
                    Some(file) => file,
                    None => open.insert(self.create(date)?),
                };
                let mut row_group = file.writer.next_row_group()?;
                for chunks in finished[columns].iter_mut().filter_map(Option::take) {
                    for chunk in chunks {
                        chunk.append_to_row_group(&mut row_group)?;
                    }
                }
                row_group.close()?;
                file.send().await?;
                if file.bytes >= self.target_bytes
                    && let Some(full) = open.take()
                {
                    adds.push(self.close(date, full).await?);
                }
            }
            if let Some(last) = open.take() {
                adds.push(self.close(date, last).await?);
            }
            Ok(())
        }
        .await;
        if let Err(error) = outcome {
            if let Some(mut file) = open {
                // An unfinished file is not left behind in parts.
                let _ = file.upload.abort().await;
            }
            return Err(error);
        }
        Ok((adds, skipped))
    }

    /// Column writers' factory for the files' schema and properties.
    fn factory(&self) -> DeltaResult<ArrowRowGroupWriterFactory> {
        let writer = ArrowWriter::try_new(
            std::io::sink(),
            self.file_schema.clone(),
            Some(self.properties.clone()),
        )?;
        let (file, _) = writer.into_serialized_writer()?;
        Ok(ArrowRowGroupWriterFactory::new(
            &file,
            self.file_schema.clone(),
        ))
    }

    /// A new file of `date`, named as delta-rs names its files.
    fn create(&self, date: i32) -> DeltaResult<OpenFile> {
        let extension = extension(self.properties.compression(&ColumnPath::new(Vec::new())));
        let path = Path::parse(format!(
            "{}={}/part-00000-{}-c000{extension}.parquet",
            table::PARTITION_COLUMN,
            day_text(date)?,
            Uuid::new_v4()
        ))?;
        let buffer = SharedBuffer::default();
        // Through the Arrow writer, so the footer carries the Arrow schema as delta-rs's does.
        let (writer, _) = ArrowWriter::try_new(
            buffer.clone(),
            self.file_schema.clone(),
            Some(self.properties.clone()),
        )?
        .into_serialized_writer()?;
        let upload = BufWriter::new(self.store.clone(), path.clone());
        Ok(OpenFile {
            path,
            writer,
            buffer,
            upload,
            bytes: 0,
        })
    }

    /// Writes the footer, completes the upload and makes the file's `add` action.
    async fn close(&self, date: i32, mut file: OpenFile) -> DeltaResult<Add> {
        let metadata = file.writer.finish()?;
        file.send().await?;
        file.upload.shutdown().await?;
        let partition: IndexMap<String, Scalar> =
            IndexMap::from([(table::PARTITION_COLUMN.to_owned(), Scalar::Date(date))]);
        file_stats::add_action(
            &partition,
            file.path.to_string(),
            file.bytes,
            &metadata,
            &self.stats,
            self.clock.now().timestamp_millis(),
        )
    }
}

impl OpenFile {
    /// Hands what the Parquet writer wrote to the upload.
    async fn send(&mut self) -> DeltaResult<()> {
        let bytes = self.buffer.take();
        self.bytes += bytes.len() as u64;
        self.upload.write_all(&bytes).await?;
        Ok(())
    }
}

/// Where rows are among a day's batches: (batch, row) pairs.
type Places = Vec<(usize, usize)>;

/// The places of each row group's rows in `rows` (`group_rows` each, in order), those whose
/// uuid is `held` left out (and counted); no group is empty.
fn row_groups(
    rows: &SortedDay,
    group_rows: usize,
    held: &HashSet<u128>,
) -> DeltaResult<(Vec<Arc<Places>>, u64)> {
    let uuid = rows.schema().index_of("uuid").ok();
    let mut groups = Vec::new();
    let mut skipped = 0;
    for start in (0..rows.len()).step_by(group_rows) {
        let mut places = rows.places_of(start..(start + group_rows).min(rows.len()));
        if let (false, Some(uuid)) = (held.is_empty(), uuid) {
            let uuids = rows.gather(uuid, &places)?;
            let uuids = uuids
                .as_string_opt::<i32>()
                .ok_or_else(|| DeltaTableError::generic("the uuid column is not text"))?;
            let before = places.len();
            let mut row = 0;
            places.retain(|_| {
                let kept = !is_held(uuids.is_valid(row).then(|| uuids.value(row)), held);
                row += 1;
                kept
            });
            skipped += (before - places.len()) as u64;
        }
        if !places.is_empty() {
            groups.push(Arc::new(places));
        }
    }
    Ok((groups, skipped))
}

/// How many Parquet leaf columns each field of `schema` is written as.
fn leaves_per_field(schema: &SchemaRef) -> DeltaResult<Vec<usize>> {
    let parquet = ArrowSchemaConverter::new().convert(schema)?;
    let mut leaves = vec![0; schema.fields().len()];
    for leaf in 0..parquet.num_columns() {
        if let Some(count) = leaves.get_mut(parquet.get_column_root_idx(leaf)) {
            *count += 1;
        }
    }
    Ok(leaves)
}

/// Each field of `schema` with the column writers of its `leaves`, for row group `index`.
fn field_writers(
    schema: &SchemaRef,
    leaves: &[usize],
    factory: &ArrowRowGroupWriterFactory,
    index: usize,
) -> DeltaResult<Vec<(FieldRef, Vec<ArrowColumnWriter>)>> {
    let mut writers = factory.create_column_writers(index)?.into_iter();
    Ok(schema
        .fields()
        .iter()
        .zip(leaves)
        .map(|(field, &count)| (field.clone(), writers.by_ref().take(count).collect()))
        .collect())
}

/// Column `column` of `rows` at `places`, gathered a page at a time and encoded as `field`'s
/// column chunks of a row group.
fn encode_column(
    rows: &SortedDay,
    column: usize,
    field: &FieldRef,
    mut writers: Vec<ArrowColumnWriter>,
    places: &[(usize, usize)],
) -> DeltaResult<Vec<ArrowColumnChunk>> {
    for piece in places.chunks(PIECE_ROWS) {
        let values = rows.gather(column, piece)?;
        if !field.is_nullable() && values.null_count() > 0 {
            return Err(DeltaTableError::generic(format!(
                "null values in the non-null column {}",
                field.name()
            )));
        }
        let leaves = compute_leaves(field, &values)?;
        if leaves.len() != writers.len() {
            return Err(DeltaTableError::generic(format!(
                "{} leaves for the {} column writers of {}",
                leaves.len(),
                writers.len(),
                field.name()
            )));
        }
        for (writer, leaf) in writers.iter_mut().zip(&leaves) {
            writer.write(leaf)?;
        }
    }
    writers
        .into_iter()
        .map(|writer| Ok(writer.close()?))
        .collect()
}

/// The rows of `rows` whose uuid is not in `held`.
pub(crate) fn without_held(rows: &RecordBatch, held: &HashSet<u128>) -> DeltaResult<RecordBatch> {
    let uuids = rows
        .column_by_name("uuid")
        .and_then(|column| column.as_string_opt::<i32>())
        .ok_or_else(|| DeltaTableError::generic("rows without a uuid column"))?;
    let keep = BooleanArray::from_iter(uuids.iter().map(|uuid| Some(!is_held(uuid, held))));
    Ok(filter_record_batch(rows, &keep)?)
}

/// Whether `uuid` is one of `held`.
fn is_held(uuid: Option<&str>, held: &HashSet<u128>) -> bool {
    uuid.and_then(|u| Uuid::parse_str(u).ok())
        .is_some_and(|u| held.contains(&u.as_u128()))
}

/// `date` (days since 1970-01-01) as its partition directory writes it.
fn day_text(date: i32) -> DeltaResult<String> {
    let day = chrono::NaiveDate::from_ymd_opt(1970, 1, 1)
        .and_then(|epoch| epoch.checked_add_signed(chrono::Duration::days(i64::from(date))))
        .ok_or_else(|| DeltaTableError::generic(format!("no day {date}")))?;
    Ok(day.format("%Y-%m-%d").to_string())
}

/// The file name's mark of its compression, as Hadoop's (and delta-rs's) names have it.
fn extension(compression: Compression) -> &'static str {
    match compression {
        Compression::UNCOMPRESSED => "",
        Compression::SNAPPY => ".snappy",
        Compression::GZIP(_) => ".gz",
        Compression::LZO => ".lzo",
        Compression::BROTLI(_) => ".br",
        Compression::LZ4 => ".lz4",
        Compression::ZSTD(_) => ".zstd",
        Compression::LZ4_RAW => ".lz4raw",
    }
}

#[cfg(test)]
mod tests {
    use std::num::NonZeroU64;

    use common::clock::SystemClock;
    use delta_kernel::table_properties::DataSkippingNumIndexedCols;
    use deltalake_core::arrow::array::{
        ArrayRef, BooleanArray, Date32Array, Float64Array, Int64Array, StringArray,
        TimestampMicrosecondArray,
    };
    use deltalake_core::arrow::compute::concat_batches;
    use deltalake_core::arrow::datatypes::{DataType, Field, Schema, TimeUnit};
    use deltalake_core::datafile::writer::{DeltaWriter, WriterConfig};
    use deltalake_core::parquet::arrow::arrow_reader::{
        ArrowReaderOptions, ParquetRecordBatchReaderBuilder,
    };
    use deltalake_core::parquet::file::metadata::PageIndexPolicy;
    use object_store::ObjectStoreExt;
    use object_store::memory::InMemory;
    use serde_json::Value;

    use super::*;

    const DAY: i32 = 20_000;
    const ROWS: usize = 1_000;

    fn schema() -> SchemaRef {
        Arc::new(Schema::new(vec![
            Field::new("uuid", DataType::Utf8, false),
            Field::new("event_code", DataType::Int64, true),
            Field::new("distinct_id", DataType::Utf8, false),
            Field::new(
                "timestamp",
                DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into())),
                false,
            ),
            Field::new("properties", DataType::Utf8, false),
            Field::new("amount", DataType::Float64, true),
            Field::new("paid", DataType::Boolean, true),
            Field::new("never", DataType::Utf8, true),
            Field::new(table::PARTITION_COLUMN, DataType::Date32, false),
        ]))
    }

    /// `ROWS` rows of one day in no particular order, in batches of 300.
    fn batches() -> Vec<RecordBatch> {
        let n = |row: usize| (row as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 20;
        (0..ROWS)
            .step_by(300)
            .map(|start| {
                let rows = start..(start + 300).min(ROWS);
                let columns: Vec<ArrayRef> = vec![
                    Arc::new(StringArray::from_iter_values(
                        rows.clone()
                            .map(|r| Uuid::from_u64_pair(n(r), r as u64).to_string()),
                    )),
                    Arc::new(Int64Array::from_iter(
                        rows.clone()
                            .map(|r| (r % 7 != 3).then_some((n(r) % 5) as i64)),
                    )),
                    Arc::new(StringArray::from_iter_values(
                        rows.clone().map(|r| format!("user-{}", n(r) % 40)),
                    )),
                    Arc::new(
                        TimestampMicrosecondArray::from_iter_values(rows.clone().map(|r| {
                            // Whole seconds for some, microseconds for the others.
                            let micros = (n(r) % 86_400_000_000) as i64;
                            i64::from(DAY) * 86_400_000_000
                                + if r % 2 == 0 {
                                    micros / 1_000_000 * 1_000_000
                                } else {
                                    micros
                                }
                        }))
                        .with_timezone("UTC"),
                    ),
                    Arc::new(StringArray::from_iter_values(
                        rows.clone().map(|r| format!("{{\"n\":{}}}", n(r))),
                    )),
                    Arc::new(Float64Array::from_iter(
                        rows.clone()
                            .map(|r| (r % 4 == 0).then_some(n(r) as f64 / 7.0)),
                    )),
                    Arc::new(BooleanArray::from_iter(
                        rows.clone().map(|r| (r % 3 != 0).then_some(r % 2 == 0)),
                    )),
                    Arc::new(StringArray::from(vec![None::<&str>; rows.len()])),
                    Arc::new(Date32Array::from(vec![DAY; rows.len()])),
                ];
                RecordBatch::try_new(schema(), columns).unwrap()
            })
            .collect()
    }

    /// The rows sorted by event code, distinct id and time, as a writer sorts a day.
    fn sorted() -> Arc<SortedDay> {
        Arc::new(SortedDay::new(&schema(), &[1, 2, 3], batches()).unwrap())
    }

    /// The table's properties, with row groups of 300 rows so a day has several.
    fn properties() -> WriterProperties {
        table::writer_properties()
            .into_builder()
            .set_max_row_group_row_count(Some(300))
            .build()
    }

    fn file_schema() -> SchemaRef {
        let fields: Vec<Field> = schema()
            .fields()
            .iter()
            .filter(|f| f.name() != table::PARTITION_COLUMN)
            .map(|f| f.as_ref().clone())
            .collect();
        Arc::new(Schema::new(fields))
    }

    fn day_files(store: &ObjectStoreRef, target_bytes: u64) -> DayFiles {
        DayFiles {
            store: store.clone(),
            file_schema: file_schema(),
            properties: properties(),
            stats: StatsColumns {
                indexed: DataSkippingNumIndexedCols::NumColumns(32),
                named: None,
            },
            target_bytes,
            clock: Arc::new(SystemClock),
            parallelism: 3,
        }
    }

    async fn bytes(store: &ObjectStoreRef, add: &Add) -> bytes::Bytes {
        let path = Path::from(add.path.as_str());
        store.get(&path).await.unwrap().bytes().await.unwrap()
    }

    async fn rows_of(store: &ObjectStoreRef, adds: &[Add]) -> RecordBatch {
        let mut batches = Vec::new();
        for add in adds {
            let reader = ParquetRecordBatchReaderBuilder::try_new(bytes(store, add).await)
                .unwrap()
                .build()
                .unwrap();
            batches.extend(reader.map(Result::unwrap));
        }
        concat_batches(&file_schema(), &batches).unwrap()
    }

    fn stats_of(add: &Add) -> Value {
        serde_json::from_str(add.stats.as_deref().unwrap()).unwrap()
    }

    /// The same sorted rows through delta-rs's writer and through ours (three row groups
    /// encoded at once) make the same file: rows, row groups, statistics, page index, bytes.
    #[tokio::test]
    async fn a_day_file_is_the_file_delta_rs_writes_of_the_same_rows() {
        let store: ObjectStoreRef = Arc::new(InMemory::new());
        let sorted = sorted();
        let config = WriterConfig::new(
            schema(),
            vec![table::PARTITION_COLUMN.to_owned()],
            Some(properties()),
            NonZeroU64::new(TARGET),
            None,
            DataSkippingNumIndexedCols::NumColumns(32),
            None,
        );
        let mut theirs = DeltaWriter::new(store.clone(), config);
        let partition: IndexMap<String, Scalar> =
            IndexMap::from([(table::PARTITION_COLUMN.to_owned(), Scalar::Date(DAY))]);
        for piece in sorted.pieces(PIECE_ROWS) {
            theirs
                .write_partition(piece.unwrap(), &partition)
                .await
                .unwrap();
        }
        let theirs = theirs.close().await.unwrap();
        let (ours, skipped) = day_files(&store, TARGET)
            .write(DAY, sorted, Arc::new(HashSet::new()))
            .await
            .unwrap();
        assert_eq!((theirs.len(), ours.len(), skipped), (1, 1, 0));
        let (theirs, ours) = (&theirs[0], &ours[0]);
        assert!(ours.path.starts_with("date=2024-10-04/part-00000-"));
        assert!(ours.path.ends_with("-c000.lz4raw.parquet"));
        assert_eq!(ours.partition_values, theirs.partition_values);
        assert_eq!(stats_of(ours), stats_of(theirs));
        let stats = stats_of(ours);
        assert_eq!(stats["numRecords"], ROWS);
        assert_eq!(stats["nullCount"]["never"], ROWS);
        assert!(
            stats["minValues"]["timestamp"]
                .as_str()
                .unwrap()
                .ends_with('Z')
        );
        assert_eq!(
            rows_of(&store, std::slice::from_ref(ours)).await,
            rows_of(&store, std::slice::from_ref(theirs)).await
        );
        let (our_bytes, their_bytes) = (bytes(&store, ours).await, bytes(&store, theirs).await);
        assert_eq!(ours.size as usize, our_bytes.len());
        assert_eq!(our_bytes, their_bytes);
        let options = ArrowReaderOptions::new().with_page_index_policy(PageIndexPolicy::Required);
        let metadata = ParquetRecordBatchReaderBuilder::try_new_with_options(our_bytes, options)
            .unwrap()
            .metadata()
            .clone();
        let groups: Vec<i64> = metadata.row_groups().iter().map(|g| g.num_rows()).collect();
        assert_eq!(groups, [300, 300, 300, 100]);
        assert!(metadata.offset_index().is_some());
    }

    const TARGET: u64 = 256 << 20;

    /// Rows whose uuid the table holds are left out and counted; a day of nothing but those
    /// writes no file.
    #[tokio::test]
    async fn held_rows_are_left_out_and_no_empty_file_is_written() {
        let store: ObjectStoreRef = Arc::new(InMemory::new());
        let all = rows_of_sorted(&sorted());
        let uuids = all.column(0).as_string::<i32>();
        let every: HashSet<u128> = uuids
            .iter()
            .map(|u| Uuid::parse_str(u.unwrap()).unwrap().as_u128())
            .collect();
        let (adds, skipped) = day_files(&store, TARGET)
            .write(DAY, sorted(), Arc::new(every.clone()))
            .await
            .unwrap();
        assert_eq!((adds.len(), skipped), (0, ROWS as u64));
        let half: HashSet<u128> = every.iter().copied().filter(|u| u % 2 == 0).collect();
        let (adds, skipped) = day_files(&store, TARGET)
            .write(DAY, sorted(), Arc::new(half.clone()))
            .await
            .unwrap();
        let kept = rows_of(&store, &adds).await;
        assert_eq!(kept.num_rows() as u64 + skipped, ROWS as u64);
        assert_eq!(skipped as usize, half.len());
        let expected = without_held(&all, &half).unwrap();
        assert_eq!(kept, expected.project(&(0..8).collect::<Vec<_>>()).unwrap());
    }

    /// Past the target size a file is closed after its row group and the next one starts; the
    /// files hold the rows in order between them.
    #[tokio::test]
    async fn files_roll_over_at_the_target_size() {
        let store: ObjectStoreRef = Arc::new(InMemory::new());
        let (adds, _) = day_files(&store, 1)
            .write(DAY, sorted(), Arc::new(HashSet::new()))
            .await
            .unwrap();
        let counts: Vec<i64> = adds
            .iter()
            .map(|add| stats_of(add)["numRecords"].as_i64().unwrap())
            .collect();
        assert_eq!(counts, [300, 300, 300, 100]);
        let all = rows_of_sorted(&sorted());
        assert_eq!(
            rows_of(&store, &adds).await,
            all.project(&(0..8).collect::<Vec<_>>()).unwrap()
        );
    }

    fn rows_of_sorted(sorted: &SortedDay) -> RecordBatch {
        let pieces: Vec<RecordBatch> = sorted.pieces(PIECE_ROWS).map(Result::unwrap).collect();
        concat_batches(&schema(), &pieces).unwrap()
    }
}
