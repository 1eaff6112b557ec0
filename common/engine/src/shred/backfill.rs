//! Backfill: compaction rewrites the files that lack an active key's column (written before the
//! key was added, or with values that did not fit its type), a bounded group of files per Delta
//! commit. Each commit swaps files for files with the same rows, so a query of any snapshot sees
//! each event exactly once, and while some files are done and others not, queries read each row
//! from wherever its mask says.

use std::collections::HashMap;

use common::AppState;
use deltalake_core::arrow::array::{Array, AsArray};
use deltalake_core::arrow::datatypes::Int64Type;
use deltalake_core::kernel::Action;
use deltalake_core::kernel::transaction::CommitBuilder;
use deltalake_core::parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use deltalake_core::protocol::DeltaOperation;
use deltalake_core::writer::{DeltaWriter, RecordBatchWriter};
use deltalake_core::{DeltaTable, DeltaTableError};
use object_store::ObjectStoreExt;

use super::write::MASK_COLUMN;
use crate::committer::CommitError;
use crate::lake;

/// Bytes of input files rewritten per commit at most: the rewritten files are held in memory
/// until the commit.
const BYTES_PER_COMMIT: i64 = 128 * 1024 * 1024;

#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct BackfillReport {
    pub files_rewritten: u64,
    pub rows_rewritten: u64,
}

/// Files whose mask misses a bit of `wanted`, with their sizes.
fn files_to_rewrite(
    table: &DeltaTable,
    wanted: i64,
) -> Result<Vec<(String, i64)>, DeltaTableError> {
    let actions = table.snapshot()?.add_actions_table(true)?;
    let Some(paths) = actions
        .column_by_name("path")
        .map(|c| c.as_string::<i32>().clone())
    else {
        return Ok(Vec::new());
    };
    let sizes = actions
        .column_by_name("size_bytes")
        .and_then(|c| c.as_primitive_opt::<Int64Type>().cloned());
    let bound = |name: &str| {
        actions
            .column_by_name(&format!("{name}.{MASK_COLUMN}"))
            .and_then(|c| c.as_primitive_opt::<Int64Type>().cloned())
    };
    let (min, max) = (bound("min"), bound("max"));
    Ok((0..actions.num_rows())
        .filter(|&row| {
            let exact = match (&min, &max) {
                (Some(min), Some(max)) if min.is_valid(row) && max.is_valid(row) => {
                    (min.value(row) == max.value(row)).then(|| min.value(row))
                }
                _ => None,
            };
            exact.is_none_or(|mask| mask & wanted != wanted)
        })
        .map(|row| {
            let size = sizes.as_ref().map_or(0, |s| s.value(row));
            (paths.value(row).to_owned(), size)
        })
        .collect())
}

/// Rewrites the project's files that lack an active key, and returns the table after.
pub async fn backfill(
    state: &AppState,
    team_id: i64,
    mut table: DeltaTable,
) -> Result<(DeltaTable, BackfillReport), CommitError> {
    let mut report = BackfillReport::default();
    if !super::enabled(state) {
        return Ok((table, report));
    }
    let registry = super::registry::load(state.store.as_ref(), team_id).await?;
    let wanted = registry.active().fold(0i64, |mask, k| mask | 1 << k.slot);
    if wanted == 0 {
        return Ok((table, report));
    }
    super::ensure_columns(&mut table, &registry).await?;
    let files = files_to_rewrite(&table, wanted)?;
    let mut group = Vec::new();
    let mut bytes = 0;
    for (path, size) in files {
        group.push(path);
        bytes += size;
        if bytes >= BYTES_PER_COMMIT {
            rewrite(
                state,
                team_id,
                &mut table,
                &registry,
                &std::mem::take(&mut group),
                &mut report,
            )
            .await?;
            bytes = 0;
        }
    }
    if !group.is_empty() {
        rewrite(state, team_id, &mut table, &registry, &group, &mut report).await?;
    }
    Ok((table, report))
}

