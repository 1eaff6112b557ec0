//! Experiments' metrics: the `ExperimentQuery` node compiled to the dialect (`query`), the typed
//! metric (`metric`), the experiment it is about (`spec`) and the metric's fingerprint.

pub mod fingerprint;
pub mod metric;
pub mod python_json;
pub mod query;
pub mod spec;

pub use spec::{ExperimentSpec, VariantSpec};
