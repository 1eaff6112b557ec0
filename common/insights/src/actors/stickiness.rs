//! The persons behind a stickiness point: those who did the series' event in exactly `day`
//! intervals of the range (as the StickinessQuery counts them, see `crate::stickiness`).
//! `event_count` is their events in the range. The previous period of a comparison and
//! `stickinessCriteria` are refused rather than answered differently from the insight.

use chrono::Utc;
use serde_json::Value;

use super::Matched;
use super::source::{InsightActorsQuery, series_index, under_insight};
use crate::date_range::{self, Interval};
use crate::series::{self, EventSeries};
use crate::{Context, Invalid, filters};

pub(super) fn matched(query: &InsightActorsQuery, ctx: &Context) -> Result<Matched, Invalid> {
    let node = &query.source;
    if query.compare.as_deref() == Some("previous") {
        return Err(Invalid::new(
            "source.compare",
            "Persons of a stickiness comparison's previous period are not supported.",
        ));
    }
    if node
        .get("stickinessFilter")
        .and_then(|filter| filter.get("stickinessCriteria"))
        .is_some_and(|criteria| !criteria.is_null())
    {
        return Err(Invalid::new(
            "source.source.stickinessFilter.stickinessCriteria",
            "Persons of a stickiness with criteria are not supported.",
        ));
    }
    let intervals = match &query.day {
        Some(Value::Number(number)) => number.as_u64(),
        Some(Value::String(text)) => text.parse().ok(),
        _ => None,
    }
    .filter(|count| *count >= 1)
    .ok_or_else(|| {
        Invalid::new(
            "source.day",
            "day (the number of intervals) must be a whole number from 1.",
        )
    })?;
    let interval = Interval::from_field(node.get("interval"), Interval::Day, "interval")
        .map_err(under_insight)?;
    let date_range = node.get("dateRange");
    let range =
        date_range::resolve(date_range, interval, ctx, "dateRange").map_err(under_insight)?;
    let counted_from = range.counted_from(date_range::explicit_date(date_range), interval, ctx);
    let first_interval = date_range::bucket_start(range.from, interval, ctx).with_timezone(&Utc);
    let entries =
        series::entries(node, "Stickiness needs at least one series.").map_err(under_insight)?;
    let index = series_index(query, entries.len())?;
    let events = EventSeries::read(&entries[index], index, ctx).map_err(under_insight)?;
    let conditions: Vec<String> = [
        format!("timestamp >= {}", date_range::sql_datetime(counted_from)),
        format!("timestamp <= {}", date_range::sql_datetime(range.to)),
        events.condition,
        filters::node_properties(node, ctx).map_err(under_insight)?,
    ]
    .into_iter()
    .filter(|condition| condition != "true")
    .collect();
    Ok(Matched {
        ctes: String::new(),
        query: format!(
            "SELECT actor_id, sum(events) AS event_count FROM (\
             SELECT person_id AS actor_id, {index} AS interval_index, count() AS events \
             FROM events WHERE {conditions} GROUP BY actor_id, interval_index\
             ) GROUP BY actor_id HAVING count() = {intervals}",
            index = date_range::interval_index("timestamp", interval, first_interval, ctx),
            conditions = conditions.join(" AND "),
        ),
    })
}
