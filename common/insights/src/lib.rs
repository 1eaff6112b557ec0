//! Structured query nodes (EventsQuery, TrendsQuery, FunnelsQuery, RetentionQuery,
//! StickinessQuery, LifecycleQuery, PathsQuery, ActorsQuery) compiled to
//! the SQL dialect. Compiling gives the dialect texts to run (through the same engine, limits,
//! cache and query log as any SQL query) and how to assemble their rows into PostHog's response.
//! Nothing here touches storage or the engine, so this crate builds without DataFusion.

pub mod actions;
pub mod actors;
pub mod breakdown;
pub mod cohorts;
pub mod date_range;
pub mod events_query;
pub mod experiments;
mod fields;
pub mod filters;
pub mod funnels;
pub mod hogql_filters;
pub mod lifecycle;
pub mod math;
pub mod nodes;
pub mod paths;
pub mod retention;
pub mod series;
pub mod sql_text;
pub mod stickiness;
pub mod surveys;
pub mod trends;

use chrono::{DateTime, Utc};
use serde_json::Value;

/// The node kinds compiled here.
pub const KINDS: &[&str] = &[
    "EventsQuery",
    "TrendsQuery",
    "FunnelsQuery",
    "RetentionQuery",
    "StickinessQuery",
    "LifecycleQuery",
    "ExperimentQuery",
    "PathsQuery",
    "ActorsQuery",
];

/// What compiling depends on besides the node.
#[derive(Clone)]
pub struct Context {
    /// The project's time zone: relative dates and buckets are in it.
    pub timezone: chrono_tz::Tz,
    /// "Now", fixed once per request so every query of a node agrees.
    pub now: DateTime<Utc>,
    /// 0 = Sunday (PostHog's default), 1 = Monday.
    pub week_start_day: u8,
    /// Checks that a user-given expression (`math_hogql`, EventsQuery `select`/`where`, ...) is
    /// exactly one expression of the dialect, so it cannot reshape the query it is put in.
    pub check_expression: fn(&str) -> Result<(), String>,
    /// The experiment an `ExperimentQuery` is about (loaded by the caller from the Store).
    pub experiment: Option<std::sync::Arc<experiments::ExperimentSpec>>,
    /// The project's cohorts a node's `cohort` filters name, nested ones included (loaded by
    /// the caller only when the node names one; see [`cohorts::referenced`]).
    pub cohorts: std::sync::Arc<crate::cohorts::Cohorts>,
    /// The project's actions a node's `ActionsNode`s name (loaded by the caller only when the
    /// node names one; see [`actions::referenced`]).
    pub actions: std::sync::Arc<crate::actions::Actions>,
    /// The project's `test_account_filters`: what a node with `filterTestAccounts: true` (or
    /// HogQLFilters') leaves out.
    pub test_account_filters: std::sync::Arc<Vec<Value>>,
    /// The project's path cleaning rules, which a paths node with `pathReplacements` applies.
    pub path_cleaning_rules: std::sync::Arc<Vec<paths::CleaningRule>>,
}

/// A node that cannot be compiled: a 400 naming the field (`attr`, e.g. `series[0].math`).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{detail}")]
pub struct Invalid {
    pub attr: String,
    pub detail: String,
}

impl Invalid {
    pub fn new(attr: impl Into<String>, detail: impl Into<String>) -> Self {
        Self {
            attr: attr.into(),
            detail: detail.into(),
        }
    }
}

/// One query's answer as the engine gives it.
#[derive(Debug, Clone, Default)]
pub struct Table {
    pub columns: Vec<String>,
    /// `[name, ClickHouse type]` per column.
    pub types: Vec<(String, String)>,
    pub rows: Vec<Vec<Value>>,
}

type Assemble = Box<dyn FnOnce(Vec<Table>) -> Result<Value, Invalid> + Send>;

/// The dialect queries a node needs, and how their answers become the node's response.
pub struct Compiled {
    /// Dialect texts, each with an explicit LIMIT (the engine's default LIMIT 100 must not apply).
    pub queries: Vec<String>,
    assemble: Assemble,
}

