//! TrendsQuery (reference 4.6): per series, an aggregation per time bucket (or one total for
//! the total-value displays), optionally broken down by a property, compared with the previous
//! period, and combined by formulas.
//!
//! One dialect query per series and period (current, then previous when comparing), in the
//! order PostHog lists results: every current series, then every previous one. With `dateRange`
//! `all` a first query finds the earliest event, where the buckets start.
//!
//! Breakdowns keep the top `breakdown_limit` values (ranked by the sum of the per-bucket values,
//! or by the total for total-value displays) and aggregate every other value together as
//! `$$_posthog_breakdown_other_$$` in SQL, so non-additive math (dau, medians) stays exact.
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

use crate::date_range::{Interval, Range};
use crate::math::SeriesMath;
use crate::{Compiled, Context, Invalid};

use formula::Expression;

/// The breakdown value of everything beyond the top `breakdown_limit` values.
pub const BREAKDOWN_OTHER: &str = "$$_posthog_breakdown_other_$$";
/// Empty or missing breakdown values, shown as `none`.
const BREAKDOWN_NULL: &str = "$$_posthog_breakdown_null_$$";
const BREAKDOWN_NONE_LABEL: &str = "none";
const DEFAULT_BREAKDOWN_LIMIT: u64 = 25;
const MAX_BREAKDOWN_LIMIT: u64 = 1_000;
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

struct Breakdown {
    /// The value per event, never NULL (missing/empty values are [`BREAKDOWN_NULL`]).
    value: String,
    limit: u64,
    hide_other: bool,
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
    total_value: bool,
    cumulative: bool,
    formulas: Vec<Formula>,
    /// `date_from: all`: the first query looks up the earliest event.
    from_all: bool,
    /// The legacy `filter` dict echoed in every result.
    filter: Value,
}
