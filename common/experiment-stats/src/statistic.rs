//! Sufficient statistics per variant and their moments (reference section 0; PostHog
//! `products/experiments/stats/shared/statistics.py`, GrowthBook `gbstats/models/statistics.py`).

use serde::{Deserialize, Serialize};

use crate::error::{Result, StatsError, finite, non_negative};

/// Σy and Σy² over the `n` exposed units (a unit without metric events counts with y = 0).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SampleMean {
    pub n: u64,
    pub sum: f64,
    pub sum_squares: f64,
}

/// A binary metric: `sum` units out of `n` converted.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Proportion {
    pub n: u64,
    pub sum: f64,
}

/// Sums of one side of a ratio metric over the same `n` units as the ratio.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Sums {
    pub sum: f64,
    pub sum_squares: f64,
}

/// Ratio metric Σy/Σd with the per-unit cross sum `sum_of_products` = Σ y·d.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Ratio {
    pub n: u64,
    pub numerator: Sums,
    pub denominator: Sums,
    pub sum_of_products: f64,
}

/// One variant's statistic, as PostHog picks it per metric kind (reference 1.1).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Statistic {
    Mean(SampleMean),
    Proportion(Proportion),
    Ratio(Ratio),
}

/// Mean and per-unit variance of a statistic, after validation.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Moments {
    pub n: u64,
    pub mean: f64,
    /// Per-unit variance; the variance of the mean is `variance / n`.
    pub variance: f64,
}

/// `(SS − S²/n)/(n−1)`, 0 for n ≤ 1. Clamped at 0: rounding can make a constant sample slightly negative.
fn sample_variance(n: u64, sum: f64, sum_squares: f64) -> f64 {
    if n <= 1 {
        return 0.0;
    }
    let n = n as f64;
    ((sum_squares - sum * sum / n) / (n - 1.0)).max(0.0)
}

impl SampleMean {
    pub fn moments(&self) -> Result<Moments> {
        finite(self.sum, "sum")?;
        non_negative(self.sum_squares, "sum_squares")?;
        if self.n == 0 {
            return Err(StatsError::NotEnoughData {
                detail: "no exposed units",
            });
        }
        Ok(Moments {
            n: self.n,
            mean: self.sum / self.n as f64,
            variance: sample_variance(self.n, self.sum, self.sum_squares),
        })
    }
}

impl Proportion {
    /// Variance `p(1−p)` without the n−1 correction, as both platforms do.
    pub fn moments(&self) -> Result<Moments> {
        non_negative(self.sum, "sum")?;
        if self.n == 0 {
            return Err(StatsError::NotEnoughData {
                detail: "no exposed units",
            });
        }
        if self.sum > self.n as f64 {
            return Err(StatsError::SumExceedsCount {
                n: self.n,
                sum: self.sum,
            });
        }
        let p = self.sum / self.n as f64;
        Ok(Moments {
            n: self.n,
            mean: p,
            variance: p * (1.0 - p),
        })
    }
}

impl Ratio {
    /// Mean `S/D` and the per-unit delta-method variance
    /// `v_M/μ_D² + μ_M²·v_D/μ_D⁴ − 2·μ_M·cov_MD/μ_D³` with `cov_MD = (P − S·D/n)/(n−1)` (reference section 0).
    /// PostHog uses the n−1 covariance for every ratio; GrowthBook's proportion/proportion exception is not followed.
    pub fn moments(&self) -> Result<Moments> {
        finite(self.numerator.sum, "numerator.sum")?;
        non_negative(self.numerator.sum_squares, "numerator.sum_squares")?;
        finite(self.denominator.sum, "denominator.sum")?;
        non_negative(self.denominator.sum_squares, "denominator.sum_squares")?;
        finite(self.sum_of_products, "sum_of_products")?;
        if self.n == 0 {
            return Err(StatsError::NotEnoughData {
                detail: "no exposed units",
            });
        }
        if self.denominator.sum == 0.0 {
            return Err(StatsError::ZeroDenominator);
        }
        let n = self.n as f64;
        let (s, d) = (self.numerator.sum, self.denominator.sum);
        let mu_m = s / n;
        let mu_d = d / n;
        let v_m = sample_variance(self.n, s, self.numerator.sum_squares);
        let v_d = sample_variance(self.n, d, self.denominator.sum_squares);
        let cov = if self.n <= 1 {
            0.0
        } else {
            (self.sum_of_products - s * d / n) / (n - 1.0)
        };
        let variance = v_m / mu_d.powi(2) + mu_m.powi(2) * v_d / mu_d.powi(4)
            - 2.0 * mu_m * cov / mu_d.powi(3);
        Ok(Moments {
            n: self.n,
            mean: s / d,
            variance: variance.max(0.0),
        })
    }
}

impl Statistic {
    pub fn n(&self) -> u64 {
        match self {
            Statistic::Mean(s) => s.n,
            Statistic::Proportion(s) => s.n,
            Statistic::Ratio(s) => s.n,
        }
    }

    pub fn moments(&self) -> Result<Moments> {
        match self {
            Statistic::Mean(s) => s.moments(),
            Statistic::Proportion(s) => s.moments(),
            Statistic::Ratio(s) => s.moments(),
        }
    }
}
