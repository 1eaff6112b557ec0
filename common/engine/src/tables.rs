//! The only tables a project's query can see, registered into a fresh DataFusion session per
//! query: `events` (a view over the project's own Delta table), `persons`, `query_log`.
//! Nothing else is in the catalog, so another project's data cannot be named at all.

use std::sync::Arc;

use chrono::Duration;
use common::AppState;
use datafusion::arrow::array::{
    ArrayRef, BooleanArray, Date32Array, Float64Array, Int64Array, RecordBatch, StringArray,
    TimestampMicrosecondArray, UInt64Array,
};
use datafusion::arrow::datatypes::{DataType, Field, Schema, TimeUnit};
use datafusion::catalog::MemTable;
use datafusion::catalog::view::ViewTable;
use datafusion::common::Column;
use datafusion::functions::core::expr_fn::coalesce;
use datafusion::logical_expr::{Expr, JoinType, lit};
use datafusion::prelude::SessionContext;

use lake_core::person_overrides;
use lake_core::query_log::{self, QueryLogRecord};
use lake_core::{shred, table};
use uuid::Uuid;

use crate::{QueryError, persons_table};

pub const EVENTS: &str = "events";
pub const PERSONS: &str = "persons";
pub const QUERY_LOG: &str = "query_log";
pub const ALL: &[&str] = &[EVENTS, PERSONS, QUERY_LOG];
/// The events view's name for the table's `date` partition column, hidden from `*`.
pub const DAY_COLUMN: &str = "__date";

const RAW_EVENTS: &str = "__events_raw";
/// Columns of the person overrides joined to the events (names no query can collide with).
const OVERRIDE_OLD: &str = "__override_old_person_id";
const OVERRIDE_NEW: &str = "__override_new_person_id";

/// The table version the events table was read at (part of cache keys).
pub struct Registered {
    pub events_version: Option<u64>,
    /// The shredded columns the events table's files hold (empty when none, or shredding off).
    pub coverage: shred::Coverage,
}

pub(crate) fn utc_micros() -> DataType {
    DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into()))
}

/// Registers the tables `used` names. Event times are typed in the project's time zone, so date
/// functions (`toStartOfDay(timestamp)`, `toDate`, ...) and naive date literals compared with them
/// follow the project's calendar, as in PostHog.
pub async fn register(
    ctx: &SessionContext,
    state: &AppState,
    team_id: i64,
    zone: &str,
    used: &[String],
) -> Result<Registered, QueryError> {
    let mut registered = Registered {
        events_version: None,
        coverage: Default::default(),
    };
    if used.iter().any(|t| t == EVENTS) {
        (registered.events_version, registered.coverage) =
            register_events(ctx, state, team_id, zone).await?;
    }
    if used.iter().any(|t| t == PERSONS) {
        let events_version = match used.iter().any(|t| t == EVENTS) {
            true => registered.events_version,
            false => table::current(state, team_id)
                .await
                .map_err(internal)?
                .and_then(|table| table.version()),
        };
        persons_table::register(ctx, state, team_id, events_version).await?;
    }
    if used.iter().any(|t| t == QUERY_LOG) {
        register_query_log(ctx, state, team_id).await?;
    }
    Ok(registered)
}

fn internal(e: impl Into<Box<dyn std::error::Error + Send + Sync>>) -> QueryError {
    QueryError::internal(e)
}

