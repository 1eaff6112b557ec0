//! Multiple-testing corrections (GrowthBook `packages/shared/src/experiments/experiments.ts`, reference 2.6).
//! PostHog applies none; these are here for when several metrics or variants are read together.

use statrs::distribution::{ContinuousCDF, Normal};

fn order(p_values: &[f64], descending: bool) -> Vec<usize> {
    let mut idx: Vec<usize> = (0..p_values.len()).collect();
    idx.sort_by(|&a, &b| {
        let ord = p_values[a].total_cmp(&p_values[b]);
        if descending { ord.reverse() } else { ord }
    });
    idx
}

/// Holm–Bonferroni: ascending, `p_(i)·(m−i)` capped at 1 (0-based i), then a running max. Original order.
pub fn holm_bonferroni(p_values: &[f64]) -> Vec<f64> {
    let m = p_values.len();
    let mut out = vec![0.0; m];
    let mut running = 0.0_f64;
    for (i, &k) in order(p_values, false).iter().enumerate() {
        running = running.max((p_values[k] * (m - i) as f64).min(1.0));
        out[k] = running;
    }
    out
}

/// Benjamini–Hochberg: descending, `p_(i)·m/(m−i)` capped at 1 (0-based i), then a running min. Original order.
pub fn benjamini_hochberg(p_values: &[f64]) -> Vec<f64> {
    let m = p_values.len();
    let mut out = vec![0.0; m];
    let mut running = 1.0_f64;
    for (i, &k) in order(p_values, true).iter().enumerate() {
        running = running.min((p_values[k] * m as f64 / (m - i) as f64).min(1.0));
        out[k] = running;
    }
    out
}

/// Interval implied by an adjusted p-value: `sd = |lift/Φ⁻¹(1−p_adj/2)|`, `lift ± Φ⁻¹(1−thr/2)·sd`;
/// `(−∞, ∞)` when `p_adj > 0.999999`. GrowthBook uses it only where it is wider than the original on both sides.
pub fn adjusted_interval(p_adjusted: f64, lift: f64, threshold: f64) -> [f64; 2] {
    if p_adjusted.is_nan() || p_adjusted > 0.999_999 {
        return [f64::NEG_INFINITY, f64::INFINITY];
    }
    let z = Normal::standard();
    let z_star = z.inverse_cdf(1.0 - threshold / 2.0);
    let sd = (lift / z.inverse_cdf(1.0 - p_adjusted / 2.0)).abs();
    [lift - z_star * sd, lift + z_star * sd]
}
