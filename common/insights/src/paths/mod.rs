//! PathsQuery: the most travelled edges between consecutive steps of persons' paths, as
//! PostHog's `posthog/hogql_queries/insights/paths_query_runner.py` computes them:
//! - A path item is an event's name, a `$pageview`'s `$current_url` (one trailing `/` cut), a
//!   `$screen`'s `$screen_name` or the `pathsHogQLExpression`, by `includeEventTypes`; then,
//!   with `pathReplacements`, each of the project's cleaning rules, then each
//!   `localPathCleaningFilters` regex replaced by its alias in turn, then the first
//!   `pathGroupings` wildcard it matches (anywhere in the item) names it. Items in
//!   `excludeEvents` are dropped before anything else.
//! - A person's events, in time order, are cut into sessions at every gap of 30 minutes or more;
//!   in a session, a run of the same item counts once (at its last event).
//! - `startPoint` keeps sessions that reach it and starts them there; `endPoint` keeps sessions
//!   that reach it and ends them there; then `stepLimit` (5) steps are kept: the first ones, the
//!   last ones with only an end point, or (with both points) the first and last halves around a
//!   `...` step when the path is longer.
//! - Step `n`'s item is named `n_item`; an edge is two consecutive steps of a session, its value
//!   the sessions that took it, its `average_conversion_time` the mean milliseconds between them.
//!   `minEdgeWeight`/`maxEdgeWeight` bound the value, the `edgeLimit` (50) heaviest edges are
//!   kept (ties by source then target), and only edges reachable from a first step survive.
//!
//! [`compile`] reads the node into a `Plan` (`parse`), writes its query (`sql`) and shapes the
//! edges into the response (`assemble`). [`Plan::steps_ctes`] is also what the actors of a
//! paths point are read from (`crate::actors`).

mod assemble;
mod parse;
mod sql;
#[cfg(test)]
mod tests;

use chrono::{DateTime, Utc};
use serde_json::Value;

use crate::{Compiled, Context, Invalid};

/// PostHog's `EVENT_IN_SESSION_LIMIT_DEFAULT`.
const DEFAULT_STEP_LIMIT: u64 = 5;
/// The most steps a session keeps (the engine's `aggregatePaths` bound).
const MAX_STEP_LIMIT: u64 = 1_000;
/// PostHog's `EDGE_LIMIT_DEFAULT`.
const DEFAULT_EDGE_LIMIT: u64 = 50;
/// A gap this long (seconds) or longer between two events starts a new session.
const SESSION_GAP_SECONDS: i64 = 30 * 60;

pub fn compile(node: &Value, ctx: &Context) -> Result<Compiled, Invalid> {
    let plan = Plan::parse(node, ctx)?;
    let queries = vec![plan.edges_query()];
    Ok(Compiled::new(queries, move |tables| {
        Ok(assemble::edges(tables))
    }))
}

/// Where the kept part of each session starts and ends.
#[derive(Debug, Clone, PartialEq)]
enum Target {
    Neither,
    Start(String),
    End(String),
    Both { start: String, end: String },
}

/// One of the project's path cleaning rules: every match of `regex` in an item becomes `alias`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CleaningRule {
    pub regex: String,
    pub alias: String,
}

/// The point of a paths insight whose persons an actors query asks for
/// (`pathStartKey` / `pathEndKey` / `pathDropoffKey`, step-prefixed like `2_/pricing`).
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Point {
    pub start_key: Option<String>,
    pub end_key: Option<String>,
    pub dropoff_key: Option<String>,
}

pub(crate) struct Plan {
    /// Lower and upper bounds of the events read.
    from: DateTime<Utc>,
    to: DateTime<Utc>,
    /// Which events are path items, and the node's `properties` (`true` when none).
    condition: String,
    /// The dialect expression of an event's path item, cleaned (not yet grouped).
    item: String,
    /// `pathGroupings`: an item matching one is named by the first it matches.
    groupings: Vec<String>,
    excluded: Vec<String>,
    target: Target,
    step_limit: u64,
    edge_limit: u64,
    min_edge_weight: Option<u64>,
    max_edge_weight: Option<u64>,
    /// The point named in `pathsFilter` (used by actors queries only).
    pub point: Point,
}