/// One commit: `paths` removed, the same rows written again with every active key's column.
async fn rewrite(
    state: &AppState,
    team_id: i64,
    table: &mut DeltaTable,
    registry: &super::Registry,
    paths: &[String],
    report: &mut BackfillReport,
) -> Result<(), CommitError> {
    let shredder = super::Shredder::new(Some(registry), super::table_schema(table)?.as_ref());
    let removes: HashMap<String, Action> = table
        .snapshot()?
        .log_data()
        .into_iter()
        .filter(|file| paths.iter().any(|p| p.as_str() == file.path()))
        .map(|file| {
            (
                file.path().to_string(),
                Action::Remove(file.remove_action(false)),
            )
        })
        .collect();
    let mut writer =
        RecordBatchWriter::for_table(table)?.with_writer_properties(lake::writer_properties());
    let root = lake::table_path(team_id);
    let mut actions = Vec::new();
    for path in paths {
        let Some(remove) = removes.get(path) else {
            continue;
        };
        for batch in read_file(state, &root, path).await? {
            let batch = batch?;
            report.rows_rewritten += batch.num_rows() as u64;
            writer
                .write(shredder.apply(&with_partition(batch, path)?)?)
                .await?;
        }
        actions.push(remove.clone());
        report.files_rewritten += 1;
    }
    let adds = writer.flush().await?;
    actions.extend(adds.into_iter().map(|mut add| {
        add.data_change = false;
        Action::Add(add)
    }));
    let operation = DeltaOperation::Optimize {
        predicate: None,
        target_size: BYTES_PER_COMMIT,
    };
    CommitBuilder::default()
        .with_actions(actions)
        .build(Some(table.snapshot()?), table.log_store(), operation)
        .await?;
    table.update_incremental(None).await?;
    super::settle(state, team_id, &shredder).await
}

/// The batches of one of the table's files (`path` relative to the table at `root`).
pub async fn read_file(
    state: &AppState,
    root: &str,
    path: &str,
) -> Result<deltalake_core::parquet::arrow::arrow_reader::ParquetRecordBatchReader, CommitError> {
    let location = object_store::path::Path::from(format!("{root}/{path}"));
    let bytes = state.objects.get(&location).await?.bytes().await?;
    Ok(ParquetRecordBatchReaderBuilder::try_new(bytes)
        .map_err(DeltaTableError::from)?
        .build()
        .map_err(DeltaTableError::from)?)
}

/// The path of the table's largest file: a sample of what the project sends.
pub(crate) fn largest_file(table: &DeltaTable) -> Result<Option<String>, DeltaTableError> {
    let actions = table.snapshot()?.add_actions_table(true)?;
    let (Some(paths), Some(sizes)) = (
        actions
            .column_by_name("path")
            .map(|c| c.as_string::<i32>().clone()),
        actions
            .column_by_name("size_bytes")
            .and_then(|c| c.as_primitive_opt::<Int64Type>().cloned()),
    ) else {
        return Ok(None);
    };
    Ok((0..actions.num_rows())
        .max_by_key(|&row| sizes.value(row))
        .map(|row| paths.value(row).to_owned()))
}

/// Data files of a partitioned table do not store the partition column: it comes back from
/// the file's path (`date=YYYY-MM-DD/...`).
fn with_partition(
    batch: deltalake_core::arrow::array::RecordBatch,
    path: &str,
) -> Result<deltalake_core::arrow::array::RecordBatch, DeltaTableError> {
    use std::sync::Arc;

    use deltalake_core::arrow::array::Date32Array;
    use deltalake_core::arrow::datatypes::{DataType, Field, Schema};

    if batch.column_by_name(lake::PARTITION_COLUMN).is_some() {
        return Ok(batch);
    }
    let day = path
        .split('/')
        .find_map(|part| part.strip_prefix(&format!("{}=", lake::PARTITION_COLUMN)))
        .and_then(|day| chrono::NaiveDate::parse_from_str(day, "%Y-%m-%d").ok())
        .ok_or_else(|| DeltaTableError::Generic(format!("no partition day in {path}")))?;
    let epoch = chrono::NaiveDate::from_ymd_opt(1970, 1, 1).unwrap_or_default();
    let days = (day - epoch).num_days() as i32;
    let mut fields: Vec<Field> = batch
        .schema()
        .fields()
        .iter()
        .map(|f| f.as_ref().clone())
        .collect();
    fields.push(Field::new(lake::PARTITION_COLUMN, DataType::Date32, false));
    let mut columns = batch.columns().to_vec();
    columns.push(Arc::new(Date32Array::from_value(days, batch.num_rows())));
    Ok(deltalake_core::arrow::array::RecordBatch::try_new(
        Arc::new(Schema::new(fields)),
        columns,
    )?)
}
