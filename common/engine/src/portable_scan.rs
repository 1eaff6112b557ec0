//! Delta scans as plain Parquet scans that any process can decode and run: what a plan sent to
//! a cluster reads. Delta's scan node has no wire form (deltalake-core ships no codec for it),
//! but what it adds to its Parquet scan is, for our tables, only the partition values (no
//! deletion vectors, no column mapping). Those are in each file's path (`date=2026-10-30/`), so
//! the Parquet scan is rebuilt over the same pruned files with the partition columns as file
//! partition values, DataFusion's own and serializable.

use std::sync::Arc;

use datafusion::arrow::datatypes::{FieldRef, SchemaRef};
use datafusion::common::tree_node::{Transformed, TreeNode};
use datafusion::common::{DataFusionError, Result, ScalarValue, not_impl_err};
use datafusion::datasource::physical_plan::{
    FileGroup, FileScanConfig, FileScanConfigBuilder, FileSource, ParquetSource,
};
use datafusion::datasource::source::DataSourceExec;
use datafusion::datasource::table_schema::TableSchema;
use datafusion::physical_plan::repartition::RepartitionExec;
use datafusion::physical_plan::{ExecutionPlan, Partitioning, replace_children_if_necessary};
use deltalake_core::delta_datafusion::DeltaScanExec;

use crate::plain_scan;

/// `plan` with every Delta scan read as a plain Parquet scan (an error naming what cannot be).
pub fn portable(plan: Arc<dyn ExecutionPlan>) -> Result<Arc<dyn ExecutionPlan>> {
    plan.transform_up(|node| {
        if node.downcast_ref::<DeltaScanExec>().is_none() {
            return Ok(Transformed::no(node));
        }
        let scan = match plain_scan::plain(&node)? {
            Some(scan) => scan,
            None => with_partition_values(&node)?,
        };
        Ok(Transformed::yes(scan))
    })
    .map(|transformed| transformed.data)
}

/// `delta`'s Parquet scan (under the round-robin repartition Delta may put over it), its
/// partition columns read from each file's path.
fn with_partition_values(delta: &Arc<dyn ExecutionPlan>) -> Result<Arc<dyn ExecutionPlan>> {
    let Some(input) = delta.children().first().map(|input| Arc::clone(input)) else {
        return not_impl_err!("a Delta scan without input cannot run on a cluster");
    };
    if let Some(repartition) = input.downcast_ref::<RepartitionExec>()
        && matches!(repartition.partitioning(), Partitioning::RoundRobinBatch(_))
    {
        let scan = parquet_scan(delta, repartition.input())?;
        return replace_children_if_necessary(input, vec![scan]);
    }
    parquet_scan(delta, &input)
}

/// `input` (the Parquet scan inside `delta`) giving what `delta` gives.
fn parquet_scan(
    delta: &Arc<dyn ExecutionPlan>,
    input: &Arc<dyn ExecutionPlan>,
) -> Result<Arc<dyn ExecutionPlan>> {
    let files = input
        .downcast_ref::<DataSourceExec>()
        .and_then(|source| source.data_source().downcast_ref::<FileScanConfig>());
    let Some(files) = files else {
        return not_impl_err!(
            "a Delta scan over {} rather than a Parquet scan cannot run on a cluster",
            input.name()
        );
    };
    let Some(parquet) = files.file_source().downcast_ref::<ParquetSource>() else {
        return not_impl_err!("a Delta scan of other files than Parquet cannot run on a cluster");
    };
    let wanted = delta.schema();
    let file_schema = files.file_schema().clone();
    let partitions: Vec<FieldRef> = wanted
        .fields()
        .iter()
        .filter(|field| file_schema.index_of(field.name()).is_err())
        .cloned()
        .collect();
    let table_schema = TableSchema::builder(file_schema.clone())
        .with_table_partition_cols(partitions.clone())
        .build();
    let mut source = ParquetSource::new(table_schema)
        .with_table_parquet_options(parquet.table_parquet_options().clone());
    if let Some(predicate) = parquet.filter() {
        // Over the file columns only, which keep their places.
        source = source.with_predicate(predicate);
    }
    let groups = files
        .file_groups
        .iter()
        .map(|group| {
            let files = group
                .files()
                .iter()
                .map(|file| {
                    let mut file = file.clone();
                    file.partition_values = partitions
                        .iter()
                        .map(|field| partition_value(file.object_meta.location.as_ref(), field))
                        .collect::<Result<_>>()?;
                    Ok(file)
                })
                .collect::<Result<Vec<_>>>()?;
            Ok(FileGroup::new(files))
        })
        .collect::<Result<Vec<_>>>()?;
    let columns: Vec<&str> = file_schema
        .fields()
        .iter()
        .chain(&partitions)
        .map(|field| field.name().as_str())
        .collect();
    let projection = wanted
        .fields()
        .iter()
        .map(|field| {
            columns
                .iter()
                .position(|name| name == field.name())
                .ok_or_else(|| DataFusionError::Internal(format!("no column {}", field.name())))
        })
        .collect::<Result<Vec<_>>>()?;
    let config = FileScanConfigBuilder::new(files.object_store_url.clone(), Arc::new(source))
        .with_file_groups(groups)
        .with_limit(files.limit)
        .with_projection_indices(Some(projection))?
        .build();
    let scan: Arc<dyn ExecutionPlan> = DataSourceExec::from_data_source(config);
    if !same_columns(&wanted, &scan.schema()) {
        return not_impl_err!(
            "this Delta scan changes its files' types, which a cluster cannot reproduce"
        );
    }
    Ok(scan)
}

/// The value of partition column `field` in a Delta file path (`.../date=2026-10-30/part-...`).
fn partition_value(path: &str, field: &FieldRef) -> Result<ScalarValue> {
    let prefix = format!("{}=", field.name());
    let text = path
        .split('/')
        .find_map(|segment| segment.strip_prefix(&prefix))
        .ok_or_else(|| {
            DataFusionError::NotImplemented(format!(
                "file {path} names no value of partition column {}",
                field.name()
            ))
        })?;
    ScalarValue::try_from_string(text.to_owned(), field.data_type())
}

fn same_columns(wanted: &SchemaRef, given: &SchemaRef) -> bool {
    wanted.fields().len() == given.fields().len()
        && wanted
            .fields()
            .iter()
            .zip(given.fields())
            .all(|(w, g)| w.name() == g.name() && w.data_type() == g.data_type())
}
