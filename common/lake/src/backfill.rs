//! Backfill: compaction rewrites the files that lack an active key's column (written before the
//! key was added, or with values that did not fit its type), a bounded group of files per Delta
//! commit. Each commit swaps files for files with the same rows, so a query of any snapshot sees
//! each event exactly once, and while some files are done and others not, queries read each row
//! from wherever its mask says.

use common::AppState;
use deltalake_core::arrow::array::{Array, AsArray};
use deltalake_core::arrow::datatypes::Int64Type;
use deltalake_core::{DeltaTable, DeltaTableError};

use lake_core::LakeError;

use crate::shred::{self, KeyCounts, MASK_COLUMN};

/// Bytes of input files rewritten per commit at most: what a failed commit loses.
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
) -> Result<(DeltaTable, BackfillReport), LakeError> {
    let mut report = BackfillReport::default();
    if !shred::enabled(state) {
        return Ok((table, report));
    }
    let registry = shred::registry::load(state.store.as_ref(), team_id).await?;
    let wanted = registry.active().fold(0i64, |mask, k| mask | 1 << k.slot);
    if wanted == 0 {
        return Ok((table, report));
    }
    shred::ensure_columns(&mut table, &registry).await?;
    let files = files_to_rewrite(&table, wanted)?;
    for group in crate::rewrite::in_groups(files, BYTES_PER_COMMIT) {
        rewrite_group(state, team_id, &mut table, &registry, &group, &mut report).await?;
    }
    Ok((table, report))
}

/// One commit: `paths` removed, the same rows written again with every active key's column.
async fn rewrite_group(
    state: &AppState,
    team_id: i64,
    table: &mut DeltaTable,
    registry: &shred::Registry,
    paths: &[String],
    report: &mut BackfillReport,
) -> Result<(), LakeError> {
    let shredder = shred::Shredder::new(Some(registry), shred::table_schema(table)?.as_ref());
    let rewritten = crate::rewrite::rewrite(state, team_id, table, &shredder, paths).await?;
    report.files_rewritten += rewritten.files_removed;
    report.rows_rewritten += rewritten.rows;
    shred::settle(state, team_id, &shredder).await
}

/// The path of the table's largest file: a sample of what the project sends.
pub(crate) fn largest_file(table: &DeltaTable) -> Result<Option<String>, DeltaTableError> {
    Ok(crate::rewrite::file_sizes(table)?
        .into_iter()
        .max_by_key(|(_, size)| *size)
        .map(|(path, _)| path))
}

/// Rows of the table sampled when its registry is empty.
const TABLE_SAMPLE_ROWS: usize = 65_536;

/// Picks the frequent keys (and codes the event names) of a table whose registry has none yet
/// (loaded while shredding was off, or from commits too small to decide), from a sample of its
/// largest file; backfill then fills them in.
pub async fn observe_table(
    state: &AppState,
    team_id: i64,
    table: &mut DeltaTable,
) -> Result<(), LakeError> {
    if !shred::enabled(state) {
        return Ok(());
    }
    let registry = shred::registry::load(state.store.as_ref(), team_id).await?;
    let coded = registry
        .find(shred::Source::Event, shred::registry::EVENT_KEY)
        .is_some();
    if coded && registry.active().count() > 1 {
        return Ok(());
    }
    let Some(path) = largest_file(table)? else {
        return Ok(());
    };
    let mut counts = KeyCounts::default();
    let mut rows = 0;
    for batch in crate::rewrite::read_file(state, &crate::table::table_path(team_id), &path).await?
    {
        let batch = batch?;
        rows += batch.num_rows();
        counts.observe(&batch);
        if rows >= TABLE_SAMPLE_ROWS {
            break;
        }
    }
    shred::prepare(state, team_id, table, Some(&counts)).await?;
    Ok(())
}
