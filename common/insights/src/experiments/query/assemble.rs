//! Per-variant sums into PostHog's `ExperimentQueryResponse` (experiment_stats.md 1.4–1.7):
//! configured variants missing from the data get zeros, excluded variants are left out, the
//! validation gates decide which arms get statistics, and `experiment_stats` computes them.

use experiment_stats::{
    DEFAULT_SRM_THRESHOLD, Proportion, Ratio, SampleMean, Statistic, Sums, VariantStats, analyze,
    srm_check,
};
use serde_json::{Map, Value, json};

use super::settings::StatsSettings;
use super::sql::{MULTIPLE, MetricKind};
use crate::experiments::ExperimentSpec;
use crate::{Invalid, Table};

pub const NOT_ENOUGH_EXPOSURES: &str = "not-enough-exposures";
pub const NOT_ENOUGH_METRIC_DATA: &str = "not-enough-metric-data";
pub const BASELINE_MEAN_IS_ZERO: &str = "baseline-mean-is-zero";

/// PostHog's minimum exposures per arm, and minimum conversions of a funnel arm.
const MIN_EXPOSURES: u64 = 50;
const MIN_FUNNEL_CONVERSIONS: f64 = 5.0;

/// One variant's sums as the query gives them.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Arm {
    pub key: String,
    pub n: u64,
    pub sum: f64,
    pub sum_squares: f64,
    /// Ratio metrics.
    pub denominator_sum: f64,
    pub denominator_sum_squares: f64,
    pub numerator_denominator_sum_product: f64,
    /// Funnels: entities that reached each series step (exposure not included).
    pub step_counts: Vec<u64>,
}

impl Arm {
    fn zero(key: &str, kind: MetricKind) -> Self {
        Self {
            key: key.to_owned(),
            step_counts: match kind {
                MetricKind::Funnel { steps } => vec![0; steps],
                _ => Vec::new(),
            },
            ..Self::default()
        }
    }

    fn statistic(&self, kind: MetricKind) -> Statistic {
        match kind {
            MetricKind::Mean => Statistic::Mean(SampleMean {
                n: self.n,
                sum: self.sum,
                sum_squares: self.sum_squares,
            }),
            MetricKind::Funnel { .. } => Statistic::Proportion(Proportion {
                n: self.n,
                sum: self.sum,
            }),
            MetricKind::Ratio => Statistic::Ratio(Ratio {
                n: self.n,
                numerator: Sums {
                    sum: self.sum,
                    sum_squares: self.sum_squares,
                },
                denominator: Sums {
                    sum: self.denominator_sum,
                    sum_squares: self.denominator_sum_squares,
                },
                sum_of_products: self.numerator_denominator_sum_product,
            }),
        }
    }

    fn failures(&self, kind: MetricKind, baseline: bool) -> Vec<&'static str> {
        let mut failures = Vec::new();
        if self.n < MIN_EXPOSURES {
            failures.push(NOT_ENOUGH_EXPOSURES);
        }
        if matches!(kind, MetricKind::Funnel { .. }) && self.sum < MIN_FUNNEL_CONVERSIONS {
            failures.push(NOT_ENOUGH_METRIC_DATA);
        }
        if baseline && self.sum == 0.0 {
            failures.push(BASELINE_MEAN_IS_ZERO);
        }
        failures
    }

    fn json(&self, kind: MetricKind, failures: &[&str]) -> Map<String, Value> {
        let mut out = Map::new();
        out.insert("key".into(), json!(self.key));
        out.insert("number_of_samples".into(), json!(self.n));
        out.insert("sum".into(), number(self.sum));
        out.insert("sum_squares".into(), number(self.sum_squares));
        match kind {
            MetricKind::Ratio => {
                out.insert("denominator_sum".into(), number(self.denominator_sum));
                out.insert(
                    "denominator_sum_squares".into(),
                    number(self.denominator_sum_squares),
                );
                out.insert(
                    "numerator_denominator_sum_product".into(),
                    number(self.numerator_denominator_sum_product),
                );
            }
            MetricKind::Funnel { .. } => {
                out.insert("step_counts".into(), json!(self.step_counts));
            }
            MetricKind::Mean => {}
        }
        out.insert("validation_failures".into(), json!(failures));
        out
    }
}

/// A finite float as JSON; NaN or infinite is null (JSON has no NaN).
fn number(value: f64) -> Value {
    if value.is_finite() {
        json!(value)
    } else {
        Value::Null
    }
}

