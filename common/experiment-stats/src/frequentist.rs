//! Frequentist Welch t-test on the effect (PostHog `products/experiments/stats/frequentist`, reference 1.6;
//! GrowthBook `frequentist/tests.py`, reference 2.4 for the one-sided variants).

use serde::{Deserialize, Serialize};
use statrs::distribution::{ContinuousCDF, StudentsT};

use crate::effect::{DifferenceType, Effect, effect};
use crate::error::{Result, StatsError, open_unit};
use crate::sequential;
use crate::statistic::{Moments, Statistic};

/// Which hypothesis is tested. PostHog only runs the two-sided test.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Alternative {
    #[default]
    TwoSided,
    /// H1: treatment is greater (GrowthBook `TreatmentGreater`).
    Greater,
    /// H1: treatment is lesser (GrowthBook `TreatmentLesser`).
    Lesser,
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct FrequentistConfig {
    /// Significance level, default 0.05.
    pub alpha: f64,
    pub difference_type: DifferenceType,
    pub alternative: Alternative,
    /// Always-valid sequential testing with this tuning parameter τ (GrowthBook, reference 2.4; GrowthBook's
    /// default is 5000). `None` is the fixed-horizon t-test that PostHog runs.
    pub sequential_tuning: Option<f64>,
}

impl Default for FrequentistConfig {
    fn default() -> Self {
        Self {
            alpha: 0.05,
            difference_type: DifferenceType::Relative,
            alternative: Alternative::TwoSided,
            sequential_tuning: None,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct FrequentistResult {
    /// Point estimate of the effect.
    pub expected: f64,
    /// Standard error of the effect.
    pub stddev: f64,
    pub p_value: f64,
    /// One-sided tests have an infinite bound (serialised by serde_json as `null`).
    pub confidence_interval: [f64; 2],
    /// Welch–Satterthwaite degrees of freedom.
    pub degrees_of_freedom: f64,
    /// `p < alpha`.
    pub significant: bool,
}

/// Welch–Satterthwaite df on the raw per-arm variances of the mean, even for a relative effect:
/// `(v_B/n_B + v_A/n_A)² / [ (v_B/n_B)²/(n_B−1) + (v_A/n_A)²/(n_A−1) ]`.
pub fn welch_df(control: &Moments, treatment: &Moments) -> Result<f64> {
    if control.n < 2 || treatment.n < 2 {
        return Err(StatsError::NotEnoughData {
            detail: "Welch's test needs at least 2 units per arm",
        });
    }
    let a = control.variance / control.n as f64;
    let b = treatment.variance / treatment.n as f64;
    let denominator = b * b / (treatment.n as f64 - 1.0) + a * a / (control.n as f64 - 1.0);
    let df = (a + b).powi(2) / denominator;
    if df.is_finite() && df > 0.0 {
        Ok(df)
    } else {
        Err(StatsError::ZeroVariance)
    }
}

fn students_t(df: f64) -> Result<StudentsT> {
    StudentsT::new(0.0, 1.0, df).map_err(|_| StatsError::ZeroVariance)
}

/// t-test of an effect with known df: `t = Δ̂/se`; two-sided `p = 2·(1 − F_t(|t|))`,
/// `CI = Δ̂ ± F_t⁻¹(1−α/2)·se`; one-sided as GrowthBook. Survival functions keep tiny p-values.
pub fn t_test(
    effect: Effect,
    df: f64,
    alpha: f64,
    alternative: Alternative,
) -> Result<FrequentistResult> {
    let alpha = open_unit(alpha, "alpha")?;
    if !(effect.variance.is_finite() && effect.variance > 0.0) {
        return Err(StatsError::ZeroVariance);
    }
    let se = effect.variance.sqrt();
    let t = effect.point / se;
    let dist = students_t(df)?;
    let (p_value, confidence_interval) = match alternative {
        Alternative::TwoSided => {
            let q = dist.inverse_cdf(1.0 - alpha / 2.0);
            (
                (2.0 * dist.sf(t.abs())).min(1.0),
                [effect.point - q * se, effect.point + q * se],
            )
        }
        Alternative::Greater => {
            let q = dist.inverse_cdf(1.0 - alpha);
            (dist.sf(t), [effect.point - q * se, f64::INFINITY])
        }
        Alternative::Lesser => {
            let q = dist.inverse_cdf(1.0 - alpha);
            (dist.cdf(t), [f64::NEG_INFINITY, effect.point + q * se])
        }
    };
    Ok(FrequentistResult {
        expected: effect.point,
        stddev: se,
        p_value,
        confidence_interval,
        degrees_of_freedom: df,
        significant: p_value < alpha,
    })
}

/// Welch t-test of `treatment` against `control`. PostHog requires at least 5 units per arm.
pub fn frequentist_test(
    control: &Statistic,
    treatment: &Statistic,
    config: &FrequentistConfig,
) -> Result<FrequentistResult> {
    if control.n() < 5 || treatment.n() < 5 {
        return Err(StatsError::NotEnoughData {
            detail: "the frequentist test needs at least 5 units per arm",
        });
    }
    let a = control.moments()?;
    let b = treatment.moments()?;
    let eff = effect(&a, &b, config.difference_type)?;
    let df = welch_df(&a, &b)?;
    match config.sequential_tuning {
        None => t_test(eff, df, config.alpha, config.alternative),
        Some(tuning) => sequential::sequential_test(
            eff,
            df,
            a.n + b.n,
            config.alpha,
            tuning,
            config.alternative,
        ),
    }
}