async fn register_events(
    ctx: &SessionContext,
    state: &AppState,
    team_id: i64,
    zone: &str,
) -> Result<(Option<u64>, shred::Coverage), QueryError> {
    // The table this process already read, brought up to date: only new commits are read.
    let table = table::current(state, team_id).await.map_err(internal)?;
    let version = table.as_ref().and_then(|t| t.version());
    let mut coverage = shred::Coverage::default();
    match table {
        Some(table) => {
            if shred::enabled(state) {
                let registry = shred::registry::load(state.store.as_ref(), team_id)
                    .await
                    .map_err(internal)?;
                coverage = shred::Coverage::of(&table, &registry).map_err(internal)?;
            }
            table
                .update_datafusion_session(&ctx.state())
                .map_err(internal)?;
            // The session's Parquet settings (no late materialization) apply to the scan too.
            let provider = table
                .table_provider()
                .with_session(Arc::new(ctx.state()))
                .await
                .map_err(internal)?;
            ctx.register_table(RAW_EVENTS, provider).map_err(internal)?;
        }
        None => {
            let schema = table::arrow_schema();
            let empty = MemTable::try_new(schema, vec![vec![]]).map_err(internal)?;
            ctx.register_table(RAW_EVENTS, Arc::new(empty))
                .map_err(internal)?;
        }
    }
    let column = |name: &str| Expr::Column(Column::new_unqualified(name));
    let zoned = |name: &str| {
        Expr::Cast(datafusion::logical_expr::Cast::new(
            Box::new(column(name)),
            DataType::Timestamp(TimeUnit::Microsecond, Some(zone.into())),
        ))
        .alias(name)
    };
    let mut raw = ctx.table(RAW_EVENTS).await.map_err(internal)?;
    // Rows of merged-away persons count as the person they were merged into.
    let overrides = person_overrides::overrides(state.store.as_ref(), team_id)
        .await
        .map_err(internal)?;
    let person_id = if overrides.is_empty() {
        column("person_id")
    } else {
        // Nullable: an event whose person was never merged has no override, and the coalesce
        // below reads that as NULL (ClickHouse's defaults leave a Nullable column NULL).
        let schema = Arc::new(Schema::new(vec![
            Field::new(OVERRIDE_OLD, DataType::Utf8, true),
            Field::new(OVERRIDE_NEW, DataType::Utf8, true),
        ]));
        let columns: Vec<ArrayRef> = vec![
            Arc::new(StringArray::from_iter_values(
                overrides.keys().map(Uuid::to_string),
            )),
            Arc::new(StringArray::from_iter_values(
                overrides.values().map(Uuid::to_string),
            )),
        ];
        let batch = RecordBatch::try_new(schema.clone(), columns).map_err(internal)?;
        let table = MemTable::try_new(schema, vec![vec![batch]]).map_err(internal)?;
        let overrides = ctx.read_table(Arc::new(table)).map_err(internal)?;
        raw = raw
            .join(
                overrides,
                JoinType::Left,
                &["person_id"],
                &[OVERRIDE_OLD],
                None,
            )
            .map_err(internal)?;
        coalesce(vec![column(OVERRIDE_NEW), column("person_id")]).alias("person_id")
    };
    let mut projection = vec![
        column("uuid"),
        column("event"),
        column("properties"),
        zoned("timestamp"),
        column("distinct_id"),
        column("elements_chain"),
        zoned("created_at"),
        column("$session_id"),
        person_id,
        column("person_properties"),
        lit(team_id).alias("team_id"),
        // Read only by the day-bound rewrite, and hidden from `*` there.
        column("date").alias(DAY_COLUMN),
    ];
    // Read only by the shredded-property rewrite, and hidden from `*` there.
    projection.extend(coverage.columns().map(column));
    let plan = raw
        .select(projection)
        .map_err(internal)?
        .into_unoptimized_plan();
    let view = ViewTable::new(plan, None);
    ctx.register_table(EVENTS, Arc::new(view))
        .map_err(internal)?;
    Ok((version, coverage))
}

/// How far back the `query_log` table reaches.
const QUERY_LOG_DAYS: i64 = 30;

async fn register_query_log(
    ctx: &SessionContext,
    state: &AppState,
    team_id: i64,
) -> Result<(), QueryError> {
    let since = state.clock.now() - Duration::days(QUERY_LOG_DAYS);
    let records = query_log::since(&state.store, team_id, since)
        .await
        .map_err(internal)?;
    let batch = query_log_batch(&records).map_err(internal)?;
    let table = MemTable::try_new(batch.schema(), vec![vec![batch]]).map_err(internal)?;
    ctx.register_table(QUERY_LOG, Arc::new(table))
        .map_err(internal)?;
    Ok(())
}

