//! The persons behind a lifecycle point: those with `status` in the interval `day`, classified
//! as the LifecycleQuery does (see `crate::lifecycle`): active intervals are read from the one
//! before the range; `new` = first active interval read and created in it, `returning` = also
//! active the interval before, `resurrecting` = otherwise active, `dormant` = active the
//! interval before and not in this one. `event_count` is the person's events in the interval.

use chrono::{Duration, Utc};
use serde_json::Value;

use super::Matched;
use super::source::{InsightActorsQuery, under_insight};
use crate::date_range::{self, Interval};
use crate::series::{self, EventSeries};
use crate::{Context, Invalid, filters};

pub(super) fn matched(query: &InsightActorsQuery, ctx: &Context) -> Result<Matched, Invalid> {
    let node = &query.source;
    let interval = Interval::from_field(node.get("interval"), Interval::Day, "interval")
        .map_err(under_insight)?;
    let range = date_range::resolve(node.get("dateRange"), interval, ctx, "dateRange")
        .map_err(under_insight)?;
    let buckets = range
        .buckets(interval, ctx, "interval")
        .map_err(under_insight)?;
    let Some(first) = buckets.first() else {
        return Err(Invalid::new(
            "source.source.dateRange",
            "The date range holds no interval.",
        ));
    };
    let activity_from = date_range::bucket_start(
        first.with_timezone(&Utc) - Duration::microseconds(1),
        interval,
        ctx,
    )
    .with_timezone(&Utc);

    let Some(Value::String(day)) = &query.day else {
        return Err(Invalid::new(
            "source.day",
            "day (the interval, e.g. 2024-03-05) is required.",
        ));
    };
    let instant = date_range::parse_instant(day, ctx)
        .ok_or_else(|| Invalid::new("source.day", format!("'{day}' is not a date.")))?;
    let bucket = date_range::bucket_start(instant, interval, ctx);
    // Intervals are numbered from 0 (the one before the range); the asked one must be in range.
    let Some(period) = buckets
        .iter()
        .position(|start| *start == bucket)
        .map(|slot| slot + 1)
    else {
        return Err(Invalid::new(
            "source.day",
            format!("'{day}' is not an interval of the range."),
        ));
    };
    let activity_to = date_range::next_bucket(bucket, interval).with_timezone(&Utc);
    let status = match query.status.as_deref() {
        Some("new") => {
            format!("now_active = 1 AND earlier_active = 0 AND created_period = {period}")
        }
        Some("returning") => "now_active = 1 AND before_active = 1".to_string(),
        Some("resurrecting") => format!(
            "now_active = 1 AND before_active = 0 \
             AND NOT (earlier_active = 0 AND created_period = {period})"
        ),
        Some("dormant") => "now_active = 0 AND before_active = 1".to_string(),
        _ => {
            return Err(Invalid::new(
                "source.status",
                "status must be new, returning, resurrecting or dormant.",
            ));
        }
    };

    let mut conditions = Vec::new();
    let entries = series::entries(node, "A lifecycle needs a series.").map_err(under_insight)?;
    for (index, item) in entries.iter().enumerate() {
        conditions.push(
            EventSeries::read(item, index, ctx)
                .map_err(under_insight)?
                .condition,
        );
    }
    conditions.push(filters::node_properties(node, ctx).map_err(under_insight)?);
    let filter: String = conditions
        .into_iter()
        .filter(|condition| condition != "true")
        .map(|condition| format!(" AND ({condition})"))
        .collect();
    let index = |column: &str| date_range::interval_index(column, interval, activity_from, ctx);
    let from = date_range::sql_datetime(activity_from);
    let to = date_range::sql_datetime(activity_to);
    let ctes = format!(
        "activity AS (SELECT person_id, {event_index} AS period, count() AS events FROM events \
         WHERE timestamp >= {from} AND timestamp < {to}{filter} GROUP BY person_id, period), \
         creations AS (SELECT id, if(created_at >= {from}, {created_index}, -2) AS created_period FROM persons), \
         activity_flags AS (SELECT person_id, sum(if(period = {period}, events, 0)) AS event_count, \
         max(if(period = {period}, 1, 0)) AS now_active, \
         max(if(period = {previous}, 1, 0)) AS before_active, \
         max(if(period < {period}, 1, 0)) AS earlier_active FROM activity GROUP BY person_id)",
        event_index = index("timestamp"),
        created_index = index("created_at"),
        previous = period - 1,
    );
    Ok(Matched {
        ctes,
        query: format!(
            "SELECT activity_flags.person_id AS actor_id, activity_flags.event_count AS event_count \
             FROM activity_flags LEFT JOIN creations ON creations.id = activity_flags.person_id \
             WHERE {status}"
        ),
    })
}
