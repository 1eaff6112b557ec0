//! Where each project's events table lives, its schema, and opening or creating it.
//! Embedded, tables are plain folders under `<data dir>/objects/lake/`; in the cloud they are
//! S3 prefixes reached through the same object store the rest of the service uses.

use std::sync::{Arc, Once};

use common::AppState;
use common::config::Backend;
use deltalake_core::arrow::datatypes::{DataType as ArrowType, Field, Schema, TimeUnit};
use deltalake_core::kernel::{DataType, StructField};
use deltalake_core::logstore::{
    LogStore, LogStoreFactory, ObjectStoreRef, StorageConfig, default_logstore, logstore_factories,
};
use deltalake_core::parquet::basic::{Compression, ZstdLevel};
use deltalake_core::parquet::file::properties::{EnabledStatistics, WriterProperties};
use deltalake_core::{DeltaResult, DeltaTable, DeltaTableBuilder, DeltaTableError, TableProperty};
use url::Url;

use crate::sql::Context;

pub const PARTITION_COLUMN: &str = "date";

/// The table's columns, in order: name, Delta type, nullable.
fn columns() -> Vec<(&'static str, DataType, bool)> {
    vec![
        ("uuid", DataType::STRING, false),
        ("event", DataType::STRING, false),
        ("distinct_id", DataType::STRING, false),
        ("person_id", DataType::STRING, true),
        ("person_properties", DataType::STRING, true),
        ("timestamp", DataType::TIMESTAMP, false),
        ("created_at", DataType::TIMESTAMP, false),
        ("properties", DataType::STRING, false),
        ("$session_id", DataType::STRING, true),
        ("elements_chain", DataType::STRING, true),
        (PARTITION_COLUMN, DataType::DATE, false),
    ]
}

/// Properties the table also keeps in a column of their own (`$session_id`): shredding them
/// again would write every value twice for queries that read that column anyway.
pub const PROPERTIES_WITH_COLUMNS: [&str; 1] = ["$session_id"];

/// The Arrow schema batches are built with (Delta TIMESTAMP is microseconds in UTC).
pub fn arrow_schema() -> Arc<Schema> {
    let fields: Vec<Field> = columns()
        .into_iter()
        .map(|(name, kind, nullable)| {
            let arrow = if kind == DataType::TIMESTAMP {
                ArrowType::Timestamp(TimeUnit::Microsecond, Some("UTC".into()))
            } else if kind == DataType::DATE {
                ArrowType::Date32
            } else {
                ArrowType::Utf8
            };
            Field::new(name, arrow, nullable)
        })
        .collect();
    Arc::new(Schema::new(fields))
}

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

/// Hexadecimal ids. Snappy finds few repeats in them and spends as long as on the rest of a
/// row; zstd's level 1 entropy-codes the hex digits: on 620K imported rows these columns came
/// to half the bytes (55 MB to 29 MB) in no more time, and read back faster.
const ID_COLUMNS: [&str; 4] = ["uuid", "distinct_id", "person_id", "$session_id"];

/// How every writer of the events tables encodes Parquet.
pub fn writer_properties() -> WriterProperties {
    let builder = WriterProperties::builder()
        .set_compression(Compression::SNAPPY)
        .set_max_row_group_row_count(Some(ROW_GROUP_ROWS))
        .set_data_page_row_count_limit(PAGE_ROWS);
    let builder = ID_COLUMNS.iter().fold(builder, |builder, column| {
        builder.set_column_compression((*column).into(), Compression::ZSTD(ZstdLevel::default()))
    });
    let builder = UNIQUE_COLUMNS.iter().fold(builder, |builder, column| {
        builder.set_column_dictionary_enabled((*column).into(), false)
    });
    UNSKIPPABLE_COLUMNS
        .iter()
        .fold(builder, |builder, column| {
            builder.set_column_statistics_enabled((*column).into(), EnabledStatistics::None)
        })
        .build()
}

/// The object-store path of a project's table, relative to the store root.
pub fn table_path(team_id: i64) -> String {
    format!("lake/team_id={team_id}/events")
}

/// Delta's default log store (atomic create-if-absent commits), for S3 and S3-compatible stores,
/// which support conditional puts.
#[derive(Debug, Default)]
struct ConditionalPutLogStores;

impl LogStoreFactory for ConditionalPutLogStores {
    fn with_options(
        &self,
        prefixed_store: ObjectStoreRef,
        root_store: ObjectStoreRef,
        location: &Url,
        options: &StorageConfig,
    ) -> DeltaResult<Arc<dyn LogStore>> {
        Ok(default_logstore(
            prefixed_store,
            root_store,
            location,
            options,
        ))
    }
}

