//! Degenerate and hostile inputs give typed errors, never panics; the analysis reports SRM on every result.

use experiment_stats::*;

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

fn both(a: &Statistic, b: &Statistic) -> (Result<BayesianResult>, Result<FrequentistResult>) {
    (
        bayesian_test(a, b, &BayesianConfig::default()),
        frequentist_test(a, b, &FrequentistConfig::default()),
    )
}

#[test]
fn empty_arms_are_not_enough_data() {
    let (bayes, freq) = both(&mean(0, 0.0, 0.0), &mean(100, 10.0, 20.0));
    assert!(
        matches!(bayes, Err(StatsError::NotEnoughData { .. })),
        "{bayes:?}"
    );
    assert!(
        matches!(freq, Err(StatsError::NotEnoughData { .. })),
        "{freq:?}"
    );
}

#[test]
fn constant_arms_have_zero_variance() {
    let (bayes, freq) = both(&mean(100, 100.0, 100.0), &mean(100, 100.0, 100.0));
    assert_eq!(bayes, Err(StatsError::ZeroVariance));
    assert_eq!(freq, Err(StatsError::ZeroVariance));
}

#[test]
fn zero_and_negative_baselines() {
    let zero = mean(100, 0.0, 0.0);
    let (bayes, freq) = both(&zero, &mean(100, 10.0, 20.0));
    assert!(matches!(bayes, Err(StatsError::BaselineMean { .. })));
    assert!(matches!(freq, Err(StatsError::BaselineMean { .. })));
    // PostHog's Bayesian path rejects a negative baseline for relative lift; the frequentist path divides by it.
    let negative = mean(100, -50.0, 100.0);
    let (bayes, freq) = both(&negative, &mean(100, -40.0, 100.0));
    assert!(matches!(bayes, Err(StatsError::BaselineMean { .. })));
    assert!(freq.is_ok());
    let absolute = BayesianConfig {
        difference_type: DifferenceType::Absolute,
        ..BayesianConfig::default()
    };
    assert!(bayesian_test(&negative, &mean(100, -40.0, 100.0), &absolute).is_ok());
}

#[test]
fn bad_sums_are_typed_errors() {
    assert_eq!(
        mean(10, f64::NAN, 1.0).moments(),
        Err(StatsError::NotFinite { field: "sum" })
    );
    assert_eq!(
        mean(10, 1.0, -1.0).moments(),
        Err(StatsError::Negative {
            field: "sum_squares"
        })
    );
    assert_eq!(
        prop(10, -1.0).moments(),
        Err(StatsError::Negative { field: "sum" })
    );
    assert!(matches!(
        prop(10, 11.0).moments(),
        Err(StatsError::SumExceedsCount { .. })
    ));
    let ratio = Statistic::Ratio(Ratio {
        n: 10,
        numerator: Sums {
            sum: 5.0,
            sum_squares: 5.0,
        },
        denominator: Sums {
            sum: 0.0,
            sum_squares: 0.0,
        },
        sum_of_products: 0.0,
    });
    assert_eq!(ratio.moments(), Err(StatsError::ZeroDenominator));
}

#[test]
fn posthog_gates() {
    // Frequentist: at least 5 units per arm.
    let r = frequentist_test(
        &mean(4, 4.0, 6.0),
        &mean(100, 10.0, 20.0),
        &FrequentistConfig::default(),
    );
    assert!(matches!(r, Err(StatsError::NotEnoughData { .. })));
    // Bayesian proportions: at least 5 successes and 5 failures per arm.
    let r = bayesian_test(
        &prop(100, 4.0),
        &prop(100, 50.0),
        &BayesianConfig::default(),
    );
    assert!(matches!(r, Err(StatsError::NotEnoughData { .. })));
    let r = bayesian_test(
        &prop(100, 96.0),
        &prop(100, 50.0),
        &BayesianConfig::default(),
    );
    assert!(matches!(r, Err(StatsError::NotEnoughData { .. })));
}

#[test]
fn bad_config_is_rejected() {
    let a = mean(100, 100.0, 300.0);
    let b = mean(100, 120.0, 400.0);
    for ci_level in [0.0, 1.0, f64::NAN, 2.0] {
        let cfg = BayesianConfig {
            ci_level,
            ..BayesianConfig::default()
        };
        assert!(matches!(
            bayesian_test(&a, &b, &cfg),
            Err(StatsError::InvalidConfig { .. })
        ));
    }
    let cfg = FrequentistConfig {
        alpha: 0.0,
        ..FrequentistConfig::default()
    };
    assert!(matches!(
        frequentist_test(&a, &b, &cfg),
        Err(StatsError::InvalidConfig { .. })
    ));
    let cfg = FrequentistConfig {
        sequential_tuning: Some(-1.0),
        ..FrequentistConfig::default()
    };
    assert!(matches!(
        frequentist_test(&a, &b, &cfg),
        Err(StatsError::InvalidConfig { .. })
    ));
}

#[test]
fn srm_edges() {
    let none = srm_check(&[0, 0], &[0.5, 0.5], DEFAULT_SRM_THRESHOLD).unwrap();
    assert_eq!(none.p_value, 1.0);
    assert!(srm_check(&[10], &[1.0], DEFAULT_SRM_THRESHOLD).is_err());
    assert!(srm_check(&[10, 10], &[1.0], DEFAULT_SRM_THRESHOLD).is_err());
    assert!(srm_check(&[10, 10], &[0.0, 0.0], DEFAULT_SRM_THRESHOLD).is_err());
    assert!(srm_check(&[10, 10], &[-1.0, 2.0], DEFAULT_SRM_THRESHOLD).is_err());
    let skewed = srm_check(&[1000, 1300], &[0.5, 0.5], DEFAULT_SRM_THRESHOLD).unwrap();
    assert!(skewed.mismatch, "{skewed:?}");
}

#[test]
fn analysis_reports_srm_and_per_variant_outcomes() {
    let arm = |key: &str, statistic| Arm {
        key: key.to_owned(),
        statistic,
        weight: 1.0,
    };
    let control = arm("control", mean(2507, 1196.87, 37377.9767));
    let treatments = [
        arm("test", mean(2461, 1922.7, 94698.29)),
        arm("empty", mean(0, 0.0, 0.0)),
    ];
    let method = Method::Frequentist(FrequentistConfig::default());
    let analysis = analyze(&control, &treatments, &method, DEFAULT_SRM_THRESHOLD);
    let srm = analysis.srm.expect("srm");
    assert!(srm.mismatch, "an empty third arm is a ratio mismatch");
    assert!(matches!(
        analysis.variants[0].stats,
        Some(VariantStats::Frequentist(_))
    ));
    assert!(matches!(
        analysis.variants[1].error,
        Some(StatsError::NotEnoughData { .. })
    ));
    let json = serde_json::to_value(&analysis).unwrap();
    assert_eq!(json["variants"][0]["stats"]["method"], "frequentist");
    assert_eq!(json["variants"][1]["error"]["code"], "not_enough_data");

    // A control without data gives no variant stats at all.
    let empty_control = arm("control", mean(0, 0.0, 0.0));
    let analysis = analyze(
        &empty_control,
        &treatments[..1],
        &Method::Bayesian(BayesianConfig::default()),
        DEFAULT_SRM_THRESHOLD,
    );
    assert!(analysis.variants[0].stats.is_none());
    assert!(analysis.variants[0].error.is_some());
}