/// A cell as a float (the engine may give integers, floats, or text for wide integers).
fn cell(row: &[Value], index: Option<usize>) -> f64 {
    match index.and_then(|index| row.get(index)) {
        Some(Value::Number(number)) => number.as_f64().unwrap_or(0.0),
        Some(Value::String(text)) => text.parse().unwrap_or(0.0),
        _ => 0.0,
    }
}

/// The arms of the query's table (one row per variant present in the data).
pub fn arms_from_table(table: &Table, kind: MetricKind) -> Result<Vec<Arm>, Invalid> {
    let column = |name: &str| table.columns.iter().position(|c| c == name);
    let variant = column("variant")
        .ok_or_else(|| Invalid::new("metric", "The experiment query gave no variant column."))?;
    let steps = match kind {
        MetricKind::Funnel { steps } => steps,
        _ => 0,
    };
    let step_columns: Vec<Option<usize>> = (1..=steps)
        .map(|step| column(&format!("step_{step}")))
        .collect();
    let arms = table
        .rows
        .iter()
        .map(|row| Arm {
            key: match row.get(variant) {
                Some(Value::String(key)) => key.clone(),
                Some(Value::Null) | None => String::new(),
                Some(other) => other.to_string(),
            },
            n: cell(row, column("n")).max(0.0) as u64,
            sum: cell(row, column("sum")),
            sum_squares: cell(row, column("sum_squares")),
            denominator_sum: cell(row, column("denominator_sum")),
            denominator_sum_squares: cell(row, column("denominator_sum_squares")),
            numerator_denominator_sum_product: cell(
                row,
                column("numerator_denominator_sum_product"),
            ),
            step_counts: step_columns
                .iter()
                .map(|index| cell(row, *index).max(0.0) as u64)
                .collect(),
        })
        .collect();
    Ok(arms)
}

/// The variant keys reported, in the flag's order, holdout last: `(key, configured weight)`.
fn reported_variants(spec: &ExperimentSpec) -> Vec<(String, Option<f64>)> {
    let mut keys: Vec<(String, Option<f64>)> = spec
        .variants
        .iter()
        .filter(|variant| !spec.excluded_variants.contains(&variant.key))
        .map(|variant| (variant.key.clone(), Some(variant.rollout_percentage)))
        .collect();
    if let Some(holdout) = spec.holdout_id {
        keys.push((format!("holdout-{holdout}"), None));
    }
    keys
}

/// `stats_config.baseline_variant_key`, else `control`, else the first variant.
pub fn baseline_key(spec: &ExperimentSpec, stats: &StatsSettings) -> Option<String> {
    let keys: Vec<&str> = spec.variants.iter().map(|v| v.key.as_str()).collect();
    stats
        .baseline_variant_key
        .as_deref()
        .filter(|key| keys.contains(key))
        .or_else(|| keys.iter().copied().find(|key| *key == "control"))
        .or_else(|| keys.first().copied())
        .map(str::to_owned)
}

/// The `ExperimentQueryResponse` for `arms` (the query's rows; `$multiple` and unknown keys
/// are ignored).
pub fn assemble(
    spec: &ExperimentSpec,
    stats: &StatsSettings,
    kind: MetricKind,
    metric: Value,
    arms: &[Arm],
) -> Value {
    let find = |key: &str| {
        arms.iter()
            .find(|arm| arm.key == key && key != MULTIPLE)
            .cloned()
            .unwrap_or_else(|| Arm::zero(key, kind))
    };
    let baseline_key = baseline_key(spec, stats);
    let variants = reported_variants(spec);
    let baseline = baseline_key.as_deref().map(find);
    let treatments: Vec<(Arm, Option<f64>)> = variants
        .iter()
        .filter(|(key, _)| Some(key) != baseline_key.as_ref())
        .map(|(key, weight)| (find(key), *weight))
        .collect();

    let baseline_failures = baseline
        .as_ref()
        .map(|arm| arm.failures(kind, true))
        .unwrap_or_default();
    let control = baseline.as_ref().map(|arm| experiment_stats::Arm {
        key: arm.key.clone(),
        statistic: arm.statistic(kind),
        weight: 1.0,
    });
    // Arms that pass the gates, tested against a control that passes them.
    let testable: Vec<experiment_stats::Arm> = treatments
        .iter()
        .filter(|(arm, _)| baseline_failures.is_empty() && arm.failures(kind, false).is_empty())
        .map(|(arm, _)| experiment_stats::Arm {
            key: arm.key.clone(),
            statistic: arm.statistic(kind),
            weight: 1.0,
        })
        .collect();
    let analysis = match (&control, testable.is_empty()) {
        (Some(control), false) => Some(analyze(
            control,
            &testable,
            &stats.method,
            DEFAULT_SRM_THRESHOLD,
        )),
        _ => None,
    };

    let variant_results: Vec<Value> = treatments
        .iter()
        .map(|(arm, _)| {
            let failures = arm.failures(kind, false);
            let mut out = arm.json(kind, &failures);
            let result = analysis.as_ref().and_then(|analysis| {
                analysis
                    .variants
                    .iter()
                    .find(|variant| variant.key == arm.key)
            });
            if let Some(stats) = result.and_then(|variant| variant.stats.as_ref()) {
                insert_stats(&mut out, stats);
            } else if let Some(error) = result.and_then(|variant| variant.error.as_ref()) {
                out.insert("error".into(), json!(error.to_string()));
            }
            Value::Object(out)
        })
        .collect();

    let mut response = Map::new();
    response.insert("kind".into(), json!("ExperimentQueryResponse"));
    response.insert("metric".into(), metric);
    response.insert(
        "baseline".into(),
        baseline.as_ref().map_or(Value::Null, |arm| {
            Value::Object(arm.json(kind, &baseline_failures))
        }),
    );
    response.insert("variant_results".into(), Value::Array(variant_results));
    response.insert(
        "sample_ratio_mismatch".into(),
        sample_ratio_mismatch(baseline.as_ref(), spec, &treatments),
    );
    response.insert("stats_method".into(), json!(stats.method_name()));
    Value::Object(response)
}

