//! Always-valid sequential test (GrowthBook `SequentialTwoSidedTTest` / one-sided variants, after
//! Waudby-Smith et al. 2023, arXiv 2103.06476v7; reference 2.4). PostHog has no sequential test.

use crate::effect::Effect;
use crate::error::{Result, StatsError, open_unit};
use crate::frequentist::{Alternative, FrequentistResult};

/// `ρ = sqrt((−2 ln α' + ln(−2 ln α' + 1)) / τ)` (eq. 161), α' = α two-sided, 2α one-sided.
fn rho(alpha: f64, tuning: f64) -> f64 {
    let l = -2.0 * alpha.ln();
    ((l + (l + 1.0).ln()) / tuning).sqrt()
}

/// Half-width of the always-valid interval for `N` units and `s² = se²·N`.
fn half_width(se: f64, n: f64, alpha: f64, tuning: f64, two_sided: bool) -> f64 {
    let s2 = se * se * n;
    if two_sided {
        let r2 = rho(alpha, tuning).powi(2);
        let v = n * r2 + 1.0;
        // eq. 9
        (s2 * 2.0 * v / (n * n * r2) * (v.sqrt() / alpha).ln()).sqrt()
    } else {
        let r2 = rho(2.0 * alpha, tuning).powi(2);
        let v = n * r2 + 1.0;
        // eq. 134
        (s2 * 2.0 * v / (n * n * r2) * (1.0 + v.sqrt() / (2.0 * alpha)).ln()).sqrt()
    }
}

const ONE_SIDED_P_MIN: f64 = 1e-5;
const ONE_SIDED_P_MAX: f64 = 0.4999;

/// One-sided p-value: the α at which the interval's finite bound reaches 0, found by bisection on
/// [1e-5, 0.4999] (tolerance 1e-6, at most 100 steps) and clamped to those ends, as GrowthBook does.
fn one_sided_p(point: f64, se: f64, n: f64, tuning: f64, greater: bool) -> f64 {
    // Distance of the bound from 0 in the direction that means "significant".
    let excess = |alpha: f64| {
        let hw = half_width(se, n, alpha, tuning, false);
        if greater { point - hw } else { -(point + hw) }
    };
    if excess(ONE_SIDED_P_MAX) <= 0.0 {
        return ONE_SIDED_P_MAX;
    }
    if excess(ONE_SIDED_P_MIN) > 0.0 {
        return ONE_SIDED_P_MIN;
    }
    let (mut lo, mut hi) = (ONE_SIDED_P_MIN, ONE_SIDED_P_MAX);
    for _ in 0..100 {
        let mid = (lo + hi) / 2.0;
        if excess(mid) > 0.0 {
            hi = mid;
        } else {
            lo = mid;
        }
        if hi - lo < 1e-6 {
            break;
        }
    }
    (lo + hi) / 2.0
}

/// Sequential test of an effect over `units` = n_A + n_B units.
pub fn sequential_test(
    effect: Effect,
    df: f64,
    units: u64,
    alpha: f64,
    tuning: f64,
    alternative: Alternative,
) -> Result<FrequentistResult> {
    let alpha = open_unit(alpha, "alpha")?;
    if !(tuning.is_finite() && tuning > 0.0) {
        return Err(StatsError::InvalidConfig {
            field: "sequential_tuning",
            detail: "must be a positive number",
        });
    }
    if alternative != Alternative::TwoSided && alpha >= 0.5 {
        return Err(StatsError::InvalidConfig {
            field: "alpha",
            detail: "a one-sided sequential test needs alpha < 0.5",
        });
    }
    if !(effect.variance.is_finite() && effect.variance > 0.0) {
        return Err(StatsError::ZeroVariance);
    }
    let se = effect.variance.sqrt();
    let n = units as f64;
    let point = effect.point;
    let (p_value, confidence_interval) = match alternative {
        Alternative::TwoSided => {
            let hw = half_width(se, n, alpha, tuning, true);
            // eq. 155: e-value of the mixture martingale; p = min(1/e, 1).
            let r2 = rho(alpha, tuning).powi(2);
            let v = n * r2 + 1.0;
            let st2 = point * point * n / (se * se);
            let log_e = r2 * st2 / (2.0 * v) - 0.5 * v.ln();
            ((-log_e).exp().min(1.0), [point - hw, point + hw])
        }
        Alternative::Greater => (
            one_sided_p(point, se, n, tuning, true),
            [
                point - half_width(se, n, alpha, tuning, false),
                f64::INFINITY,
            ],
        ),
        Alternative::Lesser => (
            one_sided_p(point, se, n, tuning, false),
            [
                f64::NEG_INFINITY,
                point + half_width(se, n, alpha, tuning, false),
            ],
        ),
    };
    Ok(FrequentistResult {
        expected: point,
        stddev: se,
        p_value,
        confidence_interval,
        degrees_of_freedom: df,
        significant: p_value < alpha,
    })
}
