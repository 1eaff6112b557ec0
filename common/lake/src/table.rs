//! The writer's side of each project's events table: creating it, how every writer encodes its
//! Parquet files, and a plain scan of its rows for tests and tools. Its schema, paths and opening
//! are lake-core's, re-exported here so the lake's modules name one `table`.

use deltalake_core::arrow::datatypes::{DataType as ArrowType, TimeUnit};
use deltalake_core::kernel::StructField;
use deltalake_core::parquet::basic::{Compression, ZstdLevel};
use deltalake_core::parquet::file::properties::{EnabledStatistics, WriterProperties};
use deltalake_core::{DeltaResult, DeltaTable, DeltaTableError, TableProperty};

use common::AppState;
pub use lake_core::table::*;

/// Columns whose values are nearly all distinct, or so many per row group (users, their
/// properties, sessions) that the 1 MB dictionary page fills and the writer falls back to plain
/// encoding anyway after hashing tens of thousands of values: a dictionary only costs time there.
const UNIQUE_COLUMNS: [&str; 8] = [
    "uuid",
    "properties",
    "timestamp",
    "created_at",
    "distinct_id",
    "person_id",
    "person_properties",
    "$session_id",
];

/// Rows per Parquet row group: small enough that a large file is read by several partitions
/// and its row groups are skipped one by one, large enough to keep per-group costs small.
pub const ROW_GROUP_ROWS: usize = 128 * 1024;

/// Rows per data page at most: page statistics at this grain let a filter on a sorted column
/// (the event, in files sorted by it) skip the other columns' pages for the rows it rejects.
const PAGE_ROWS: usize = 8 * 1024;

/// Long texts whose minimum and maximum skip nothing (no filter compares them as a whole, and a
/// file's span of them is everything): computing them cost a comparison per value.
const UNSKIPPABLE_COLUMNS: [&str; 4] =
    ["uuid", "properties", "person_properties", "elements_chain"];

/// Hexadecimal ids. Snappy (and LZ4) find few repeats in them and spends as long as on the rest of a
/// row; zstd's level 1 entropy-codes the hex digits: on 620K imported rows these columns came
/// to half the bytes (55 MB to 29 MB) in no more time, and read back faster.
const ID_COLUMNS: [&str; 4] = ["uuid", "distinct_id", "person_id", "$session_id"];

/// Columns looked up by one value (an event by uuid, a person's events by distinct id): a bloom
/// filter per row group (1% false positives, about 150 KB each) answers "not here" where the
/// row group's span of ids includes the one asked for.
const LOOKUP_COLUMNS: [&str; 2] = ["uuid", "distinct_id"];
const LOOKUP_FALSE_POSITIVES: f64 = 0.01;

/// How every writer of the events tables encodes Parquet. LZ4 (raw blocks) rather than snappy:
/// the same size on this table's columns, and a quarter less time to read a file back.
pub fn writer_properties() -> WriterProperties {
    let builder = WriterProperties::builder()
        .set_compression(Compression::LZ4_RAW)
        .set_max_row_group_row_count(Some(ROW_GROUP_ROWS))
        .set_data_page_row_count_limit(PAGE_ROWS);
    let builder = ID_COLUMNS.iter().fold(builder, |builder, column| {
        builder.set_column_compression((*column).into(), Compression::ZSTD(ZstdLevel::default()))
    });
    let builder = UNIQUE_COLUMNS.iter().fold(builder, |builder, column| {
        builder.set_column_dictionary_enabled((*column).into(), false)
    });
    let builder = LOOKUP_COLUMNS.iter().fold(builder, |builder, column| {
        builder
            .set_column_bloom_filter_enabled((*column).into(), true)
            .set_column_bloom_filter_fpp((*column).into(), LOOKUP_FALSE_POSITIVES)
            .set_column_bloom_filter_max_ndv((*column).into(), ROW_GROUP_ROWS as u64)
    });
    UNSKIPPABLE_COLUMNS
        .iter()
        .fold(builder, |builder, column| {
            builder.set_column_statistics_enabled((*column).into(), EnabledStatistics::None)
        })
        .build()
}

