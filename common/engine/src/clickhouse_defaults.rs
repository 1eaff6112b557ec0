//! Where ClickHouse answers a type's default value and SQL answers NULL: an aggregate that saw no
//! rows (`sum`, `min`, `max`, `any`, `argMax`... of a non-Nullable argument are 0, `''` or
//! 1970-01-01; `groupArray` is `[]`), and the unmatched side of an outer join (ClickHouse's
//! `join_use_nulls = 0`, which PostHog keeps). A NULL there can only mean "no row", because the
//! argument or column cannot be NULL itself, so the rule wraps those outputs in
//! `coalesce(x, default)` after type coercion, when every type is known.

use std::sync::Arc;

use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::{Transformed, TransformedResult};
use datafusion::common::{Column, DFSchema, Result, ScalarValue};
use datafusion::logical_expr::expr::AggregateFunction;
use datafusion::logical_expr::{Expr, ExprSchemable, JoinType, LogicalPlan, Projection, lit};
use datafusion::optimizer::AnalyzerRule;

/// DataFusion's names of the aggregates that ClickHouse answers with a default over no rows.
const DEFAULT_ON_EMPTY: &[&str] = &[
    "sum",
    "min",
    "max",
    "first_value",
    "last_value",
    "bit_and",
    "bit_or",
    "bit_xor",
];
/// `groupArray`: `[]` over no rows, whatever its argument.
const EMPTY_ARRAY_ON_EMPTY: &str = "array_agg";

#[derive(Debug, Default)]
pub struct ClickHouseDefaults;

impl AnalyzerRule for ClickHouseDefaults {
    fn analyze(&self, plan: LogicalPlan, _: &ConfigOptions) -> Result<LogicalPlan> {
        plan.transform_up_with_subqueries(with_defaults).data()
    }

    fn name(&self) -> &str {
        "clickhouse_defaults"
    }
}

fn with_defaults(plan: LogicalPlan) -> Result<Transformed<LogicalPlan>> {
    let defaults: Vec<Option<ScalarValue>> = match &plan {
        LogicalPlan::Aggregate(aggregate) => {
            let input = aggregate.input.schema();
            let groups = aggregate.group_expr.len();
            let mut defaults = vec![None; groups];
            for expr in &aggregate.aggr_expr {
                defaults.push(aggregate_default(expr, input, &plan)?);
            }
            defaults
        }
        LogicalPlan::Join(join) => {
            let (left, right) = match join.join_type {
                JoinType::Left => (false, true),
                JoinType::Right => (true, false),
                JoinType::Full => (true, true),
                _ => return Ok(Transformed::no(plan)),
            };
            let mut defaults = unmatched_defaults(join.left.schema(), left)?;
            defaults.extend(unmatched_defaults(join.right.schema(), right)?);
            defaults
        }
        _ => return Ok(Transformed::no(plan)),
    };
    let schema = plan.schema().clone();
    if defaults.iter().all(Option::is_none) || defaults.len() != schema.fields().len() {
        return Ok(Transformed::no(plan));
    }
    let exprs = schema
        .iter()
        .zip(defaults)
        .map(|((qualifier, field), default)| {
            let column = Expr::Column(Column::new(qualifier.cloned(), field.name()));
            match default {
                None => column,
                Some(value) => datafusion::functions::expr_fn::coalesce(vec![column, lit(value)])
                    .alias_qualified(qualifier.cloned(), field.name()),
            }
        })
        .collect();
    let projection = Projection::try_new(exprs, Arc::new(plan))?;
    Ok(Transformed::yes(LogicalPlan::Projection(projection)))
}

/// The default an aggregate answers over no rows in ClickHouse, where SQL answers NULL.
fn aggregate_default(
    expr: &Expr,
    input: &DFSchema,
    plan: &LogicalPlan,
) -> Result<Option<ScalarValue>> {
    let inner = match expr {
        Expr::Alias(alias) => alias.expr.as_ref(),
        other => other,
    };
    let Expr::AggregateFunction(AggregateFunction { func, params }) = inner else {
        return Ok(None);
    };
    let name = func.name();
    let Some(argument) = params.args.first() else {
        return Ok(None);
    };
    let output_type = expr.get_type(input).or_else(|_| {
        // An aggregate's type as the node's own schema has it.
        plan.schema()
            .field_with_unqualified_name(&expr.schema_name().to_string())
            .map(|field| field.data_type().clone())
    })?;
    if name == EMPTY_ARRAY_ON_EMPTY {
        return Ok(ScalarValue::new_default(&output_type).ok());
    }
    if DEFAULT_ON_EMPTY.contains(&name) && !argument.nullable(input)? {
        return Ok(ScalarValue::new_default(&output_type).ok());
    }
    Ok(None)
}

/// For each column of one side of an outer join: its default when that side may go unmatched
/// and the column itself cannot be NULL.
fn unmatched_defaults(
    schema: &DFSchema,
    may_be_unmatched: bool,
) -> Result<Vec<Option<ScalarValue>>> {
    Ok(schema
        .fields()
        .iter()
        .map(|field| {
            (may_be_unmatched && !field.is_nullable())
                .then(|| ScalarValue::new_default(field.data_type()).ok())
                .flatten()
        })
        .collect())
}
