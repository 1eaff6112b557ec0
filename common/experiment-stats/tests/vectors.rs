//! Every test vector of `shared/reference/experiment_stats.md` section 3 (V1–V9). Expected values there are
//! rounded to the decimals shown, so each check allows half a unit in the last shown decimal.

use experiment_stats::*;

/// PostHog's tests truncate rather than round (e.g. 0.636467 is written 0.63646), so one unit in the last
/// shown decimal is allowed for V6 and V7.
#[track_caller]
fn close_truncated(actual: f64, expected: f64, decimals: i32) {
    let tolerance = 10f64.powi(-decimals) + 1e-12;
    assert!(
        (actual - expected).abs() <= tolerance,
        "got {actual}, expected {expected} to {decimals} dp (truncated)"
    );
}

#[track_caller]
fn close(actual: f64, expected: f64, decimals: i32) {
    let tolerance = 0.5 * 10f64.powi(-decimals) + 1e-12;
    assert!(
        (actual - expected).abs() <= tolerance,
        "got {actual}, expected {expected} to {decimals} dp"
    );
}

fn mean(n: u64, sum: f64, sum_squares: f64) -> Statistic {
    Statistic::Mean(SampleMean {
        n,
        sum,
        sum_squares,
    })
}

fn prop(n: u64, sum: f64) -> Statistic {
    Statistic::Proportion(Proportion { n, sum })
}

fn bayes(difference_type: DifferenceType, prior: Prior) -> BayesianConfig {
    BayesianConfig {
        ci_level: 0.95,
        difference_type,
        prior,
    }
}

fn freq(
    difference_type: DifferenceType,
    alternative: Alternative,
    tuning: Option<f64>,
) -> FrequentistConfig {
    FrequentistConfig {
        alpha: 0.05,
        difference_type,
        alternative,
        sequential_tuning: tuning,
    }
}

#[test]
fn v1_bayesian_proportion_relative_flat() {
    let r = bayesian_test(
        &prop(100, 49.0),
        &prop(100, 51.0),
        &bayes(DifferenceType::Relative, Prior::Flat),
    )
    .unwrap();
    close(r.expected, 0.04082, 5);
    close(r.stddev, 0.14725, 5);
    close(r.credible_interval[0], -0.24779, 5);
    close(r.credible_interval[1], 0.32943, 5);
    close(r.chance_to_win, 0.60918, 5);
    close(r.expected_loss.control, 0.0814, 4);
    close(r.expected_loss.treatment, 0.04058, 5);
    assert!(!r.significant);
}

#[test]
fn v2_bayesian_mean_relative_flat_and_proper() {
    let a = mean(10, 100.0, 1002.25);
    let b = mean(10, 105.0, 1111.5);
    let flat = bayesian_test(&a, &b, &bayes(DifferenceType::Relative, Prior::Flat)).unwrap();
    close(flat.expected, 0.05, 5);
    close(flat.stddev, 0.03572, 5);
    close(flat.credible_interval[0], -0.02, 5);
    close(flat.credible_interval[1], 0.12, 5);
    close(flat.chance_to_win, 0.91923, 5);
    close(flat.expected_loss.control, 0.05131, 5);
    close(flat.expected_loss.treatment, 0.00131, 5);

    let prior = Prior::Proper {
        mean: 0.1,
        variance: 0.1,
    };
    let proper = bayesian_test(&a, &b, &bayes(DifferenceType::Relative, prior)).unwrap();
    close(proper.expected, 0.05063, 5);
    close(proper.stddev, 0.03549, 5);
    close(proper.credible_interval[0], -0.01893, 5);
    close(proper.credible_interval[1], 0.12019, 5);
    close(proper.chance_to_win, 0.92315, 5);
    close(proper.expected_loss.control, 0.05186, 5);
    close(proper.expected_loss.treatment, 0.00123, 5);
}

#[test]
fn v2_get_risk() {
    let risk = expected_loss(0.1, 0.05);
    close(risk.control, 0.1004245351, 10);
    close(risk.treatment, 0.0004245351, 10);
}

