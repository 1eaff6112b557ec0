//! Deleting deleted persons' events (the persons API's `delete_events`): compaction takes the
//! pending requests and deletes, in one Delta commit, every row of those persons, including rows
//! of persons merged into them whose overrides are not squashed yet. A request is dropped only
//! after its rows are gone, so a compaction cut short deletes them next time.

use common::AppState;
use common::models::person;
use datafusion::logical_expr::{col, lit};
use deltalake_core::DeltaTable;
use lake_core::{LakeError, person_overrides};
use uuid::Uuid;

use crate::table;

#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct EraseReport {
    pub persons: u64,
    pub rows_deleted: u64,
}

pub async fn erase_deleted_persons(
    state: &AppState,
    team_id: i64,
    table: DeltaTable,
) -> Result<(DeltaTable, EraseReport), LakeError> {
    let store = state.store.as_ref();
    let requests = person::event_deletions(store, team_id).await?;
    if requests.is_empty() {
        return Ok((table, EraseReport::default()));
    }
    let deleted: Vec<Uuid> = requests.iter().map(|request| request.person).collect();
    let overrides = person_overrides::override_list(store, team_id).await?;
    let targets = person_overrides::resolve_chains(&overrides);
    let mut ids: Vec<Uuid> = deleted.clone();
    ids.extend(
        targets
            .iter()
            .filter(|(_, target)| deleted.contains(target))
            .map(|(old, _)| *old),
    );
    let ids = ids.iter().map(|id| lit(id.to_string())).collect();
    let (table, metrics) = table
        .delete()
        .with_predicate(col("person_id").in_list(ids, false))
        .with_writer_properties(table::writer_properties())
        .await?;
    person::forget_event_deletions(store, team_id, &deleted).await?;
    Ok((
        table,
        EraseReport {
            persons: deleted.len() as u64,
            rows_deleted: metrics.num_deleted_rows.unwrap_or(0) as u64,
        },
    ))
}
