//! One experiment metric: every treatment arm tested against control with the configured method, and the
//! sample-ratio-mismatch check over all arms reported alongside (reference 1.4–1.7, 2.5).

use serde::{Deserialize, Serialize};

use crate::bayesian::{BayesianConfig, BayesianResult, bayesian_test};
use crate::error::StatsError;
use crate::frequentist::{FrequentistConfig, FrequentistResult, frequentist_test};
use crate::srm::{SrmResult, srm_check};
use crate::statistic::Statistic;

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(tag = "method", rename_all = "snake_case")]
pub enum Method {
    Bayesian(BayesianConfig),
    Frequentist(FrequentistConfig),
}

/// One variant: its key, its statistic, and its configured share of traffic (any positive scale).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Arm {
    pub key: String,
    pub statistic: Statistic,
    pub weight: f64,
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(tag = "method", rename_all = "snake_case")]
pub enum VariantStats {
    Bayesian(BayesianResult),
    Frequentist(FrequentistResult),
}

/// A treatment arm's outcome: statistics, or why there are none (PostHog still returns the counts).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct VariantAnalysis {
    pub key: String,
    pub stats: Option<VariantStats>,
    pub error: Option<StatsError>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ExperimentAnalysis {
    /// SRM over control and every treatment arm; `None` with `srm_error` when it cannot be computed.
    pub srm: Option<SrmResult>,
    pub srm_error: Option<StatsError>,
    pub variants: Vec<VariantAnalysis>,
}

/// Tests each treatment against `control`. A failing arm does not stop the others; when the control
/// itself cannot be summarised every arm carries that error, as PostHog gives no variant stats then.
pub fn analyze(
    control: &Arm,
    treatments: &[Arm],
    method: &Method,
    srm_threshold: f64,
) -> ExperimentAnalysis {
    let arms = std::iter::once(control).chain(treatments);
    let observed: Vec<u64> = arms.clone().map(|a| a.statistic.n()).collect();
    let weights: Vec<f64> = arms.map(|a| a.weight).collect();
    let (srm, srm_error) = match srm_check(&observed, &weights, srm_threshold) {
        Ok(result) => (Some(result), None),
        Err(err) => (None, Some(err)),
    };
    let control_error = control.statistic.moments().err();
    let variants = treatments
        .iter()
        .map(|arm| {
            let outcome = match &control_error {
                Some(err) => Err(err.clone()),
                None => match method {
                    Method::Bayesian(config) => {
                        bayesian_test(&control.statistic, &arm.statistic, config)
                            .map(VariantStats::Bayesian)
                    }
                    Method::Frequentist(config) => {
                        frequentist_test(&control.statistic, &arm.statistic, config)
                            .map(VariantStats::Frequentist)
                    }
                },
            };
            let (stats, error) = match outcome {
                Ok(stats) => (Some(stats), None),
                Err(err) => (None, Some(err)),
            };
            VariantAnalysis {
                key: arm.key.clone(),
                stats,
                error,
            }
        })
        .collect();
    ExperimentAnalysis {
        srm,
        srm_error,
        variants,
    }
}