fn v3_arms() -> (Statistic, Statistic) {
    (
        mean(3407, 1396.87, 52377.9767),
        mean(3461, 2422.7, 134698.29),
    )
}

#[test]
fn v3_welch_two_sided_relative() {
    let (a, b) = v3_arms();
    let cfg = freq(DifferenceType::Relative, Alternative::TwoSided, None);
    let r = frequentist_test(&a, &b, &cfg).unwrap();
    close(r.expected, 0.70732, 5);
    close(r.confidence_interval[0], -0.03526, 5);
    close(r.confidence_interval[1], 1.44989, 5);
    close(r.stddev, 0.37879, 5);
    close(r.p_value, 0.06191, 5);
    close(r.degrees_of_freedom, 5841.74, 2);
    assert!(!r.significant);
}

#[test]
fn v3_welch_two_sided_absolute() {
    let (a, b) = v3_arms();
    let cfg = freq(DifferenceType::Absolute, Alternative::TwoSided, None);
    let r = frequentist_test(&a, &b, &cfg).unwrap();
    close(r.expected, 0.29, 5);
    close(r.confidence_interval[0], 0.04538, 5);
    close(r.confidence_interval[1], 0.53462, 5);
    close(r.stddev, 0.12478, 5);
    close(r.p_value, 0.02016, 5);
    assert!(r.significant);
}

#[test]
fn v3_welch_two_sided_proportions() {
    let cfg = freq(DifferenceType::Relative, Alternative::TwoSided, None);
    let r = frequentist_test(&prop(28, 14.0), &prop(30, 16.0), &cfg).unwrap();
    close(r.expected, 0.06667, 5);
    close(r.confidence_interval[0], -0.47767, 5);
    close(r.confidence_interval[1], 0.61101, 5);
    close(r.stddev, 0.2717, 4);
    close(r.p_value, 0.80707, 5);
}

fn v4_arms() -> (Statistic, Statistic) {
    (
        mean(3000, 1396.87, 52377.9767),
        mean(3461, 2422.7, 134698.29),
    )
}

#[test]
fn v4_one_sided() {
    let (a, b) = v4_arms();
    let rel_greater = frequentist_test(
        &a,
        &b,
        &freq(DifferenceType::Relative, Alternative::Greater, None),
    )
    .unwrap();
    close(rel_greater.expected, 0.5033610858562358, 12);
    close(rel_greater.stddev, 0.3334122146400735, 12);
    close(rel_greater.confidence_interval[0], -0.045136675850396046, 9);
    assert_eq!(rel_greater.confidence_interval[1], f64::INFINITY);
    close(rel_greater.p_value, 0.06558262868467746, 9);

    let rel_lesser = frequentist_test(
        &a,
        &b,
        &freq(DifferenceType::Relative, Alternative::Lesser, None),
    )
    .unwrap();
    assert_eq!(rel_lesser.confidence_interval[0], f64::NEG_INFINITY);
    close(rel_lesser.confidence_interval[1], 1.0518588475628676, 9);
    close(rel_lesser.p_value, 0.9344173713153225, 9);

    let abs_greater = frequentist_test(
        &a,
        &b,
        &freq(DifferenceType::Absolute, Alternative::Greater, None),
    )
    .unwrap();
    close(abs_greater.expected, 0.23437666666666668, 12);
    close(abs_greater.stddev, 0.12983081254184736, 12);
    close(abs_greater.confidence_interval[0], 0.020791480063255735, 9);
    close(abs_greater.p_value, 0.03554272489873023, 9);

    let abs_lesser = frequentist_test(
        &a,
        &b,
        &freq(DifferenceType::Absolute, Alternative::Lesser, None),
    )
    .unwrap();
    close(abs_lesser.confidence_interval[1], 0.44796185327007765, 9);
    close(abs_lesser.p_value, 0.9644572751012698, 9);
}

