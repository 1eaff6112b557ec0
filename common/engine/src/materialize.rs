//! Materialized results: a saved query run once, whole, stored as one Parquet object, then served
//! as the query itself would answer, without touching the events.
//!
//! [`plan`] turns the query into what is stored: its top-level LIMIT / OFFSET dropped (kept as
//! the [`Slice`] served later) and, when it has a variable, the comparison
//! `expr = {variables.x}` of its top-level WHERE taken out and `expr` kept as a column instead
//! (grouped by, when the query aggregates), so one stored result answers every value.
//! [`write`] stores the rows in their order; [`serve`] filters by the variable's value and cuts
//! the slice in that order.

use std::ops::ControlFlow;
use std::sync::Arc;

use bytes::Bytes;
use chrono_tz::Tz;
use datafusion::arrow::array::{ArrayRef, RecordBatch, UInt64Array};
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::common::ScalarValue;
use datafusion::parquet::arrow::ArrowWriter;
use datafusion::parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use datafusion::prelude::{SessionConfig, SessionContext, col, lit};
use datafusion::sql::sqlparser::ast::{
    BinaryOperator, Expr, GroupByExpr, Ident, LimitClause, Query, SelectItem, SetExpr, Visit,
    Visitor,
};
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt, PutPayload};
use serde::{Deserialize, Serialize};
use serde_json::Value as Json;

use crate::constants::constant_u64;
use crate::parse::{self, PLACEHOLDER_PREFIX};
use crate::{
    Bindings, DEFAULT_LIMIT, MAX_LIMIT, Output, Page, Prepared, QueryError, Window, functions,
};

/// The column a variable's expression is stored in.
pub const VARIABLE_COLUMN: &str = "__variable";
/// The row's place in the query's order.
const ROW_COLUMN: &str = "__row";
/// The most rows one materialization stores.
pub const MAX_ROWS: u64 = 1_000_000;

/// The rows the query answers out of its whole result.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Slice {
    /// A page whose extra row tells `hasMore` (the query has no LIMIT, or a caller's page).
    Page { limit: u64, offset: u64 },
    /// The query's own LIMIT and OFFSET.
    Fixed { limit: u64, offset: u64 },
}

/// What a materialization runs.
pub struct Plan {
    pub prepared: Prepared,
    /// The rows the query answers by itself (a caller's page replaces it).
    pub slice: Slice,
}

/// The query `text` as a materialization runs it, the variable `variable` (a code name) turned
/// into [`VARIABLE_COLUMN`]. A query that cannot be materialized is a [`QueryError::Query`]
/// saying why.
pub fn plan(text: &str, bindings: &Bindings, variable: Option<&str>) -> Result<Plan, QueryError> {
    let mut parsed = parse::parse(text)?;
    let query = parsed.query.as_mut();
    let slice = take_limit(query, variable.is_some())?;
    let mut bindings = bindings.clone();
    if let Some(code_name) = variable {
        let path = format!("variables.{code_name}");
        let slots: Vec<String> = parsed
            .placeholders
            .iter()
            .enumerate()
            .filter(|(_, p)| **p == path)
            .map(|(index, _)| format!("{PLACEHOLDER_PREFIX}{index}"))
            .collect();
        if slots.is_empty() {
            return Err(QueryError::Query(format!(
                "Variable '{code_name}' not found in query"
            )));
        }
        lift_variable(query, &slots, code_name)?;
        // The comparison is gone; the placeholder's binding is still looked up.
        bindings
            .variables
            .entry(code_name.to_owned())
            .or_insert(Json::Null);
    }
    let prepared =
        crate::prepare::prepare_parsed(parsed, &bindings, Window::All { rows: MAX_ROWS })?;
    Ok(Plan { prepared, slice })
}

/// The rows `text` answers by itself (its top-level LIMIT / OFFSET, else the default page).
pub fn slice(text: &str) -> Result<Slice, QueryError> {
    let mut parsed = parse::parse(text)?;
    take_limit(parsed.query.as_mut(), false)
}

/// The code names of the variables `text` uses (`{variables.x}`), each once, in order.
pub fn variables(text: &str) -> Result<Vec<String>, QueryError> {
    let mut names: Vec<String> = Vec::new();
    for path in parse::parse(text)?.placeholders {
        if let Some(name) = path.strip_prefix("variables.")
            && !names.iter().any(|known| known == name)
        {
            names.push(name.to_owned());
        }
    }
    Ok(names)
}

