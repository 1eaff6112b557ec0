//! Cohort filters (`{"type": "cohort", "key": "id", "value": <id>, "operator": "in"|"not_in"}`)
//! as a boolean over a person id column, PostHog's `person_id IN COHORT <id>`.
//!
//! [`membership`] is written over any column so one compiler serves the events filter
//! (`person_id`) and the cohort calculation (`id` of `persons`):
//! - a cohort whose members are known (a static cohort's stored members, or a dynamic cohort's
//!   the caller resolved) is those members, inlined (`column IN ('uuid', ...)`, at most
//!   [`MAX_INLINE_MEMBERS`]);
//! - otherwise a dynamic cohort is its definition's AND/OR/negation over `column IN (subquery)`
//!   terms: a person filter reads `persons`, a behavioural filter reads `events` in its window
//!   back from `ctx.now`, a nested cohort is its own membership.
//!
//! The engine runs `IN (subquery)` only where rows are filtered (WHERE, HAVING), not inside a
//! projection (a funnel step's `if(...)`, an experiment metric's `countIf(...)`); so the query
//! service resolves the dynamic cohorts a node names to their members first (with this same
//! compiler, over `persons`) and only very large ones are left as subqueries.
//!
//! The cohorts come from `ctx.cohorts`, loaded by the caller (see [`referenced`]).

use std::collections::{BTreeMap, BTreeSet};

use chrono::{DateTime, Duration, Months, Utc};
use cohort_core::Cohort;
use cohort_core::definition::{
    Behavior, BehavioralFilter, CountOperator, Node, PersonFilter, TimeInterval,
};
use serde::Deserialize;
use serde_json::{Map, Value};
use uuid::Uuid;

use crate::date_range::{parse_instant, sql_datetime};
use crate::sql_text;
use crate::{Context, Invalid};

/// Property filter types that mean "the person is in cohort `value`".
pub const FILTER_TYPES: &[&str] = &["cohort", "static-cohort", "precalculated-cohort"];

/// The person column of the `events` table, which node filters test.
pub const EVENTS_PERSON_COLUMN: &str = "person_id";

/// Most members of a static cohort inlined into a query.
pub const MAX_INLINE_MEMBERS: usize = 10_000;

/// How deep cohorts naming cohorts are followed (the repository allows 10 levels).
const MAX_DEPTH: usize = 12;

/// A cohort as compiling needs it: as stored, with its members when they are known.
#[derive(Debug, Clone, PartialEq)]
pub struct CohortSpec {
    pub cohort: Cohort,
    /// Who is in it, when known: a static cohort's stored members, or a dynamic cohort's as the
    /// caller resolved them (its definition is then not compiled). `None`: the definition is.
    pub members: Option<Vec<Uuid>>,
}

/// Cohorts by id.
pub type Cohorts = BTreeMap<i64, CohortSpec>;

/// A cohort filter as a node gives it. Not closed: PostHog's UI adds display fields
/// (`cohort_name`, `label`).
#[derive(Debug, Deserialize)]
struct FilterRef {
    value: CohortId,
    #[serde(default)]
    operator: Option<String>,
    #[serde(default)]
    negation: bool,
}

#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum CohortId {
    Number(i64),
    Text(String),
}

impl CohortId {
    fn id(&self) -> Option<i64> {
        match self {
            Self::Number(id) => Some(*id),
            Self::Text(text) => text.trim().parse().ok(),
        }
    }
}

/// The ids of the cohorts a node's filters name (any object whose `type` is a cohort filter type
/// and whose `value` is an id) and its cohort breakdowns name, in id order, so the caller loads
/// them only when there are some.
pub fn referenced(node: &Value) -> Vec<i64> {
    let mut ids = BTreeSet::new();
    collect(node, &mut ids);
    ids.into_iter().collect()
}

fn collect(value: &Value, ids: &mut BTreeSet<i64>) {
    match value {
        Value::Object(object) => {
            let is_filter = object
                .get("type")
                .and_then(Value::as_str)
                .is_some_and(|kind| FILTER_TYPES.contains(&kind));
            if is_filter
                && let Some(id) = object
                    .get("value")
                    .and_then(|v| CohortId::deserialize(v).ok())
                    .and_then(|v| v.id())
            {
                ids.insert(id);
            }
            // A cohort breakdown (`breakdownFilter` with `breakdown_type: cohort`).
            ids.extend(crate::breakdown::cohort_ids(object));
            object.values().for_each(|value| collect(value, ids));
        }
        Value::Array(items) => items.iter().for_each(|item| collect(item, ids)),
        _ => {}
    }
}