fn register_s3() {
    static REGISTER: Once = Once::new();
    REGISTER.call_once(|| {
        if let Ok(url) = Url::parse("s3://") {
            logstore_factories().insert(url, Arc::new(ConditionalPutLogStores));
        }
    });
}

/// An unloaded handle on a project's table.
pub fn table_handle(state: &AppState, team_id: i64) -> DeltaResult<DeltaTable> {
    let path = table_path(team_id);
    match state.config.backend {
        Backend::Sqlite => {
            let folder = state.config.objects_dir().join(&path);
            let folder_error = |error: std::io::Error| DeltaTableError::GenericError {
                source: Box::new(Context::new(
                    format!("table folder {}", folder.display()),
                    error,
                )),
            };
            std::fs::create_dir_all(&folder).map_err(folder_error)?;
            let absolute = std::fs::canonicalize(&folder).map_err(folder_error)?;
            let url = Url::from_directory_path(&absolute).map_err(|_| {
                DeltaTableError::InvalidTableLocation(absolute.display().to_string())
            })?;
            DeltaTableBuilder::from_url(url.clone())?
                .with_storage_backend(common::objects::local_root(), url)
                .build()
        }
        Backend::Dynamodb => {
            register_s3();
            let url = Url::parse(&format!("s3://{}/{path}", state.config.bucket_name))
                .map_err(|_| DeltaTableError::InvalidTableLocation(path.clone()))?;
            DeltaTableBuilder::from_url(url.clone())?
                .with_storage_backend(state.objects.clone(), url)
                .build()
        }
    }
}

/// Whether the project's table has a log yet (asked of the store, so no "not a table" noise).
async fn exists(state: &AppState, team_id: i64) -> DeltaResult<bool> {
    use futures::StreamExt;
    let log = object_store::path::Path::from(format!("{}/_delta_log", table_path(team_id)));
    match state.objects.list(Some(&log)).next().await {
        None | Some(Err(object_store::Error::NotFound { .. })) => Ok(false),
        Some(Ok(_)) => Ok(true),
        Some(Err(other)) => Err(other.into()),
    }
}

/// The project's table when it exists, loaded.
pub async fn open_existing(state: &AppState, team_id: i64) -> DeltaResult<Option<DeltaTable>> {
    if !exists(state, team_id).await? {
        return Ok(None);
    }
    let mut table = table_handle(state, team_id)?;
    table.load().await?;
    Ok(Some(table))
}

/// A table already read by this process, and the object store it was read through.
struct OpenTable {
    objects: std::sync::Weak<dyn object_store::ObjectStore>,
    table: DeltaTable,
}

/// Tables already read by this process, by (object store, project), so a query reads only the
/// commits made since the last one instead of the whole log.
static CURRENT: std::sync::LazyLock<
    std::sync::Mutex<std::collections::HashMap<(usize, i64), OpenTable>>,
> = std::sync::LazyLock::new(Default::default);

/// The project's table at its latest version, when it exists.
pub async fn current(state: &AppState, team_id: i64) -> DeltaResult<Option<DeltaTable>> {
    let key = (Arc::as_ptr(&state.objects) as *const () as usize, team_id);
    // Same address and still alive: the same store (a dropped one cannot be upgraded).
    let known = CURRENT.lock().ok().and_then(|tables| {
        tables
            .get(&key)
            .filter(|open| {
                open.objects
                    .upgrade()
                    .is_some_and(|o| Arc::ptr_eq(&o, &state.objects))
            })
            .map(|open| open.table.clone())
    });
    let table = match known {
        Some(mut table) => {
            table.update_incremental(None).await?;
            table
        }
        None => match open_existing(state, team_id).await? {
            Some(table) => table,
            None => return Ok(None),
        },
    };
    if let Ok(mut tables) = CURRENT.lock() {
        tables.retain(|_, open| open.objects.strong_count() > 0);
        tables.insert(
            key,
            OpenTable {
                objects: Arc::downgrade(&state.objects),
                table: table.clone(),
            },
        );
    }
    Ok(Some(table))
}

/// Projects that have an events table.
pub async fn teams_with_tables(state: &AppState) -> DeltaResult<Vec<i64>> {
    let listing = match state
        .objects
        .list_with_delimiter(Some(&object_store::path::Path::from("lake")))
        .await
    {
        Ok(listing) => listing,
        Err(object_store::Error::NotFound { .. }) => return Ok(Vec::new()),
        Err(other) => return Err(other.into()),
    };
    Ok(listing
        .common_prefixes
        .iter()
        .filter_map(|prefix| prefix.filename()?.strip_prefix("team_id=")?.parse().ok())
        .collect())
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
