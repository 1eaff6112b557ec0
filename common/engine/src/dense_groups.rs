//! Grouping by event code without hashing. Event codes are small positive integers (an index
//! into the project's event registry), so the first phase of a `GROUP BY event_code` can find
//! each row's group in a table indexed by the code itself. DataFusion hashes every key instead:
//! for "top events" over 10 million rows that hashing was most of the query's time. Rows come
//! in runs of one code (files are sorted by code), so the last key is checked first.
//!
//! The rule swaps a partial `AggregateExec` grouped by `event_code` for [`DenseGroupsExec`],
//! which feeds the same accumulators and emits the same partial state, so the final phase is
//! DataFusion's own. Keys outside the table's range (never written as codes, but nothing stops
//! a table from holding them) go through a map, so every answer stays exact.

use std::fmt;
use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, AsArray, Int64Array, RecordBatch};
use datafusion::arrow::datatypes::{DataType, Int64Type, SchemaRef};
use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::{Transformed, TreeNode, TreeNodeRecursion};
use datafusion::common::{Result, internal_err};
use datafusion::execution::TaskContext;
use datafusion::execution::memory_pool::{MemoryConsumer, MemoryReservation};
use datafusion::logical_expr::{EmitTo, GroupsAccumulator};
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_expr::expressions::{Column, Literal};
use datafusion::physical_optimizer::PhysicalOptimizerRule;
use datafusion::physical_plan::aggregates::{
    AggregateExec, AggregateMode, aggregate_expressions, evaluate_many,
};
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::{
    DisplayAs, DisplayFormatType, ExecutionPlan, PlanProperties, SendableRecordBatchStream,
};
use futures::{StreamExt, TryStreamExt};

use lake_core::shred::registry::EVENT_CODE_COLUMN;

/// Keys below this are looked up by position (a table of at most 64K entries).
const DIRECT_KEYS: i64 = 1 << 16;

/// Replaces partial aggregations grouped by `event_code` alone with [`DenseGroupsExec`].
#[derive(Debug, Default)]
pub struct DenseGroups;

impl PhysicalOptimizerRule for DenseGroups {
    fn optimize(
        &self,
        plan: Arc<dyn ExecutionPlan>,
        _config: &ConfigOptions,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        plan.transform_up(|node| match node.downcast_ref::<AggregateExec>() {
            Some(aggregate) if groups_by_code(aggregate) => Ok(Transformed::yes(Arc::new(
                DenseGroupsExec::new(aggregate.clone()),
            )
                as _)),
            _ => Ok(Transformed::no(node)),
        })
        .map(|transformed| transformed.data)
    }

    fn name(&self) -> &str {
        "dense_groups"
    }

    fn schema_check(&self) -> bool {
        true
    }
}

/// A first phase grouped by the code column alone, whose aggregates all have group
/// accumulators and need no ordering, distinct values or group limit.
fn groups_by_code(aggregate: &AggregateExec) -> bool {
    let group_by = aggregate.group_expr();
    let [(key, _)] = group_by.expr() else {
        return false;
    };
    *aggregate.mode() == AggregateMode::Partial
        && group_by.is_single()
        && aggregate.limit_options().is_none()
        && aggregate.dynamic_expressions_produced().is_empty()
        && key
            .downcast_ref::<Column>()
            .is_some_and(|column| column.name() == EVENT_CODE_COLUMN)
        && key
            .data_type(&aggregate.input_schema())
            .is_ok_and(|data_type| data_type == DataType::Int64)
        && aggregate.aggr_expr().iter().all(|expr| {
            expr.groups_accumulator_supported()
                && !expr.is_distinct()
                && expr.order_bys().is_empty()
        })
}

/// The first phase of an aggregation grouped by `event_code`: what the `AggregateExec` it
/// replaces would emit (its schema, properties and expressions are that plan's).
#[derive(Debug)]
pub struct DenseGroupsExec {
    aggregate: AggregateExec,
}

impl DenseGroupsExec {
    pub fn new(aggregate: AggregateExec) -> Self {
        Self { aggregate }
    }

    /// The partial aggregation it computes (how a cluster's codec carries it).
    pub fn aggregate(&self) -> &AggregateExec {
        &self.aggregate
    }
}

impl DisplayAs for DenseGroupsExec {
    fn fmt_as(&self, format: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "DenseGroupsExec: ")?;
        self.aggregate.fmt_as(format, f)
    }
}

