//! StickinessQuery: per series, how many actors did the event in exactly 1, 2, ... N of the
//! range's intervals (N = the intervals the range holds), as PostHog's
//! `posthog/hogql_queries/insights/stickiness_query_runner.py` computes it:
//! - Counted events: `timestamp >= date_from` (rounded down to its interval unless
//!   `explicitDate`) and `<= date_to`, the series' event and filters, the node's `properties`.
//! - The actor is `person_id`, or the `math_hogql` expression with `math: hogql`.
//! - `stickinessFilter.stickinessCriteria` keeps only the intervals in which an actor did the
//!   event `gte` / `lte` / `exact` n times (PostHog's HAVING on the per-interval count).
//! - `computedAs: cumulative` turns each value into the actors active in at least that many
//!   intervals (`count` stays the plain sum), and labels read `2 days or more`.
//! - `compareFilter` adds each series again over the previous period (or `compare_to`), right
//!   after its current one, as PostHog lists them.
//!
//! One dialect query per series and period; [`compile`] reads the node into a `Plan`
//! (`parse`), writes its queries (`sql`) and shapes their tables into the response
//! (`assemble`).

mod assemble;
mod parse;
mod sql;
#[cfg(test)]
mod tests;

use chrono::{DateTime, Utc};
use serde_json::Value;

use crate::date_range::{Interval, Range};
use crate::series::EventSeries;
use crate::{Compiled, Context, Invalid};

/// Every query carries this LIMIT (the engine's maximum), never the default 100.
const ROW_LIMIT: usize = 50_000;

pub fn compile(node: &Value, ctx: &Context) -> Result<Compiled, Invalid> {
    let plan = Plan::parse(node, ctx)?;
    let queries = plan.queries();
    Ok(Compiled::new(queries, move |tables| {
        Ok(plan.assemble(tables))
    }))
}

/// One entry of `series`.
struct Series {
    events: EventSeries,
    /// The dialect expression of the actor counted.
    actor: String,
}

/// The current period, or the previous one when comparing.
struct Period {
    range: Range,
    /// Lower bound of the events counted.
    counted_from: DateTime<Utc>,
    /// The start of the first interval: interval indexes count from it.
    first_interval: DateTime<Utc>,
    /// How many intervals the range holds: the largest possible answer.
    intervals: usize,
    compare_label: Option<&'static str>,
}

/// `stickinessCriteria`: the per-interval event count an interval needs to count.
struct Criteria {
    operator: &'static str,
    value: u64,
}

struct Plan {
    ctx: Context,
    interval: Interval,
    series: Vec<Series>,
    periods: Vec<Period>,
    /// The node's `properties` (`true` when none).
    node_condition: String,
    criteria: Option<Criteria>,
    cumulative: bool,
}
