//! Sample-ratio-mismatch check: Pearson χ² of the observed units per variant against the configured split
//! (GrowthBook `gbstats/utils.py` check_srm, reference 2.5; PostHog has no equivalent in its stats module).

use serde::Serialize;
use statrs::distribution::{ChiSquared, ContinuousCDF};

use crate::error::{Result, StatsError, non_negative};

/// GrowthBook's `DEFAULT_SRM_THRESHOLD`.
pub const DEFAULT_SRM_THRESHOLD: f64 = 0.001;

#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct SrmResult {
    pub chi_square: f64,
    pub p_value: f64,
    /// `p_value < threshold`.
    pub mismatch: bool,
}

/// `X² = Σ_{w_i>0} (o_i − e_i)²/e_i` with `e_i = w_i/Σw·N`; `p = 1 − F_χ²(X²; k−1)` where k counts every
/// variant, zero-weight ones included (as gbstats does). No units at all gives p = 1.
pub fn srm_check(observed: &[u64], weights: &[f64], threshold: f64) -> Result<SrmResult> {
    if observed.len() != weights.len() {
        return Err(StatsError::InvalidConfig {
            field: "weights",
            detail: "need one weight per variant",
        });
    }
    if observed.len() < 2 {
        return Err(StatsError::InvalidConfig {
            field: "weights",
            detail: "need at least two variants",
        });
    }
    let mut total_weight = 0.0;
    for w in weights {
        total_weight += non_negative(*w, "weights")?;
    }
    if !(total_weight.is_finite() && total_weight > 0.0) {
        return Err(StatsError::InvalidConfig {
            field: "weights",
            detail: "must not all be zero",
        });
    }
    let total: u64 = observed.iter().sum();
    if total == 0 {
        return Ok(SrmResult {
            chi_square: 0.0,
            p_value: 1.0,
            mismatch: false,
        });
    }
    let n = total as f64;
    let chi_square: f64 = observed
        .iter()
        .zip(weights)
        .filter(|(_, w)| **w > 0.0)
        .map(|(o, w)| {
            let expected = w / total_weight * n;
            (*o as f64 - expected).powi(2) / expected
        })
        .sum();
    let dist =
        ChiSquared::new((observed.len() - 1) as f64).map_err(|_| StatsError::InvalidConfig {
            field: "weights",
            detail: "need at least two variants",
        })?;
    let p_value = dist.sf(chi_square);
    Ok(SrmResult {
        chi_square,
        p_value,
        mismatch: p_value < threshold,
    })
}
