use std::sync::Arc;

use serde_json::{Value, json};

use super::assemble::{Arm, BASELINE_MEAN_IS_ZERO, NOT_ENOUGH_EXPOSURES, NOT_ENOUGH_METRIC_DATA};
use super::sql::MetricKind;
use super::*;
use crate::experiments::{ExperimentSpec, VariantSpec};
use crate::testing::{context, utc};
use crate::{Context, Table};

fn spec() -> ExperimentSpec {
    ExperimentSpec {
        id: 7,
        flag_key: "my-flag".into(),
        variants: vec![
            VariantSpec {
                key: "control".into(),
                rollout_percentage: 50.0,
            },
            VariantSpec {
                key: "test".into(),
                rollout_percentage: 50.0,
            },
        ],
        holdout_id: None,
        aggregation_group_type_index: None,
        start: Some(utc("2026-11-01T00:00:00Z")),
        end: None,
        as_of: None,
        exposure_criteria: None,
        stats_config: None,
        only_count_matured_users: false,
        excluded_variants: vec![],
        test_account_filters: vec![
            json!({"key": "email", "value": "@internal", "operator": "not_icontains", "type": "person"}),
        ],
    }
}

fn ctx(spec: ExperimentSpec) -> Context {
    let mut ctx = context(chrono_tz::UTC, "2026-11-20T00:00:00Z", 0);
    ctx.experiment = Some(Arc::new(spec));
    ctx
}

fn node(metric: Value) -> Value {
    json!({"kind": "ExperimentQuery", "experiment_id": 7, "metric": metric})
}

fn mean() -> Value {
    json!({"kind": "ExperimentMetric", "metric_type": "mean",
           "source": {"kind": "EventsNode", "event": "purchase", "math": "sum", "math_property": "amount"}})
}

fn sql_of(spec: ExperimentSpec, metric: Value) -> String {
    match crate::compile(&node(metric), &ctx(spec)) {
        Ok(compiled) => compiled.queries.join("\n"),
        Err(error) => panic!("does not compile: {error:?}"),
    }
}

fn invalid(spec: Option<ExperimentSpec>, metric: Value) -> crate::Invalid {
    let mut context = context(chrono_tz::UTC, "2026-11-20T00:00:00Z", 0);
    context.experiment = spec.map(Arc::new);
    match crate::compile(&node(metric), &context) {
        Ok(_) => panic!("compiled"),
        Err(error) => error,
    }
}

#[test]
fn default_exposure_reads_the_flag_event_and_its_response() {
    let text = sql_of(spec(), mean());
    assert!(text.contains("event = '$feature_flag_called'"), "{text}");
    assert!(
        text.contains("properties['$feature_flag'] = 'my-flag'"),
        "{text}"
    );
    assert!(
        text.contains("properties['$feature_flag_response'] AS exposure_variant"),
        "{text}"
    );
    assert!(
        text.contains("exposure_variant IN ('control', 'test')"),
        "{text}"
    );
    assert!(text.contains("timestamp >= toDateTime('2026-11-01 00:00:00.000000Z')"));
    // No end: up to now.
    assert!(text.contains("timestamp <= toDateTime('2026-11-20 00:00:00.000000Z')"));
    // `exclude` drops entities that saw two variants.
    assert!(text.contains("HAVING min(exposure_variant) = max(exposure_variant)"));
    assert!(
        text.contains("@internal"),
        "test accounts filtered by default: {text}"
    );
    assert!(text.contains("sum(m.value)"), "{text}");
    assert!(text.contains("LEFT JOIN"), "{text}");
    assert!(text.ends_with("LIMIT 1000"), "{text}");
}

