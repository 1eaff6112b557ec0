//! The experiment's stored settings a query depends on, read through typed structs:
//! `exposure_criteria` (which events expose, test accounts, several variants per entity) and
//! `stats_config` (method, levels, baseline). They are stored JSON written by the web app, so
//! fields this service does not use (`activation_config`, `difference_type`...) are tolerated.

use experiment_stats::{BayesianConfig, FrequentistConfig, Method};
use serde::Deserialize;
use serde_json::Value;

use crate::Invalid;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MultipleVariantHandling {
    /// An entity that saw several variants is `$multiple` and left out (PostHog's default).
    #[default]
    Exclude,
    /// An entity counts in the variant of its first exposure.
    FirstSeen,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(tag = "kind")]
pub enum ExposureConfig {
    ExperimentEventExposureConfig {
        event: String,
        #[serde(default)]
        properties: Option<Value>,
    },
    ActionsNode {
        id: i64,
    },
}

#[derive(Debug, Clone, PartialEq, Default, Deserialize)]
pub struct ExposureSettings {
    /// PostHog's newer builder defaults it to true.
    #[serde(default, rename = "filterTestAccounts")]
    pub filter_test_accounts: Option<bool>,
    #[serde(default)]
    pub exposure_config: Option<ExposureConfig>,
    #[serde(default)]
    pub multiple_variant_handling: Option<MultipleVariantHandling>,
}

impl ExposureSettings {
    pub fn read(criteria: Option<&Value>) -> Result<Self, Invalid> {
        match criteria {
            None | Some(Value::Null) => Ok(Self::default()),
            Some(value) => serde_path_to_error::deserialize(value).map_err(|error| {
                Invalid::new(
                    format!("exposure_criteria.{}", error.path()),
                    format!("Invalid exposure_criteria: {}", error.inner()),
                )
            }),
        }
    }

    pub fn filter_test_accounts(&self) -> bool {
        self.filter_test_accounts.unwrap_or(true)
    }

    pub fn handling(&self) -> MultipleVariantHandling {
        self.multiple_variant_handling.unwrap_or_default()
    }
}

#[derive(Debug, Clone, Default, Deserialize)]
struct StoredStatsConfig {
    #[serde(default)]
    method: Option<String>,
    #[serde(default)]
    bayesian: Option<StoredBayesian>,
    #[serde(default)]
    frequentist: Option<StoredFrequentist>,
    #[serde(default)]
    baseline_variant_key: Option<String>,
}

#[derive(Debug, Clone, Default, Deserialize)]
struct StoredBayesian {
    #[serde(default)]
    ci_level: Option<f64>,
}

#[derive(Debug, Clone, Default, Deserialize)]
struct StoredFrequentist {
    #[serde(default)]
    alpha: Option<f64>,
}

/// How the arms are compared.
#[derive(Debug, Clone, PartialEq)]
pub struct StatsSettings {
    pub method: Method,
    /// `stats_config.baseline_variant_key`, when set.
    pub baseline_variant_key: Option<String>,
}

impl StatsSettings {
    pub fn read(config: Option<&Value>) -> Result<Self, Invalid> {
        let stored: StoredStatsConfig = match config {
            None | Some(Value::Null) => StoredStatsConfig::default(),
            Some(value) => serde_path_to_error::deserialize(value).map_err(|error| {
                Invalid::new(
                    format!("stats_config.{}", error.path()),
                    format!("Invalid stats_config: {}", error.inner()),
                )
            })?,
        };
        let method = match stored.method.as_deref() {
            None | Some("bayesian") => Method::Bayesian(BayesianConfig {
                ci_level: stored
                    .bayesian
                    .and_then(|b| b.ci_level)
                    .unwrap_or(BayesianConfig::default().ci_level),
                ..BayesianConfig::default()
            }),
            Some("frequentist") => Method::Frequentist(FrequentistConfig {
                alpha: stored
                    .frequentist
                    .and_then(|f| f.alpha)
                    .unwrap_or(FrequentistConfig::default().alpha),
                ..FrequentistConfig::default()
            }),
            Some(other) => {
                return Err(Invalid::new(
                    "stats_config.method",
                    format!("Unknown stats method '{other}': use bayesian or frequentist."),
                ));
            }
        };
        Ok(Self {
            method,
            baseline_variant_key: stored.baseline_variant_key,
        })
    }

    pub fn method_name(&self) -> &'static str {
        match self.method {
            Method::Bayesian(_) => "bayesian",
            Method::Frequentist(_) => "frequentist",
        }
    }
}