impl ExecutionPlan for DenseGroupsExec {
    fn name(&self) -> &str {
        "DenseGroupsExec"
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        self.aggregate.properties()
    }

    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        vec![self.aggregate.input()]
    }

    fn apply_expressions(
        &self,
        f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> Result<TreeNodeRecursion>,
    ) -> Result<TreeNodeRecursion> {
        self.aggregate.apply_expressions(f)
    }

    #[allow(deprecated)]
    fn with_new_children(
        self: Arc<Self>,
        children: Vec<Arc<dyn ExecutionPlan>>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let replaced = Arc::new(self.aggregate.clone()).with_new_children(children)?;
        match replaced.downcast_ref::<AggregateExec>() {
            Some(aggregate) => Ok(Arc::new(Self::new(aggregate.clone()))),
            None => internal_err!("an aggregation's new children made something else"),
        }
    }

    fn execute(
        &self,
        partition: usize,
        context: Arc<TaskContext>,
    ) -> Result<SendableRecordBatchStream> {
        let input = self.aggregate.input().execute(partition, context.clone())?;
        let reservation = MemoryConsumer::new(format!("DenseGroupsExec[{partition}]"))
            .register(context.memory_pool());
        let groups = Groups::new(&self.aggregate)?;
        let schema = self.schema();
        let batch_size = context.session_config().batch_size().max(1);
        let output = futures::stream::once(groups.run(input, reservation, schema.clone()))
            .map_ok(move |batch| {
                let slices: Vec<Result<RecordBatch>> = (0..batch.num_rows())
                    .step_by(batch_size)
                    .map(|start| Ok(batch.slice(start, batch_size.min(batch.num_rows() - start))))
                    .collect();
                futures::stream::iter(slices)
            })
            .try_flatten();
        Ok(Box::pin(RecordBatchStreamAdapter::new(schema, output)))
    }
}

/// The accumulators of one partition and what feeds them.
struct Groups {
    key: Arc<dyn PhysicalExpr>,
    keys: Keys,
    arguments: Vec<Vec<Arc<dyn PhysicalExpr>>>,
    filters: Vec<Option<Arc<dyn PhysicalExpr>>>,
    accumulators: Vec<Box<dyn GroupsAccumulator>>,
    /// Each row's group, for the batch being added.
    indices: Vec<usize>,
    /// Rows per group, when every aggregate counts rows (`count()`, `count(1)`): a run of one
    /// key is counted at once, with no group per row and no accumulator. On "count events by
    /// name" the accumulator's per-row update was a third of the aggregation.
    rows: Option<Vec<i64>>,
}

/// Whether every aggregate counts rows: `count` of a constant that is not NULL, unfiltered.
fn counts_rows(aggregate: &AggregateExec) -> bool {
    aggregate.filter_expr().iter().all(Option::is_none)
        && aggregate.aggr_expr().iter().all(|expr| {
            expr.fun().name() == "count"
                && !expr.is_distinct()
                && matches!(
                    &expr.expressions()[..],
                    [argument] if argument
                        .downcast_ref::<Literal>()
                        .is_some_and(|literal| !literal.value().is_null())
                )
        })
}

impl Groups {
    fn new(aggregate: &AggregateExec) -> Result<Self> {
        let Some((key, _)) = aggregate.group_expr().expr().first() else {
            return internal_err!("a dense grouping without a key");
        };
        Ok(Self {
            key: key.clone(),
            keys: Keys::default(),
            arguments: aggregate_expressions(aggregate.aggr_expr(), aggregate.mode(), 0)?,
            filters: aggregate.filter_expr().to_vec(),
            accumulators: aggregate
                .aggr_expr()
                .iter()
                .map(|expr| expr.create_groups_accumulator())
                .collect::<Result<_>>()?,
            indices: Vec::new(),
            rows: counts_rows(aggregate).then(Vec::new),
        })
    }

    /// Adds every input batch, then answers the groups' keys and partial states.
    async fn run(
        mut self,
        mut input: SendableRecordBatchStream,
        reservation: MemoryReservation,
        schema: SchemaRef,
    ) -> Result<RecordBatch> {
        while let Some(batch) = input.next().await {
            self.add(&batch?)?;
            reservation.try_resize(self.size())?;
        }
        let mut columns: Vec<ArrayRef> = vec![Arc::new(self.keys.finish())];
        if let Some(rows) = self.rows.take() {
            // A count's partial state is its Int64 count.
            let counts: ArrayRef = Arc::new(Int64Array::from(rows));
            columns.extend(self.accumulators.iter().map(|_| counts.clone()));
        } else {
            for accumulator in &mut self.accumulators {
                columns.extend(accumulator.state(EmitTo::All)?);
            }
        }
        Ok(RecordBatch::try_new(schema, columns)?)
    }

