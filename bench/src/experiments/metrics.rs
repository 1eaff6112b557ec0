//! The two metrics `bench experiments` times: each as the `ExperimentMetric` our
//! `ExperimentQuery` runs, and as DuckDB SQL computing the same per-variant sums over a view
//! `events` of the same Parquet files (reference `experiment_stats.md` 1.2–1.3), and how both
//! answers become comparable `[variant, n, sum, sum_squares, step counts...]` rows.

use chrono::{DateTime, SecondsFormat, Utc};
use serde_json::{Value, json};

use super::data::VARIANTS;

pub(super) struct BenchMetric {
    pub(super) name: &'static str,
    /// The `ExperimentMetric` JSON.
    pub(super) metric: Value,
    pub(super) duckdb: String,
}

/// What every metric starts from, in DuckDB: one row per person exposed to `flag_key` since
/// `start` with a variant of the flag, their first exposure, and their variant (`$multiple` when
/// they saw several; those are left out at the end, as PostHog's default `exclude` does).
fn exposures(flag_key: &str, start: &str) -> String {
    let variants = VARIANTS
        .iter()
        .map(|v| format!("'{v}'"))
        .collect::<Vec<_>>()
        .join(", ");
    format!(
        "calls as (select person_id as p, timestamp as t, \
           json_extract_string(properties, '$.\"$feature_flag_response\"') as v from events \
           where event = '$feature_flag_called' \
           and json_extract_string(properties, '$.\"$feature_flag\"') = '{flag}' \
           and timestamp >= timestamptz '{start}' and timestamp <= now()), \
         exposures as (select p, min(t) as first_t, \
           case when count(distinct v) > 1 then '$multiple' else any_value(v) end as variant \
           from calls where v in ({variants}) group by p)",
        flag = flag_key.replace('\'', "''"),
    )
}

pub(super) fn metrics(flag_key: &str, start: DateTime<Utc>) -> Vec<BenchMetric> {
    let start = start.to_rfc3339_opts(SecondsFormat::Micros, true);
    let exposures = exposures(flag_key, &start);
    vec![
        BenchMetric {
            name: "mean_purchase_revenue",
            metric: json!({
                "kind": "ExperimentMetric",
                "metric_type": "mean",
                "source": {"kind": "EventsNode", "event": "purchase",
                           "math": "sum", "math_property": "revenue"},
            }),
            // Each exposed person's revenue from their first exposure on (0 without purchases).
            duckdb: format!(
                "with {exposures}, \
                 purchases as (select person_id as p, timestamp as t, \
                   coalesce(try_cast(json_extract_string(properties, '$.revenue') as double), 0) as r \
                   from events where event = 'purchase' and timestamp <= now()), \
                 per_person as (select x.p, x.variant, coalesce(sum(q.r), 0) as value \
                   from exposures x left join purchases q on q.p = x.p and q.t >= x.first_t \
                   group by x.p, x.variant) \
                 select variant, count(*) as n, sum(value) as total, sum(value * value) as squares \
                 from per_person where variant <> '$multiple' group by variant order by variant"
            ),
        },
        BenchMetric {
            name: "funnel_checkout_purchase",
            metric: json!({
                "kind": "ExperimentMetric",
                "metric_type": "funnel",
                "series": [{"kind": "EventsNode", "event": "checkout"},
                           {"kind": "EventsNode", "event": "purchase"}],
            }),
            // Ordered: the earliest checkout after the first exposure, then any purchase after
            // it (no conversion window: PostHog's default of 3 years covers the 30 days).
            duckdb: format!(
                "with {exposures}, \
                 checkouts as (select person_id as p, timestamp as t from events \
                   where event = 'checkout' and timestamp <= now()), \
                 purchases as (select person_id as p, timestamp as t from events \
                   where event = 'purchase' and timestamp <= now()), \
                 step1 as (select x.p, x.variant, min(c.t) as t1 \
                   from exposures x left join checkouts c on c.p = x.p and c.t >= x.first_t \
                   group by x.p, x.variant), \
                 step2 as (select s.p, s.variant, s.t1, min(q.t) as t2 \
                   from step1 s left join purchases q on q.p = s.p and q.t >= s.t1 \
                   group by s.p, s.variant, s.t1) \
                 select variant, count(*) as n, count(t2) as total, count(t2) as squares, \
                   count(t1) as reached_checkout, count(t2) as reached_purchase \
                 from step2 where variant <> '$multiple' group by variant order by variant"
            ),
        },
    ]
}

/// `[key, n, sum, sum_squares, step_counts...]` per variant of an `ExperimentQueryResponse`
/// (the baseline and `variant_results`, at the top or under `results`), in key order.
pub(super) fn our_rows(response: &Value) -> Value {
    let body = match response.get("baseline") {
        Some(_) => response,
        None => &response["results"],
    };
    let mut rows: Vec<Value> = std::iter::once(&body["baseline"])
        .chain(body["variant_results"].as_array().into_iter().flatten())
        .filter(|stats| stats.is_object())
        .map(|stats| {
            let head = [
                &stats["key"],
                &stats["number_of_samples"],
                &stats["sum"],
                &stats["sum_squares"],
            ];
            let steps = stats["step_counts"].as_array().into_iter().flatten();
            Value::Array(head.into_iter().chain(steps).cloned().collect())
        })
        .collect();
    rows.sort_by(|a, b| a[0].as_str().cmp(&b[0].as_str()));
    Value::Array(rows)
}

/// Whether both sides name the same variants in the same order (numbers are compared apart).
pub(super) fn same_keys(ours: &Value, theirs: &Value) -> bool {
    let keys = |rows: &Value| -> Vec<Option<String>> {
        rows.as_array()
            .into_iter()
            .flatten()
            .map(|row| row[0].as_str().map(str::to_owned))
            .collect()
    };
    keys(ours) == keys(theirs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_come_from_the_baseline_and_the_variants_in_key_order() {
        let response = json!({
            "baseline": {"key": "control", "number_of_samples": 10, "sum": 4.5, "sum_squares": 9.0},
            "variant_results": [{"key": "test", "number_of_samples": 12, "sum": 6.0,
                                 "sum_squares": 11.0, "chance_to_win": 0.7}],
        });
        let rows = our_rows(&response);
        assert_eq!(
            rows,
            json!([["control", 10, 4.5, 9.0], ["test", 12, 6.0, 11.0]])
        );
        assert_eq!(our_rows(&json!({"results": response})), rows);
        assert!(same_keys(
            &rows,
            &json!([["control", 1, 1, 1], ["test", 2, 2, 2]])
        ));
        assert!(!same_keys(&rows, &json!([["control", 1, 1, 1]])));
        let funnel = json!({
            "baseline": {"key": "control", "number_of_samples": 10, "sum": 2, "sum_squares": 2,
                         "step_counts": [5, 2]},
            "variant_results": [],
        });
        assert_eq!(our_rows(&funnel), json!([["control", 10, 2, 2, 5, 2]]));
    }

    #[test]
    fn the_sql_names_the_flag_and_the_start() {
        let start = DateTime::from_timestamp(1_800_000_000, 0).unwrap_or_default();
        let metrics = metrics("it's-a-flag", start);
        assert_eq!(metrics.len(), 2);
        for metric in &metrics {
            assert!(metric.duckdb.contains("'it''s-a-flag'"));
            assert!(metric.duckdb.contains("2027-01-15T08:00:00.000000Z"));
        }
    }
}
