//! TrendsQuery (reference 4.6): per series, an aggregation per time bucket (or one total for
//! the total-value displays), optionally broken down by a property, compared with the previous
//! period, and combined by formulas.
//!
//! One dialect query per series and period (current, then previous when comparing), in the
//! order PostHog lists results: every current series, then every previous one. With `dateRange`
//! `all` a first query finds the earliest event, where the buckets start.
//!
//! Property breakdowns ([`crate::breakdown`]: one property, or up to three whose values are a
//! list, PostHog's multiple breakdowns) keep the top `breakdown_limit` combinations, ranked as
//! PostHog ranks them: combinations with a missing value after the others, then by the sum of
//! the per-bucket values (the total for total-value displays, without that demotion), then by
//! value; every other combination is aggregated together as `$$_posthog_breakdown_other_$$`
//! (one per breakdown) in SQL, so non-additive math (dau, medians) stays exact. A multiple
//! breakdown's `breakdown_value` is the list of values (a missing one is
//! `$$_posthog_breakdown_null_$$`), its label the values joined by `::`. A histogram
//! breakdown's bins are computed in each series query from that series' events of the period
//! (as PostHog bins per series), joined as one row; a median or percentile math is refused with
//! bins, as PostHog refuses it.
//!
//! A cohort breakdown runs each series once per cohort, its events those of the cohort's
//! persons (every event for `all`): `breakdown_value` the cohort id (`all`), the label the
//! cohort's name (`all users`), no result for a cohort without events, no "other". Results come
//! cohort by cohort, as PostHog's runner gives them, except with two or more cohorts and no
//! `all`, where PostHog answers one query per series (its `LEFTJOIN_CONJOINED` mode): then, per
//! series, by total descending, then by id as text.
//!
//! [`compile`] reads the node into a `Plan` (`parse`), writes its queries (`sql`) and shapes
//! their tables into the response (`assemble`); `formula` parses and evaluates formulas.

mod assemble;
mod formula;
mod parse;
mod sql;
#[cfg(test)]
mod tests;

use chrono::{DateTime, Utc};
use chrono_tz::Tz;
use serde_json::{Map, Value};

use crate::breakdown::Breakdown;
use crate::date_range::{Interval, Range};
use crate::math::SeriesMath;
use crate::{Compiled, Context, Invalid};

use formula::Expression;

/// A single breakdown's empty or missing value is shown as `none`.
const BREAKDOWN_NONE_LABEL: &str = "none";
/// Every query carries this LIMIT (the engine's maximum), never the default 100.
const ROW_LIMIT: usize = 50_000;
/// Weekly/monthly active users compute one column per bucket.
const MAX_ACTIVE_USER_BUCKETS: usize = 1_000;
/// Displays that show one aggregate per series instead of a time series.
const TOTAL_VALUE_DISPLAYS: &[&str] = &[
    "BoldNumber",
    "ActionsPie",
    "ActionsBarValue",
    "ActionsTable",
    "WorldMap",
];
const CUMULATIVE_DISPLAY: &str = "ActionsLineGraphCumulative";

pub fn compile(node: &Value, ctx: &Context) -> Result<Compiled, Invalid> {
    let plan = Plan::parse(node, ctx)?;
    let queries = plan.queries();
    Ok(Compiled::new(queries, move |tables| plan.assemble(tables)))
}

/// One entry of `series`.
struct Series {
    math: SeriesMath,
    /// The event name and the series' own property filters (`true` when none).
    condition: String,
    /// `"All events"` for all events.
    label: String,
    /// The response's `action` object, without `days`.
    action: Map<String, Value>,
}

/// What one result of a breakdown is for.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum Bucket {
    /// A combination of property values, one per breakdown.
    Values(Vec<String>),
    /// The cohort at this index of the breakdown's cohorts.
    Cohort(usize),
}

/// The current period, or the previous one when comparing.
struct Period {
    range: Range,
    /// Lower bound of the events counted: the start of the first bucket unless `explicitDate`.
    filter_from: DateTime<Utc>,
    /// Known at compile time except for `date_from: all` (they start at the earliest event).
    buckets: Option<Vec<DateTime<Tz>>>,
    compare_label: Option<&'static str>,
}

struct Formula {
    expression: Expression,
    label: String,
}

struct Plan {
    ctx: Context,
    interval: Interval,
    series: Vec<Series>,
    periods: Vec<Period>,
    /// The node's `properties` (`true` when none).
    node_condition: String,
    breakdown: Option<Breakdown>,
    /// A cohort breakdown's membership condition per cohort (over the events' `person_id`).
    cohort_conditions: Vec<String>,
    total_value: bool,
    cumulative: bool,
    formulas: Vec<Formula>,
    /// `date_from: all`: the first query looks up the earliest event.
    from_all: bool,
    /// The legacy `filter` dict echoed in every result.
    filter: Value,
}