#[test]
fn custom_exposure_first_seen_groups_and_windows() {
    let mut custom = spec();
    custom.exposure_criteria = Some(json!({
        "filterTestAccounts": false,
        "multiple_variant_handling": "first_seen",
        "exposure_config": {"kind": "ExperimentEventExposureConfig", "event": "$pageview",
                            "properties": [{"key": "$current_url", "value": "/pricing", "operator": "icontains", "type": "event"}]},
    }));
    custom.holdout_id = Some(3);
    custom.aggregation_group_type_index = Some(1);
    custom.as_of = Some(utc("2026-11-05T00:00:00Z"));
    custom.end = Some(utc("2026-11-10T00:00:00Z"));
    let mut metric = mean();
    metric["conversion_window"] = json!(2);
    metric["conversion_window_unit"] = json!("hour");
    let text = sql_of(custom, metric);
    assert!(text.contains("event = '$pageview'"), "{text}");
    assert!(text.contains("exposure_variant IN ('control', 'test', 'holdout-3')"));
    assert!(text.contains("properties['$feature/my-flag'] AS exposure_variant"));
    assert!(text.contains("argMin(exposure_variant, exposure_time) AS variant"));
    assert!(!text.contains("@internal"), "{text}");
    assert!(
        text.contains("properties['$group_1'] AS exposure_entity"),
        "{text}"
    );
    assert!(text.contains("min(exposure_time) + toIntervalSecond(7200) AS window_end"));
    assert!(text.contains("m.timestamp < x.window_end"));
    // as_of wins over end.
    assert!(text.contains("timestamp <= toDateTime('2026-11-05 00:00:00.000000Z')"));
}

#[test]
fn matured_users_bounds_funnels_and_ratios() {
    let mut matured = spec();
    matured.only_count_matured_users = true;
    let mut metric = mean();
    metric["conversion_window"] = json!(1);
    metric["lower_bound_percentile"] = json!(0.05);
    metric["upper_bound_percentile"] = json!(0.95);
    metric["ignore_zeros"] = json!(true);
    let text = sql_of(matured, metric);
    assert!(
        text.contains(
            "min(exposure_time) + toIntervalSecond(86400) <= toDateTime('2026-11-20 00:00:00.000000Z')"
        ),
        "{text}"
    );
    // `ignore_zeros` touches the upper quantile only, as in PostHog.
    assert!(
        text.contains(
            "quantile(0.05)(value) AS lo, quantile(0.95)(if(value != 0, value, NULL)) AS hi FROM per_entity)"
        ),
        "{text}"
    );
    // The bounds pool every exposed entity, those seen in several variants too (PostHog's order).
    assert!(
        text.contains("min(exposure_variant), '$multiple') AS variant"),
        "{text}"
    );

    let funnel = json!({"kind": "ExperimentMetric", "metric_type": "funnel", "funnel_order_type": "unordered",
        "series": [{"kind": "EventsNode", "event": "a"}, {"kind": "EventsNode", "event": "b"}]});
    let text = sql_of(spec(), funnel);
    assert!(
        text.contains("aggregateFunnel(2, 94608000, 'unordered'"),
        "{text}"
    );
    assert!(text.contains("if((event = 'a'), 1, 0) + if((event = 'b'), 2, 0) AS steps"));
    assert!(text.contains("countIf(reached >= 2) AS sum"));
    assert!(text.contains("countIf(reached >= 1) AS step_1"));

    let ratio = json!({"kind": "ExperimentMetric", "metric_type": "ratio",
        "numerator": {"kind": "EventsNode", "event": "purchase", "math": "sum", "math_property": "amount"},
        "denominator": {"kind": "EventsNode", "event": "$pageview"}});
    let text = sql_of(spec(), ratio);
    assert!(
        text.contains("((event = 'purchase') OR (event = '$pageview'))"),
        "{text}"
    );
    assert!(text.contains("numerator_denominator_sum_product"));
    assert!(text.contains("count(m.denominator)"));
}

