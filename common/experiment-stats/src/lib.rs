//! Experiment statistics as pure functions (issue 15). Facts and formulas:
//! `shared/reference/experiment_stats.md`. Where PostHog and GrowthBook differ, PostHog's method is used:
//! relative lift divides by m_A (Bayesian rejects m_A ≤ 0), ratio covariance always uses n−1, flat prior,
//! two-sided Welch test with df from the raw per-arm variances. GrowthBook-only extras (one-sided and
//! sequential tests, proper priors, multiple-testing corrections, SRM) follow gbstats.
//!
//! Distributions come from `statrs`. No function panics on data: bad or thin input gives a [`StatsError`].

pub mod analysis;
pub mod bayesian;
pub mod effect;
pub mod error;
pub mod frequentist;
pub mod multiple;
pub mod sequential;
pub mod srm;
pub mod statistic;

pub use analysis::{Arm, ExperimentAnalysis, Method, VariantAnalysis, VariantStats, analyze};
pub use bayesian::{
    BayesianConfig, BayesianResult, ExpectedLoss, Prior, bayesian_test, expected_loss,
};
pub use effect::{DifferenceType, Effect, effect};
pub use error::{Result, StatsError};
pub use frequentist::{Alternative, FrequentistConfig, FrequentistResult, frequentist_test};
pub use multiple::{adjusted_interval, benjamini_hochberg, holm_bonferroni};
pub use srm::{DEFAULT_SRM_THRESHOLD, SrmResult, srm_check};
pub use statistic::{Moments, Proportion, Ratio, SampleMean, Statistic, Sums};
