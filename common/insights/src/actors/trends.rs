//! The persons behind a trends point: those with an event of the series (its filters, the
//! node's `properties`, the breakdown value) in the bucket `day` (the whole range when no day
//! is given, as for total-value displays), as PostHog's `trends_actors_query_builder.py` finds
//! them. `event_count` is their events there.
//!
//! The breakdown value is read as [`crate::breakdown`] reads the insight's breakdown: one value
//! for a single breakdown (`$$_posthog_breakdown_null_$$` for a missing one), the list of values
//! for several (each must match), a cohort id (its persons' events) or `all` for a cohort
//! breakdown; a histogram's bin `[low,high]` is the events whose number is in it, path-cleaned
//! values are compared cleaned. The "other" combination is refused rather than answered as
//! PostHog does (every person).

use serde_json::Value;

use super::Matched;
use super::source::{InsightActorsQuery, series_index, under_insight};
use crate::breakdown::{self, By, CohortChoice, Insight};
use crate::date_range::{self, Interval};
use crate::series::{self, EventSeries};
use crate::{Context, Invalid, filters};

pub(super) fn matched(query: &InsightActorsQuery, ctx: &Context) -> Result<Matched, Invalid> {
    let node = &query.source;
    let interval = Interval::from_field(node.get("interval"), Interval::Day, "interval")
        .map_err(under_insight)?;
    let date_range = node.get("dateRange");
    let range =
        date_range::resolve(date_range, interval, ctx, "dateRange").map_err(under_insight)?;
    let counted_from = range.counted_from(date_range::explicit_date(date_range), interval, ctx);
    let entries =
        series::entries(node, "Trends need at least one series.").map_err(under_insight)?;
    let index = series_index(query, entries.len())?;
    let item = &entries[index];
    // Who a point counts is a person for every math but these.
    if let Some(
        math @ ("weekly_active" | "monthly_active" | "unique_group" | "hogql" | "unique_session"),
    ) = item.get("math").and_then(Value::as_str)
    {
        return Err(Invalid::new(
            format!("source.source.series[{index}].math"),
            format!("Persons of a {math} series are not supported."),
        ));
    }
    let events = EventSeries::read(item, index, ctx).map_err(under_insight)?;
    let mut conditions = vec![
        format!("timestamp >= {}", date_range::sql_datetime(counted_from)),
        format!("timestamp <= {}", date_range::sql_datetime(range.to)),
        events.condition,
        filters::node_properties(node, ctx).map_err(under_insight)?,
    ];
    match &query.day {
        None | Some(Value::Null) => {}
        Some(Value::String(day)) => {
            let instant = date_range::parse_instant(day, ctx)
                .ok_or_else(|| Invalid::new("source.day", format!("'{day}' is not a date.")))?;
            let bucket = date_range::bucket_start(instant, interval, ctx);
            let next = date_range::next_bucket(bucket, interval);
            conditions.push(format!(
                "timestamp >= {} AND timestamp < {}",
                date_range::sql_datetime(bucket.with_timezone(&chrono::Utc)),
                date_range::sql_datetime(next.with_timezone(&chrono::Utc))
            ));
        }
        Some(_) => return Err(Invalid::new("source.day", "day must be a date string.")),
    }
    if let Some(value) = query.breakdown.as_ref().filter(|value| !value.is_null()) {
        conditions.push(breakdown_condition(node, value, ctx)?);
    }
    let conditions: Vec<String> = conditions
        .into_iter()
        .filter(|condition| condition != "true")
        .collect();
    Ok(Matched {
        ctes: String::new(),
        query: format!(
            "SELECT person_id AS actor_id, count() AS event_count FROM events WHERE {} GROUP BY actor_id",
            conditions.join(" AND ")
        ),
    })
}

/// Events of the breakdown's combination (or cohort) `value`.
fn breakdown_condition(node: &Value, value: &Value, ctx: &Context) -> Result<String, Invalid> {
    let Some(breakdown) = breakdown::parse(node, Insight::Trends, ctx).map_err(under_insight)?
    else {
        return Err(Invalid::new(
            "source.breakdown",
            "A breakdown value needs the insight's breakdownFilter.",
        ));
    };
    match &breakdown.by {
        By::Properties(properties) => {
            let values = properties.point_values(value, "source.breakdown")?;
            properties.trends_condition(&values, "source.breakdown")
        }
        By::Cohorts(cohorts) => {
            let cohort = CohortChoice::find(cohorts, value).ok_or_else(|| {
                Invalid::new(
                    "source.breakdown",
                    "breakdown must be one of the insight's breakdown cohorts (an id, or \"all\").",
                )
            })?;
            cohort.events_condition(ctx).map_err(under_insight)
        }
    }
}
