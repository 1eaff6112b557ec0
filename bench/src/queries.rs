//! The queries `bench query` times: each in our dialect (or as a structured node), as DuckDB SQL,
//! and as PostHog's HogQL prints it for ClickHouse over its own events table (properties read
//! through `mat_` columns, `toTimeZone`, the team guard, `windowFunnel`, the retention runner's
//! arrays), and how a node's results become rows comparable across the three.

use serde_json::{Value, json};

/// One query, in our dialect (or as a structured node), as DuckDB SQL over a view `events` of
/// the same Parquet files, and as ClickHouse SQL over PostHog's `events` table loaded from the
/// same events (`bench/scripts/bench_clickhouse.py`).
pub(super) struct BenchQuery {
    pub(super) name: &'static str,
    pub(super) ours: Ours,
    pub(super) duckdb: &'static str,
    pub(super) clickhouse: ClickHouse,
}

/// The properties the ClickHouse queries read, each a `mat_` column of the ClickHouse table (as
/// PostHog materializes the properties a project queries most).
pub(super) const MATERIALIZED: &[&str] =
    &["$browser", "$os", "$current_url", "amount", "utm_source"];

pub(super) enum ClickHouse {
    /// SQL whose rows compare as they are.
    Sql(&'static str),
    /// SQL whose rows PostHog's query runner reshapes (as ours does a node's `results`), and how.
    Shaped {
        sql: &'static str,
        rows: fn(&Value) -> Value,
    },
}

impl ClickHouse {
    pub(super) fn sql(&self) -> &'static str {
        match self {
            ClickHouse::Sql(sql) | ClickHouse::Shaped { sql, .. } => sql,
        }
    }

    pub(super) fn rows(&self, results: &Value) -> Value {
        match self {
            ClickHouse::Sql(_) => results.clone(),
            ClickHouse::Shaped { rows, .. } => rows(results),
        }
    }
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

/// ClickHouse's trend row (`date` and `total` arrays, every day of the range) as `[day, value]`
/// rows, empty days left out, as `trend_rows` does ours.
fn clickhouse_trend_rows(results: &Value) -> Value {
    let row = &results[0];
    let days = row[0].as_array().cloned().unwrap_or_default();
    let totals = row[1].as_array().cloned().unwrap_or_default();
    days.into_iter()
        .zip(totals)
        .filter(|(_, value)| value.as_f64() != Some(0.0))
        .map(|(day, value)| json!([day, value]))
        .collect()
}

/// A stickiness series as `[intervals, actors]` rows, empty counts left out.
fn stickiness_rows(results: &Value) -> Value {
    let series = &results[0];
    let data = series["data"].as_array().cloned().unwrap_or_default();
    data.into_iter()
        .enumerate()
        .filter(|(_, value)| value.as_f64() != Some(0.0))
        .map(|(index, value)| json!([index + 1, value]))
        .collect()
}

/// PostHog's lifecycle statuses in the order the rows are compared (DuckDB's and ClickHouse's
/// `ORDER BY day, status`).
const LIFECYCLE_STATUSES: [&str; 4] = ["dormant", "new", "resurrecting", "returning"];

/// A lifecycle answer (one series per status, dormant counts negative) as `[day, status
/// index, persons]` rows by day then status, empty counts left out.
fn lifecycle_rows(results: &Value) -> Value {
    let mut rows = Vec::new();
    let series: Vec<&Value> = results.as_array().into_iter().flatten().collect();
    let days = series
        .first()
        .and_then(|series| series["days"].as_array())
        .cloned()
        .unwrap_or_default();
    for (day_index, day) in days.iter().enumerate() {
        for (status_index, status) in LIFECYCLE_STATUSES.iter().enumerate() {
            let count = series
                .iter()
                .find(|series| series["status"] == *status)
                .and_then(|series| series["data"][day_index].as_f64())
                .unwrap_or(0.0)
                .abs();
            if count > 0.0 {
                rows.push(json!([day, status_index, count]));
            }
        }
    }
    Value::Array(rows)
}

/// DuckDB's and ClickHouse's lifecycle rows (`[day, status, persons]`) with the status as its
/// index in [`LIFECYCLE_STATUSES`], as `lifecycle_rows` gives ours.
fn lifecycle_status_rows(results: &Value) -> Value {
    results
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|row| {
            let status = LIFECYCLE_STATUSES
                .iter()
                .position(|status| row[1].as_str() == Some(status))?;
            Some(json!([row[0], status, row[2]]))
        })
        .collect()
}

