//! `ExperimentQuery` compiled by `insights` and run by the engine on both backends over a small
//! event set whose per-variant sums are worked out by hand in the comments below: exposure
//! filtering (flag, variant keys, dates, test accounts), `exclude` vs `first_seen`, conversion
//! window, matured users, outlier clamping, funnel order and ratio sums.

use std::sync::Arc;

use api_tests::World;
use axum::http::{Method, StatusCode};
use chrono::{DateTime, Utc};
use insights::experiments::{ExperimentSpec, VariantSpec};
use insights::{Context, Table};
use serde_json::{Value, json};

const FLAG: &str = "exp-flag";

fn at(text: &str) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(text)
        .expect("test instant")
        .with_timezone(&Utc)
}

fn exposure(user: &str, variant: &str, ts: &str, flag: &str, email: &str) -> Value {
    json!({"event": "$feature_flag_called", "distinct_id": user, "timestamp": ts,
           "properties": {"$feature_flag": flag, "$feature_flag_response": variant, "email": email}})
}

fn event(name: &str, user: &str, ts: &str, amount: Option<f64>) -> Value {
    let mut properties = json!({"email": "user@example.com"});
    if let Some(amount) = amount {
        properties["amount"] = json!(amount);
    }
    json!({"event": name, "distinct_id": user, "timestamp": ts, "properties": properties})
}

/// Users c1..c3 saw control, t1 test, t2 test then control (`$multiple` under `exclude`); t3
/// saw another flag, t4 an unknown variant, t5 before the start, t6 after the end, x1 is a test
/// account. Experiment: 2026-11-01 to 2026-11-10.
fn events() -> Vec<Value> {
    let ok = "user@example.com";
    vec![
        exposure("c1", "control", "2026-11-02T10:00:00Z", FLAG, ok),
        exposure("c2", "control", "2026-11-02T10:00:00Z", FLAG, ok),
        exposure("c3", "control", "2026-11-03T10:00:00Z", FLAG, ok),
        exposure("t1", "test", "2026-11-02T10:00:00Z", FLAG, ok),
        exposure("t2", "test", "2026-11-02T10:00:00Z", FLAG, ok),
        exposure("t2", "control", "2026-11-03T14:00:00Z", FLAG, ok),
        exposure("t3", "test", "2026-11-02T10:00:00Z", "other-flag", ok),
        exposure("t4", "bogus", "2026-11-02T10:00:00Z", FLAG, ok),
        exposure("t5", "test", "2026-10-30T10:00:00Z", FLAG, ok),
        exposure("t6", "test", "2026-11-12T10:00:00Z", FLAG, ok),
        exposure("x1", "test", "2026-11-02T10:00:00Z", FLAG, "x@internal.com"),
        event("purchase", "c1", "2026-11-02T11:00:00Z", Some(10.0)),
        event("purchase", "c1", "2026-11-05T10:00:00Z", Some(20.0)),
        event("purchase", "c3", "2026-11-03T09:00:00Z", Some(100.0)),
        event("purchase", "c3", "2026-11-03T12:00:00Z", Some(5.0)),
        event("purchase", "t1", "2026-11-02T12:00:00Z", Some(7.0)),
        event("purchase", "t1", "2026-11-04T10:00:00Z", Some(3.0)),
        event("purchase", "t2", "2026-11-03T13:00:00Z", Some(50.0)),
        event("purchase", "t3", "2026-11-02T11:00:00Z", Some(1000.0)),
        event("purchase", "x1", "2026-11-02T11:00:00Z", Some(1000.0)),
        event("add_to_cart", "c1", "2026-11-02T10:30:00Z", None),
        event("add_to_cart", "c3", "2026-11-03T13:00:00Z", None),
        event("add_to_cart", "t1", "2026-11-04T09:00:00Z", None),
        event("$pageview", "c1", "2026-11-02T10:10:00Z", None),
        event("$pageview", "c1", "2026-11-02T10:20:00Z", None),
        event("$pageview", "c2", "2026-11-02T11:00:00Z", None),
        event("$pageview", "t1", "2026-11-02T10:05:00Z", None),
        event("$pageview", "t1", "2026-11-02T10:06:00Z", None),
        event("$pageview", "t1", "2026-11-02T10:07:00Z", None),
    ]
}

fn spec() -> ExperimentSpec {
    ExperimentSpec {
        id: 1,
        flag_key: FLAG.into(),
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
        start: Some(at("2026-11-01T00:00:00Z")),
        end: Some(at("2026-11-10T00:00:00Z")),
        as_of: None,
        exposure_criteria: None,
        stats_config: None,
        only_count_matured_users: false,
        excluded_variants: vec![],
        test_account_filters: vec![
            json!({"key": "email", "value": "@internal", "operator": "not_icontains", "type": "event"}),
        ],
    }
}

