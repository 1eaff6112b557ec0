//! Rewriting files of a project's table in place: their rows read back, shredded again (every
//! active key's column), written in the importer's layout (one file per day, sorted by event and
//! time, see [`crate::clustered`]) and swapped for the old files in one Delta commit, so a query
//! of any snapshot sees each event exactly once. Backfill and compaction both rewrite this way.

use std::collections::HashMap;
use std::sync::Arc;

use common::AppState;
use deltalake_core::arrow::array::{AsArray, Date32Array, RecordBatch};
use deltalake_core::arrow::datatypes::{DataType, Field, Int64Type, Schema};
use deltalake_core::kernel::Action;
use deltalake_core::kernel::transaction::CommitBuilder;
use deltalake_core::parquet::arrow::arrow_reader::{
    ParquetRecordBatchReader, ParquetRecordBatchReaderBuilder,
};
use deltalake_core::protocol::DeltaOperation;
use deltalake_core::{DeltaTable, DeltaTableError};
use object_store::ObjectStoreExt;

use crate::clustered::ClusteredWriter;
use crate::shred::Shredder;
use crate::table;
use lake_core::LakeError;

#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Rewritten {
    pub files_removed: u64,
    pub files_added: u64,
    pub rows: u64,
}

/// One commit: `paths` (those still in the table) removed, their rows written again through
/// `shredder`.
pub async fn rewrite(
    state: &AppState,
    team_id: i64,
    table: &mut DeltaTable,
    shredder: &Shredder,
    paths: &[String],
) -> Result<Rewritten, LakeError> {
    let mut report = Rewritten::default();
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
    let mut writer = ClusteredWriter::for_table(table, state.clock.clone())?;
    let root = table::table_path(team_id);
    let mut actions = Vec::new();
    for path in paths {
        let Some(remove) = removes.get(path) else {
            continue;
        };
        for batch in read_file(state, &root, path).await? {
            let batch = batch?;
            report.rows += batch.num_rows() as u64;
            writer
                .write(&shredder.apply(&with_partition(batch, path)?)?)
                .await?;
        }
        actions.push(remove.clone());
        report.files_removed += 1;
    }
    let adds = writer.close().await?.adds;
    report.files_added = adds.len() as u64;
    actions.extend(adds.into_iter().map(|mut add| {
        add.data_change = false;
        Action::Add(add)
    }));
    if report.files_removed == 0 {
        return Ok(report);
    }
    let operation = DeltaOperation::Optimize {
        predicate: None,
        target_size: crate::clustered::TARGET_FILE_BYTES as i64,
    };
    CommitBuilder::default()
        .with_actions(actions)
        .build(Some(table.snapshot()?), table.log_store(), operation)
        .await?;
    table.update_incremental(None).await?;
    Ok(report)
}

/// `files` (path, size) in order, in groups closed once they hold `bytes` bytes: one commit each.
pub fn in_groups(files: impl IntoIterator<Item = (String, i64)>, bytes: i64) -> Vec<Vec<String>> {
    let mut groups = Vec::new();
    let (mut group, mut held) = (Vec::new(), 0);
    for (path, size) in files {
        group.push(path);
        held += size;
        if held >= bytes {
            groups.push(std::mem::take(&mut group));
            held = 0;
        }
    }
    if !group.is_empty() {
        groups.push(group);
    }
    groups
}

/// The table's files (paths relative to the table) and their sizes in bytes.
pub fn file_sizes(table: &DeltaTable) -> Result<Vec<(String, i64)>, DeltaTableError> {
    let actions = table.snapshot()?.add_actions_table(true)?;
    let (Some(paths), Some(sizes)) = (
        actions
            .column_by_name("path")
            .map(|c| c.as_string::<i32>().clone()),
        actions
            .column_by_name("size_bytes")
            .and_then(|c| c.as_primitive_opt::<Int64Type>().cloned()),
    ) else {
        return Ok(Vec::new());
    };
    Ok((0..actions.num_rows())
        .map(|row| (paths.value(row).to_owned(), sizes.value(row)))
        .collect())
}

/// The batches of one of the table's files (`path` relative to the table at `root`).
pub async fn read_file(
    state: &AppState,
    root: &str,
    path: &str,
) -> Result<ParquetRecordBatchReader, LakeError> {
    let location = object_store::path::Path::from(format!("{root}/{path}"));
    let bytes = state.objects.get(&location).await?.bytes().await?;
    Ok(ParquetRecordBatchReaderBuilder::try_new(bytes)
        .map_err(DeltaTableError::from)?
        .build()
        .map_err(DeltaTableError::from)?)
}

/// The day partition a file's path names (`date=YYYY-MM-DD/...`), as days since 1970-01-01.
pub fn partition_day(path: &str) -> Option<i32> {
    let day = path
        .split('/')
        .find_map(|part| part.strip_prefix(&format!("{}=", table::PARTITION_COLUMN)))
        .and_then(|day| chrono::NaiveDate::parse_from_str(day, "%Y-%m-%d").ok())?;
    let epoch = chrono::NaiveDate::from_ymd_opt(1970, 1, 1)?;
    Some((day - epoch).num_days() as i32)
}

/// Data files of a partitioned table do not store the partition column: it comes back from
/// the file's path.
fn with_partition(batch: RecordBatch, path: &str) -> Result<RecordBatch, DeltaTableError> {
    if batch.column_by_name(table::PARTITION_COLUMN).is_some() {
        return Ok(batch);
    }
    let days = partition_day(path)
        .ok_or_else(|| DeltaTableError::Generic(format!("no partition day in {path}")))?;
    let mut fields: Vec<Field> = batch
        .schema()
        .fields()
        .iter()
        .map(|f| f.as_ref().clone())
        .collect();
    fields.push(Field::new(table::PARTITION_COLUMN, DataType::Date32, false));
    let mut columns = batch.columns().to_vec();
    columns.push(Arc::new(Date32Array::from_value(days, batch.num_rows())));
    Ok(RecordBatch::try_new(
        Arc::new(Schema::new(fields)),
        columns,
    )?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_close_once_they_hold_enough_bytes() {
        let files = [("a", 40), ("b", 70), ("c", 10), ("d", 200), ("e", 5)]
            .map(|(path, size)| (path.to_owned(), size));
        let names = |groups: Vec<Vec<String>>| -> Vec<String> {
            groups.into_iter().map(|group| group.concat()).collect()
        };
        assert_eq!(names(in_groups(files.clone(), 100)), ["ab", "cd", "e"]);
        assert_eq!(names(in_groups(files, 1_000)), ["abcde"]);
        assert!(in_groups(Vec::new(), 100).is_empty());
    }
}