fn insert_stats(out: &mut Map<String, Value>, stats: &VariantStats) {
    match stats {
        VariantStats::Bayesian(result) => {
            out.insert("method".into(), json!("bayesian"));
            out.insert("chance_to_win".into(), number(result.chance_to_win));
            out.insert(
                "credible_interval".into(),
                interval(result.credible_interval),
            );
            // The loss of shipping this variant if it is in fact worse (GrowthBook's risk).
            out.insert(
                "expected_loss".into(),
                number(result.expected_loss.treatment),
            );
            out.insert("significant".into(), json!(result.significant));
        }
        VariantStats::Frequentist(result) => {
            out.insert("method".into(), json!("frequentist"));
            out.insert("p_value".into(), number(result.p_value));
            out.insert(
                "confidence_interval".into(),
                interval(result.confidence_interval),
            );
            out.insert("significant".into(), json!(result.significant));
        }
    }
}

fn interval(bounds: [f64; 2]) -> Value {
    Value::Array(bounds.iter().map(|bound| number(*bound)).collect())
}

/// SRM over the baseline and the configured (non-holdout, non-excluded) variants with their
/// rollout as weights; null when it cannot be computed (fewer than two arms, no exposures...).
fn sample_ratio_mismatch(
    baseline: Option<&Arm>,
    spec: &ExperimentSpec,
    treatments: &[(Arm, Option<f64>)],
) -> Value {
    let Some(baseline) = baseline else {
        return Value::Null;
    };
    let baseline_weight = spec
        .variants
        .iter()
        .find(|variant| variant.key == baseline.key)
        .map_or(0.0, |variant| variant.rollout_percentage);
    let arms: Vec<(&Arm, f64)> = std::iter::once((baseline, baseline_weight))
        .chain(
            treatments
                .iter()
                .filter_map(|(arm, weight)| weight.map(|weight| (arm, weight))),
        )
        .collect();
    let observed: Vec<u64> = arms.iter().map(|(arm, _)| arm.n).collect();
    let weights: Vec<f64> = arms.iter().map(|(_, weight)| *weight).collect();
    let Ok(result) = srm_check(&observed, &weights, DEFAULT_SRM_THRESHOLD) else {
        return Value::Null;
    };
    let total: u64 = observed.iter().sum();
    let weight_total: f64 = weights.iter().sum();
    let mut expected = Map::new();
    let mut seen = Map::new();
    for (arm, weight) in &arms {
        let share = if weight_total > 0.0 {
            weight / weight_total
        } else {
            0.0
        };
        expected.insert(arm.key.clone(), number(share * total as f64));
        seen.insert(arm.key.clone(), json!(arm.n));
    }
    json!({
        "p_value": number(result.p_value),
        "chi_square": number(result.chi_square),
        "threshold": DEFAULT_SRM_THRESHOLD,
        "mismatch": result.mismatch,
        "expected": expected,
        "observed": seen,
    })
}