fn context(spec: ExperimentSpec) -> Context {
    Context {
        timezone: chrono_tz::UTC,
        now: at("2026-11-20T00:00:00Z"),
        week_start_day: 0,
        check_expression: engine::check_expression,
        experiment: Some(Arc::new(spec)),
        cohorts: Default::default(),
        actions: Default::default(),
        test_account_filters: Default::default(),
        path_cleaning_rules: Default::default(),
    }
}

/// Compiles the metric, runs its query through the query API, assembles the response.
async fn run(world: &World, spec: ExperimentSpec, metric: Value) -> Value {
    let node = json!({"kind": "ExperimentQuery", "experiment_id": 1, "metric": metric});
    let compiled = insights::compile(&node, &context(spec)).expect("compiles");
    let mut tables = Vec::new();
    for text in compiled.queries.clone() {
        let team = world.bootstrap.project.id;
        let body = json!({"query": {"kind": "HogQLQuery", "query": text}});
        let (status, answer) = world
            .send(
                Method::POST,
                &format!("/api/projects/{team}/query/"),
                Some(world.admin_key()),
                Some(&body.to_string()),
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{} {text}: {answer}", world.name());
        let columns = answer["columns"]
            .as_array()
            .map(|columns| {
                columns
                    .iter()
                    .map(|c| c.as_str().unwrap_or_default().to_owned())
                    .collect()
            })
            .unwrap_or_default();
        let rows = answer["results"]
            .as_array()
            .map(|rows| {
                rows.iter()
                    .map(|row| row.as_array().cloned().unwrap_or_default())
                    .collect()
            })
            .unwrap_or_default();
        tables.push(Table {
            columns,
            types: vec![],
            rows,
        });
    }
    compiled.assemble(tables).expect("assembles")
}

/// `[n, sum, sum_squares]` of control and test.
fn sums(response: &Value) -> [[f64; 3]; 2] {
    let of = |arm: &Value| {
        [
            arm["number_of_samples"].as_f64().unwrap_or(-1.0),
            arm["sum"].as_f64().unwrap_or(-1.0),
            arm["sum_squares"].as_f64().unwrap_or(-1.0),
        ]
    };
    [
        of(&response["baseline"]),
        of(&response["variant_results"][0]),
    ]
}

fn mean(math: Value) -> Value {
    let mut source = json!({"kind": "EventsNode", "event": "purchase"});
    if let Value::Object(extra) = math {
        for (key, value) in extra {
            source[key] = value;
        }
    }
    json!({"kind": "ExperimentMetric", "metric_type": "mean", "source": source})
}

#[tokio::test]
async fn experiment_metrics_over_known_events() {
    for world in World::all().await {
        let name = world.name();
        let body = json!({"api_key": world.bootstrap.project.api_token, "batch": events()});
        let (status, reply) = world
            .send(Method::POST, "/batch/", None, Some(&body.to_string()))
            .await;
        assert_eq!(status, StatusCode::OK, "{reply}");
        lake::commit_all(&world.backend.state).await.unwrap();
        let sum = json!({"math": "sum", "math_property": "amount"});

        // Sum of amount, no window, `exclude`: control c1 30, c2 0, c3 5 (the 100 was before
        // exposure); test t1 10 (t2 is `$multiple`, x1 a test account, t3..t6 not exposed).
        let response = run(&world, spec(), mean(sum.clone())).await;
        assert_eq!(response["kind"], json!("ExperimentQueryResponse"), "{name}");
        assert_eq!(response["baseline"]["key"], json!("control"), "{name}");
        assert_eq!(response["variant_results"][0]["key"], json!("test"));
        assert_eq!(
            sums(&response),
            [[3.0, 35.0, 925.0], [1.0, 10.0, 100.0]],
            "{name} {response}"
        );
        assert_eq!(
            response["baseline"]["validation_failures"],
            json!(["not-enough-exposures"]),
            "{name}"
        );

        // Without the test-account filter x1 (1000) joins test.
        let mut with_tests = spec();
        with_tests.exposure_criteria = Some(json!({"filterTestAccounts": false}));
        let response = run(&world, with_tests, mean(sum.clone())).await;
        assert_eq!(
            sums(&response)[1],
            [2.0, 1010.0, 1_000_100.0],
            "{name} {response}"
        );

        // `first_seen`: t2 counts in test with its 50.
        let mut first_seen = spec();
        first_seen.exposure_criteria = Some(json!({"multiple_variant_handling": "first_seen"}));
        let response = run(&world, first_seen, mean(sum.clone())).await;
        assert_eq!(
            sums(&response),
            [[3.0, 35.0, 925.0], [2.0, 60.0, 2600.0]],
            "{name} {response}"
        );

        // Count of purchases: control 2, 0, 1; test 2.
        let response = run(&world, spec(), mean(json!({}))).await;
        assert_eq!(
            sums(&response),
            [[3.0, 3.0, 5.0], [1.0, 2.0, 4.0]],
            "{name} {response}"
        );

        // A one-day window: c1 10, c3 5, t1 7.
        let mut windowed = mean(sum.clone());
        windowed["conversion_window"] = json!(1);
        windowed["conversion_window_unit"] = json!("day");
        let response = run(&world, spec(), windowed.clone()).await;
        assert_eq!(
            sums(&response),
            [[3.0, 15.0, 125.0], [1.0, 7.0, 49.0]],
            "{name} {response}"
        );

        // As of 11-03 11:00 with matured users only: c3 (exposed 11-03 10:00) has not had its
        // day, t2's control exposure is later, so t2 is test with nothing yet.
        let mut matured = spec();
        matured.as_of = Some(at("2026-11-03T11:00:00Z"));
        matured.only_count_matured_users = true;
        let response = run(&world, matured, windowed).await;
        assert_eq!(
            sums(&response),
            [[2.0, 10.0, 100.0], [2.0, 7.0, 49.0]],
            "{name} {response}"
        );

        // Outliers: the bounds pool every exposed person, the one seen in both variants too (as
        // PostHog does), which moves the median to 10; the lower bound is the minimum 0.
        let mut clamped = mean(sum.clone());
        clamped["upper_bound_percentile"] = json!(0.5);
        let response = run(&world, spec(), clamped.clone()).await;
        assert_eq!(
            sums(&response),
            [[3.0, 15.0, 125.0], [1.0, 10.0, 100.0]],
            "{name} {response}"
        );
        // `ignore_zeros`, by hand. PostHog (`experiment_mean_query_builder.py`) leaves zeros out
        // of the upper quantile only: `lower = min(value)` (no lower level set) over every value,
        // `upper = quantile(0.5)(if(value != 0, value, NULL))`. Per-person values, the
        // both-variants t2 pooled in: c1 30, c2 0, c3 5, t1 10, t2 50.
        // - lo = min{0, 5, 10, 30, 50} = 0 (zeros stay in the lower bound);
        // - hi = median of {5, 10, 30, 50}, interpolated (percentile_cont, as ClickHouse's
        //   `quantile`): position 0.5 * 3 = 1.5, halfway from 10 to 30 = 20. (PostHog's newer
        //   `quantileExact` would take the upper middle, 30.)
        // Clamped to [0, 20]: control c1 20, c2 0, c3 5 → n 3, sum 25, squares 400 + 0 + 25 = 425;
        // test t1 10 → n 1, sum 10, squares 100 (t2 is `$multiple`, left out after pooling).
        clamped["ignore_zeros"] = json!(true);
        let response = run(&world, spec(), clamped).await;
        assert_eq!(
            sums(&response),
            [[3.0, 25.0, 425.0], [1.0, 10.0, 100.0]],
            "{name} {response}"
        );

        // Funnel add_to_cart → purchase. Ordered: c1 converts, c3 bought before carting (step 1
        // only), t1 converts. Unordered: c3 converts too.
        let funnel = |order: &str| {
            json!({"kind": "ExperimentMetric", "metric_type": "funnel", "funnel_order_type": order,
                   "series": [{"kind": "EventsNode", "event": "add_to_cart"},
                              {"kind": "EventsNode", "event": "purchase"}]})
        };
        let response = run(&world, spec(), funnel("ordered")).await;
        assert_eq!(
            sums(&response),
            [[3.0, 1.0, 1.0], [1.0, 1.0, 1.0]],
            "{name} {response}"
        );
        assert_eq!(response["baseline"]["step_counts"], json!([2, 1]), "{name}");
        assert_eq!(response["variant_results"][0]["step_counts"], json!([1, 1]));
        let response = run(&world, spec(), funnel("unordered")).await;
        assert_eq!(
            sums(&response),
            [[3.0, 2.0, 2.0], [1.0, 1.0, 1.0]],
            "{name} {response}"
        );
        assert_eq!(response["baseline"]["step_counts"], json!([2, 2]), "{name}");

        // Ratio: amount per pageview. Control numerators 30, 0, 5 and denominators 2, 1, 0;
        // test 10 over 3.
        let ratio = json!({"kind": "ExperimentMetric", "metric_type": "ratio",
            "numerator": {"kind": "EventsNode", "event": "purchase", "math": "sum", "math_property": "amount"},
            "denominator": {"kind": "EventsNode", "event": "$pageview"}});
        let response = run(&world, spec(), ratio).await;
        assert_eq!(
            sums(&response),
            [[3.0, 35.0, 925.0], [1.0, 10.0, 100.0]],
            "{name} {response}"
        );
        let control = &response["baseline"];
        assert_eq!(control["denominator_sum"], json!(3.0), "{name} {response}");
        assert_eq!(control["denominator_sum_squares"], json!(5.0));
        assert_eq!(control["numerator_denominator_sum_product"], json!(60.0));
        let test = &response["variant_results"][0];
        assert_eq!(test["denominator_sum"], json!(3.0));
        assert_eq!(test["denominator_sum_squares"], json!(9.0));
        assert_eq!(test["numerator_denominator_sum_product"], json!(30.0));
    }
}
