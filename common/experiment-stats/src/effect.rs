//! The effect of treatment B against control A and its variance (reference section 0).

use serde::{Deserialize, Serialize};

use crate::error::{Result, StatsError};
use crate::statistic::Moments;

/// PostHog's `difference_type`: relative lift (default) or absolute difference.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DifferenceType {
    #[default]
    Relative,
    Absolute,
}

/// Point estimate and variance of the effect.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Effect {
    pub point: f64,
    pub variance: f64,
}

/// Absolute: `Δ = m_B − m_A`, `Var = v_B/n_B + v_A/n_A`.
/// Relative: `Δ = (m_B − m_A)/m_A` (PostHog divides by m_A; GrowthBook by |m_A|, which only differs for a
/// negative baseline), `Var = v_B/(n_B·m_A²) + v_A·m_B²/(n_A·m_A⁴)` (delta method, independent arms).
/// A zero baseline mean has no relative lift.
pub fn effect(
    control: &Moments,
    treatment: &Moments,
    difference: DifferenceType,
) -> Result<Effect> {
    let (ma, mb) = (control.mean, treatment.mean);
    let (na, nb) = (control.n as f64, treatment.n as f64);
    match difference {
        DifferenceType::Absolute => Ok(Effect {
            point: mb - ma,
            variance: treatment.variance / nb + control.variance / na,
        }),
        DifferenceType::Relative => {
            if ma == 0.0 {
                return Err(StatsError::BaselineMean { mean: ma });
            }
            Ok(Effect {
                point: (mb - ma) / ma,
                variance: treatment.variance / (nb * ma * ma)
                    + control.variance * mb * mb / (na * ma.powi(4)),
            })
        }
    }
}