fn cannot(reason: impl Into<String>) -> QueryError {
    QueryError::Query(reason.into())
}

/// Drops the top-level LIMIT / OFFSET (a LIMIT BY stays), answering the slice they meant.
fn take_limit(query: &mut Query, has_variable: bool) -> Result<Slice, QueryError> {
    let default = Slice::Page {
        limit: DEFAULT_LIMIT,
        offset: 0,
    };
    let (limit, offset) = match query.limit_clause.take() {
        None => return Ok(default),
        Some(LimitClause::LimitOffset {
            limit,
            offset,
            limit_by,
        }) => {
            if !limit_by.is_empty() {
                if has_variable {
                    return Err(cannot(
                        "A query with LIMIT BY cannot be materialized with a variable",
                    ));
                }
                query.limit_clause = Some(LimitClause::LimitOffset {
                    limit,
                    offset,
                    limit_by,
                });
                return Ok(default);
            }
            let limit = match limit {
                Some(limit) => constant_u64(&limit, "LIMIT")?,
                None => MAX_LIMIT,
            };
            let offset = match offset {
                Some(offset) => constant_u64(&offset.value, "OFFSET")?,
                None => 0,
            };
            (limit, offset)
        }
        Some(LimitClause::OffsetCommaLimit { offset, limit }) => (
            constant_u64(&limit, "LIMIT")?,
            constant_u64(&offset, "OFFSET")?,
        ),
    };
    Ok(Slice::Fixed {
        limit: limit.min(MAX_LIMIT),
        offset,
    })
}

/// Takes `expr = {variables.x}` out of the top-level WHERE and keeps `expr` as a column.
fn lift_variable(query: &mut Query, slots: &[String], code_name: &str) -> Result<(), QueryError> {
    let shape = || {
        cannot(format!(
            "Variable '{code_name}' can be materialized only when the query is one SELECT that uses it once, as `expression = {{variables.{code_name}}}` in its top-level WHERE"
        ))
    };
    let SetExpr::Select(select) = query.body.as_mut() else {
        return Err(shape());
    };
    let Some(selection) = select.selection.take() else {
        return Err(shape());
    };
    let mut conjuncts = Vec::new();
    split_and(selection, &mut conjuncts);
    let is_slot = |expr: &Expr| matches!(unnest(expr), Expr::Identifier(ident) if ident.quote_style.is_none() && slots.contains(&ident.value));
    let position = conjuncts.iter().position(|conjunct| {
        matches!(conjunct, Expr::BinaryOp { left, op: BinaryOperator::Eq, right }
            if is_slot(left) != is_slot(right))
    });
    let Some(position) = position else {
        return Err(shape());
    };
    let Expr::BinaryOp { left, right, .. } = conjuncts.remove(position) else {
        return Err(shape());
    };
    let expr = if is_slot(&left) { *right } else { *left };
    select.selection = conjuncts.into_iter().reduce(|a, b| Expr::BinaryOp {
        left: Box::new(a),
        op: BinaryOperator::And,
        right: Box::new(b),
    });
    let mut found = Found {
        slots,
        slot: false,
        window: false,
        aggregate: false,
    };
    let _ = Visit::visit(&*query, &mut found);
    let _ = Visit::visit(&expr, &mut found);
    if found.slot {
        return Err(shape());
    }
    if found.window {
        return Err(cannot(
            "A query with window functions cannot be materialized with a variable",
        ));
    }
    let SetExpr::Select(select) = query.body.as_mut() else {
        return Err(shape());
    };
    select.projection.push(SelectItem::ExprWithAlias {
        expr: expr.clone(),
        alias: Ident::with_quote('"', VARIABLE_COLUMN),
    });
    match &mut select.group_by {
        GroupByExpr::All(_) => {}
        GroupByExpr::Expressions(exprs, modifiers) => {
            if !modifiers.is_empty() {
                return Err(cannot(
                    "A query with GROUP BY modifiers cannot be materialized with a variable",
                ));
            }
            if !exprs.is_empty() || found.aggregate || select.having.is_some() {
                exprs.push(expr);
            }
        }
    }
    Ok(())
}

fn unnest(expr: &Expr) -> &Expr {
    match expr {
        Expr::Nested(inner) => unnest(inner),
        other => other,
    }
}