    fn add(&mut self, batch: &RecordBatch) -> Result<()> {
        let rows = batch.num_rows();
        let keys = self.key.evaluate(batch)?.into_array(rows)?;
        let Some(keys) = keys.as_primitive_opt::<Int64Type>() else {
            return internal_err!("event codes are not Int64");
        };
        if let Some(rows) = &mut self.rows {
            self.keys.count(keys, rows);
            return Ok(());
        }
        self.keys.intern(keys, &mut self.indices);
        let arguments = evaluate_many(&self.arguments, batch)?;
        for ((accumulator, values), filter) in self
            .accumulators
            .iter_mut()
            .zip(&arguments)
            .zip(&self.filters)
        {
            let filter = match filter {
                Some(filter) => Some(filter.evaluate(batch)?.into_array(rows)?),
                None => None,
            };
            let filter = filter.as_ref().and_then(|f| f.as_boolean_opt());
            accumulator.update_batch(values, &self.indices, filter, self.keys.len())?;
        }
        Ok(())
    }

    fn size(&self) -> usize {
        self.keys.size()
            + self.indices.capacity() * size_of::<usize>()
            + self
                .rows
                .as_ref()
                .map_or(0, |rows| rows.capacity() * size_of::<i64>())
            + self
                .accumulators
                .iter()
                .map(|accumulator| accumulator.size())
                .sum::<usize>()
    }
}

/// Each distinct key's group index, in order of first sight.
#[derive(Default)]
struct Keys {
    /// Group + 1 of each key in `0..DIRECT_KEYS` (0: not seen yet), grown as keys come.
    direct: Vec<usize>,
    /// Groups of the other keys.
    other: foldhash::HashMap<i64, usize>,
    null: Option<usize>,
    /// Each group's key.
    values: Vec<Option<i64>>,
}

impl Keys {
    fn len(&self) -> usize {
        self.values.len()
    }

    fn intern(&mut self, keys: &Int64Array, groups: &mut Vec<usize>) {
        groups.clear();
        groups.reserve(keys.len());
        if keys.null_count() == 0 {
            let mut last: Option<(i64, usize)> = None;
            for &key in keys.values() {
                let group = match last {
                    Some((seen, group)) if seen == key => group,
                    _ => self.group(key),
                };
                last = Some((key, group));
                groups.push(group);
            }
        } else {
            for key in keys {
                groups.push(match key {
                    Some(key) => self.group(key),
                    None => self.null_group(),
                });
            }
        }
    }

    /// Adds each key's rows to its group's count in `rows`, a run of one key at a time.
    fn count(&mut self, keys: &Int64Array, rows: &mut Vec<i64>) {
        // Groups are numbered in order of first sight: a new one is the next index.
        let mut add = |group: usize, count: usize| {
            if group >= rows.len() {
                rows.resize(group + 1, 0);
            }
            rows[group] += count as i64;
        };
        if keys.null_count() == 0 {
            for run in keys.values().chunk_by(|a, b| a == b) {
                add(self.group(run[0]), run.len());
            }
        } else {
            for key in keys {
                let group = match key {
                    Some(key) => self.group(key),
                    None => self.null_group(),
                };
                add(group, 1);
            }
        }
    }

    fn group(&mut self, key: i64) -> usize {
        if let Ok(slot) = usize::try_from(key)
            && key < DIRECT_KEYS
        {
            if slot >= self.direct.len() {
                self.direct.resize(slot + 1, 0);
            }
            if self.direct[slot] == 0 {
                self.values.push(Some(key));
                self.direct[slot] = self.values.len();
            }
            return self.direct[slot] - 1;
        }
        let next = self.values.len();
        let group = *self.other.entry(key).or_insert(next);
        if group == next {
            self.values.push(Some(key));
        }
        group
    }

    fn null_group(&mut self) -> usize {
        *self.null.get_or_insert_with(|| {
            self.values.push(None);
            self.values.len() - 1
        })
    }

    fn size(&self) -> usize {
        self.direct.capacity() * size_of::<usize>()
            + self.other.capacity() * size_of::<(i64, usize, u64)>()
            + self.values.capacity() * size_of::<Option<i64>>()
    }

    fn finish(&mut self) -> Int64Array {
        std::mem::take(&mut self.values).into_iter().collect()
    }
}

#[cfg(test)]
mod tests {
    use datafusion::arrow::array::Float64Array;
    use datafusion::arrow::datatypes::{Field, Schema};
    use datafusion::arrow::util::pretty::pretty_format_batches;
    use datafusion::datasource::MemTable;
    use datafusion::execution::SessionStateBuilder;
    use datafusion::physical_plan::displayable;
    use datafusion::prelude::{SessionConfig, SessionContext};

    use super::*;

    fn context(dense: bool) -> SessionContext {
        let config = SessionConfig::new()
            .with_target_partitions(2)
            .with_batch_size(7);
        let mut builder = SessionStateBuilder::new()
            .with_config(config)
            .with_default_features();
        if dense {
            builder = builder.with_physical_optimizer_rule(Arc::new(DenseGroups));
        }
        SessionContext::new_with_state(builder.build())
    }

