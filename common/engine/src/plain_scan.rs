//! Reading the events table's files without the Delta scan's per-batch bookkeeping where it has
//! nothing to do.
//!
//! Delta's scan tags every row with its file's id (a dictionary column the Parquet reader builds
//! for each batch), then splits each batch by file to apply that file's transforms: deletion
//! vectors, partition values, column mapping, casts to the table's types. Our tables have no
//! deletion vectors and no column mapping, and most queries project no partition column, so the
//! transforms change nothing; on "count events by name" over 10M rows, building and splitting by
//! the id was a quarter of the CPU. Where the Parquet scan without the id column gives exactly
//! the columns (names, types, nullability) the Delta scan would, the rule reads it directly.
//! Anything a transform would change shows in that schema (a partition column or a mapped name
//! is missing, a position column for deletion vectors is extra, a type differs), and then the
//! Delta scan stays.

use std::sync::Arc;

use datafusion::common::Result;
use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::{Transformed, TreeNode};
use datafusion::datasource::physical_plan::FileScanConfig;
use datafusion::datasource::source::DataSourceExec;
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_expr::expressions::Column;
use datafusion::physical_optimizer::PhysicalOptimizerRule;
use datafusion::physical_plan::ExecutionPlan;
use datafusion::physical_plan::projection::ProjectionExec;
use deltalake_core::delta_datafusion::DeltaScanExec;

/// The column Delta's scan tags rows with their file by.
const FILE_ID_COLUMN: &str = "__delta_rs_file_id__";

/// Replaces Delta scans whose transforms change nothing with their Parquet scan.
#[derive(Debug, Default)]
pub struct PlainDeltaScans;

impl PhysicalOptimizerRule for PlainDeltaScans {
    fn optimize(
        &self,
        plan: Arc<dyn ExecutionPlan>,
        _config: &ConfigOptions,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        plan.transform_up(|node| {
            if node.downcast_ref::<DeltaScanExec>().is_none() {
                return Ok(Transformed::no(node));
            }
            Ok(match plain(&node)? {
                Some(scan) => Transformed::yes(scan),
                None => Transformed::no(node),
            })
        })
        .map(|transformed| transformed.data)
    }

    fn name(&self) -> &str {
        "plain_delta_scans"
    }

    fn schema_check(&self) -> bool {
        true
    }
}

/// `delta`'s Parquet scan without the file id column, when it gives what `delta` gives.
pub(crate) fn plain(delta: &Arc<dyn ExecutionPlan>) -> Result<Option<Arc<dyn ExecutionPlan>>> {
    let [input] = delta.children()[..] else {
        return Ok(None);
    };
    let Some(source) = input.downcast_ref::<DataSourceExec>() else {
        return Ok(None);
    };
    let Some(files) = source.data_source().downcast_ref::<FileScanConfig>() else {
        return Ok(None);
    };
    // The file id must be the scan's only partition column: any other is a value a transform
    // would have to supply.
    let partitions = files.table_partition_cols();
    if partitions.len() != 1 || partitions[0].name() != FILE_ID_COLUMN {
        return Ok(None);
    }
    let read = input.schema();
    let Ok(file_id) = read.index_of(FILE_ID_COLUMN) else {
        return Ok(None);
    };
    let kept: Vec<(Arc<dyn PhysicalExpr>, String)> = read
        .fields()
        .iter()
        .enumerate()
        .filter(|(index, _)| *index != file_id)
        .map(|(index, field)| {
            (
                Arc::new(Column::new(field.name(), index)) as Arc<dyn PhysicalExpr>,
                field.name().clone(),
            )
        })
        .collect();
    let without_id = ProjectionExec::try_new(kept, Arc::clone(input))?;
    let Some(scan) = input.try_swapping_with_projection(&without_id)? else {
        return Ok(None);
    };
    let (wanted, given) = (delta.schema(), scan.schema());
    let same = wanted.fields().len() == given.fields().len()
        && wanted.fields().iter().zip(given.fields()).all(|(w, g)| {
            w.name() == g.name()
                && w.data_type() == g.data_type()
                && w.is_nullable() == g.is_nullable()
        });
    Ok(same.then_some(scan))
}

