//! `arrayJoin` (DataFusion's `unnest`) turns one row into several, so a key that was unique
//! before it (a subquery's GROUP BY key) is not unique after it. DataFusion 55's `Unnest` keeps
//! its input's functional dependencies anyway (apache/datafusion#24787, open), and the
//! optimizer rules that read them then change answers: `ORDER BY key, joined` loses its second
//! key (`eliminate_duplicated_expr`), a join on the key becomes a semi join (`eliminate_join`),
//! a DISTINCT on it is dropped (`replace_distinct_aggregate`). This rule clears the
//! dependencies of every `Unnest` and of the nodes above it; it runs before each rule that
//! reads them, since rebuilding an `Unnest` brings them back.
//!
//! The SQL planner has read them already: `GROUP BY key` over an unnest holds every column the
//! key was said to determine, the unnested one included, as extra keys. One projection pass
//! before the dependencies are cleared takes those keys out again (what it always did), so a
//! grouping by the key counts each key once.

use std::sync::Arc;

use datafusion::common::tree_node::{Transformed, TreeNode};
use datafusion::common::{FunctionalDependencies, Result};
use datafusion::logical_expr::LogicalPlan;
use datafusion::optimizer::optimize_projections::OptimizeProjections;
use datafusion::optimizer::optimizer::Optimizer;
use datafusion::optimizer::{OptimizerConfig, OptimizerRule};

/// The default rules that read functional dependencies.
const READERS: [&str; 4] = [
    "replace_distinct_aggregate",
    "eliminate_join",
    "eliminate_duplicated_expr",
    "optimize_projections",
];

/// DataFusion's logical optimizer rules, this one placed before each that reads dependencies.
pub(crate) fn optimizer_rules() -> Vec<Arc<dyn OptimizerRule + Send + Sync>> {
    let mut rules: Vec<Arc<dyn OptimizerRule + Send + Sync>> =
        vec![Arc::new(OptimizeProjections::new())];
    for rule in Optimizer::new().rules {
        if READERS.contains(&rule.name()) {
            rules.push(Arc::new(UnnestRowsAreNotUnique));
        }
        rules.push(rule);
    }
    rules
}

#[derive(Debug, Default)]
pub(crate) struct UnnestRowsAreNotUnique;

impl OptimizerRule for UnnestRowsAreNotUnique {
    fn name(&self) -> &str {
        "unnest_rows_are_not_unique"
    }

    fn supports_rewrite(&self) -> bool {
        true
    }

    fn rewrite(
        &self,
        plan: LogicalPlan,
        _config: &dyn OptimizerConfig,
    ) -> Result<Transformed<LogicalPlan>> {
        if !plan.exists(|node| Ok(claims_unique_rows(node)))? {
            return Ok(Transformed::no(plan));
        }
        // Bottom up: once an `Unnest` forgets, each node above derives its schema again from
        // inputs that no longer claim uniqueness (an aggregate above claims its own keys anew).
        plan.transform_up(|node| match node {
            LogicalPlan::Unnest(mut unnest) => {
                let schema = unnest
                    .schema
                    .as_ref()
                    .clone()
                    .with_functional_dependencies(FunctionalDependencies::empty())?;
                unnest.schema = Arc::new(schema);
                Ok(Transformed::yes(LogicalPlan::Unnest(unnest)))
            }
            node if node.inputs().is_empty() => Ok(Transformed::no(node)),
            node => node.recompute_schema().map(Transformed::yes),
        })
    }
}

fn claims_unique_rows(node: &LogicalPlan) -> bool {
    matches!(node, LogicalPlan::Unnest(unnest)
        if unnest.schema.functional_dependencies() != &FunctionalDependencies::empty())
}

#[cfg(test)]
mod tests {
    use datafusion::prelude::{SessionConfig, SessionContext};

    use super::*;

    async fn rows(ctx: &SessionContext, sql: &str) -> Vec<String> {
        let batches = ctx.sql(sql).await.unwrap().collect().await.unwrap();
        let shown = datafusion::arrow::util::pretty::pretty_format_batches(&batches)
            .unwrap()
            .to_string();
        shown.lines().map(str::to_owned).collect()
    }

    /// The shapes that lost rows or order with the dependencies kept, against the answers
    /// without the optimizer rules that read them.
    #[tokio::test]
    async fn keys_of_an_unnested_grouping_are_not_unique() {
        let state = datafusion::execution::SessionStateBuilder::new()
            .with_config(SessionConfig::new().with_target_partitions(2))
            .with_default_features()
            .with_optimizer_rules(optimizer_rules())
            .build();
        let ctx = SessionContext::new_with_state(state);
        ctx.sql("CREATE TABLE t AS SELECT v % 3 AS g FROM unnest(range(12)) AS r(v)")
            .await
            .unwrap()
            .collect()
            .await
            .unwrap();
        ctx.sql("CREATE TABLE k AS SELECT * FROM (VALUES (0), (1)) AS k(g)")
            .await
            .unwrap()
            .collect()
            .await
            .unwrap();
        let unnested = "SELECT g, unnest([3, 1, 2]) AS st FROM t GROUP BY g";
        let ordered = rows(
            &ctx,
            &format!("SELECT g, st FROM ({unnested}) ORDER BY g, st"),
        )
        .await;
        assert_eq!(
            ordered[3..12],
            [
                "| 0 | 1  |",
                "| 0 | 2  |",
                "| 0 | 3  |",
                "| 1 | 1  |",
                "| 1 | 2  |",
                "| 1 | 3  |",
                "| 2 | 1  |",
                "| 2 | 2  |",
                "| 2 | 3  |"
            ],
            "{ordered:#?}"
        );
        let joined = rows(
            &ctx,
            &format!("SELECT count(*) AS n FROM ({unnested}) AS u JOIN k ON u.g = k.g"),
        )
        .await;
        assert_eq!(joined[3], "| 6 |", "{joined:#?}");
        let distinct = rows(
            &ctx,
            &format!("SELECT count(*) AS n FROM (SELECT DISTINCT g FROM ({unnested}))"),
        )
        .await;
        assert_eq!(distinct[3], "| 3 |", "{distinct:#?}");
        let counted = rows(
            &ctx,
            &format!(
                "SELECT g, count(*) AS n FROM ({unnested}) WHERE st > 1 GROUP BY g ORDER BY g"
            ),
        )
        .await;
        assert_eq!(
            counted[3..6],
            ["| 0 | 2 |", "| 1 | 2 |", "| 2 | 2 |"],
            "{counted:#?}"
        );
    }
}
