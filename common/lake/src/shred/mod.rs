//! Shredding: the properties queries read most get columns of their own in the events table,
//! so they are read without parsing JSON (PostHog's materialized columns, ClickHouse's JSON
//! paths). `properties` stays the source of truth: every row records in `__shred` which keys
//! its file holds, queries read a key's column only where that bit is set (the `engine` crate's
//! `shredded`), and compaction backfills older files. This is the writer's side:
//!
//! - [`observe`]: key frequencies at ingestion, and [`slow_queries`]: keys slow queries read,
//!   which fill the registry (lake-core's `shred::registry`, re-exported as [`registry`]);
//!   compaction also picks keys from a sample of a table's largest file (`crate::backfill`);
//! - [`write`]: the columns every writer adds to its batches (rewriting older files that lack
//!   active keys is `crate::backfill`).
//!
//! Which keys the files of a snapshot hold is lake-core's `shred::coverage` (the dialect reads it
//! too), re-exported as [`coverage`].

pub mod observe;
pub mod slow_queries;
pub mod write;

use common::AppState;
use deltalake_core::kernel::{DataType, StructField};
use deltalake_core::{DeltaTable, DeltaTableError};
use lake_core::LakeError;
pub use lake_core::shred::{
    ColumnType, Coverage, MASK_COLUMN, Origin, Registry, ShreddedKey, Source, arrow_type, coverage,
    enabled, registry, table_schema,
};

pub use observe::KeyCounts;
pub use write::Shredder;

/// Rows sampled before keys are picked: fewer say little about what is frequent.
pub const MIN_SAMPLED_ROWS: u64 = 500;
/// A key is shredded automatically when at least this share of the sampled rows has it.
const MIN_SHARE: f64 = 0.02;

/// The shredder a writer of the project's table uses now: the registry (first given the keys
/// `counts` found frequent, when it has room), with every column it names added to the table.
pub async fn prepare(
    state: &AppState,
    team_id: i64,
    table: &mut DeltaTable,
    counts: Option<&KeyCounts>,
) -> Result<Shredder, LakeError> {
    if !enabled(state) {
        return Ok(Shredder::new(None, table_schema(table)?.as_ref()));
    }
    let store = state.store.as_ref();
    let mut registry = registry::load(store, team_id).await?;
    if let Some(counts) = counts.filter(|c| c.sampled() >= MIN_SAMPLED_ROWS) {
        let candidates = counts.candidates(MIN_SHARE);
        let room = registry.active().count() < registry::MAX_ACTIVE_KEYS;
        let new = candidates.iter().any(|(source, key, _)| {
            registry::shreddable(key) && registry.find(*source, key).is_none()
        });
        if room && new {
            registry = registry::add_candidates(
                store,
                team_id,
                &candidates,
                Origin::Ingestion,
                state.clock.now(),
            )
            .await?;
        }
    }
    if let Some(counts) = counts {
        let names = counts.event_names();
        let coded: std::collections::HashSet<&str> =
            registry.events.iter().map(String::as_str).collect();
        let event_key = registry.find(Source::Event, registry::EVENT_KEY).is_some();
        let uncoded = names.iter().any(|name| !coded.contains(name.as_str()));
        if !names.is_empty() && (!event_key || (uncoded && !registry.events_overflowed)) {
            registry = registry::code_events(store, team_id, &names, state.clock.now()).await?;
        }
    }
    ensure_columns(table, &registry).await?;
    Ok(Shredder::new(
        Some(&registry),
        table_schema(table)?.as_ref(),
    ))
}

/// After a write: names without a code get one, and typed keys whose values did not fit become
/// text keys (see [`registry::demote`]).
pub async fn settle(state: &AppState, team_id: i64, shredder: &Shredder) -> Result<(), LakeError> {
    let uncoded = shredder.uncoded();
    if !uncoded.is_empty() {
        registry::code_events(state.store.as_ref(), team_id, &uncoded, state.clock.now()).await?;
    }
    let misfits = shredder.misfits();
    if misfits.is_empty() {
        return Ok(());
    }
    tracing::info!(
        team_id,
        ?misfits,
        "shredded keys whose values no longer fit their type become text"
    );
    registry::demote(state.store.as_ref(), team_id, &misfits, state.clock.now()).await?;
    Ok(())
}

/// Adds the mask and the active keys' columns the table lacks (one metadata commit).
pub async fn ensure_columns(
    table: &mut DeltaTable,
    registry: &Registry,
) -> Result<(), DeltaTableError> {
    for attempt in 0..3 {
        let schema = table_schema(table)?;
        let has = |name: &str| schema.field_with_name(name).is_ok();
        let mut missing = Vec::new();
        if registry.active().next().is_some() && !has(MASK_COLUMN) {
            missing.push(StructField::new(MASK_COLUMN, DataType::LONG, true));
        }
        for key in registry.active().filter(|k| !has(&k.column)) {
            let kind = match key.column_type {
                ColumnType::String => DataType::STRING,
                ColumnType::Int64 => DataType::LONG,
                ColumnType::Float64 => DataType::DOUBLE,
                ColumnType::Boolean => DataType::BOOLEAN,
            };
            missing.push(StructField::new(key.column.clone(), kind, true));
        }
        if missing.is_empty() {
            return Ok(());
        }
        match table.clone().add_columns().with_fields(missing).await {
            Ok(updated) => {
                *table = updated;
                return Ok(());
            }
            // Another writer changed the table (maybe adding the same columns): look again.
            Err(error) if attempt < 2 => {
                tracing::debug!(%error, "adding shredded columns raced; retrying");
                table.update_incremental(None).await?;
            }
            Err(error) => return Err(error),
        }
    }
    Ok(())
}

/// Bytes of column data in local Parquet files, and how many of them shredded columns take
/// (from the footers): what shredding costs in storage.
pub fn column_bytes(files: &[std::path::PathBuf]) -> Result<(u64, u64), DeltaTableError> {
    use deltalake_core::parquet::file::reader::{FileReader, SerializedFileReader};
    let (mut total, mut shredded) = (0u64, 0u64);
    for path in files {
        let file =
            std::fs::File::open(path).map_err(|e| DeltaTableError::Generic(e.to_string()))?;
        let reader = SerializedFileReader::new(file)?;
        for group in reader.metadata().row_groups() {
            for column in group.columns() {
                let bytes = column.compressed_size().max(0) as u64;
                total += bytes;
                let name = column.column_path().string();
                if name.starts_with("p_") || name.starts_with("pp_") || name == MASK_COLUMN {
                    shredded += bytes;
                }
            }
        }
    }
    Ok((total, shredded))
}
