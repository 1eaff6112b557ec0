//! LifecycleQuery: per interval of the range, the persons who were `new`, `returning`,
//! `resurrecting` or went `dormant`, as PostHog's
//! `posthog/hogql_queries/insights/lifecycle_query_runner.py` classifies them:
//! - A person's activity is the set of intervals in which they did the series' event (its
//!   filters and the node's `properties` applied), from the interval before the range's first
//!   through its last.
//! - Each active interval is `new` when it is the person's first active one and the person
//!   was created (`persons.created_at`) in it; `returning` when the person was also active in
//!   the interval before; `resurrecting` otherwise.
//! - An active interval not followed by an active one makes the person `dormant` in the next
//!   interval; dormant counts are negative.
//! - Results: the four statuses in PostHog's order (new, returning, resurrecting, dormant),
//!   each with a value per interval (zero-filled, floats as PostHog gives them).
//!   `lifecycleFilter.toggledLifecycles` only hides statuses in PostHog's frontend: it is
//!   checked, and every status is still returned, as PostHog's runner does.
//!
//! With several series PostHog requires an event to match every one of them; so do we.

mod assemble;
mod parse;
mod sql;
#[cfg(test)]
mod tests;

use chrono::{DateTime, Utc};
use chrono_tz::Tz;
use serde_json::Value;

use crate::date_range::Interval;
use crate::series::EventSeries;
use crate::{Compiled, Context, Invalid};

/// PostHog's order of the results.
const STATUSES: [&str; 4] = ["new", "returning", "resurrecting", "dormant"];
/// Every query carries this LIMIT (the engine's maximum), never the default 100.
const ROW_LIMIT: usize = 50_000;

pub fn compile(node: &Value, ctx: &Context) -> Result<Compiled, Invalid> {
    let plan = Plan::parse(node, ctx)?;
    let queries = vec![plan.query()];
    Ok(Compiled::new(queries, move |tables| {
        Ok(plan.assemble(tables))
    }))
}

struct Plan {
    ctx: Context,
    interval: Interval,
    /// The range's intervals; in the query they are numbered 1..=len.
    buckets: Vec<DateTime<Tz>>,
    /// The start of the interval before the first (number 0), from which activity is read.
    activity_from: DateTime<Utc>,
    /// The end of the range's last interval.
    activity_to: DateTime<Utc>,
    /// Every series' event and filters and the node's `properties` (`true` when none).
    condition: String,
    /// The first series, for labels.
    first: EventSeries,
}
