//! Per-actor aggregates (funnels, paths) aggregate in one phase. DataFusion plans every grouped aggregation as a partial phase
//! per input partition, a hash repartition of the partial states, and a final phase. A funnel's
//! partial phase reduces nothing (its state is every event it was given), so each row was packed
//! into a state, sent on, unpacked and merged: in `perf` that was more time than the grouping
//! and the funnel's own evaluation together. The rule rewrites
//! `FinalPartitioned(Repartition(Hash(keys)) ← Partial(input))` into
//! `SinglePartitioned(Repartition(Hash(key expressions)) ← input)`: the rows themselves are
//! hashed to partitions and aggregated once, by the same accumulators, into the same output.

use std::sync::Arc;

use datafusion::common::Result;
use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::{Transformed, TreeNode};
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_expr::expressions::Column;
use datafusion::physical_optimizer::PhysicalOptimizerRule;
use datafusion::physical_plan::aggregates::{AggregateExec, AggregateMode, PhysicalGroupBy};
use datafusion::physical_plan::projection::ProjectionExec;
use datafusion::physical_plan::repartition::RepartitionExec;
use datafusion::physical_plan::{ExecutionPlan, Partitioning};

use crate::{funnel, paths};

/// The aggregates whose state is every row they were given.
const ONE_PHASE: [&str; 2] = [funnel::NAME, paths::NAME];

/// Whether the query text calls one of them (its partial phase is then skipped).
pub(crate) fn calls_one_phase_aggregate(sql: &str) -> bool {
    ONE_PHASE.iter().any(|name| sql.contains(name))
}

#[derive(Debug, Default)]
pub struct SinglePhaseActorAggregates;

impl PhysicalOptimizerRule for SinglePhaseActorAggregates {
    fn optimize(
        &self,
        plan: Arc<dyn ExecutionPlan>,
        _config: &ConfigOptions,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        plan.transform_up(|node| match single_phase(&node)? {
            Some(rewritten) => Ok(Transformed::yes(rewritten)),
            None => Ok(Transformed::no(node)),
        })
        .map(|transformed| transformed.data)
    }

    fn name(&self) -> &str {
        "single_phase_actor_aggregates"
    }

    fn schema_check(&self) -> bool {
        true
    }
}

/// The one-phase plan of a final aggregation with a per-actor aggregate among its aggregates, when its input
/// is the hash repartition of a partial phase with plain group keys.
fn single_phase(node: &Arc<dyn ExecutionPlan>) -> Result<Option<Arc<dyn ExecutionPlan>>> {
    let Some(last) = node.downcast_ref::<AggregateExec>() else {
        return Ok(None);
    };
    if *last.mode() != AggregateMode::FinalPartitioned
        || !last
            .aggr_expr()
            .iter()
            .any(|aggregate| ONE_PHASE.contains(&aggregate.fun().name()))
    {
        return Ok(None);
    }
    let Some(repartition) = last.input().downcast_ref::<RepartitionExec>() else {
        return Ok(None);
    };
    let Partitioning::Hash(_, partitions) = repartition.partitioning() else {
        return Ok(None);
    };
    let Some(first) = repartition.input().downcast_ref::<AggregateExec>() else {
        return Ok(None);
    };
    let group_by = first.group_expr();
    if *first.mode() != AggregateMode::Partial
        || !group_by.is_single()
        || group_by.expr().is_empty()
        || first.limit_options().is_some()
    {
        return Ok(None);
    }
    let (input, group_by) = with_keys_computed(first.input(), group_by)?;
    let keys = group_by.expr().iter().map(|(expr, _)| Arc::clone(expr));
    let rows = Arc::new(RepartitionExec::try_new(
        Arc::clone(&input),
        Partitioning::Hash(keys.collect(), *partitions),
    )?);
    let once = AggregateExec::try_new(
        AggregateMode::SinglePartitioned,
        group_by,
        first.aggr_expr().to_vec(),
        first.filter_expr().to_vec(),
        rows,
        input.schema(),
    )?;
    Ok(Some(Arc::new(once)))
}

/// The input and grouping to repartition and aggregate by. Group keys that are computed (a
/// funnel's actor given as an expression or a property) would be computed twice, once to hash
/// each row to its partition and once to group it: they are computed once instead, as columns
/// after the input's, and grouped by as columns. The aggregates' arguments keep naming the
/// input's columns by position.
fn with_keys_computed(
    input: &Arc<dyn ExecutionPlan>,
    group_by: &PhysicalGroupBy,
) -> Result<(Arc<dyn ExecutionPlan>, PhysicalGroupBy)> {
    let computed = |expr: &Arc<dyn PhysicalExpr>| expr.downcast_ref::<Column>().is_none();
    if !group_by.expr().iter().any(|(expr, _)| computed(expr)) {
        return Ok((Arc::clone(input), group_by.clone()));
    }
    let schema = input.schema();
    let mut columns: Vec<(Arc<dyn PhysicalExpr>, String)> = schema
        .fields()
        .iter()
        .enumerate()
        .map(|(index, field)| {
            let column: Arc<dyn PhysicalExpr> = Arc::new(Column::new(field.name(), index));
            (column, field.name().clone())
        })
        .collect();
    let mut keys = Vec::with_capacity(group_by.expr().len());
    for (index, (expr, name)) in group_by.expr().iter().enumerate() {
        let column_name = format!("__group_key_{index}");
        let key: Arc<dyn PhysicalExpr> = Arc::new(Column::new(&column_name, columns.len()));
        columns.push((Arc::clone(expr), column_name));
        keys.push((key, name.clone()));
    }
    let projected = ProjectionExec::try_new(columns, Arc::clone(input))?;
    Ok((Arc::new(projected), PhysicalGroupBy::new_single(keys)))
}

