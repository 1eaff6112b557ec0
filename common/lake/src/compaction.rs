//! Compaction of the events tables: repeated events are removed (see [`crate::dedupe`]), person
//! overrides are squashed into the rows (see [`crate::squash`]), each day's small files (one per
//! commit) are merged into files sorted by event and time, the importer's layout, so selective
//! event filters skip pages (see [`crate::rewrite`]), and `vacuum` deletes files no snapshot
//! within the retention period still references. All are Delta commits, so a query reading any
//! snapshot sees each event exactly once throughout.

use std::collections::BTreeMap;

use common::AppState;
use deltalake_core::DeltaTable;

use lake_core::LakeError;

use crate::committer::teams_with_staging;
use crate::rewrite::Rewritten;
use crate::table;

/// Files smaller than this are merged with the day's other small files.
const SMALL_FILE_BYTES: i64 = 64 * 1024 * 1024;
/// Bytes of small files merged per commit at most: what a failed commit loses.
const BYTES_PER_COMMIT: i64 = 512 * 1024 * 1024;
/// Removed files stay this long for readers of older snapshots (Delta's default is 7 days).
const RETENTION_HOURS: i64 = 7 * 24;
/// Overrides are squashed this long after their merge: far longer than any commit that
/// resolved its persons before the merge can take.
const OVERRIDE_GRACE_MINUTES: i64 = 60;

#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct CompactionReport {
    pub team_id: i64,
    pub files_added: u64,
    pub files_removed: u64,
    pub files_vacuumed: usize,
    /// Repeated events (same uuid, same day) removed.
    pub rows_deduplicated: u64,
    /// Person overrides squashed into the rows, and the rows that took their new person.
    pub overrides_squashed: u64,
    pub rows_reassigned: u64,
    /// Deleted persons whose events were deleted, and those rows.
    pub persons_erased: u64,
    pub rows_erased: u64,
    /// Files rewritten with the shredded columns they lacked.
    pub files_backfilled: u64,
    /// Keys slow queries read that got a column.
    pub keys_from_slow_queries: usize,
}

/// Optimizes then vacuums one project's table; nothing to do for a project without one.
pub async fn compact_team(state: &AppState, team_id: i64) -> Result<CompactionReport, LakeError> {
    let mut report = CompactionReport {
        team_id,
        ..Default::default()
    };
    let Some(table) = table::open_existing(state, team_id).await? else {
        return Ok(report);
    };
    let (table, dedupe) = crate::dedupe::deduplicate(table).await?;
    report.rows_deduplicated = dedupe.rows_removed;
    let made_before = state.clock.now() - chrono::Duration::minutes(OVERRIDE_GRACE_MINUTES);
    let (table, squash) =
        crate::squash::squash_overrides(state, team_id, table, made_before).await?;
    report.overrides_squashed = squash.overrides_squashed;
    report.rows_reassigned = squash.rows_reassigned;
    // After squashing: the rows of persons merged into a deleted one carry its id by then.
    let (table, erased) = crate::erase::erase_deleted_persons(state, team_id, table).await?;
    report.persons_erased = erased.persons;
    report.rows_erased = erased.rows_deleted;
    // Before `optimize`: it then merges files that all hold the same columns.
    if crate::shred::enabled(state) {
        report.keys_from_slow_queries =
            crate::shred::slow_queries::register(state, team_id).await?;
    }
    let mut table = table;
    crate::backfill::observe_table(state, team_id, &mut table).await?;
    let (table, backfill) = crate::backfill::backfill(state, team_id, table).await?;
    report.files_backfilled = backfill.files_rewritten;
    let (table, clustered) = cluster_small_files(state, team_id, table).await?;
    report.files_added = clustered.files_added;
    report.files_removed = clustered.files_removed;
    let (_, vacuumed) = table
        .vacuum()
        .with_retention_period(chrono::Duration::hours(RETENTION_HOURS))
        .await?;
    report.files_vacuumed = vacuumed.files_deleted.len();
    Ok(report)
}

/// Days with two or more small files: those files, in groups of about `BYTES_PER_COMMIT`.
fn small_file_groups(table: &DeltaTable) -> Result<Vec<Vec<String>>, LakeError> {
    let mut days: BTreeMap<i32, Vec<(String, i64)>> = BTreeMap::new();
    for (path, size) in crate::rewrite::file_sizes(table)? {
        if let Some(day) = crate::rewrite::partition_day(&path)
            && size < SMALL_FILE_BYTES
        {
            days.entry(day).or_default().push((path, size));
        }
    }
    let small = days.into_values().filter(|files| files.len() > 1).flatten();
    Ok(crate::rewrite::in_groups(small, BYTES_PER_COMMIT))
}

/// Merges each day's small files into files sorted by event and time, one commit per group.
async fn cluster_small_files(
    state: &AppState,
    team_id: i64,
    mut table: DeltaTable,
) -> Result<(DeltaTable, Rewritten), LakeError> {
    let mut report = Rewritten::default();
    let groups = small_file_groups(&table)?;
    if groups.is_empty() {
        return Ok((table, report));
    }
    // The registry's keys are written again (a file keeps its shredded columns), even while
    // shredding is switched off for reading.
    let registry = crate::shred::registry::load(state.store.as_ref(), team_id).await?;
    let shredder = crate::shred::Shredder::new(
        Some(&registry),
        crate::shred::table_schema(&table)?.as_ref(),
    );
    for paths in groups {
        let rewritten =
            crate::rewrite::rewrite(state, team_id, &mut table, &shredder, &paths).await?;
        report.files_added += rewritten.files_added;
        report.files_removed += rewritten.files_removed;
        report.rows += rewritten.rows;
    }
    crate::shred::settle(state, team_id, &shredder).await?;
    Ok((table, report))
}

/// Every project that has a table (or staged events on their way to one).
pub async fn teams_to_compact(state: &AppState) -> Result<Vec<i64>, LakeError> {
    let mut teams = table::teams_with_tables(state).await?;
    teams.extend(teams_with_staging(state.objects.as_ref()).await?);
    teams.sort_unstable();
    teams.dedup();
    Ok(teams)
}

/// Compacts every project, one after another.
pub async fn compact_all(state: &AppState) -> Result<Vec<CompactionReport>, LakeError> {
    let mut reports = Vec::new();
    for team_id in teams_to_compact(state).await? {
        reports.push(compact_team(state, team_id).await?);
    }
    Ok(reports)
}