#[test]
fn v5_sequential_two_sided() {
    let (a, b) = v4_arms();
    let r = frequentist_test(
        &a,
        &b,
        &freq(
            DifferenceType::Relative,
            Alternative::TwoSided,
            Some(1000.0),
        ),
    )
    .unwrap();
    close(r.expected, 0.50336, 5);
    close(r.confidence_interval[0], -0.55844, 5);
    close(r.confidence_interval[1], 1.56516, 5);
    close(r.stddev, 0.33341, 5);
    assert_eq!(r.p_value, 1.0);

    let cfg = freq(
        DifferenceType::Relative,
        Alternative::TwoSided,
        Some(5000.0),
    );
    let p = frequentist_test(&prop(3000, 1396.0), &prop(3461, 2422.0), &cfg).unwrap();
    close(p.expected, 0.50386, 5);
    close(p.confidence_interval[0], 0.40098, 5);
    close(p.confidence_interval[1], 0.60675, 5);
    close(p.stddev, 0.03386, 5);
    close(p.p_value, 0.0, 5);
    assert!(p.p_value > 0.0 && p.p_value < 1e-40, "p = {}", p.p_value);
}

#[test]
fn v5_sequential_one_sided() {
    let (a, b) = v4_arms();
    let t = Some(5000.0);
    let g = frequentist_test(
        &a,
        &b,
        &freq(DifferenceType::Relative, Alternative::Greater, t),
    )
    .unwrap();
    close(g.confidence_interval[0], -0.42356454602790883, 9);
    assert_eq!(g.p_value, 0.4999);
    let l = frequentist_test(
        &a,
        &b,
        &freq(DifferenceType::Relative, Alternative::Lesser, t),
    )
    .unwrap();
    close(l.confidence_interval[1], 1.4302867177403806, 9);
    assert_eq!(l.p_value, 0.4999);

    let g = frequentist_test(
        &a,
        &b,
        &freq(DifferenceType::Absolute, Alternative::Greater, t),
    )
    .unwrap();
    close(g.confidence_interval[0], -0.12656844172804982, 9);
    // The bound never reaches 0 on [1e-5, 0.4999] (it peaks at about −0.025 near α = 0.35), so the
    // p-value is clamped; gbstats' 0.46316 is an artefact of its bisection, see the ignored test below.
    assert_eq!(g.p_value, 0.4999);
    let l = frequentist_test(
        &a,
        &b,
        &freq(DifferenceType::Absolute, Alternative::Lesser, t),
    )
    .unwrap();
    close(l.confidence_interval[1], 0.5953217750613832, 9);
    assert_eq!(l.p_value, 0.4999);
}

#[test]
#[ignore = "gbstats' one-sided sequential p 0.46316 for V5 abs Greater comes from bisecting a non-monotone bound that never crosses 0; its exact bisection is not in the reference (and the reference did not re-derive it)"]
fn v5_sequential_one_sided_absolute_greater_p_value() {
    let (a, b) = v4_arms();
    let cfg = freq(DifferenceType::Absolute, Alternative::Greater, Some(5000.0));
    let g = frequentist_test(&a, &b, &cfg).unwrap();
    close(g.p_value, 0.46316491943359384, 6);
}

#[test]
#[ignore = "GrowthBook CUPED (RegressionAdjustedStatistic) is not implemented: PostHog's CUPED differs (reference 1.3 vs 2.1) and belongs with the query side"]
fn v5_sequential_cuped() {
    unimplemented!("CUPED vector: expected 0.50338, ci (-0.50969, 1.51646), stddev 0.33341, p 1");
}

fn v6_mean_arms() -> (Statistic, Statistic) {
    (
        mean(2507, 1196.87, 37377.9767),
        mean(2461, 1922.7, 94698.29),
    )
}

#[test]
fn v6_posthog_frequentist_mean() {
    let (control, treatment) = v6_mean_arms();
    let r = frequentist_test(&control, &treatment, &FrequentistConfig::default()).unwrap();
    close_truncated(r.expected, 0.63646, 5);
    close_truncated(r.confidence_interval[0], -0.0875, 4);
    close_truncated(r.confidence_interval[1], 1.36048, 5);
    close_truncated(r.p_value, 0.08487, 5);
    assert!(!r.significant);
}

