//! Bayesian test on the effect (PostHog `products/experiments/stats/bayesian`, reference 1.5; GrowthBook
//! `EffectBayesianABTest`, reference 2.3). The likelihood is `Δ ~ N(Δ̂, σ²)` with Δ̂, σ² from [`crate::effect`].

use serde::{Deserialize, Serialize};
use statrs::distribution::{Continuous, ContinuousCDF, Normal};

use crate::effect::{DifferenceType, effect};
use crate::error::{Result, StatsError, finite, open_unit};
use crate::statistic::Statistic;

/// Gaussian prior on the effect. PostHog's runner always uses the flat (improper) one.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum Prior {
    #[default]
    Flat,
    Proper {
        mean: f64,
        variance: f64,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct BayesianConfig {
    /// Credible level, default 0.95.
    pub ci_level: f64,
    pub difference_type: DifferenceType,
    pub prior: Prior,
}

impl Default for BayesianConfig {
    fn default() -> Self {
        Self {
            ci_level: 0.95,
            difference_type: DifferenceType::Relative,
            prior: Prior::Flat,
        }
    }
}

/// Expected loss of shipping each side (GrowthBook's `risk`; PostHog computes it but does not return it).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct ExpectedLoss {
    /// Loss from keeping control: `P(Δ>0)·E[Δ|Δ>0]`.
    pub control: f64,
    /// Loss from shipping treatment: `P(Δ<0)·|E[Δ|Δ<0]|`.
    pub treatment: f64,
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct BayesianResult {
    /// Posterior mean of the effect.
    pub expected: f64,
    /// Posterior standard deviation.
    pub stddev: f64,
    /// `P(Δ > 0)`.
    pub chance_to_win: f64,
    pub credible_interval: [f64; 2],
    pub expected_loss: ExpectedLoss,
    /// PostHog's `is_decisive`: `ctw > ci_level` or `ctw < 1 − ci_level`.
    pub significant: bool,
}

fn std_normal() -> Normal {
    Normal::standard()
}

/// Posterior `N(μ, s²)` given `Δ̂`, `σ²`: flat prior keeps the likelihood; a proper prior adds precisions.
pub fn posterior(point: f64, variance: f64, prior: Prior) -> Result<(f64, f64)> {
    match prior {
        Prior::Flat => Ok((point, variance)),
        Prior::Proper {
            mean,
            variance: prior_variance,
        } => {
            finite(mean, "prior.mean")?;
            if !(prior_variance.is_finite() && prior_variance > 0.0) {
                return Err(StatsError::InvalidConfig {
                    field: "prior.variance",
                    detail: "must be a positive number",
                });
            }
            let precision = 1.0 / variance + 1.0 / prior_variance;
            Ok((
                (point / variance + mean / prior_variance) / precision,
                1.0 / precision,
            ))
        }
    }
}

/// Expected loss for `Δ ~ N(μ, s²)`. With `a = −μ/s`, the truncated-normal means give the closed forms
/// `P(Δ>0)·E[Δ|Δ>0] = μ·(1−Φ(a)) + s·φ(a)` and `P(Δ<0)·|E[Δ|Δ<0]| = s·φ(a) − μ·Φ(a)`, which need no
/// Mills-ratio fallback because nothing is divided by a tail probability. Beyond |μ/s| > 37 the tails are
/// below f64 resolution and GrowthBook's short-circuit `[max(μ,0), max(−μ,0)]` is used.
pub fn expected_loss(mean: f64, stddev: f64) -> ExpectedLoss {
    if stddev <= 0.0 || (mean / stddev).abs() > 37.0 {
        return ExpectedLoss {
            control: mean.max(0.0),
            treatment: (-mean).max(0.0),
        };
    }
    let z = std_normal();
    let a = -mean / stddev;
    let tail = stddev * z.pdf(a);
    ExpectedLoss {
        control: (mean * z.sf(a) + tail).max(0.0),
        treatment: (tail - mean * z.cdf(a)).max(0.0),
    }
}

/// Bayesian test of `treatment` against `control`.
///
/// Gates as in PostHog's tests: proportions need ≥ 5 successes and ≥ 5 failures per arm; a relative
/// analysis needs a positive baseline mean (PostHog rejects m_A ≤ 0 here, GrowthBook would divide by |m_A|).
pub fn bayesian_test(
    control: &Statistic,
    treatment: &Statistic,
    config: &BayesianConfig,
) -> Result<BayesianResult> {
    let ci_level = open_unit(config.ci_level, "ci_level")?;
    for stat in [control, treatment] {
        if let Statistic::Proportion(p) = stat {
            let failures = p.n as f64 - p.sum;
            if p.sum < 5.0 || failures < 5.0 {
                return Err(StatsError::NotEnoughData {
                    detail: "a proportion needs at least 5 successes and 5 failures per arm",
                });
            }
        }
    }
    let a = control.moments()?;
    let b = treatment.moments()?;
    if config.difference_type == DifferenceType::Relative && a.mean <= 0.0 {
        return Err(StatsError::BaselineMean { mean: a.mean });
    }
    let eff = effect(&a, &b, config.difference_type)?;
    if !(eff.variance.is_finite() && eff.variance > 0.0) {
        return Err(StatsError::ZeroVariance);
    }
    let (mean, variance) = posterior(eff.point, eff.variance, config.prior)?;
    let stddev = variance.sqrt();
    let z = std_normal();
    let chance_to_win = z.cdf(mean / stddev);
    let alpha = 1.0 - ci_level;
    let credible_interval = [
        mean + stddev * z.inverse_cdf(alpha / 2.0),
        mean + stddev * z.inverse_cdf(1.0 - alpha / 2.0),
    ];
    Ok(BayesianResult {
        expected: mean,
        stddev,
        chance_to_win,
        credible_interval,
        expected_loss: expected_loss(mean, stddev),
        significant: chance_to_win > ci_level || chance_to_win < 1.0 - ci_level,
    })
}
