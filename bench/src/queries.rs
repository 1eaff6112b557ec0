//! The queries `bench query` times: each in our dialect (or as a structured node) and as DuckDB
//! SQL, and how a node's results become rows comparable with DuckDB's.

use serde_json::{Value, json};

/// One query, in our dialect (or as a structured node) and as DuckDB SQL over a view `events` of
/// the same Parquet files.
pub(super) struct BenchQuery {
    pub(super) name: &'static str,
    pub(super) ours: Ours,
    pub(super) duckdb: &'static str,
}

pub(super) enum Ours {
    /// Dialect text, run as a HogQLQuery.
    Sql(&'static str),
    /// A structured node (JSON), and how its `results` become rows comparable with DuckDB's.
    Node {
        node: &'static str,
        rows: fn(&Value) -> Value,
    },
}

impl Ours {
    pub(super) fn request(&self) -> Value {
        let query = match self {
            Ours::Sql(text) => json!({"kind": "HogQLQuery", "query": text}),
            Ours::Node { node, .. } => serde_json::from_str(node).unwrap_or(Value::Null),
        };
        json!({"query": query, "refresh": "force_blocking"})
    }

    pub(super) fn rows(&self, results: &Value) -> Value {
        match self {
            Ours::Sql(_) => results.clone(),
            Ours::Node { rows, .. } => rows(results),
        }
    }
}

/// A trend's buckets as `[day, value]` rows, empty buckets left out (DuckDB has no row for them).
fn trend_rows(results: &Value) -> Value {
    let series = &results[0];
    let days = series["days"].as_array().cloned().unwrap_or_default();
    let data = series["data"].as_array().cloned().unwrap_or_default();
    days.into_iter()
        .zip(data)
        .filter(|(_, value)| value.as_f64() != Some(0.0))
        .map(|(day, value)| json!([day, value]))
        .collect()
}

/// A funnel's steps as `[step, actors]` rows.
fn funnel_rows(results: &Value) -> Value {
    results
        .as_array()
        .map(|steps| {
            steps
                .iter()
                .map(|step| json!([step["order"], step["count"]]))
                .collect()
        })
        .unwrap_or_default()
}

/// A retention table as `[cohort, interval, actors]` rows, empty cells left out.
fn retention_rows(results: &Value) -> Value {
    let mut rows = Vec::new();
    for (cohort, row) in results.as_array().into_iter().flatten().enumerate() {
        for (interval, cell) in row["values"].as_array().into_iter().flatten().enumerate() {
            let count = cell["count"].as_u64().unwrap_or(0);
            if count > 0 {
                rows.push(json!([cohort, interval, count]));
            }
        }
    }
    Value::Array(rows)
}

/// Windows start at a day boundary (`today()`), so both engines see the same rows even though
/// they run a few seconds apart.
pub(super) const QUERIES: &[BenchQuery] = &[
    BenchQuery {
        name: "events_last_7_days",
        ours: Ours::Sql("select count() from events where timestamp >= today() - interval 7 day"),
        duckdb: "select count(*) from events where timestamp >= current_date - interval 7 day",
    },
    BenchQuery {
        name: "daily_active_users",
        ours: Ours::Sql(
            "select toStartOfDay(timestamp) as day, uniq(distinct_id) as users from events \
               where timestamp >= today() - interval 30 day group by day order by day",
        ),
        duckdb: "select date_trunc('day', timestamp) as day, count(distinct distinct_id) as users \
                 from events where timestamp >= current_date - interval 30 day \
                 group by day order by day",
    },
    BenchQuery {
        name: "top_events",
        ours: Ours::Sql(
            "select event, count() as c from events group by event order by c desc limit 10",
        ),
        duckdb: "select event, count(*) as c from events group by event order by c desc limit 10",
    },
    BenchQuery {
        name: "top_browsers_pageviews",
        ours: Ours::Sql(
            "select properties.$browser as browser, count() as c from events \
               where event = '$pageview' group by browser order by c desc limit 10",
        ),
        duckdb: "select json_extract_string(properties, '$.\"$browser\"') as browser, count(*) as c \
                 from events where event = '$pageview' group by browser order by c desc limit 10",
    },
    BenchQuery {
        name: "revenue_by_day",
        ours: Ours::Sql(
            "select toStartOfDay(timestamp) as day, sum(toFloat(properties.amount)) as revenue \
               from events where event = 'purchase' group by day order by day",
        ),
        duckdb: "select date_trunc('day', timestamp) as day, \
                 sum(try_cast(json_extract_string(properties, '$.amount') as double)) as revenue \
                 from events where event = 'purchase' group by day order by day",
    },
    BenchQuery {
        name: "p90_purchase_amount",
        ours: Ours::Sql(
            "select quantile(0.9)(toFloat(properties.amount)) from events where event = 'purchase'",
        ),
        duckdb: "select quantile_cont(try_cast(json_extract_string(properties, '$.amount') as double), 0.9) \
                 from events where event = 'purchase'",
    },
    BenchQuery {
        name: "sessions_per_day",
        ours: Ours::Sql(
            "select toStartOfDay(timestamp) as day, uniq($session_id) as sessions from events \
               group by day order by day",
        ),
        duckdb: "select date_trunc('day', timestamp) as day, count(distinct \"$session_id\") as sessions \
                 from events group by day order by day",
    },
    BenchQuery {
        name: "top_paths_pageviews",
        ours: Ours::Sql(
            "select properties.$current_url as url, count() as c from events \
               where event = '$pageview' group by url order by c desc limit 20",
        ),
        duckdb: "select json_extract_string(properties, '$.\"$current_url\"') as url, count(*) as c \
                 from events where event = '$pageview' group by url order by c desc limit 20",
    },
    BenchQuery {
        name: "conversions_by_utm_source",
        ours: Ours::Sql(
            "select properties.utm_source as source, countIf(event = 'signed_up') as signups, \
               countIf(event = 'purchase') as purchases from events \
               group by source order by signups desc limit 10",
        ),
        duckdb: "select json_extract_string(properties, '$.utm_source') as source, \
                 count(*) filter (where event = 'signed_up') as signups, \
                 count(*) filter (where event = 'purchase') as purchases from events \
                 group by source order by signups desc limit 10",
    },
    BenchQuery {
        name: "trend_dau_pageviews",
        ours: Ours::Node {
            node: r#"{"kind": "TrendsQuery", "interval": "day", "dateRange": {"date_from": "-30d"},
                      "series": [{"kind": "EventsNode", "event": "$pageview", "math": "dau"}]}"#,
            rows: trend_rows,
        },
        duckdb: "select date_trunc('day', timestamp) as day, count(distinct person_id) as users \
                 from events where event = '$pageview' and timestamp >= current_date - interval 30 day \
                 group by day order by day",
    },
    BenchQuery {
        name: "funnel_pageview_signup_buy",
        ours: Ours::Node {
            node: r#"{"kind": "FunnelsQuery", "dateRange": {"date_from": "-30d"},
                      "funnelsFilter": {"funnelWindowInterval": 14, "funnelWindowIntervalUnit": "day"},
                      "series": [{"kind": "EventsNode", "event": "$pageview"},
                                 {"kind": "EventsNode", "event": "signed_up"},
                                 {"kind": "EventsNode", "event": "purchase"}]}"#,
            rows: funnel_rows,
        },
        // Ordered funnel: from every first-step event, the earliest next step at or after the
        // previous one, all within 14 days of the first; each person counts at their furthest.
        duckdb: "with e as (select person_id as p, timestamp as t, event from events \
                   where timestamp >= current_date - interval 30 day \
                   and event in ('$pageview', 'signed_up', 'purchase')), \
                 s1 as (select p, t as t1 from e where event = '$pageview'), \
                 s2 as (select p, t as t2 from e where event = 'signed_up'), \
                 s3 as (select p, t as t3 from e where event = 'purchase'), \
                 a2 as (select s1.p, t1, case when t2 <= t1 + interval 14 day then t2 end as t2 \
                   from s1 asof left join s2 on s1.p = s2.p and s1.t1 <= s2.t2), \
                 a3 as (select a2.p, t1, a2.t2, case when s3.t3 <= t1 + interval 14 day then s3.t3 end as t3 \
                   from a2 asof left join s3 on a2.p = s3.p and a2.t2 <= s3.t3), \
                 furthest as (select p, max(case when t3 is not null then 3 when t2 is not null then 2 else 1 end) as steps \
                   from a3 group by p) \
                 select s.step - 1 as step, count(*) filter (where steps >= s.step) as actors \
                 from furthest, (values (1), (2), (3)) as s(step) group by s.step order by s.step",
    },
    BenchQuery {
        name: "retention_pageviews_daily",
        ours: Ours::Node {
            node: r#"{"kind": "RetentionQuery", "dateRange": {"date_from": "-7d"},
                      "retentionFilter": {"period": "Day", "totalIntervals": 8,
                        "retentionType": "retention_recurring",
                        "targetEntity": {"id": "$pageview", "type": "events"},
                        "returningEntity": {"id": "$pageview", "type": "events"}}}"#,
            rows: retention_rows,
        },
        duckdb: "with d as (select distinct person_id as p, date_trunc('day', timestamp) as day from events \
                   where event = '$pageview' and timestamp >= current_date - interval 7 day) \
                 select dense_rank() over (order by a.day) - 1 as cohort, datediff('day', a.day, b.day) as k, \
                   count(*) as actors from d a join d b on a.p = b.p and b.day >= a.day \
                 group by a.day, k order by a.day, k",
    },
];