/// A node's cohort filter over the events' `person_id`.
pub(crate) fn filter(
    object: &Map<String, Value>,
    ctx: &Context,
    attr: &str,
) -> Result<String, Invalid> {
    let raw = Value::Object(object.clone());
    let parsed: FilterRef = serde_path_to_error::deserialize(&raw).map_err(|error| {
        let path = error.path().to_string();
        Invalid::new(
            format!("{attr}.{path}"),
            format!(
                "A cohort filter is {{\"type\": \"cohort\", \"key\": \"id\", \"value\": <cohort id>}}: {}",
                error.into_inner()
            ),
        )
    })?;
    let value_attr = format!("{attr}.value");
    let id = parsed
        .value
        .id()
        .ok_or_else(|| Invalid::new(&value_attr, "A cohort filter's value must be a cohort id."))?;
    let not_in = match parsed.operator.as_deref() {
        None | Some("in" | "exact") => false,
        Some("not_in" | "is_not") => true,
        Some(other) => {
            return Err(Invalid::new(
                format!("{attr}.operator"),
                format!("A cohort filter's operator must be \"in\" or \"not_in\", not '{other}'."),
            ));
        }
    };
    let condition = membership(id, EVENTS_PERSON_COLUMN, ctx, &value_attr)?;
    Ok(negate(condition, not_in != parsed.negation))
}

/// Whether `column` (a person id) is in cohort `id`, as a boolean expression of the dialect;
/// `attr` names the field an error is about.
pub fn membership(id: i64, column: &str, ctx: &Context, attr: &str) -> Result<String, Invalid> {
    cohort(id, column, ctx, attr, 0)
}

fn negate(condition: String, negated: bool) -> String {
    if negated {
        format!("NOT ({condition})")
    } else {
        condition
    }
}

fn cohort(
    id: i64,
    column: &str,
    ctx: &Context,
    attr: &str,
    depth: usize,
) -> Result<String, Invalid> {
    if depth > MAX_DEPTH {
        return Err(Invalid::new(
            attr,
            format!("Cohort {id} names cohorts more than {MAX_DEPTH} levels deep."),
        ));
    }
    let spec = ctx
        .cohorts
        .get(&id)
        .filter(|spec| !spec.cohort.deleted)
        .ok_or_else(|| Invalid::new(attr, format!("Cohort with id {id} does not exist")))?;
    if let Some(members) = &spec.members {
        return inline(id, members, column, attr);
    }
    if spec.cohort.is_static {
        return inline(id, &[], column, attr);
    }
    match &spec.cohort.filters {
        Some(filters) => node(&filters.properties, column, ctx, attr, depth)
            .map_err(|error| in_cohort(id, error)),
        // A dynamic cohort without a definition has no one in it.
        None => Ok("false".into()),
    }
}

/// An error inside a stored definition: about the node's field, naming the cohort.
fn in_cohort(id: i64, error: Invalid) -> Invalid {
    if error.detail.starts_with("Cohort ") {
        return error;
    }
    Invalid::new(error.attr, format!("Cohort {id}: {}", error.detail))
}

fn inline(id: i64, members: &[Uuid], column: &str, attr: &str) -> Result<String, Invalid> {
    if members.is_empty() {
        return Ok("false".into());
    }
    if members.len() > MAX_INLINE_MEMBERS {
        return Err(Invalid::new(
            attr,
            format!(
                "Cohort {id} has {} members; static cohorts of more than {MAX_INLINE_MEMBERS} members cannot be used in a filter.",
                members.len()
            ),
        ));
    }
    let ids: Vec<String> = members
        .iter()
        .map(|id| sql_text::string(&id.to_string()))
        .collect();
    Ok(format!("{column} IN ({})", ids.join(", ")))
}

