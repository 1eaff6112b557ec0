//! Where each project's events table lives, its schema, and opening it (creating it and how its
//! files are encoded are the writer's: the `lake` crate's `table`).
//! Embedded, tables are plain folders under `<data dir>/objects/lake/`; in the cloud they are
//! S3 prefixes reached through the same object store the rest of the service uses.

use std::sync::{Arc, Once};

use common::AppState;
use common::config::Backend;
use deltalake_core::arrow::datatypes::{DataType as ArrowType, Field, Schema, TimeUnit};
use deltalake_core::kernel::DataType;
use deltalake_core::logstore::{
    LogStore, LogStoreFactory, ObjectStoreRef, StorageConfig, default_logstore, logstore_factories,
};
use deltalake_core::{DeltaResult, DeltaTable, DeltaTableBuilder, DeltaTableError};
use url::Url;

use crate::Context;

pub const PARTITION_COLUMN: &str = "date";

/// The table's columns, in order: name, Delta type, nullable.
pub fn columns() -> Vec<(&'static str, DataType, bool)> {
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
pub async fn exists(state: &AppState, team_id: i64) -> DeltaResult<bool> {
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
