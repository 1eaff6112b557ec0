//! A dynamic cohort's definition, PostHog's `filters: {"properties": <group>}`: AND/OR groups of
//! person-property filters, behavioural filters (the person performed an event, at least / at most
//! n times, within a window) and other cohorts, each of which may be negated.

mod parse;

#[cfg(test)]
mod tests;

use serde::{Deserialize, Serialize};
use serde_json::Value;

pub use parse::DefinitionError;

/// `filters` of a dynamic cohort.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Filters {
    /// Always a group (`AND` / `OR`) at the top.
    pub properties: Node,
}

/// A group or a filter, told apart by `type`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type")]
pub enum Node {
    #[serde(rename = "AND")]
    And(Group),
    #[serde(rename = "OR")]
    Or(Group),
    #[serde(rename = "person")]
    Person(PersonFilter),
    #[serde(rename = "behavioral")]
    Behavioral(BehavioralFilter),
    #[serde(rename = "cohort")]
    Cohort(CohortFilter),
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Group {
    pub values: Vec<Node>,
}

/// A person property compared as PostHog's property filters compare (`operator` default `exact`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PersonFilter {
    pub key: String,
    #[serde(default)]
    pub value: Value,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub operator: Option<String>,
    #[serde(default, skip_serializing_if = "is_false")]
    pub negation: bool,
}

/// What a behavioural filter asks about the person's events.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Behavior {
    /// At least once in the window.
    PerformedEvent,
    /// A number of times in the window, compared by `operator` (`gte`, `lte`, `exact`) with
    /// `operator_value`.
    PerformedEventMultiple,
}

/// `time_interval` of a behavioural window (`time_value` of them back from now).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TimeInterval {
    Minute,
    Hour,
    Day,
    Week,
    Month,
    Year,
}

/// How often, for `performed_event_multiple`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CountOperator {
    Gte,
    Lte,
    Exact,
    Gt,
    Lt,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BehavioralFilter {
    /// The event's name (`event_type: "events"`).
    pub key: String,
    pub value: Behavior,
    /// Only `events` (actions are not kept by this service).
    pub event_type: String,
    /// The window: `time_value` × `time_interval` back from now, or from `explicit_datetime`
    /// (an ISO instant or a relative date such as `-30d`) to now.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_value: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_interval: Option<TimeInterval>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub explicit_datetime: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub operator: Option<CountOperator>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub operator_value: Option<i64>,
    /// Event property filters in PostHog's property-filter shape (as query nodes take them).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub event_filters: Option<Vec<Value>>,
    #[serde(default, skip_serializing_if = "is_false")]
    pub negation: bool,
}

/// Membership of another cohort of the project.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CohortFilter {
    /// Always `id`.
    pub key: String,
    pub value: i64,
    #[serde(default, skip_serializing_if = "is_false")]
    pub negation: bool,
}

fn is_false(value: &bool) -> bool {
    !*value
}

impl Filters {
    /// Whether any filter reads events (such a cohort cannot be evaluated per flag request).
    pub fn has_behavioral(&self) -> bool {
        let mut found = false;
        self.properties.visit(&mut |node| {
            found |= matches!(node, Node::Behavioral(_));
        });
        found
    }

    /// The ids of the cohorts this definition names directly.
    pub fn cohort_ids(&self) -> Vec<i64> {
        let mut ids = Vec::new();
        self.properties.visit(&mut |node| {
            if let Node::Cohort(filter) = node
                && !ids.contains(&filter.value)
            {
                ids.push(filter.value);
            }
        });
        ids
    }
}

impl Node {
    /// Calls `f` on this node and every node under it, depth first.
    pub fn visit(&self, f: &mut impl FnMut(&Node)) {
        f(self);
        if let Node::And(group) | Node::Or(group) = self {
            for node in &group.values {
                node.visit(f);
            }
        }
    }
}