fn node(
    node: &Node,
    column: &str,
    ctx: &Context,
    attr: &str,
    depth: usize,
) -> Result<String, Invalid> {
    match node {
        Node::And(group) | Node::Or(group) => {
            let joiner = if matches!(node, Node::And(_)) {
                " AND "
            } else {
                " OR "
            };
            let parts = group
                .values
                .iter()
                .map(|inner| node_in_parens(inner, column, ctx, attr, depth))
                .collect::<Result<Vec<_>, _>>()?;
            Ok(match parts.len() {
                0 => "true".into(),
                _ => parts.join(joiner),
            })
        }
        Node::Person(filter) => person(filter, column, ctx, attr),
        Node::Behavioral(filter) => behavioral(filter, column, ctx, attr),
        Node::Cohort(filter) => Ok(negate(
            cohort(filter.value, column, ctx, attr, depth + 1)?,
            filter.negation,
        )),
    }
}

fn node_in_parens(
    inner: &Node,
    column: &str,
    ctx: &Context,
    attr: &str,
    depth: usize,
) -> Result<String, Invalid> {
    Ok(format!("({})", node(inner, column, ctx, attr, depth)?))
}

fn person(
    filter: &PersonFilter,
    column: &str,
    ctx: &Context,
    attr: &str,
) -> Result<String, Invalid> {
    let condition = crate::filters::persons_table_condition(
        &filter.key,
        filter.operator.as_deref(),
        &filter.value,
        ctx,
        attr,
    )?;
    Ok(negate(
        format!("{column} IN (SELECT id FROM persons WHERE {condition})"),
        filter.negation,
    ))
}

fn behavioral(
    filter: &BehavioralFilter,
    column: &str,
    ctx: &Context,
    attr: &str,
) -> Result<String, Invalid> {
    let start = window_start(filter, ctx, attr)?;
    let mut conditions = vec![
        format!("event = {}", sql_text::string(&filter.key)),
        format!("timestamp >= {}", sql_datetime(start)),
        format!("timestamp <= {}", sql_datetime(ctx.now)),
    ];
    if let Some(event_filters) = &filter.event_filters {
        let events = Value::Array(event_filters.clone());
        let condition = crate::filters::expression(Some(&events), ctx, attr)?;
        if condition != "true" {
            conditions.push(condition);
        }
    }
    let mut subquery = format!(
        "SELECT person_id FROM events WHERE {}",
        conditions.join(" AND ")
    );
    if filter.value == Behavior::PerformedEventMultiple {
        let operator = match filter.operator.unwrap_or(CountOperator::Gte) {
            CountOperator::Gte => ">=",
            CountOperator::Lte => "<=",
            CountOperator::Exact => "=",
            CountOperator::Gt => ">",
            CountOperator::Lt => "<",
        };
        let count = filter.operator_value.unwrap_or(1);
        subquery.push_str(&format!(
            " GROUP BY person_id HAVING count() {operator} {count}"
        ));
    }
    Ok(negate(format!("{column} IN ({subquery})"), filter.negation))
}

/// Where a behavioural filter's window starts: `explicit_datetime` (an instant or a relative
/// date), else `time_value` × `time_interval` back from now.
fn window_start(
    filter: &BehavioralFilter,
    ctx: &Context,
    attr: &str,
) -> Result<DateTime<Utc>, Invalid> {
    if let Some(text) = &filter.explicit_datetime {
        return parse_instant(text, ctx).ok_or_else(|| {
            Invalid::new(
                attr,
                format!("'{text}' is not a date (ISO 8601 or relative like -30d)."),
            )
        });
    }
    let (Some(value), Some(interval)) = (filter.time_value, filter.time_interval) else {
        return Err(Invalid::new(
            attr,
            "A behavioral filter needs time_value and time_interval, or explicit_datetime.",
        ));
    };
    let months = |count: i64| {
        u32::try_from(count)
            .ok()
            .and_then(|count| ctx.now.checked_sub_months(Months::new(count)))
    };
    let start = match interval {
        TimeInterval::Minute => {
            Duration::try_minutes(value).and_then(|d| ctx.now.checked_sub_signed(d))
        }
        TimeInterval::Hour => {
            Duration::try_hours(value).and_then(|d| ctx.now.checked_sub_signed(d))
        }
        TimeInterval::Day => Duration::try_days(value).and_then(|d| ctx.now.checked_sub_signed(d)),
        TimeInterval::Week => {
            Duration::try_weeks(value).and_then(|d| ctx.now.checked_sub_signed(d))
        }
        TimeInterval::Month => months(value),
        TimeInterval::Year => value.checked_mul(12).and_then(months),
    };
    start.ok_or_else(|| Invalid::new(attr, "The behavioral filter's window is out of range."))
}

#[cfg(test)]
#[path = "cohorts_tests.rs"]
mod tests;