#[cfg(test)]
mod tests {
    use chrono::{DateTime, Utc};
    use datafusion::arrow::util::pretty::pretty_format_batches;
    use datafusion::physical_plan::{collect, displayable};
    use uuid::Uuid;

    use lake::import::Importer;
    use lake::rows::{EventFields, ParsedRows};

    use crate::{Bindings, Limits};

    /// Two days of events, so the table has two partitions and several files.
    async fn table() -> common::testing::TestState {
        let backend = common::testing::TestState::embedded().await;
        let mut rows = ParsedRows::default();
        for (i, (event, day)) in [("a", 1), ("b", 1), ("a", 2), ("a", 2), ("c", 2)]
            .into_iter()
            .enumerate()
        {
            let at: DateTime<Utc> = format!("2026-11-0{day}T10:00:0{i}Z").parse().unwrap();
            rows.push(&EventFields {
                uuid: Uuid::now_v7(),
                event,
                distinct_id: "d",
                properties: r#"{"n": 1}"#,
                session_id: None,
                timestamp: at,
                created_at: at,
                elements_chain: None,
            });
        }
        let mut importer = Importer::new(backend.state.clone(), 1).await.unwrap();
        importer.push(rows).await.unwrap();
        importer.finish().await.unwrap();
        backend
    }

    /// The plan DataFusion runs for `text` over the events view, and its answer.
    async fn plan_and_answer(backend: &common::testing::TestState, text: &str) -> (String, String) {
        let limits = Limits {
            memory_bytes: 64 << 20,
            timeout: std::time::Duration::from_secs(30),
        };
        let prepared = crate::prepare(text, &Bindings::default()).unwrap();
        let session = crate::open_session(&backend.state, 1, "UTC", &prepared, &limits)
            .await
            .unwrap();
        let state = session.ctx.state();
        let logical = state
            .statement_to_plan(datafusion::sql::parser::Statement::Statement(Box::new(
                session.statement(&prepared),
            )))
            .await
            .unwrap();
        let physical = state.create_physical_plan(&logical).await.unwrap();
        let shown = displayable(physical.as_ref()).indent(true).to_string();
        let batches = collect(physical, session.ctx.task_ctx()).await.unwrap();
        (shown, pretty_format_batches(&batches).unwrap().to_string())
    }

    #[tokio::test]
    async fn scans_without_transforms_read_parquet_directly_and_answer_the_same() {
        let backend = table().await;
        let (plan, answer) = plan_and_answer(
            &backend,
            "select event, count() c from events group by event order by event",
        )
        .await;
        assert!(!plan.contains("DeltaScanExec"), "{plan}");
        assert!(!plan.contains(super::FILE_ID_COLUMN), "{plan}");
        let expected = [
            "+-------+---+",
            "| event | c |",
            "+-------+---+",
            "| a     | 3 |",
            "| b     | 1 |",
            "| c     | 1 |",
            "+-------+---+",
        ]
        .join("\n");
        assert_eq!(answer, expected);
    }

    #[tokio::test]
    async fn scans_that_need_a_partition_value_keep_the_delta_scan() {
        let backend = table().await;
        let (plan, answer) = plan_and_answer(
            &backend,
            "select __date d, max(event) e from events group by d order by d",
        )
        .await;
        assert!(plan.contains("DeltaScanExec"), "{plan}");
        let expected = [
            "+------------+---+",
            "| d          | e |",
            "+------------+---+",
            "| 2026-11-01 | b |",
            "| 2026-11-02 | c |",
            "+------------+---+",
        ]
        .join("\n");
        assert_eq!(answer, expected);
    }
}