    /// Codes in runs, out of order, NULL, negative and past the direct table; values with NULLs.
    fn table() -> MemTable {
        let schema = Arc::new(Schema::new(vec![
            Field::new(EVENT_CODE_COLUMN, DataType::Int64, true),
            Field::new("other", DataType::Int64, true),
            Field::new("amount", DataType::Float64, true),
        ]));
        let codes = [
            Some(3),
            Some(3),
            Some(3),
            Some(1),
            None,
            Some(-4),
            Some(1 << 40),
            Some(DIRECT_KEYS),
            Some(DIRECT_KEYS - 1),
            Some(0),
            Some(2),
            Some(2),
        ];
        let batch = |offset: i64| {
            let rows = codes.len() as i64;
            RecordBatch::try_new(
                schema.clone(),
                vec![
                    Arc::new(Int64Array::from(codes.to_vec())),
                    Arc::new(Int64Array::from_iter_values(offset..offset + rows)),
                    Arc::new(Float64Array::from_iter(
                        (0..rows).map(|i| (i % 5 != 0).then_some((offset + i) as f64 * 1.5)),
                    )),
                ],
            )
            .unwrap()
        };
        let partitions = vec![vec![batch(0), batch(100)], vec![batch(200)], vec![]];
        MemTable::try_new(schema, partitions).unwrap()
    }

    async fn answer(dense: bool, sql: &str) -> (String, String) {
        let ctx = context(dense);
        ctx.register_table("t", Arc::new(table())).unwrap();
        let frame = ctx.sql(sql).await.unwrap();
        let plan = frame.clone().create_physical_plan().await.unwrap();
        let shown = displayable(plan.as_ref()).indent(true).to_string();
        let batches = frame.collect().await.unwrap();
        (pretty_format_batches(&batches).unwrap().to_string(), shown)
    }

    #[tokio::test]
    async fn grouping_by_code_answers_what_hashing_answers() {
        for sql in [
            "select event_code, count(*) as c, sum(amount) as s, avg(amount) as a, \
               min(other) as lo, max(amount) as hi, count(amount) filter (where other > 105) as f \
             from t group by event_code order by event_code nulls first",
            "select event_code, count(*) from t where other % 2 = 0 group by event_code \
             order by 2 desc, 1 limit 3",
            "select event_code, count(*) from t where other < 0 group by event_code",
            // Counting rows alone takes the run-counting path.
            "select event_code, count(*) as c, count(1) as one from t group by event_code \
             order by event_code nulls first",
        ] {
            let (dense, plan) = answer(true, sql).await;
            let (hashed, hashed_plan) = answer(false, sql).await;
            assert_eq!(dense, hashed, "{sql}");
            assert!(plan.contains("DenseGroupsExec"), "{plan}");
            assert!(!hashed_plan.contains("DenseGroupsExec"));
        }
        // Aggregates it does not take (distinct, ordered) leave the plan to DataFusion; the
        // answers are the same either way.
        for sql in [
            "select event_code, count(distinct other) from t group by event_code order by 1",
            "select event_code, array_agg(other order by other) from t group by event_code \
             order by 1",
        ] {
            assert_eq!(
                answer(true, sql).await.0,
                answer(false, sql).await.0,
                "{sql}"
            );
        }
    }

    #[tokio::test]
    async fn other_groupings_keep_datafusions_plan() {
        for sql in [
            "select other, count(*) from t group by other",
            "select event_code, other, count(*) from t group by event_code, other",
        ] {
            let (_, plan) = answer(true, sql).await;
            assert!(!plan.contains("DenseGroupsExec"), "{sql}: {plan}");
        }
    }

    #[test]
    fn rows_are_counted_by_run_into_the_groups_keys_get() {
        let mut keys = Keys::default();
        let mut rows = Vec::new();
        keys.count(
            &Int64Array::from(vec![5, 5, 2, 5, 5, 5, 1 << 20]),
            &mut rows,
        );
        keys.count(
            &Int64Array::from(vec![None, Some(2), None, Some(7)]),
            &mut rows,
        );
        assert_eq!(rows, [5, 2, 1, 2, 1]);
        assert_eq!(
            keys.finish(),
            Int64Array::from(vec![Some(5), Some(2), Some(1 << 20), None, Some(7)])
        );
    }

    #[test]
    fn keys_get_groups_in_order_of_first_sight() {
        let mut keys = Keys::default();
        let mut groups = Vec::new();
        keys.intern(
            &Int64Array::from(vec![5, 5, 2, 5, -1, 1 << 20, -1]),
            &mut groups,
        );
        assert_eq!(groups, [0, 0, 1, 0, 2, 3, 2]);
        keys.intern(&Int64Array::from(vec![None, Some(2), None]), &mut groups);
        assert_eq!(groups, [4, 1, 4]);
        assert_eq!(
            keys.finish(),
            Int64Array::from(vec![Some(5), Some(2), Some(-1), Some(1 << 20), None])
        );
    }
}