#[test]
fn compile_errors_name_their_field() {
    assert_eq!(invalid(None, mean()).attr, "experiment_id");
    let mut draft = spec();
    draft.start = None;
    assert_eq!(invalid(Some(draft), mean()).attr, "experiment_id");
    let error = invalid(
        Some(spec()),
        json!({"kind": "ExperimentMetric", "metric_type": "mean"}),
    );
    assert_eq!(error.attr, "metric.source");
    assert!(
        error.detail.contains("\"type\":\"missing\""),
        "{}",
        error.detail
    );
    let actions = json!({"kind": "ExperimentMetric", "metric_type": "mean", "source": {"kind": "ActionsNode", "id": 1}});
    let missing = invalid(Some(spec()), actions.clone());
    assert_eq!(missing.attr, "metric.source.id");
    // With the action loaded, its condition is the metric's.
    let mut context = context(chrono_tz::UTC, "2026-11-20T00:00:00Z", 0);
    context.experiment = Some(Arc::new(spec()));
    let action: action_core::Action = serde_json::from_value(json!({"id": 1, "team_id": 1,
        "name": "Bought", "steps": [{"event": "purchase", "url": "/checkout"}],
        "created_at": "2026-01-01T00:00:00Z"}))
    .unwrap();
    context.actions = Arc::new([(1, action)].into_iter().collect());
    let compiled = crate::compile(&node(actions), &context).unwrap();
    assert!(
        compiled.queries[0]
            .contains("(event = 'purchase' AND properties['$current_url'] LIKE '%/checkout%')"),
        "{}",
        compiled.queries[0]
    );
    let mut bad_method = spec();
    bad_method.stats_config = Some(json!({"method": "magic"}));
    assert_eq!(
        invalid(Some(bad_method), mean()).attr,
        "stats_config.method"
    );
}

fn arm(key: &str, n: u64, sum: f64, sum_squares: f64) -> Arm {
    Arm {
        key: key.into(),
        n,
        sum,
        sum_squares,
        ..Arm::default()
    }
}

fn settings(config: Value) -> StatsSettings {
    StatsSettings::read(Some(&config)).expect("stats config")
}

#[test]
fn assembly_gives_bayesian_stats_and_srm() {
    // PostHog's realistic example (experiment_stats.md V7): control (2507, 1196.87, 37377.9767),
    // treatment (2461, 1922.7, 94698.29), chance to win 0.95759.
    let arms = [
        arm("test", 2461, 1922.7, 94698.29),
        arm("control", 2507, 1196.87, 37377.9767),
        arm("$multiple", 12, 3.0, 3.0),
    ];
    let response = assemble(
        &spec(),
        &settings(json!({})),
        MetricKind::Mean,
        mean(),
        &arms,
    );
    assert_eq!(response["stats_method"], json!("bayesian"));
    assert_eq!(response["baseline"]["key"], json!("control"));
    assert_eq!(response["baseline"]["number_of_samples"], json!(2507));
    let test = &response["variant_results"][0];
    assert_eq!(test["method"], json!("bayesian"));
    let ctw = test["chance_to_win"].as_f64().unwrap_or_default();
    assert!((ctw - 0.95759).abs() < 1e-5, "{ctw}");
    let ci = &test["credible_interval"];
    assert!(
        (ci[0].as_f64().unwrap_or_default() + 0.0873).abs() < 1e-4,
        "{ci}"
    );
    assert!(
        (ci[1].as_f64().unwrap_or_default() - 1.36026).abs() < 1e-4,
        "{ci}"
    );
    assert_eq!(test["significant"], json!(true));
    assert_eq!(test["validation_failures"], json!([]));
    assert_eq!(
        response["variant_results"].as_array().map(Vec::len),
        Some(1)
    );
    let srm = &response["sample_ratio_mismatch"];
    assert_eq!(srm["mismatch"], json!(false), "{srm}");
    assert_eq!(srm["expected"]["control"], json!(2484.0));
    assert_eq!(srm["observed"]["test"], json!(2461));
}

