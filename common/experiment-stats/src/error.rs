use serde::Serialize;

/// Why a test could not produce a result. These are data conditions, not bugs: the caller reports
/// them next to the variant's counts (PostHog's `validation_failures`) instead of statistics.
#[derive(Debug, Clone, PartialEq, thiserror::Error, Serialize)]
#[serde(tag = "code", rename_all = "snake_case")]
pub enum StatsError {
    /// A sum or weight is NaN or infinite.
    #[error("{field} is not a finite number")]
    NotFinite { field: &'static str },
    /// An input that must not be negative is (a count, a proportion's successes, a sum of squares, a weight).
    #[error("{field} must not be negative")]
    Negative { field: &'static str },
    /// A proportion with more successes than units.
    #[error("proportion sum {sum} exceeds the number of units {n}")]
    SumExceedsCount { n: u64, sum: f64 },
    /// Too few units (or successes/failures) in one arm for the chosen test.
    #[error("not enough data: {detail}")]
    NotEnoughData { detail: &'static str },
    /// A ratio metric whose denominator sums to zero has no mean.
    #[error("the ratio denominator sums to zero")]
    ZeroDenominator,
    /// Relative lift divides by the control mean; PostHog's Bayesian path also rejects a negative one.
    #[error("the baseline mean is {mean}, relative lift needs a positive baseline")]
    BaselineMean { mean: f64 },
    /// The effect has no spread (both arms constant), so no interval or probability exists.
    #[error("the effect variance is zero")]
    ZeroVariance,
    /// A configuration value is out of its range (ci_level, alpha, weights, tuning parameter).
    #[error("invalid {field}: {detail}")]
    InvalidConfig {
        field: &'static str,
        detail: &'static str,
    },
}

pub type Result<T> = std::result::Result<T, StatsError>;

pub(crate) fn finite(value: f64, field: &'static str) -> Result<f64> {
    if value.is_finite() {
        Ok(value)
    } else {
        Err(StatsError::NotFinite { field })
    }
}

pub(crate) fn non_negative(value: f64, field: &'static str) -> Result<f64> {
    if finite(value, field)? < 0.0 {
        Err(StatsError::Negative { field })
    } else {
        Ok(value)
    }
}

/// A probability-like level strictly between 0 and 1 (alpha, ci_level).
pub(crate) fn open_unit(value: f64, field: &'static str) -> Result<f64> {
    if value.is_finite() && value > 0.0 && value < 1.0 {
        Ok(value)
    } else {
        Err(StatsError::InvalidConfig {
            field,
            detail: "must be strictly between 0 and 1",
        })
    }
}
