//! funnelVizType: "trends".
//!
//! As PostHog's `FunnelTrendsUDF` (`funnel_trends_udf.py` with the `aggregate_funnel_trends` UDF):
//! - The funnel is cut after `funnelToStep` (PostHog overrides `max_steps` with `funnelToStep + 1`).
//! - An actor enters an interval (the project-time-zone bucket of `interval`, default day) with
//!   an attempt's first event there: a step 0 event, or any step event in an unordered funnel.
//!   Each actor counts at most once per interval they entered in, and may count in several:
//!   the attempts opened in an interval are evaluated on their own (the engine's `NO_START` flag
//!   keeps other intervals' first events from opening one), and the furthest of them decides.
//! - `reached_from_step_count` per interval: actors whose attempt reached `funnelFromStep`;
//!   `reached_to_step_count`: those that reached `funnelToStep`. The rate is
//!   `round(to / from * 100, 2)` (ClickHouse rounds half to even), 0 when no one reached from.
//! - Every interval of the date range is listed (zero-filled). The response, as
//!   `FunnelTrends._format_single_summary`: `[{count: intervals, data: rates, days, labels}]`,
//!   `days` as `%Y-%m-%d` (with ` %H:%M:%S` for the hour interval), `labels` as `%-d-%b-%Y`. The
//!   per-interval counts are not part of it (PostHog only keeps them when `just_summarize`).
//! - Exclusions work as in the steps view, per interval: an interval whose furthest attempt was
//!   excluded does not count (PostHog's UDF drops an actor's unconverted intervals when any of
//!   them was excluded after reaching a later step; the difference is confined to exclusions).

use chrono::{DateTime, Utc};
use chrono_tz::Tz;
use serde_json::{Value, json};

use super::assemble::count;
use super::sql::{event_conditions, exclusion_mask, step_mask};
use super::{Funnel, Order};
use crate::date_range::{self, Interval, Range};
use crate::{Compiled, Context, Invalid, Table, sql_text};

/// The first query of `date_from: all`: the earliest event, where the intervals start (as
/// PostHog's `get_earliest_timestamp`).
pub(super) const EARLIEST_QUERY: &str = "SELECT min(timestamp) AS earliest FROM events LIMIT 1";

pub(super) fn compile_trends(funnel: &Funnel, ctx: &Context) -> Result<Compiled, Invalid> {
    let interval = funnel.interval;
    let from_all = funnel.range.from_all();
    let buckets = if from_all {
        None
    } else {
        Some(funnel.range.buckets(interval, ctx, "interval")?)
    };
    let rows = buckets.as_ref().map_or(date_range::MAX_BUCKETS, Vec::len) + 1;
    let mut queries = Vec::new();
    if from_all {
        queries.push(EARLIEST_QUERY.to_owned());
    }
    queries.push(trends_query(funnel, ctx, rows));
    let range = funnel.range;
    let ctx = ctx.clone();
    Ok(Compiled::new(queries, move |tables| {
        let mut tables = tables.into_iter();
        let buckets = match buckets {
            Some(buckets) => buckets,
            None => {
                let earliest = tables
                    .next()
                    .and_then(|table| table.rows.into_iter().next())
                    .and_then(|row| row.into_iter().next())
                    .and_then(|cell| date_range::parse_engine_time(&cell, &ctx))
                    .map(|moment| moment.with_timezone(&Utc));
                Range {
                    from: earliest.unwrap_or(range.to).min(range.to),
                    to: range.to,
                }
                .buckets(interval, &ctx, "interval")?
            }
        };
        let table = tables.next().unwrap_or_default();
        Ok(json!({
            "results": assemble_trends(&table, &buckets, interval, &ctx),
            "isUdf": true,
        }))
    }))
}