/// The steps of `funnel_pageview_signup_buy`.
const FUNNEL_STEPS: u64 = 3;

/// `windowFunnel`'s actors per furthest step (`[max_step, actors]`) as `[step, actors reaching
/// at least it]` rows, as PostHog's funnel runner sums them from the last step back.
fn clickhouse_funnel_rows(results: &Value) -> Value {
    let furthest: Vec<(u64, u64)> = results
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|row| Some((row[0].as_u64()?, row[1].as_u64()?)))
        .collect();
    (1..=FUNNEL_STEPS)
        .map(|step| {
            let actors: u64 = furthest
                .iter()
                .filter(|(reached, _)| *reached >= step)
                .map(|(_, actors)| actors)
                .sum();
            json!([step - 1, actors])
        })
        .collect()
}

/// A paths answer (edges `{source, target, value}`, heaviest first) as `[step, source, target,
/// value]` rows, the step being the number before the source's `_`.
fn paths_rows(results: &Value) -> Value {
    results
        .as_array()
        .into_iter()
        .flatten()
        .map(|edge| {
            let source = edge["source"].as_str().unwrap_or_default();
            json!([edge_step(source), source, edge["target"], edge["value"]])
        })
        .collect()
}

/// The step of a path node (`"2_/pricing"` is 2).
fn edge_step(node: &str) -> u64 {
    node.split('_')
        .next()
        .and_then(|step| step.parse().ok())
        .unwrap_or(0)
}

/// ClickHouse's heaviest edges (`[step, source, target, value]`) without those a path from a
/// first step cannot reach, which PostHog's paths runner drops after the query.
fn clickhouse_paths_rows(results: &Value) -> Value {
    let edges: Vec<&Value> = results.as_array().into_iter().flatten().collect();
    let mut reached: std::collections::HashSet<&str> = edges
        .iter()
        .filter(|edge| edge[0].as_u64() == Some(1))
        .filter_map(|edge| edge[1].as_str())
        .collect();
    // Steps only go forward, so one pass in step order reaches everything reachable.
    let mut by_step = edges.clone();
    by_step.sort_by_key(|edge| edge[0].as_u64());
    for edge in by_step {
        if let (Some(source), Some(target)) = (edge[1].as_str(), edge[2].as_str())
            && reached.contains(source)
        {
            reached.insert(target);
        }
    }
    edges
        .into_iter()
        .filter(|edge| {
            edge[1]
                .as_str()
                .is_some_and(|source| reached.contains(source))
        })
        .cloned()
        .collect()
}