#[test]
fn assembly_gives_frequentist_stats() {
    // experiment_stats.md V6 proportion: treatment (1471, 62), control (1529, 87), p 0.030960.
    let arms = [
        arm("control", 1529, 87.0, 87.0),
        arm("test", 1471, 62.0, 62.0),
    ];
    let stats = settings(json!({"method": "frequentist", "frequentist": {"alpha": 0.05}}));
    let response = assemble(
        &spec(),
        &stats,
        MetricKind::Funnel { steps: 1 },
        mean(),
        &arms,
    );
    let test = &response["variant_results"][0];
    assert_eq!(test["method"], json!("frequentist"));
    let p = test["p_value"].as_f64().unwrap_or_default();
    assert!((p - 0.030960).abs() < 1e-5, "{p}");
    assert_eq!(test["significant"], json!(true));
    assert_eq!(response["stats_method"], json!("frequentist"));
}

#[test]
fn gates_missing_variants_and_baseline_choice() {
    let mut three = spec();
    three.variants.push(VariantSpec {
        key: "other".into(),
        rollout_percentage: 0.0,
    });
    three.excluded_variants = vec!["other".into()];
    // A thin test arm gets counts but no stats; the missing variant would be zeros but is excluded.
    let arms = [arm("control", 100, 10.0, 20.0), arm("test", 10, 1.0, 1.0)];
    let response = assemble(
        &three,
        &settings(json!({})),
        MetricKind::Mean,
        mean(),
        &arms,
    );
    let results = response["variant_results"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert_eq!(results.len(), 1);
    assert_eq!(
        results[0]["validation_failures"],
        json!([NOT_ENOUGH_EXPOSURES])
    );
    assert!(results[0].get("chance_to_win").is_none());

    // A configured variant with no data gets zeros.
    let response = assemble(
        &spec(),
        &settings(json!({})),
        MetricKind::Funnel { steps: 2 },
        mean(),
        &[arm("control", 100, 10.0, 10.0)],
    );
    let test = &response["variant_results"][0];
    assert_eq!(test["number_of_samples"], json!(0));
    assert_eq!(test["step_counts"], json!([0, 0]));
    assert_eq!(
        test["validation_failures"],
        json!([NOT_ENOUGH_EXPOSURES, NOT_ENOUGH_METRIC_DATA])
    );

    // A control failing a gate: no variant gets stats.
    let arms = [arm("control", 100, 0.0, 0.0), arm("test", 100, 5.0, 9.0)];
    let response = assemble(
        &spec(),
        &settings(json!({})),
        MetricKind::Mean,
        mean(),
        &arms,
    );
    assert_eq!(
        response["baseline"]["validation_failures"],
        json!([BASELINE_MEAN_IS_ZERO])
    );
    assert!(
        response["variant_results"][0]
            .get("chance_to_win")
            .is_none()
    );

    // The configured baseline, else control, else the first variant.
    let arms = [
        arm("control", 100, 10.0, 20.0),
        arm("test", 100, 12.0, 30.0),
    ];
    let response = assemble(
        &spec(),
        &settings(json!({"baseline_variant_key": "test"})),
        MetricKind::Mean,
        mean(),
        &arms,
    );
    assert_eq!(response["baseline"]["key"], json!("test"));
    assert_eq!(response["variant_results"][0]["key"], json!("control"));
    let mut no_control = spec();
    no_control.variants[0].key = "a".into();
    no_control.variants[1].key = "b".into();
    let response = assemble(
        &no_control,
        &settings(json!({})),
        MetricKind::Mean,
        mean(),
        &[],
    );
    assert_eq!(response["baseline"]["key"], json!("a"));
    assert_eq!(response["sample_ratio_mismatch"]["p_value"], json!(1.0));
}

#[test]
fn arms_are_read_from_the_table() {
    let table = Table {
        columns: ["variant", "n", "sum", "sum_squares", "step_1"]
            .map(String::from)
            .to_vec(),
        types: vec![],
        rows: vec![vec![
            json!("test"),
            json!(3),
            json!(2),
            json!("2"),
            json!(3),
        ]],
    };
    let arms = assemble::arms_from_table(&table, MetricKind::Funnel { steps: 1 }).expect("arms");
    assert_eq!(arms[0].key, "test");
    assert_eq!(arms[0].n, 3);
    assert_eq!(arms[0].sum_squares, 2.0);
    assert_eq!(arms[0].step_counts, vec![3]);
}
