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
use datafusion::functions_window::expr_fn::row_number;
use datafusion::logical_expr::{ExprFunctionExt, col, lit};
use datafusion::prelude::{DataFrame, Expr, SessionContext};
use deltalake_core::protocol::SaveMode;
use deltalake_core::{DeltaTable, DeltaTableError};

use crate::lake::PARTITION_COLUMN;

/// The rows one deduplication removed.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct DedupeReport {
    pub days_rewritten: u64,
    pub rows_removed: u64,
}

fn generic(error: impl std::fmt::Display) -> DeltaTableError {
    DeltaTableError::Generic(error.to_string())
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

/// A day's repeated uuids, and how many rows beyond their first copies they make.
#[derive(Default)]
struct Repeats {
    uuids: Vec<String>,
    extra_rows: u64,
}

/// The uuids that occur more than once, by day, among `days`.
async fn repeats(
    ctx: &SessionContext,
    table: &DeltaTable,
    days: &BTreeSet<String>,
) -> Result<BTreeMap<String, Repeats>, DeltaTableError> {
    let days: Vec<Expr> = days
        .iter()
        .map(|d| day_literal(d))
        .collect::<Result<_, _>>()?;
    let batches: Vec<RecordBatch> = events(ctx, table)
        .await?
        .filter(col(PARTITION_COLUMN).in_list(days, false))
        .and_then(|frame| {
            frame.aggregate(
                vec![col(PARTITION_COLUMN), col("uuid")],
                vec![datafusion::functions_aggregate::count::count(lit(1)).alias("copies")],
            )
        })
        .and_then(|frame| frame.filter(col("copies").gt(lit(1i64))))
        .and_then(|frame| {
            frame.select(vec![
                datafusion::functions::expr_fn::to_char(col(PARTITION_COLUMN), lit("%Y-%m-%d"))
                    .alias("day"),
                col("uuid"),
                col("copies"),
            ])
        })
        .map_err(generic)?
        .collect()
        .await
        .map_err(generic)?;
    let mut found: BTreeMap<String, Repeats> = BTreeMap::new();
    for batch in batches {
        let cast = |i: usize, to: &DataType| {
            datafusion::arrow::compute::cast(batch.column(i), to).map_err(generic)
        };
        let (days, uuids) = (cast(0, &DataType::Utf8)?, cast(1, &DataType::Utf8)?);
        let copies = cast(2, &DataType::UInt64)?;
        let (days, uuids) = (days.as_string::<i32>(), uuids.as_string::<i32>());
        let copies = copies.as_primitive::<datafusion::arrow::datatypes::UInt64Type>();
        for row in 0..batch.num_rows() {
            if days.is_null(row) || uuids.is_null(row) {
                continue;
            }
            let day = found.entry(days.value(row).to_owned()).or_default();
            day.uuids.push(uuids.value(row).to_owned());
            day.extra_rows += copies.value(row).saturating_sub(1);
        }
    }
    Ok(found)
}

/// Rewrites `day` keeping one copy of each of `uuids` (the first committed).
async fn rewrite_day(
    table: DeltaTable,
    day: &str,
    uuids: Vec<String>,
) -> Result<DeltaTable, DeltaTableError> {
    let ctx = SessionContext::new();
    let frame = events(&ctx, &table).await?;
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
    let ctx = SessionContext::new();
    let found = repeats(&ctx, &table, &days).await?;
    let mut table = table;
    for (day, repeats) in found {
        table = rewrite_day(table, &day, repeats.uuids).await?;
        report.days_rewritten += 1;
        report.rows_removed += repeats.extra_rows;
    }
    Ok((table, report))
}