fn split_and(expr: Expr, out: &mut Vec<Expr>) {
    match expr {
        Expr::BinaryOp {
            left,
            op: BinaryOperator::And,
            right,
        } => {
            split_and(*left, out);
            split_and(*right, out);
        }
        Expr::Nested(inner)
            if matches!(
                *inner,
                Expr::BinaryOp {
                    op: BinaryOperator::And,
                    ..
                }
            ) =>
        {
            split_and(*inner, out)
        }
        other => out.push(other),
    }
}

/// What the rest of the query holds: the variable again, window functions, aggregates (of the
/// top-level SELECT or anywhere: a subquery's aggregate only makes the check stricter).
struct Found<'a> {
    slots: &'a [String],
    slot: bool,
    window: bool,
    aggregate: bool,
}

impl Visitor for Found<'_> {
    type Break = ();

    fn pre_visit_expr(&mut self, expr: &Expr) -> ControlFlow<()> {
        match expr {
            Expr::Identifier(ident) if self.slots.contains(&ident.value) => self.slot = true,
            Expr::Function(function) => {
                if function.over.is_some() {
                    self.window = true;
                } else if let [part] = function.name.0.as_slice()
                    && let Some(ident) = part.as_ident()
                    && functions::is_aggregate(&ident.value)
                {
                    self.aggregate = true;
                }
            }
            _ => {}
        }
        ControlFlow::Continue(())
    }
}

/// Stores a materialization's result at `path` in one write (so a reader sees the old object or
/// the new one, never half of one), each row numbered in the query's order. Answers the rows.
pub async fn write(
    objects: &dyn ObjectStore,
    path: &Path,
    schema: SchemaRef,
    batches: Vec<RecordBatch>,
) -> Result<u64, QueryError> {
    let rows: u64 = batches.iter().map(|b| b.num_rows() as u64).sum();
    if rows > MAX_ROWS {
        return Err(cannot(format!(
            "The result has more than {MAX_ROWS} rows, too many to materialize"
        )));
    }
    let mut fields: Vec<Field> = schema.fields().iter().map(|f| f.as_ref().clone()).collect();
    fields.push(Field::new(ROW_COLUMN, DataType::UInt64, false));
    let numbered = Arc::new(Schema::new_with_metadata(fields, schema.metadata().clone()));
    let mut buffer = Vec::new();
    let mut writer =
        ArrowWriter::try_new(&mut buffer, numbered.clone(), None).map_err(QueryError::internal)?;
    let mut next = 0u64;
    for batch in batches {
        let count = batch.num_rows() as u64;
        let mut columns: Vec<ArrayRef> = batch.columns().to_vec();
        columns.push(Arc::new(UInt64Array::from_iter_values(next..next + count)));
        next += count;
        let batch =
            RecordBatch::try_new(numbered.clone(), columns).map_err(QueryError::internal)?;
        writer.write(&batch).map_err(QueryError::internal)?;
    }
    writer.close().map_err(QueryError::internal)?;
    objects
        .put(path, PutPayload::from(buffer))
        .await
        .map_err(QueryError::internal)?;
    Ok(rows)
}

/// Whether a variable's value can be looked up in the stored column (a constant; NULL and lists
/// are answered by running the query).
pub fn filterable(value: &Json) -> bool {
    matches!(value, Json::String(_) | Json::Number(_) | Json::Bool(_))
}

