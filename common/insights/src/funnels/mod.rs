//! FunnelsQuery: per actor, the furthest step reached within the conversion window (the
//! engine's `aggregateFunnel`, which follows PostHog's `aggregate_funnel` UDF), then per step the
//! actors who reached at least that step and the average/median seconds from the step before.
//!
//! Choices, as PostHog makes them:
//! - The window counts from the attempt's first step and is inclusive: a step exactly
//!   `funnelWindowInterval` units after it counts, one second later does not. A month is 30 days.
//! - Conversion times of 0 seconds are left out of the average and the median (PostHog keeps
//!   `timings[i] > 0` only).
//! - An exclusion drops the attempt it interrupts (an excluded event after the attempt reached
//!   `funnelFromStep` and before it reached `funnelToStep`, within its window); an actor whose
//!   furthest attempt was excluded is left out of every step.
//! - A property breakdown ([`crate::breakdown`]: one property, up to three listed in
//!   `breakdown`, or PostHog's multiple `breakdowns`) takes the actor's values from their first
//!   (`first_touch`) or last (`last_touch`) funnel event with a value (any of the values, with
//!   several; `''` for a missing one, and all `''` when none has one); the `breakdown_limit` (25)
//!   combinations with the most conversions (from the last step back, ties by value) are kept,
//!   the rest summed as "Other" (`["Other"]` when values are lists, as PostHog shows them).
//!   A single property's value is shown as is, listed ones as a list.
//! - A cohort breakdown is the funnel of each cohort's persons (every person for `all`):
//!   `breakdown` the cohort's name (`all users`), `breakdown_value` its id (0 for all, PostHog's
//!   `ALL_USERS_COHORT_ID`), ordered by conversions as above, no "Other".
//!
//! `funnelsFilter.funnelVizType` picks the view: `steps` (the above), `trends` (conversion rate
//! per interval of the attempts' start) or `time_to_convert` (a histogram of conversion times);
//! the notes of the `trends` and `time_to_convert` files say how each follows PostHog.
//!
//! [`compile`] reads the node into a `Funnel` (`parse`) and writes the per-actor and steps queries
//! (`sql`); `assemble` shapes the steps view's response, `trends` and `time_to_convert` compile
//! and assemble the other views; `persons` finds the persons of a step (and breakdown value) for
//! an actors query from the same per-actor query.

mod assemble;
mod parse;
mod persons;
mod sql;
#[cfg(test)]
mod tests;
mod time_to_convert;
mod trends;

use serde_json::{Value, json};

use crate::date_range::{Interval, Range};
use crate::{Compiled, Context, Invalid};

/// The engine's bit masks hold 63 steps; PostHog's UI stops well before this.
const MAX_STEPS: usize = 30;
/// The bucket the values past the breakdown limit are summed into.
const OTHER: &str = "Other";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Order {
    Ordered,
    Strict,
    Unordered,
}

impl Order {
    fn name(self) -> &'static str {
        match self {
            Order::Ordered => "ordered",
            Order::Strict => "strict",
            Order::Unordered => "unordered",
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
struct Step {
    event: Option<String>,
    /// The action an `ActionsNode` step names: its id and name.
    action: Option<(i64, String)>,
    custom_name: Option<String>,
    /// The dialect condition an event meets to be this step.
    condition: String,
}

#[derive(Debug, Clone, PartialEq)]
struct Exclusion {
    condition: String,
    from_step: usize,
    to_step: usize,
}

#[derive(Debug, Clone, PartialEq)]
struct Breakdown {
    by: crate::breakdown::Breakdown,
    /// `breakdownAttributionType: last_touch` (else first touch).
    last_touch: bool,
    /// A cohort breakdown's membership condition per cohort, over the per-actor `actor`.
    cohort_conditions: Vec<String>,
}

/// `funnelsFilter.funnelVizType`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Viz {
    Steps,
    Trends,
    TimeToConvert,
}

#[derive(Debug, Clone, PartialEq)]
struct Funnel {
    steps: Vec<Step>,
    exclusions: Vec<Exclusion>,
    order: Order,
    window_seconds: i64,
    actor: String,
    /// Conditions every event must meet (date range, node properties).
    scope: String,
    breakdown: Option<Breakdown>,
    viz: Viz,
    /// `funnelFromStep` / `funnelToStep` (0-based; default the first and the last step): the
    /// conversion the trends and time to convert views measure.
    from_step: usize,
    to_step: usize,
    /// `binCount`, clamped to 1..=90 as PostHog does; `None` picks it from the sample count.
    bin_count: Option<i64>,
    interval: Interval,
    range: Range,
}

pub(crate) use persons::StepPersons;

pub fn compile(node: &Value, ctx: &Context) -> Result<Compiled, Invalid> {
    let funnel = parse::parse(node, ctx)?;
    match funnel.viz {
        Viz::Steps => {}
        Viz::Trends => return trends::compile_trends(&funnel, ctx),
        Viz::TimeToConvert => return Ok(time_to_convert::compile_time_to_convert(&funnel)),
    }
    let query = sql::steps_query(&funnel);
    let steps = funnel.steps.clone();
    let order = funnel.order;
    let breakdown = funnel.breakdown.clone();
    Ok(Compiled::new(vec![query], move |tables| {
        let table = tables
            .into_iter()
            .next()
            .ok_or_else(|| Invalid::new("series", "The funnel query gave no result."))?;
        Ok(json!({
            "results": assemble::assemble(&table, &steps, order, breakdown.as_ref()),
            "isUdf": true,
        }))
    }))
}