#[cfg(test)]
mod tests {
    use datafusion::arrow::array::{Int64Array, RecordBatch, StringArray};
    use datafusion::arrow::datatypes::{DataType, Field, Schema};
    use datafusion::arrow::util::pretty::pretty_format_batches;
    use datafusion::datasource::MemTable;
    use datafusion::execution::SessionStateBuilder;
    use datafusion::physical_plan::displayable;
    use datafusion::prelude::{SessionConfig, SessionContext};

    use super::*;

    fn context(single_phase: bool) -> SessionContext {
        let config = SessionConfig::new()
            .with_target_partitions(3)
            .with_batch_size(5);
        let mut builder = SessionStateBuilder::new()
            .with_config(config)
            .with_default_features();
        if single_phase {
            builder = builder.with_physical_optimizer_rule(Arc::new(SinglePhaseActorAggregates));
        }
        let ctx = SessionContext::new_with_state(builder.build());
        ctx.register_udaf(funnel::aggregate_funnel());
        ctx
    }

    /// 40 actors over three steps, spread over several partitions and batches.
    fn events() -> Result<MemTable> {
        let schema = Arc::new(Schema::new(vec![
            Field::new("actor", DataType::Utf8, true),
            Field::new("step", DataType::Int64, false),
            Field::new("micros", DataType::Int64, false),
        ]));
        let (mut actors, mut steps, mut times) = (Vec::new(), Vec::new(), Vec::new());
        for row in 0..400i64 {
            let actor = row % 40;
            actors.push((actor != 7).then(|| format!("person-{actor}")));
            steps.push((row * 7 + actor) % 3);
            times.push(row * 1_000_000 * (1 + actor % 5));
        }
        let batch = RecordBatch::try_new(
            Arc::clone(&schema),
            vec![
                Arc::new(StringArray::from(actors)),
                Arc::new(Int64Array::from(steps)),
                Arc::new(Int64Array::from(times)),
            ],
        )?;
        let partitions = (0..4)
            .map(|part| vec![batch.slice(part * 100, 100)])
            .collect();
        MemTable::try_new(schema, partitions)
    }

    const FUNNEL: &str = "SELECT actor, hogql_aggregate_funnel(3, 60, 'ordered', \
         arrow_cast(micros, 'Timestamp(Microsecond, None)'), \
         CASE WHEN step = 0 THEN 1 WHEN step = 1 THEN 2 ELSE 4 END, 0) AS funnel, count() AS n \
         FROM events GROUP BY actor ORDER BY actor";

    async fn run(single_phase: bool) -> Result<(String, String)> {
        run_sql(single_phase, FUNNEL).await
    }

    async fn run_sql(single_phase: bool, sql: &str) -> Result<(String, String)> {
        let ctx = context(single_phase);
        ctx.register_table("events", Arc::new(events()?))?;
        let frame = ctx.sql(sql).await?;
        let plan = frame.clone().create_physical_plan().await?;
        let plan = displayable(plan.as_ref()).indent(false).to_string();
        let results = pretty_format_batches(&frame.collect().await?)?.to_string();
        Ok((plan, results))
    }

    #[tokio::test]
    async fn a_funnel_aggregates_once_with_the_same_answer() -> Result<()> {
        let (two_phase_plan, two_phase) = run(false).await?;
        let (plan, results) = run(true).await?;
        assert!(two_phase_plan.contains("mode=Partial"), "{two_phase_plan}");
        assert!(plan.contains("mode=SinglePartitioned"), "{plan}");
        assert!(!plan.contains("mode=Partial"), "{plan}");
        assert_eq!(results, two_phase);
        // 39 actors and the rows without one, in a table of four border lines.
        assert_eq!(results.lines().count(), 40 + 4, "{results}");
        Ok(())
    }

    #[tokio::test]
    async fn a_computed_key_is_computed_once_with_the_same_answer() -> Result<()> {
        let keyed = FUNNEL.replace("SELECT actor,", "SELECT upper(actor) AS key,");
        let keyed = keyed.replace("GROUP BY actor ORDER BY actor", "GROUP BY key ORDER BY key");
        let (_, two_phase) = run_sql(false, &keyed).await?;
        let (plan, results) = run_sql(true, &keyed).await?;
        assert!(plan.contains("mode=SinglePartitioned"), "{plan}");
        // One projection computes the key; the repartition and the grouping read its column.
        assert_eq!(plan.matches("upper(actor@0)").count(), 1, "{plan}");
        assert!(plan.contains("Hash([__group_key_0@3]"), "{plan}");
        assert_eq!(results, two_phase);
        assert_eq!(results.lines().count(), 40 + 4, "{results}");
        Ok(())
    }

    #[tokio::test]
    async fn other_aggregations_keep_their_two_phases() -> Result<()> {
        let ctx = context(true);
        ctx.register_table("events", Arc::new(events()?))?;
        let frame = ctx
            .sql("SELECT actor, count() FROM events GROUP BY actor")
            .await?;
        let plan = frame.create_physical_plan().await?;
        let plan = displayable(plan.as_ref()).indent(false).to_string();
        assert!(plan.contains("mode=Partial"), "{plan}");
        Ok(())
    }
}
