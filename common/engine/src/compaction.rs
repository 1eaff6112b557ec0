//! Compaction of the events tables: repeated events are removed (see [`crate::dedupe`]), person
//! overrides are squashed into the rows (see [`crate::squash`]), `optimize` bins small files (one
//! per commit) into large ones, `vacuum` deletes files no snapshot within the retention period
//! still references. All are Delta commits, so a query reading any snapshot sees each event
//! exactly once throughout.

use std::num::NonZeroU64;

use common::AppState;

use crate::committer::{CommitError, teams_with_staging};
use crate::lake;

/// Files are rewritten toward this size.
const TARGET_FILE_BYTES: u64 = 128 * 1024 * 1024;
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
    /// Files rewritten with the shredded columns they lacked.
    pub files_backfilled: u64,
    /// Keys slow queries read that got a column.
    pub keys_from_slow_queries: usize,
}

/// Optimizes then vacuums one project's table; nothing to do for a project without one.
pub async fn compact_team(state: &AppState, team_id: i64) -> Result<CompactionReport, CommitError> {
    let mut report = CompactionReport {
        team_id,
        ..Default::default()
    };
    let Some(table) = lake::open_existing(state, team_id).await? else {
        return Ok(report);
    };
    let (table, dedupe) = crate::dedupe::deduplicate(table).await?;
    report.rows_deduplicated = dedupe.rows_removed;
    let made_before = state.clock.now() - chrono::Duration::minutes(OVERRIDE_GRACE_MINUTES);
    let (table, squash) =
        crate::squash::squash_overrides(state, team_id, table, made_before).await?;
    report.overrides_squashed = squash.overrides_squashed;
    report.rows_reassigned = squash.rows_reassigned;
    // Before `optimize`: it then merges files that all hold the same columns.
    if crate::shred::enabled(state) {
        report.keys_from_slow_queries =
            crate::shred::slow_queries::register(state, team_id).await?;
    }
    let mut table = table;
    crate::shred::observe_table(state, team_id, &mut table).await?;
    let (table, backfill) = crate::shred::backfill::backfill(state, team_id, table).await?;
    report.files_backfilled = backfill.files_rewritten;
    let target = NonZeroU64::new(TARGET_FILE_BYTES).unwrap_or(NonZeroU64::MIN);
    let (table, metrics) = table
        .optimize()
        .with_target_size(target)
        .with_writer_properties(lake::writer_properties())
        .await?;
    report.files_added = metrics.num_files_added;
    report.files_removed = metrics.num_files_removed;
    let (_, vacuumed) = table
        .vacuum()
        .with_retention_period(chrono::Duration::hours(RETENTION_HOURS))
        .await?;
    report.files_vacuumed = vacuumed.files_deleted.len();
    Ok(report)
}

/// Every project that has a table (or staged events on their way to one).
pub async fn teams_to_compact(state: &AppState) -> Result<Vec<i64>, CommitError> {
    let mut teams = lake::teams_with_tables(state).await?;
    teams.extend(teams_with_staging(state.objects.as_ref()).await?);
    teams.sort_unstable();
    teams.dedup();
    Ok(teams)
}

/// Compacts every project, one after another.
pub async fn compact_all(state: &AppState) -> Result<Vec<CompactionReport>, CommitError> {
    let mut reports = Vec::new();
    for team_id in teams_to_compact(state).await? {
        reports.push(compact_team(state, team_id).await?);
    }
    Ok(reports)
}
