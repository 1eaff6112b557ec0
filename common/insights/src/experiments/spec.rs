//! What compiling an `ExperimentQuery` needs to know of its experiment besides the metric: the
//! flag, its variants and split, the dates, the exposure criteria and the statistics settings.
//! `query-service` builds it from the stored experiment (`experiment_core::spec`) and hands it
//! to the compiler through [`crate::Context::experiment`].

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The experiment an `ExperimentQuery` is about, as its results depend on it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExperimentSpec {
    pub id: i64,
    pub flag_key: String,
    /// The flag's variants in order, with their configured split (0–100).
    pub variants: Vec<VariantSpec>,
    /// The flag's holdout: exposures to `holdout-<id>` count as a variant of their own.
    pub holdout_id: Option<i64>,
    /// Aggregate by `$group_<index>` instead of by person.
    pub aggregation_group_type_index: Option<u8>,
    /// `None`: the experiment has not started (no results).
    pub start: Option<DateTime<Utc>>,
    pub end: Option<DateTime<Utc>>,
    /// Compute as of this instant instead of `end` or now (a timeseries day's cutoff).
    pub as_of: Option<DateTime<Utc>>,
    /// The experiment's `exposure_criteria` as stored (`filterTestAccounts`, `exposure_config`,
    /// `multiple_variant_handling`).
    pub exposure_criteria: Option<Value>,
    /// The experiment's `stats_config` as stored (`method`, `bayesian.ci_level`,
    /// `frequentist.alpha`, `baseline_variant_key`).
    pub stats_config: Option<Value>,
    pub only_count_matured_users: bool,
    /// Variants left out of the results (`parameters.excluded_variants`).
    pub excluded_variants: Vec<String>,
    /// The project's test-account filters (property filters, as in insights), applied to
    /// exposures when `filterTestAccounts` is on.
    pub test_account_filters: Vec<Value>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct VariantSpec {
    pub key: String,
    pub rollout_percentage: f64,
}