impl Compiled {
    pub fn new(
        queries: Vec<String>,
        assemble: impl FnOnce(Vec<Table>) -> Result<Value, Invalid> + Send + 'static,
    ) -> Self {
        Self {
            queries,
            assemble: Box::new(assemble),
        }
    }

    /// The node-specific part of the response (`results`, `columns`, `hasMore`, ...), from one
    /// table per query, in order.
    pub fn assemble(self, tables: Vec<Table>) -> Result<Value, Invalid> {
        (self.assemble)(tables)
    }
}

/// Compiles an (already upgraded) node of one of [`KINDS`].
pub fn compile(node: &Value, ctx: &Context) -> Result<Compiled, Invalid> {
    if let Some(kind) = node.get("kind").and_then(Value::as_str) {
        fields::check(node, kind)?;
    }
    match node.get("kind").and_then(Value::as_str) {
        Some("EventsQuery") => events_query::compile(node, ctx),
        Some("TrendsQuery") => trends::compile(node, ctx),
        Some("FunnelsQuery") => funnels::compile(node, ctx),
        Some("RetentionQuery") => retention::compile(node, ctx),
        Some("StickinessQuery") => stickiness::compile(node, ctx),
        Some("LifecycleQuery") => lifecycle::compile(node, ctx),
        Some("ExperimentQuery") => experiments::query::compile(node, ctx),
        Some("PathsQuery") => paths::compile(node, ctx),
        Some("ActorsQuery") => actors::compile(node, ctx),
        Some(kind) => Err(Invalid::new(
            "kind",
            format!("Query kind {kind} is not supported."),
        )),
        None => Err(Invalid::new("kind", "kind is required.")),
    }
}

/// What the unit tests of every node share.
#[cfg(test)]
pub(crate) mod testing {
    use chrono::{DateTime, Utc};
    use chrono_tz::Tz;
    use serde_json::{Value, json};

    use crate::Context;

    /// A context at `now` (RFC 3339) whose expression check stands in for the engine's: it
    /// refuses `;`, `select` and ` from `, enough to see that compilers ask it.
    pub fn context(timezone: Tz, now: &str, week_start_day: u8) -> Context {
        Context {
            timezone,
            now: utc(now),
            week_start_day,
            check_expression: |text| {
                let lower = text.to_lowercase();
                match text.contains(';') || lower.contains("select") || lower.contains(" from ") {
                    true => Err(format!("`{text}` is not a single expression")),
                    false => Ok(()),
                }
            },
            experiment: None,
            cohorts: Default::default(),
            actions: Default::default(),
            test_account_filters: Default::default(),
            path_cleaning_rules: Default::default(),
        }
    }

    pub fn utc(text: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(text)
            .map(|moment| moment.with_timezone(&Utc))
            .unwrap_or_else(|error| panic!("test instant {text}: {error}"))
    }

    /// The context of the series nodes' tests: New York, at noon UTC on 1 June 2024, weeks
    /// from Sunday.
    pub fn new_york() -> Context {
        context(chrono_tz::America::New_York, "2024-06-01T12:00:00Z", 0)
    }

    /// A `kind` node of one `$pageview` series from 9 March 2024 to `date_to`, with the fields
    /// of `extra` (an object) set over it.
    pub fn pageview_node(kind: &str, date_to: &str, extra: Value) -> Value {
        let mut node = json!({
            "kind": kind,
            "series": [{"kind": "EventsNode", "event": "$pageview"}],
            "dateRange": {"date_from": "2024-03-09", "date_to": date_to},
        });
        if let (Value::Object(node), Value::Object(extra)) = (&mut node, extra) {
            node.extend(extra);
        }
        node
    }

    /// The field `compile` names in refusing `node`; panics when it compiles.
    pub fn error_attr(node: &Value, ctx: &Context) -> String {
        match crate::compile(node, ctx) {
            Ok(_) => panic!("compiled {node}"),
            Err(invalid) => invalid.attr,
        }
    }
}
