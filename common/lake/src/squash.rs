//! Squashing person overrides, as PostHog does: the rows of a merged-away person are rewritten
//! with the person they were merged into, and the override is dropped, so queries stop mapping
//! every row through the overrides. Only overrides older than a grace period are squashed: a
//! commit that resolved its persons before the merge may still be writing the old id.
//!
//! Each rewrite is one Delta commit (files holding such rows replaced), and an override is
//! dropped only after its rows were rewritten, so every query sees each event once, under its
//! surviving person, before, during and after.

use chrono::{DateTime, Utc};
use common::AppState;
use datafusion::logical_expr::{case, col, lit};
use deltalake_core::{DeltaTable, DeltaTableError};
use uuid::Uuid;

use lake_core::{LakeError, person_overrides};

use crate::table;

/// Overrides squashed per rewrite (each is a branch of one CASE over the rows it touches).
const OVERRIDES_PER_REWRITE: usize = 500;

#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct SquashReport {
    pub overrides_squashed: u64,
    pub rows_reassigned: u64,
}

/// Rewrites the rows of persons merged before `made_before` and drops their overrides.
pub async fn squash_overrides(
    state: &AppState,
    team_id: i64,
    table: DeltaTable,
    made_before: DateTime<Utc>,
) -> Result<(DeltaTable, SquashReport), LakeError> {
    let list = person_overrides::override_list(state.store.as_ref(), team_id).await?;
    let targets = person_overrides::resolve_chains(&list);
    let ripe: Vec<(Uuid, Uuid)> = list
        .iter()
        .filter(|o| o.at.is_none_or(|at| at < made_before))
        .filter_map(|o| targets.get(&o.old).map(|new| (o.old, *new)))
        .collect();
    let mut report = SquashReport::default();
    let mut table = table;
    for group in ripe.chunks(OVERRIDES_PER_REWRITE) {
        let (rewritten, rows) = reassign(table, group).await?;
        table = rewritten;
        report.rows_reassigned += rows;
        let olds: Vec<Uuid> = group.iter().map(|(old, _)| *old).collect();
        person_overrides::delete_overrides(state.store.as_ref(), team_id, &olds).await?;
        report.overrides_squashed += olds.len() as u64;
    }
    Ok((table, report))
}

/// One Delta update: rows of each old person get its new one.
async fn reassign(
    table: DeltaTable,
    moves: &[(Uuid, Uuid)],
) -> Result<(DeltaTable, u64), DeltaTableError> {
    let text = |id: &Uuid| lit(id.to_string());
    let mut mapping = case(col("person_id"));
    for (old, new) in moves {
        mapping.when(text(old), text(new));
    }
    let mapping = mapping.otherwise(col("person_id")).map_err(|error| {
        // The cause stays a source, not a flattened message.
        DeltaTableError::GenericError {
            source: Box::new(error),
        }
    })?;
    let olds = moves.iter().map(|(old, _)| text(old)).collect();
    let (table, metrics) = table
        .update()
        .with_predicate(col("person_id").in_list(olds, false))
        .with_update("person_id", mapping)
        .with_writer_properties(table::writer_properties())
        .await?;
    Ok((table, metrics.num_updated_rows as u64))
}