#[test]
fn v6_posthog_frequentist_proportion() {
    let r = frequentist_test(
        &prop(1529, 87.0),
        &prop(1471, 62.0),
        &FrequentistConfig::default(),
    )
    .unwrap();
    close_truncated(r.expected, -0.25925, 5);
    close_truncated(r.confidence_interval[0], -0.49475, 5);
    close_truncated(r.confidence_interval[1], -0.02376, 5);
    close_truncated(r.p_value, 0.030960, 6);
    assert!(r.significant);
}

#[test]
fn v6_posthog_frequentist_ratio() {
    let ratio = |n, s, ss, d, dd, p| {
        Statistic::Ratio(Ratio {
            n,
            numerator: Sums {
                sum: s,
                sum_squares: ss,
            },
            denominator: Sums {
                sum: d,
                sum_squares: dd,
            },
            sum_of_products: p,
        })
    };
    let treatment = ratio(
        2034,
        99673.9364269569,
        11298745.182728939,
        947.0,
        947.0,
        99673.9364269569,
    );
    let control = ratio(
        1966,
        94605.79858780127,
        10463129.505392816,
        936.0,
        936.0,
        94605.79858780127,
    );
    let r = frequentist_test(&control, &treatment, &FrequentistConfig::default()).unwrap();
    close_truncated(r.expected, 0.041333, 6);
    close_truncated(r.confidence_interval[0], 0.01378609, 8);
    close_truncated(r.confidence_interval[1], 0.0689, 4);
    close_truncated(r.p_value, 0.0032826, 7);
    assert!(r.significant);
}

#[test]
fn v7_posthog_bayesian_realistic() {
    let (control, treatment) = v6_mean_arms();
    let r = bayesian_test(&control, &treatment, &BayesianConfig::default()).unwrap();
    close_truncated(r.expected, 0.63646, 5);
    close_truncated(r.credible_interval[0], -0.0873, 4);
    close_truncated(r.credible_interval[1], 1.36026, 5);
    close_truncated(r.chance_to_win, 0.95759, 5);
    // ctw 0.958 > 0.95: decisive in PostHog's sense.
    assert!(r.significant);
}

fn all_close(actual: &[f64], expected: &[f64], decimals: i32) {
    assert_eq!(actual.len(), expected.len());
    for (a, e) in actual.iter().zip(expected) {
        close(*a, *e, decimals);
    }
}

#[test]
fn v8_multiple_testing() {
    all_close(
        &holm_bonferroni(&[0.01, 0.04, 0.03, 0.005, 0.55, 0.6]),
        &[0.05, 0.12, 0.12, 0.03, 1.0, 1.0],
        10,
    );
    all_close(
        &benjamini_hochberg(&[0.898, 0.138, 0.007, 0.964, 0.538, 0.006, 0.138]),
        &[0.964, 0.2415, 0.0245, 0.964, 0.7532, 0.0245, 0.2415],
        10,
    );
    all_close(&holm_bonferroni(&[0.025, 0.03]), &[0.05, 0.05], 10);
    all_close(&benjamini_hochberg(&[0.025, 0.03]), &[0.03, 0.03], 10);
    all_close(&adjusted_interval(0.049999999, 0.1, 0.05), &[0.0, 0.2], 8);
    assert_eq!(
        adjusted_interval(1.0, 0.1, 0.05),
        [f64::NEG_INFINITY, f64::INFINITY]
    );
}

#[test]
fn v9_srm() {
    let r = srm_check(&[5000, 5200], &[0.5, 0.5], DEFAULT_SRM_THRESHOLD).unwrap();
    close(r.chi_square, 3.921569, 6);
    close(r.p_value, 0.047670, 6);
    assert!(!r.mismatch);
    let r = srm_check(&[1000, 1000, 1100], &[1.0, 1.0, 1.0], DEFAULT_SRM_THRESHOLD).unwrap();
    close(r.chi_square, 6.451613, 6);
    close(r.p_value, 0.039724, 6);
}