/// Windows start at a day boundary (`today()`), so the engines see the same rows even though
/// they run a few seconds apart. The ClickHouse SQL is what HogQL prints for the same question
/// (`posthog/hogql/printer`): the team guard first, every timestamp through `toTimeZone`, a
/// property as `nullIf(nullIf(mat_<key>, ''), 'null')`, `toFloat` as `accurateCastOrNull`.
pub(super) const QUERIES: &[BenchQuery] = &[
    BenchQuery {
        name: "events_last_7_days",
        ours: Ours::Sql("select count() from events where timestamp >= today() - interval 7 day"),
        duckdb: "select count(*) from events where timestamp >= current_date - interval 7 day",
        clickhouse: ClickHouse::Sql(
            "SELECT count() FROM events WHERE and(equals(events.team_id, 1), \
             greaterOrEquals(toTimeZone(events.timestamp, 'UTC'), minus(today(), toIntervalDay(7))))",
        ),
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
        clickhouse: ClickHouse::Sql(
            "SELECT toStartOfDay(toTimeZone(events.timestamp, 'UTC')) AS day, \
             uniq(events.distinct_id) AS users FROM events WHERE and(equals(events.team_id, 1), \
             greaterOrEquals(toTimeZone(events.timestamp, 'UTC'), minus(today(), toIntervalDay(30)))) \
             GROUP BY day ORDER BY day ASC",
        ),
    },
    BenchQuery {
        name: "top_events",
        ours: Ours::Sql(
            "select event, count() as c from events group by event order by c desc limit 10",
        ),
        duckdb: "select event, count(*) as c from events group by event order by c desc limit 10",
        clickhouse: ClickHouse::Sql(
            "SELECT events.event AS event, count() AS c FROM events \
             WHERE equals(events.team_id, 1) GROUP BY event ORDER BY c DESC LIMIT 10",
        ),
    },
    BenchQuery {
        name: "top_browsers_pageviews",
        ours: Ours::Sql(
            "select properties.$browser as browser, count() as c from events \
               where event = '$pageview' group by browser order by c desc limit 10",
        ),
        duckdb: "select json_extract_string(properties, '$.\"$browser\"') as browser, count(*) as c \
                 from events where event = '$pageview' group by browser order by c desc limit 10",
        clickhouse: ClickHouse::Sql(
            "SELECT nullIf(nullIf(events.`mat_$browser`, ''), 'null') AS browser, count() AS c \
             FROM events WHERE and(equals(events.team_id, 1), equals(events.event, '$pageview')) \
             GROUP BY browser ORDER BY c DESC LIMIT 10",
        ),
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
        clickhouse: ClickHouse::Sql(
            "SELECT toStartOfDay(toTimeZone(events.timestamp, 'UTC')) AS day, \
             sum(accurateCastOrNull(nullIf(nullIf(events.mat_amount, ''), 'null'), 'Float64')) AS revenue \
             FROM events WHERE and(equals(events.team_id, 1), equals(events.event, 'purchase')) \
             GROUP BY day ORDER BY day ASC",
        ),
    },
    BenchQuery {
        name: "p90_purchase_amount",
        ours: Ours::Sql(
            "select quantile(0.9)(toFloat(properties.amount)) from events where event = 'purchase'",
        ),
        duckdb: "select quantile_cont(try_cast(json_extract_string(properties, '$.amount') as double), 0.9) \
                 from events where event = 'purchase'",
        clickhouse: ClickHouse::Sql(
            "SELECT quantile(0.9)(accurateCastOrNull(nullIf(nullIf(events.mat_amount, ''), 'null'), 'Float64')) \
             FROM events WHERE and(equals(events.team_id, 1), equals(events.event, 'purchase'))",
        ),
    },
    BenchQuery {
        name: "purchase_amount_total",
        ours: Ours::Sql(
            "select sum(toFloat(properties.amount)) from events where event = 'purchase'",
        ),
        duckdb: "select sum(try_cast(json_extract_string(properties, '$.amount') as double)) \
                 from events where event = 'purchase'",
        clickhouse: ClickHouse::Sql(
            "SELECT sum(accurateCastOrNull(nullIf(nullIf(events.mat_amount, ''), 'null'), 'Float64')) \
             FROM events WHERE and(equals(events.team_id, 1), equals(events.event, 'purchase'))",
        ),
    },
    BenchQuery {
        name: "sessions_per_day",
        ours: Ours::Sql(
            "select toStartOfDay(timestamp) as day, uniq($session_id) as sessions from events \
               group by day order by day",
        ),
        duckdb: "select date_trunc('day', timestamp) as day, count(distinct \"$session_id\") as sessions \
                 from events group by day order by day",
        clickhouse: ClickHouse::Sql(
            "SELECT toStartOfDay(toTimeZone(events.timestamp, 'UTC')) AS day, \
             uniq(events.`$session_id`) AS sessions FROM events WHERE equals(events.team_id, 1) \
             GROUP BY day ORDER BY day ASC",
        ),
    },
    BenchQuery {
        name: "distinct_users",
        ours: Ours::Sql("select count(distinct distinct_id) from events"),
        duckdb: "select count(distinct distinct_id) from events",
        clickhouse: ClickHouse::Sql(
            "SELECT count(DISTINCT events.distinct_id) FROM events WHERE equals(events.team_id, 1)",
        ),
    },
    BenchQuery {
        name: "top_paths_pageviews",
        ours: Ours::Sql(
            "select properties.$current_url as url, count() as c from events \
               where event = '$pageview' group by url order by c desc limit 20",
        ),
        duckdb: "select json_extract_string(properties, '$.\"$current_url\"') as url, count(*) as c \
                 from events where event = '$pageview' group by url order by c desc limit 20",
        clickhouse: ClickHouse::Sql(
            "SELECT nullIf(nullIf(events.`mat_$current_url`, ''), 'null') AS url, count() AS c \
             FROM events WHERE and(equals(events.team_id, 1), equals(events.event, '$pageview')) \
             GROUP BY url ORDER BY c DESC LIMIT 20",
        ),
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
        clickhouse: ClickHouse::Sql(
            "SELECT nullIf(nullIf(events.mat_utm_source, ''), 'null') AS source, \
             countIf(equals(events.event, 'signed_up')) AS signups, \
             countIf(equals(events.event, 'purchase')) AS purchases FROM events \
             WHERE equals(events.team_id, 1) GROUP BY source ORDER BY signups DESC LIMIT 10",
        ),
    },
    BenchQuery {
        name: "feature_used_by_os_weekly",
        ours: Ours::Sql(
            "select toStartOfWeek(timestamp) as week, properties.$os as os, count() as c \
               from events where event = 'feature_used' group by week, os order by week, os",
        ),
        // toStartOfWeek's mode 0: weeks start on Sunday (DuckDB's date_trunc on Monday).
        duckdb: "select date_trunc('week', timestamp + interval 1 day) - interval 1 day as week, \
                 json_extract_string(properties, '$.\"$os\"') as os, count(*) as c \
                 from events where event = 'feature_used' group by week, os order by week, os",
        clickhouse: ClickHouse::Sql(
            "SELECT toStartOfWeek(toTimeZone(events.timestamp, 'UTC')) AS week, \
             nullIf(nullIf(events.`mat_$os`, ''), 'null') AS os, count() AS c FROM events \
             WHERE and(equals(events.team_id, 1), equals(events.event, 'feature_used')) \
             GROUP BY week, os ORDER BY week ASC, os ASC",
        ),
    },
    BenchQuery {
        name: "buyers_by_browser_7_days",
        ours: Ours::Sql(
            "select properties.$browser as browser, count(distinct distinct_id) as buyers \
               from events where event = 'purchase' and timestamp >= today() - interval 7 day \
               group by browser order by buyers desc, browser",
        ),
        duckdb: "select json_extract_string(properties, '$.\"$browser\"') as browser, \
                 count(distinct distinct_id) as buyers from events \
                 where event = 'purchase' and timestamp >= current_date - interval 7 day \
                 group by browser order by buyers desc, browser",
        clickhouse: ClickHouse::Sql(
            "SELECT nullIf(nullIf(events.`mat_$browser`, ''), 'null') AS browser, \
             count(DISTINCT events.distinct_id) AS buyers FROM events \
             WHERE and(equals(events.team_id, 1), equals(events.event, 'purchase'), \
             greaterOrEquals(toTimeZone(events.timestamp, 'UTC'), minus(today(), toIntervalDay(7)))) \
             GROUP BY browser ORDER BY buyers DESC, browser ASC",
        ),
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
        // The trends runner's query: one count per day, then every day of the range filled in
        // arrays (persons on events: the event's own person_id, no overrides table).
        clickhouse: ClickHouse::Shaped {
            sql: "SELECT arrayMap(number -> plus(toStartOfDay(assumeNotNull(toDateTime(minus(today(), toIntervalDay(30)), 'UTC'))), toIntervalDay(number)), \
                    range(0, plus(coalesce(dateDiff('day', toStartOfDay(assumeNotNull(toDateTime(minus(today(), toIntervalDay(30)), 'UTC'))), \
                    toStartOfDay(assumeNotNull(toDateTime(today(), 'UTC'))))), 1))) AS date, \
                  arrayMap(_match_date -> arraySum(arraySlice(groupArray(count), \
                    indexOf(groupArray(day_start) AS _days_for_count, _match_date) AS _index, \
                    plus(minus(arrayLastIndex(x -> equals(x, _match_date), _days_for_count), _index), 1))), date) AS total \
                  FROM (SELECT sum(total) AS count, day_start FROM (\
                    SELECT count(DISTINCT e.person_id) AS total, toStartOfDay(toTimeZone(e.timestamp, 'UTC')) AS day_start \
                    FROM events AS e SAMPLE 1 \
                    WHERE and(equals(e.team_id, 1), \
                      greaterOrEquals(toTimeZone(e.timestamp, 'UTC'), toStartOfDay(assumeNotNull(toDateTime(minus(today(), toIntervalDay(30)), 'UTC')))), \
                      less(toTimeZone(e.timestamp, 'UTC'), assumeNotNull(toDateTime(plus(today(), toIntervalDay(1)), 'UTC'))), \
                      equals(e.event, '$pageview')) \
                    GROUP BY day_start) \
                  GROUP BY day_start ORDER BY day_start ASC) \
                  ORDER BY arraySum(total) DESC LIMIT 50000",
            rows: clickhouse_trend_rows,
        },
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
        // PostHog's ClickHouse funnel: each person's furthest step by `windowFunnel` over the
        // window in microseconds, then persons per furthest step (summed from the back above).
        clickhouse: ClickHouse::Shaped {
            sql: "SELECT max_step, count() AS actors FROM (\
                    SELECT e.person_id AS actor_id, windowFunnel(1209600000000)(\
                      toUInt64(toUnixTimestamp64Micro(e.timestamp)), equals(e.event, '$pageview'), \
                      equals(e.event, 'signed_up'), equals(e.event, 'purchase')) AS max_step \
                    FROM events AS e \
                    WHERE and(equals(e.team_id, 1), \
                      greaterOrEquals(toTimeZone(e.timestamp, 'UTC'), toStartOfDay(assumeNotNull(toDateTime(minus(today(), toIntervalDay(30)), 'UTC')))), \
                      in(e.event, tuple('$pageview', 'signed_up', 'purchase'))) \
                    GROUP BY actor_id) \
                  WHERE greater(max_step, 0) GROUP BY max_step ORDER BY max_step ASC",
            rows: clickhouse_funnel_rows,
        },
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
        // The retention runner's actor query: per person, the sorted days of start and return
        // events, the start intervals exploded with arrayJoin, the return intervals after each.
        clickhouse: ClickHouse::Sql(
            "SELECT actor_activity.start_interval_index AS start_event_matching_interval, \
               actor_activity.intervals_from_base AS intervals_from_base, \
               count(DISTINCT actor_activity.actor_id) AS count \
             FROM (SELECT events.person_id AS actor_id, \
               arraySort(groupUniqArrayIf(toStartOfDay(toTimeZone(events.timestamp, 'UTC')), \
                 and(equals(events.event, '$pageview'), \
                   greaterOrEquals(toTimeZone(events.timestamp, 'UTC'), toStartOfDay(assumeNotNull(toDateTime(minus(today(), toIntervalDay(7)), 'UTC')))), \
                   less(toTimeZone(events.timestamp, 'UTC'), assumeNotNull(toDateTime(plus(today(), toIntervalDay(1)), 'UTC')))))) AS start_event_timestamps, \
               arrayMap(x -> plus(toStartOfDay(assumeNotNull(toDateTime(minus(today(), toIntervalDay(7)), 'UTC'))), toIntervalDay(x)), range(0, 8)) AS date_range, \
               arraySort(groupUniqArrayIf(toStartOfDay(toTimeZone(events.timestamp, 'UTC')), \
                 and(equals(events.event, '$pageview'), \
                   greaterOrEquals(toTimeZone(events.timestamp, 'UTC'), toStartOfDay(assumeNotNull(toDateTime(minus(today(), toIntervalDay(7)), 'UTC')))), \
                   less(toTimeZone(events.timestamp, 'UTC'), assumeNotNull(toDateTime(plus(today(), toIntervalDay(1)), 'UTC')))))) AS return_event_timestamps, \
               arrayJoin(arrayFilter(x -> greater(x, -1), arrayMap((interval_index, interval_date) -> \
                 if(has(start_event_timestamps, interval_date), minus(interval_index, 1), -1), \
                 arrayEnumerate(date_range), date_range))) AS start_interval_index, \
               arrayJoin(arrayConcat(if(has(start_event_timestamps, arrayElement(date_range, plus(start_interval_index, 1))), [0], []), \
                 arrayFilter(x -> greater(x, 0), arrayMap(_timestamp -> minus(indexOf(arraySlice(date_range, \
                   plus(start_interval_index, 1), 8), _timestamp), 1), return_event_timestamps)))) AS intervals_from_base \
               FROM events \
               WHERE and(equals(events.team_id, 1), \
                 greaterOrEquals(toTimeZone(events.timestamp, 'UTC'), toStartOfDay(assumeNotNull(toDateTime(minus(today(), toIntervalDay(7)), 'UTC')))), \
                 less(toTimeZone(events.timestamp, 'UTC'), assumeNotNull(toDateTime(plus(today(), toIntervalDay(1)), 'UTC'))), \
                 in(events.event, tuple('$pageview', '$pageview')), \
                 or(equals(events.event, '$pageview'), equals(events.event, '$pageview'))) \
               GROUP BY actor_id) AS actor_activity \
             GROUP BY start_event_matching_interval, intervals_from_base \
             ORDER BY start_event_matching_interval ASC, intervals_from_base ASC LIMIT 10000",
        ),
    },
    BenchQuery {
        name: "stickiness_pageviews_daily",
        ours: Ours::Node {
            node: r#"{"kind": "StickinessQuery", "interval": "day", "dateRange": {"date_from": "-30d"},
                      "series": [{"kind": "EventsNode", "event": "$pageview"}]}"#,
            rows: stickiness_rows,
        },
        duckdb: "select n, count(*) as actors from (\
                   select person_id, count(distinct date_trunc('day', timestamp)) as n from events \
                   where event = '$pageview' and timestamp >= current_date - interval 30 day \
                   group by person_id) group by n order by n",
        // The stickiness runner's inner query: each actor's active intervals, then actors per
        // count (its outer arrays only fill the empty counts, which the rows leave out).
        clickhouse: ClickHouse::Sql(
            "SELECT num_intervals, count(DISTINCT aggregation_target) AS num_actors FROM (\
               SELECT e.person_id AS aggregation_target, \
                 count(DISTINCT toStartOfDay(toTimeZone(e.timestamp, 'UTC'))) AS num_intervals \
               FROM events AS e \
               WHERE and(equals(e.team_id, 1), equals(e.event, '$pageview'), \
                 greaterOrEquals(toTimeZone(e.timestamp, 'UTC'), toStartOfDay(assumeNotNull(toDateTime(minus(today(), toIntervalDay(30)), 'UTC')))), \
                 lessOrEquals(toTimeZone(e.timestamp, 'UTC'), assumeNotNull(toDateTime(plus(today(), toIntervalDay(1)), 'UTC')))) \
               GROUP BY aggregation_target) \
             GROUP BY num_intervals ORDER BY num_intervals ASC",
        ),
    },
    BenchQuery {
        name: "lifecycle_pageviews_daily",
        ours: Ours::Node {
            node: r#"{"kind": "LifecycleQuery", "interval": "day", "dateRange": {"date_from": "-30d"},
                      "series": [{"kind": "EventsNode", "event": "$pageview"}]}"#,
            rows: lifecycle_rows,
        },
        // Each person's active days (from the day before the range, to tell returning from
        // resurrecting), the previous and next of each, and the day they were created (their
        // first event of any kind, which is how the importer dates a person).
        duckdb: "with act as (select distinct person_id as p, date_trunc('day', timestamp) as d from events \
                   where event = '$pageview' and timestamp >= current_date - interval 31 day), \
                 made as (select person_id as p, min(date_trunc('day', timestamp)) as c from events group by person_id), \
                 o as (select act.p, act.d, lag(act.d) over (partition by act.p order by act.d) as prev, \
                   lead(act.d) over (partition by act.p order by act.d) as next, made.c \
                   from act join made on made.p = act.p), \
                 s as (select d, case when prev is null and d = c then 'new' \
                     when prev = d - interval 1 day then 'returning' else 'resurrecting' end as status from o \
                   union all select d + interval 1 day as d, 'dormant' as status from o \
                     where next is null or next <> d + interval 1 day) \
                 select d as day, status, count(*) as persons from s \
                 where d >= current_date - interval 30 day and d <= current_date \
                 group by day, status order by day, status",
        // The lifecycle runner's shape: each person's active days with the previous and next
        // one, statuses from those and the person's first day, dormant the day after a gap.
        clickhouse: ClickHouse::Shaped {
            sql: "SELECT day, status, count() AS persons FROM (\
                    SELECT d AS day, multiIf(prev = toDate('1970-01-01') AND d = created, 'new', \
                      prev = minus(d, toIntervalDay(1)), 'returning', 'resurrecting') AS status FROM (\
                      SELECT p, d, created, \
                        lagInFrame(d, 1, toDate('1970-01-01')) OVER (PARTITION BY p ORDER BY d ASC ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING) AS prev \
                      FROM (SELECT DISTINCT e.person_id AS p, toDate(toTimeZone(e.timestamp, 'UTC')) AS d FROM events AS e \
                        WHERE and(equals(e.team_id, 1), equals(e.event, '$pageview'), \
                          greaterOrEquals(toTimeZone(e.timestamp, 'UTC'), toStartOfDay(assumeNotNull(toDateTime(minus(today(), toIntervalDay(31)), 'UTC')))))) AS a \
                      JOIN (SELECT person_id AS p, min(toDate(toTimeZone(timestamp, 'UTC'))) AS created FROM events \
                        WHERE equals(team_id, 1) GROUP BY p) AS m USING (p)) \
                    UNION ALL \
                    SELECT plus(d, toIntervalDay(1)) AS day, 'dormant' AS status FROM (\
                      SELECT p, d, leadInFrame(d, 1, toDate('1970-01-01')) OVER (PARTITION BY p ORDER BY d ASC ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING) AS next \
                      FROM (SELECT DISTINCT e.person_id AS p, toDate(toTimeZone(e.timestamp, 'UTC')) AS d FROM events AS e \
                        WHERE and(equals(e.team_id, 1), equals(e.event, '$pageview'), \
                          greaterOrEquals(toTimeZone(e.timestamp, 'UTC'), toStartOfDay(assumeNotNull(toDateTime(minus(today(), toIntervalDay(31)), 'UTC'))))))) \
                    WHERE notEquals(next, plus(d, toIntervalDay(1)))) \
                  WHERE and(greaterOrEquals(day, minus(today(), toIntervalDay(30))), lessOrEquals(day, today())) \
                  GROUP BY day, status ORDER BY day ASC, status ASC",
            rows: lifecycle_status_rows,
        },
    },
    BenchQuery {
        name: "paths_pageviews_7_days",
        ours: Ours::Node {
            node: r#"{"kind": "PathsQuery", "dateRange": {"date_from": "-7d"},
                      "pathsFilter": {"includeEventTypes": ["$pageview"], "stepLimit": 5, "edgeLimit": 50}}"#,
            rows: paths_rows,
        },
        // Each person's pageviews (URL without a trailing slash), cut into sessions at gaps of
        // 30 minutes, a run of one URL kept once at its last view, the first five steps, the
        // 50 heaviest edges, and only those reachable from a first step.
        duckdb: "with recursive pv as (select person_id as p, timestamp as t, \
                   case when length(u) > 1 and ends_with(u, '/') then left(u, length(u) - 1) else u end as item \
                   from (select person_id, timestamp, coalesce(json_extract_string(properties, '$.\"$current_url\"'), '') as u \
                     from events where event = '$pageview' and timestamp >= current_date - interval 7 day)), \
                 gaps as (select *, case when date_diff('second', lag(t) over (partition by p order by t, item), t) < 1800 \
                   then 0 else 1 end as starts from pv), \
                 sessions as (select *, sum(starts) over (partition by p order by t, item rows unbounded preceding) as s from gaps), \
                 runs as (select *, lead(item) over (partition by p, s order by t, item) as after from sessions), \
                 steps as (select p, s, item, row_number() over (partition by p, s order by t, item) as step \
                   from runs where after is null or after <> item), \
                 pairs as (select step, item, lead(item) over (partition by p, s order by step) as next from steps), \
                 top as (select step, concat(step, '_', item) as source, concat(step + 1, '_', next) as target, count(*) as value \
                   from pairs where next is not null and step < 5 group by all \
                   order by value desc, source, target limit 50), \
                 reach(node) as (select source from top where step = 1 \
                   union select top.target from top join reach on top.source = reach.node) \
                 select step, source, target, value from top where source in (select node from reach) \
                 order by value desc, source, target",
        // PostHog's paths runner: per person the sorted (time, item) pairs, `arraySplit` into
        // sessions at 30-minute gaps, runs compacted, the first five steps, edges by count.
        clickhouse: ClickHouse::Shaped {
            sql: "SELECT step, concat(toString(step), '_', edge.2) AS source, \
                    concat(toString(step + 1), '_', edge.3) AS target, count() AS value FROM (\
                    SELECT arrayJoin(arrayMap(i -> (i, path[i], path[i + 1]), range(1, length(path)))) AS edge, edge.1 AS step FROM (\
                      SELECT arraySlice(arrayFilter((x, i) -> i = length(session) OR x != session[i + 1], \
                        session, arrayEnumerate(session)), 1, 5) AS path FROM (\
                        SELECT arrayJoin(arraySplit((item, gap) -> gap >= 1800, arrayMap(x -> x.2, sorted), \
                          arrayDifference(arrayMap(x -> toInt64(toUnixTimestamp(x.1)), sorted)))) AS session FROM (\
                          SELECT person_id, arraySort(groupArray((timestamp, item))) AS sorted FROM (\
                            SELECT e.person_id AS person_id, e.timestamp AS timestamp, \
                              if(length(u) > 1 AND endsWith(u, '/'), substring(u, 1, length(u) - 1), u) AS item FROM (\
                              SELECT e.person_id, e.timestamp, ifNull(nullIf(nullIf(e.`mat_$current_url`, ''), 'null'), '') AS u \
                              FROM events AS e WHERE and(equals(e.team_id, 1), equals(e.event, '$pageview'), \
                                greaterOrEquals(toTimeZone(e.timestamp, 'UTC'), toStartOfDay(assumeNotNull(toDateTime(minus(today(), toIntervalDay(7)), 'UTC')))))) AS e) \
                          GROUP BY person_id)))) \
                  GROUP BY step, source, target ORDER BY value DESC, source ASC, target ASC LIMIT 50",
            rows: clickhouse_paths_rows,
        },
    },
];