fn query_log_batch(records: &[QueryLogRecord]) -> datafusion::common::Result<RecordBatch> {
    let text = |f: &dyn Fn(&QueryLogRecord) -> Option<String>| -> ArrayRef {
        Arc::new(StringArray::from_iter(records.iter().map(f)))
    };
    let count = |f: &dyn Fn(&QueryLogRecord) -> u64| -> ArrayRef {
        Arc::new(UInt64Array::from_iter_values(records.iter().map(f)))
    };
    let epoch = chrono::NaiveDate::from_ymd_opt(1970, 1, 1).unwrap_or_default();
    let fields = vec![
        Field::new("event_date", DataType::Date32, false),
        Field::new("event_time", utc_micros(), false),
        Field::new("query_id", DataType::Utf8, false),
        Field::new("endpoint", DataType::Utf8, false),
        Field::new("query", DataType::Utf8, false),
        Field::new("kind", DataType::Utf8, false),
        Field::new("query_start_time", utc_micros(), false),
        Field::new("query_duration_ms", DataType::Float64, false),
        Field::new("name", DataType::Utf8, true),
        Field::new("created_by", DataType::Utf8, true),
        Field::new("read_rows", DataType::UInt64, false),
        Field::new("read_bytes", DataType::UInt64, false),
        Field::new("result_rows", DataType::UInt64, false),
        Field::new("result_bytes", DataType::UInt64, false),
        Field::new("memory_usage", DataType::UInt64, false),
        Field::new("status", DataType::Utf8, false),
        Field::new("exception_code", DataType::Int64, false),
        Field::new("exception_name", DataType::Utf8, true),
        Field::new("exception", DataType::Utf8, true),
        Field::new("is_personal_api_key_request", DataType::Boolean, false),
        Field::new("api_key_label", DataType::Utf8, true),
        Field::new("api_key_mask", DataType::Utf8, true),
        Field::new("engine", DataType::Utf8, false),
    ];
    let start = |r: &QueryLogRecord| r.query_start_time.timestamp_micros();
    let columns: Vec<ArrayRef> = vec![
        Arc::new(Date32Array::from_iter_values(records.iter().map(|r| {
            (r.query_start_time.date_naive() - epoch).num_days() as i32
        }))),
        Arc::new(
            TimestampMicrosecondArray::from_iter_values(records.iter().map(start))
                .with_timezone("UTC"),
        ),
        text(&|r| Some(r.query_id.clone())),
        text(&|r| Some(r.endpoint.clone())),
        text(&|r| Some(r.query.clone())),
        text(&|r| Some(r.kind.clone())),
        Arc::new(
            TimestampMicrosecondArray::from_iter_values(records.iter().map(start))
                .with_timezone("UTC"),
        ),
        Arc::new(Float64Array::from_iter_values(
            records.iter().map(|r| r.query_duration_ms),
        )),
        text(&|r| r.name.clone()),
        text(&|r| r.created_by.clone()),
        count(&|r| r.read_rows),
        count(&|r| r.read_bytes),
        count(&|r| r.result_rows),
        count(&|r| r.result_bytes),
        count(&|r| r.memory_usage),
        text(&|r| Some(r.status.clone())),
        Arc::new(Int64Array::from_iter_values(
            records.iter().map(|r| r.exception_code),
        )),
        text(&|r| r.exception_name.clone()),
        text(&|r| r.exception.clone()),
        Arc::new(BooleanArray::from_iter(
            records.iter().map(|r| Some(r.is_personal_api_key_request)),
        )),
        text(&|r| r.api_key_label.clone()),
        text(&|r| r.api_key_mask.clone()),
        text(&|r| Some(r.engine.clone())),
    ];
    Ok(RecordBatch::try_new(
        Arc::new(Schema::new(fields)),
        columns,
    )?)
}