/// The stored result at `path` as the query answers it: the rows whose variable equals `value`
/// (all of them without one), cut to `slice`, in the query's order.
pub async fn serve(
    objects: &dyn ObjectStore,
    path: &Path,
    value: Option<&Json>,
    slice: Slice,
    zone: Tz,
) -> Result<Output, QueryError> {
    let started = std::time::Instant::now();
    let bytes: Bytes = objects
        .get(path)
        .await
        .map_err(QueryError::internal)?
        .bytes()
        .await
        .map_err(QueryError::internal)?;
    let read_bytes = bytes.len() as u64;
    let reader = ParquetRecordBatchReaderBuilder::try_new(bytes)
        .and_then(|builder| builder.build())
        .map_err(QueryError::internal)?;
    let batches = reader
        .collect::<Result<Vec<_>, _>>()
        .map_err(QueryError::internal)?;
    let read_rows = batches.iter().map(|b| b.num_rows() as u64).sum();
    // One partition: the rows keep their stored order through the filter.
    let ctx = SessionContext::new_with_config(SessionConfig::new().with_target_partitions(1));
    let mut frame = ctx.read_batches(batches).map_err(QueryError::internal)?;
    if let Some(value) = value {
        let scalar = match value {
            Json::String(text) => ScalarValue::Utf8(Some(text.clone())),
            Json::Bool(flag) => ScalarValue::Boolean(Some(*flag)),
            Json::Number(n) => match (n.as_i64(), n.as_u64(), n.as_f64()) {
                (Some(i), _, _) => ScalarValue::Int64(Some(i)),
                (None, Some(u), _) => ScalarValue::UInt64(Some(u)),
                (_, _, Some(f)) => ScalarValue::Float64(Some(f)),
                _ => return Err(cannot("The variable's value cannot be compared")),
            },
            _ => return Err(cannot("The variable's value cannot be compared")),
        };
        frame = frame
            .filter(col(format!("\"{VARIABLE_COLUMN}\"")).eq(lit(scalar)))
            .map_err(crate::error::classify)?;
    }
    let (skip, fetch) = match slice {
        Slice::Page { limit, offset } => (offset, limit + 1),
        Slice::Fixed { limit, offset } => (offset, limit),
    };
    let columns: Vec<String> = frame
        .schema()
        .fields()
        .iter()
        .map(|f| f.name().clone())
        .filter(|name| name != VARIABLE_COLUMN && name != ROW_COLUMN)
        .collect();
    let selected: Vec<&str> = columns.iter().map(String::as_str).collect();
    let frame = frame
        .sort(vec![col(ROW_COLUMN).sort(true, false)])
        .and_then(|f| f.limit(skip as usize, Some(fetch as usize)))
        .and_then(|f| f.select_columns(&selected))
        .map_err(crate::error::classify)?;
    let schema = frame.schema().as_arrow().clone();
    let batches = frame.collect().await.map_err(crate::error::classify)?;
    let page = match slice {
        Slice::Page { limit, offset } => Some(Page { limit, offset }),
        Slice::Fixed { .. } => None,
    };
    Ok(Output {
        read_rows,
        read_bytes,
        timings: vec![(".".into(), started.elapsed().as_secs_f64())],
        ..Output::shaped(&schema, &batches, zone, page)
    })
}

impl From<Page> for Slice {
    fn from(page: Page) -> Self {
        Slice::Page {
            limit: page.limit.min(MAX_LIMIT),
            offset: page.offset,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn planned(text: &str, variable: Option<&str>) -> Result<(String, Slice), String> {
        let mut bindings = Bindings::default();
        bindings
            .variables
            .insert("e".into(), Json::String("x".into()));
        plan(text, &bindings, variable)
            .map(|plan| (plan.prepared.sql, plan.slice))
            .map_err(|e| e.to_string())
    }

    #[test]
    fn the_variables_comparison_becomes_a_grouped_column() {
        let (sql, slice) = planned(
            "select count() from events where timestamp > '2020-01-01' and event = {variables.e}",
            Some("e"),
        )
        .unwrap();
        assert!(sql.contains("AS \"__variable\""), "{sql}");
        assert!(sql.contains("GROUP BY"), "{sql}");
        assert!(!sql.contains("'x'"), "{sql}");
        assert_eq!(
            slice,
            Slice::Page {
                limit: 100,
                offset: 0
            }
        );
        let (sql, slice) = planned(
            "select event from events where {variables.e} = event order by event limit 5 offset 2",
            Some("e"),
        )
        .unwrap();
        assert!(!sql.contains("GROUP BY"), "{sql}");
        assert!(sql.contains(&format!("LIMIT {}", MAX_ROWS + 1)), "{sql}");
        assert_eq!(
            slice,
            Slice::Fixed {
                limit: 5,
                offset: 2
            }
        );
    }

    #[test]
    fn variables_used_otherwise_cannot_be_materialized() {
        for text in [
            "select 1 from events where event = {variables.e} or true",
            "select {variables.e} from events where event = {variables.e}",
            "select event from events where event = {variables.e} union all select 'a'",
            "select row_number() over () from events where event = {variables.e}",
            "select 1 from events",
        ] {
            assert!(planned(text, Some("e")).is_err(), "{text}");
        }
        assert!(planned("select 1 from events", None).is_ok());
    }
}