/// Rows `(period, reached_from, reached_to)`, one per interval some actor entered in.
fn trends_query(funnel: &Funnel, ctx: &Context, rows: usize) -> String {
    // Cut after funnelToStep; the exclusion mask then only covers the stretches kept.
    let mut cut = funnel.clone();
    cut.steps.truncate(funnel.to_step + 1);
    let count = cut.steps.len();
    let opens = if cut.order == Order::Unordered {
        let any: Vec<&str> = cut.steps.iter().map(|s| s.condition.as_str()).collect();
        format!("({})", any.join(" OR "))
    } else {
        cut.steps[0].condition.clone()
    };
    let no_start = 1u64 << 62;
    format!(
        "WITH funnel_events AS (\
         SELECT {actor} AS actor, timestamp, {steps} AS steps, {exclusions} AS exclusions, \
         {opens} AS opens, {period} AS period FROM events WHERE {where_clause}), \
         entries AS (\
         SELECT actor, period, min(timestamp) AS first_start, max(timestamp) AS last_start \
         FROM funnel_events WHERE opens GROUP BY actor, period) \
         SELECT period, countIf(reached >= {from}) AS reached_from, countIf(reached >= {to}) AS reached_to FROM (\
         SELECT period, arrayElement(funnel, 1) AS reached FROM (\
         SELECT entries.actor AS actor, entries.period AS period, \
         aggregateFunnel({count}, {window}, {order}, funnel_events.timestamp, \
         funnel_events.steps + if(funnel_events.period = entries.period, 0, {no_start}), \
         funnel_events.exclusions) AS funnel \
         FROM entries JOIN funnel_events ON entries.actor = funnel_events.actor \
         WHERE funnel_events.timestamp >= entries.first_start \
         AND funnel_events.timestamp <= entries.last_start + toIntervalSecond({window}) \
         GROUP BY entries.actor, entries.period) WHERE funnel IS NOT NULL) \
         GROUP BY period ORDER BY period LIMIT {rows}",
        actor = cut.actor,
        steps = step_mask(&cut),
        exclusions = exclusion_mask(&cut),
        period = funnel.interval.bucket_sql("timestamp", ctx),
        where_clause = event_conditions(&cut),
        from = funnel.from_step,
        to = funnel.to_step,
        window = cut.window_seconds,
        order = sql_text::string(cut.order.name()),
    )
}

/// `round(x, 2)` of a ClickHouse float: scaled, rounded half to even, scaled back.
pub(super) fn round_2(value: f64) -> f64 {
    (value * 100.0).round_ties_even() / 100.0
}

fn assemble_trends(
    table: &Table,
    buckets: &[DateTime<Tz>],
    interval: Interval,
    ctx: &Context,
) -> Value {
    let index_of: std::collections::HashMap<DateTime<Utc>, usize> = buckets
        .iter()
        .enumerate()
        .map(|(index, start)| (start.with_timezone(&Utc), index))
        .collect();
    let mut reached = vec![(0u64, 0u64); buckets.len()];
    for row in &table.rows {
        let index = row
            .first()
            .and_then(|cell| date_range::parse_engine_time(cell, ctx))
            .map(|moment| date_range::bucket_start(moment.with_timezone(&Utc), interval, ctx))
            .and_then(|start| index_of.get(&start.with_timezone(&Utc)).copied());
        if let Some(index) = index {
            reached[index].0 += count(row.get(1));
            reached[index].1 += count(row.get(2));
        }
    }
    let data: Vec<f64> = reached
        .iter()
        .map(|&(from, to)| {
            if from > 0 {
                round_2(to as f64 / from as f64 * 100.0)
            } else {
                0.0
            }
        })
        .collect();
    // PostHog's strftime formats: the time only for the hour interval, never in labels.
    let day_format = if interval == Interval::Hour {
        "%Y-%m-%d %H:%M:%S"
    } else {
        "%Y-%m-%d"
    };
    let days: Vec<String> = buckets
        .iter()
        .map(|start| start.format(day_format).to_string())
        .collect();
    let labels: Vec<String> = buckets
        .iter()
        .map(|start| start.format("%-d-%b-%Y").to_string())
        .collect();
    json!([{
        "count": buckets.len(),
        "data": data,
        "days": days,
        "labels": labels,
    }])
}
