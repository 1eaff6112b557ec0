//! `ExperimentQuery` compiled to the dialect: exposures per entity, metric values per entity
//! after exposure, per-variant sums (`sql`); assembled with `experiment_stats` into PostHog's
//! `ExperimentQueryResponse` (`assemble`). The experiment's settings are read here (`settings`).

pub mod assemble;
pub mod settings;
pub mod sql;
#[cfg(test)]
mod tests;

use serde::Deserialize;
use serde_json::Value;

use super::metric::{self, ExperimentMetric};
use crate::{Compiled, Context, Invalid};

pub use assemble::{Arm, assemble};
pub use settings::{ExposureSettings, MultipleVariantHandling, StatsSettings};
pub use sql::{Plan, metric_query};

/// The node's own fields (`kind`, ...); the metric is read by [`metric::parse`].
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Node {
    #[allow(dead_code)]
    kind: String,
    metric: Value,
    #[serde(default)]
    experiment_id: Option<Value>,
    #[serde(default)]
    name: Option<Value>,
    #[serde(default)]
    response: Option<Value>,
    #[serde(default)]
    version: Option<Value>,
    #[serde(default)]
    modifiers: Option<Value>,
    #[serde(default)]
    tags: Option<Value>,
}

/// Compiles an `ExperimentQuery` node; the experiment comes from [`Context::experiment`].
pub fn compile(node: &Value, ctx: &Context) -> Result<Compiled, Invalid> {
    let node: Node = serde_path_to_error::deserialize(node).map_err(|error| {
        let path = error.path().to_string();
        let attr = if path == "." { "metric".into() } else { path };
        Invalid::new(attr, error.inner().to_string())
    })?;
    let _ = (
        &node.experiment_id,
        &node.name,
        &node.response,
        &node.version,
    );
    let _ = (&node.modifiers, &node.tags);
    let Some(spec) = ctx.experiment.clone() else {
        return Err(Invalid::new(
            "experiment_id",
            "ExperimentQuery needs an experiment: experiment_id is required.",
        ));
    };
    let metric = parse_metric(&node.metric)?;
    let plan = Plan::new(&spec, &metric, ctx)?;
    let query = metric_query(&plan, ctx)?;
    let stats = StatsSettings::read(spec.stats_config.as_ref())?;
    let metric_json = node.metric.clone();
    let kind = plan.kind();
    Ok(Compiled::new(vec![query], move |tables| {
        let table = tables
            .into_iter()
            .next()
            .ok_or_else(|| Invalid::new("metric", "The experiment query gave no table."))?;
        let arms = assemble::arms_from_table(&table, kind)?;
        Ok(assemble(&spec, &stats, kind, metric_json, &arms))
    }))
}

/// The metric, or a 400 listing its errors as PostHog does.
pub fn parse_metric(value: &Value) -> Result<ExperimentMetric, Invalid> {
    metric::parse(value).map_err(|errors| {
        let listed = serde_json::to_string(&errors).unwrap_or_default();
        let attr = errors
            .first()
            .map(|error| {
                let mut attr = "metric".to_owned();
                for part in &error.loc {
                    match part {
                        Value::Number(index) => attr.push_str(&format!("[{index}]")),
                        Value::String(key) => {
                            attr.push('.');
                            attr.push_str(key);
                        }
                        _ => {}
                    }
                }
                attr
            })
            .unwrap_or_else(|| "metric".into());
        Invalid::new(attr, format!("Invalid metric: {listed}"))
    })
}
