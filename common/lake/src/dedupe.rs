//! Events sent twice carry the same uuid: an SDK retries a request whose answer it never got,
//! or an export is imported again. The committer drops repeats within a commit; across commits,
//! compaction rewrites each day that holds a repeat with its first copy only (the one committed
//! first), much as PostHog's ReplacingMergeTree does when it merges. A rewrite is one Delta
//! commit (the day's files removed, the new ones added), so every snapshot a query reads holds
//! each event once or, before the rewrite, as committed; a commit racing the rewrite makes
//! the rewrite fail and the next run tries again.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use chrono::NaiveDate;
use datafusion::arrow::array::{Array, AsArray, RecordBatch};
use datafusion::arrow::datatypes::{DataType, Date32Type};
use datafusion::common::Column;
use datafusion::execution::runtime_env::RuntimeEnvBuilder;
use datafusion::execution::session_state::SessionStateBuilder;
use datafusion::functions_window::expr_fn::row_number;
use datafusion::logical_expr::{ExprFunctionExt, col, lit};
use datafusion::prelude::{DataFrame, Expr, SessionContext};
use deltalake_core::protocol::SaveMode;
use deltalake_core::{DeltaTable, DeltaTableError};

use crate::table::PARTITION_COLUMN;

/// The rows one deduplication removed.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct DedupeReport {
    pub days_rewritten: u64,
    pub rows_removed: u64,
}

/// Keeps the cause (DataFusion, Arrow, a date) as the source.
fn generic(error: impl Into<Box<dyn std::error::Error + Send + Sync>>) -> DeltaTableError {
    DeltaTableError::GenericError {
        source: error.into(),
    }
}

/// Days written by more than one commit: only they can hold a repeat the committer missed.
fn days_with_several_files(table: &DeltaTable) -> Result<BTreeSet<String>, DeltaTableError> {
    let mut files: BTreeMap<String, usize> = BTreeMap::new();
    for uri in table.get_file_uris()? {
        let day = uri
            .split('/')
            .find_map(|part| part.strip_prefix(&format!("{PARTITION_COLUMN}=")))
            .map(str::to_owned);
        if let Some(day) = day {
            *files.entry(day).or_default() += 1;
        }
    }
    Ok(files
        .into_iter()
        .filter(|(_, count)| *count > 1)
        .map(|(day, _)| day)
        .collect())
}

async fn events(ctx: &SessionContext, table: &DeltaTable) -> Result<DataFrame, DeltaTableError> {
    let provider = table
        .table_provider()
        .with_session(Arc::new(ctx.state()))
        .await?;
    ctx.read_table(provider).map_err(generic)
}

fn day_literal(day: &str) -> Result<Expr, DeltaTableError> {
    let date = NaiveDate::parse_from_str(day, "%Y-%m-%d").map_err(generic)?;
    Ok(lit(datafusion::scalar::ScalarValue::Date32(Some(
        Date32Type::from_naive_date(date),
    ))))
}

/// Memory for counting one day's uuids before the count spills to disk.
const MEMORY_BYTES: usize = 512 << 20;

/// A day's repeated uuids, and how many rows beyond their first copies they make.
#[derive(Default)]
struct Repeats {
    uuids: Vec<String>,
    extra_rows: u64,
}

/// The uuids that occur more than once on `day`.
async fn repeats(
    ctx: &SessionContext,
    table: &DeltaTable,
    day: &str,
) -> Result<Repeats, DeltaTableError> {
    let batches: Vec<RecordBatch> = events(ctx, table)
        .await?
        .filter(col(PARTITION_COLUMN).eq(day_literal(day)?))
        .and_then(|frame| {
            frame.aggregate(
                vec![col("uuid")],
                vec![datafusion::functions_aggregate::count::count(lit(1)).alias("copies")],
            )
        })
        .and_then(|frame| frame.filter(col("copies").gt(lit(1i64))))
        .map_err(generic)?
        .collect()
        .await
        .map_err(generic)?;
    let mut found = Repeats::default();
    for batch in batches {
        let cast = |i: usize, to: &DataType| {
            datafusion::arrow::compute::cast(batch.column(i), to).map_err(generic)
        };
        let (uuids, copies) = (cast(0, &DataType::Utf8)?, cast(1, &DataType::UInt64)?);
        let uuids = uuids.as_string::<i32>();
        let copies = copies.as_primitive::<datafusion::arrow::datatypes::UInt64Type>();
        for row in 0..batch.num_rows() {
            if !uuids.is_null(row) {
                found.uuids.push(uuids.value(row).to_owned());
                found.extra_rows += copies.value(row).saturating_sub(1);
            }
        }
    }
    Ok(found)
}

/// Counting a day's uuids holds them all: bounded, and spilled to disk past the bound.
fn session() -> Result<SessionContext, DeltaTableError> {
    let runtime = RuntimeEnvBuilder::new()
        .with_memory_limit(MEMORY_BYTES, 1.0)
        .build_arc()
        .map_err(generic)?;
    let state = SessionStateBuilder::new()
        .with_runtime_env(runtime)
        .with_default_features()
        .build();
    Ok(SessionContext::new_with_state(state))
}

/// Rewrites `day` keeping one copy of each of `uuids` (the first committed).
async fn rewrite_day(
    ctx: &SessionContext,
    table: DeltaTable,
    day: &str,
    uuids: Vec<String>,
) -> Result<DeltaTable, DeltaTableError> {
    let frame = events(ctx, &table).await?;
    let columns: Vec<Expr> = frame
        .schema()
        .fields()
        .iter()
        .map(|field| Expr::Column(Column::new_unqualified(field.name())))
        .collect();
    let on_day = col(PARTITION_COLUMN).eq(day_literal(day)?);
    let repeated: Vec<Expr> = uuids.into_iter().map(lit).collect();
    let singles = frame
        .clone()
        .filter(
            on_day
                .clone()
                .and(col("uuid").in_list(repeated.clone(), true)),
        )
        .map_err(generic)?;
    let first = row_number()
        .partition_by(vec![col("uuid")])
        .order_by(vec![
            col("created_at").sort(true, false),
            col("timestamp").sort(true, false),
        ])
        .build()
        .map_err(generic)?
        .alias("copy");
    let firsts = frame
        .filter(on_day.clone().and(col("uuid").in_list(repeated, false)))
        .and_then(|f| f.window(vec![first]))
        .and_then(|f| f.filter(col("copy").eq(lit(1u64))))
        .and_then(|f| f.select(columns))
        .map_err(generic)?;
    let plan = singles
        .union(firsts)
        .map_err(generic)?
        .into_unoptimized_plan();
    table
        .write(Vec::new())
        .with_input_plan(plan)
        .with_writer_properties(crate::table::writer_properties())
        .with_save_mode(SaveMode::Overwrite)
        .with_replace_where(on_day)
        .await
}

/// Removes repeated uuids from the days written by several commits.
pub async fn deduplicate(table: DeltaTable) -> Result<(DeltaTable, DedupeReport), DeltaTableError> {
    let mut report = DedupeReport::default();
    let days = days_with_several_files(&table)?;
    if days.is_empty() {
        return Ok((table, report));
    }
    let ctx = session()?;
    let mut table = table;
    for day in days {
        let repeats = repeats(&ctx, &table, &day).await?;
        if repeats.uuids.is_empty() {
            continue;
        }
        table = rewrite_day(&ctx, table, &day, repeats.uuids).await?;
        report.days_rewritten += 1;
        report.rows_removed += repeats.extra_rows;
    }
    Ok((table, report))
}