/// The project's table, created on first use.
pub async fn open_or_create(state: &AppState, team_id: i64) -> DeltaResult<DeltaTable> {
    let mut table = table_handle(state, team_id)?;
    if exists(state, team_id).await? {
        table.load().await?;
        return Ok(table);
    }
    let fields: Vec<StructField> = columns()
        .into_iter()
        .map(|(name, kind, nullable)| StructField::new(name, kind, nullable))
        .collect();
    let created = table
        .create()
        .with_table_name(format!("events_team_{team_id}"))
        .with_columns(fields)
        .with_partition_columns([PARTITION_COLUMN])
        // Idempotency markers (one per staged batch) need not outlive a week of retries.
        .with_configuration_property(
            TableProperty::SetTransactionRetentionDuration,
            Some("interval 7 days"),
        )
        .await;
    match created {
        Ok(table) => Ok(table),
        // Another committer created it first.
        Err(_) => {
            let mut table = table_handle(state, team_id)?;
            table.load().await?;
            Ok(table)
        }
    }
}

/// One row of a project's events table, as a full scan reads it.
#[derive(Debug, Clone, PartialEq)]
pub struct EventRow {
    pub uuid: String,
    pub event: String,
    pub distinct_id: String,
    pub person_id: Option<String>,
    pub person_properties: Option<String>,
    pub timestamp_micros: i64,
    pub properties: String,
    pub session_id: Option<String>,
}

/// Reads every live row of a project's table (the files of its current snapshot). A plain
/// scan for tests and tools; queries go through the query engine.
pub async fn scan(state: &AppState, team_id: i64) -> DeltaResult<Vec<EventRow>> {
    use deltalake_core::arrow::array::{Array, StringArray, TimestampMicrosecondArray};
    use deltalake_core::arrow::compute::cast;
    use deltalake_core::parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
    use object_store::ObjectStoreExt;

    let Some(table) = open_existing(state, team_id).await? else {
        return Ok(Vec::new());
    };
    let root = table_path(team_id);
    let mut rows = Vec::new();
    let uris: Vec<String> = table.get_file_uris()?.collect();
    for uri in uris {
        let relative = uri
            .split_once(&format!("{root}/"))
            .map(|(_, rest)| rest.to_owned())
            .ok_or_else(|| DeltaTableError::Generic(format!("file {uri} outside {root}")))?;
        let path = object_store::path::Path::from(format!("{root}/{relative}"));
        let bytes = state.objects.get(&path).await?.bytes().await?;
        let reader = ParquetRecordBatchReaderBuilder::try_new(bytes)?.build()?;
        for batch in reader {
            let batch = batch?;
            // Files written by `optimize` may hold string views: read every text column as Utf8.
            let text = |name: &str| {
                batch
                    .column_by_name(name)
                    .and_then(|c| cast(c, &ArrowType::Utf8).ok())
                    .and_then(|c| c.as_any().downcast_ref::<StringArray>().cloned())
            };
            let column = |name: &str| {
                text(name).ok_or_else(|| DeltaTableError::Generic(format!("no column {name}")))
            };
            let (uuid, event, distinct_id, properties) = (
                column("uuid")?,
                column("event")?,
                column("distinct_id")?,
                column("properties")?,
            );
            let (person_id, person_properties, session_id) = (
                column("person_id")?,
                column("person_properties")?,
                column("$session_id")?,
            );
            let timestamp = batch
                .column_by_name("timestamp")
                .and_then(|c| {
                    cast(
                        c,
                        &ArrowType::Timestamp(TimeUnit::Microsecond, Some("UTC".into())),
                    )
                    .ok()
                })
                .and_then(|c| {
                    c.as_any()
                        .downcast_ref::<TimestampMicrosecondArray>()
                        .cloned()
                })
                .ok_or_else(|| DeltaTableError::Generic("no column timestamp".into()))?;
            let optional = |array: &StringArray, i: usize| {
                (!array.is_null(i)).then(|| array.value(i).to_owned())
            };
            for i in 0..batch.num_rows() {
                rows.push(EventRow {
                    uuid: uuid.value(i).to_owned(),
                    event: event.value(i).to_owned(),
                    distinct_id: distinct_id.value(i).to_owned(),
                    person_id: optional(&person_id, i),
                    person_properties: optional(&person_properties, i),
                    timestamp_micros: timestamp.value(i),
                    properties: properties.value(i).to_owned(),
                    session_id: optional(&session_id, i),
                });
            }
        }
    }
    Ok(rows)
}
