//! Cohort conditions of flags (`{"key": "id", "type": "cohort", "value": <id>, "operator":
//! "in" | "not_in"}`), as PostHog's flags service evaluates them:
//! - a static cohort, or a behavioural one (its members come from the calculation job), by the
//!   person's stored membership, which the caller reads before evaluating ([`Subject`]'s
//!   `cohort_memberships`: matching is synchronous);
//! - a dynamic cohort of person properties by its AND/OR tree of filters, each matched with the
//!   same [`PropertyMatcher`] flags use, nested cohorts recursively, `negation` honoured as
//!   posthog-python's `match_property_group` honours it.
//!
//! [`Subject`]: crate::Subject

#[cfg(test)]
mod tests;
pub mod validate;

use std::collections::{BTreeMap, BTreeSet};

use chrono::{DateTime, Utc};
use cohort_core::Cohort;
use cohort_core::definition::{Node, PersonFilter};
use serde_json::{Map, Value};

use crate::EvaluationError;
use crate::matching::PropertyMatcher;
use crate::model::{Operator, PropertyFilter, PropertyKind};

/// How deep cohorts may name cohorts (`cohort-core` refuses deeper chains when they are
/// written); a stored cycle is inconclusive rather than endless.
const MAX_DEPTH: usize = 12;

/// The cohort a flag's `value` names: an integer, or its digits as text.
pub fn cohort_id(value: &Value) -> Option<i64> {
    match value {
        Value::Number(number) => number.as_i64(),
        Value::String(text) => text.trim().parse().ok(),
        _ => None,
    }
}

/// The ids of the cohorts a flag's conditions name directly.
pub fn named_by(filters: &crate::FlagFilters) -> BTreeSet<Option<i64>> {
    filters
        .groups
        .iter()
        .chain(&filters.super_groups)
        .flat_map(|group| &group.properties)
        .filter(|property| property.kind == PropertyKind::Cohort)
        .map(|property| cohort_id(&property.value))
        .collect()
}

/// A project's live cohorts made ready for flag evaluation.
#[derive(Debug, Default)]
pub struct PreparedCohorts {
    by_id: BTreeMap<i64, PreparedCohort>,
}

#[derive(Debug)]
enum PreparedCohort {
    /// Static or behavioural: the person's stored membership decides.
    Stored,
    /// Person properties only: the tree decides. `definition` is the stored tree, which SDKs
    /// evaluate locally.
    Dynamic {
        node: PreparedNode,
        definition: Box<Node>,
    },
}

#[derive(Debug)]
enum PreparedNode {
    Group {
        all: bool,
        values: Vec<PreparedNode>,
    },
    Person {
        matcher: PropertyMatcher,
        negated: bool,
    },
    Cohort {
        id: i64,
        negated: bool,
    },
    Never,
}

impl PreparedCohorts {
    /// From the project's live cohorts (deleted ones are dropped).
    pub fn new(cohorts: &[Cohort]) -> Self {
        let by_id = cohorts
            .iter()
            .filter(|cohort| !cohort.deleted)
            .map(|cohort| (cohort.id, PreparedCohort::new(cohort)))
            .collect();
        Self { by_id }
    }

    pub fn is_empty(&self) -> bool {
        self.by_id.is_empty()
    }

    /// The cohorts `roots` reach (themselves and the cohorts their definitions name, to any
    /// depth) that exist, in id order.
    fn reached_from(&self, roots: impl IntoIterator<Item = i64>) -> BTreeSet<i64> {
        let mut reached = BTreeSet::new();
        let mut todo: Vec<i64> = roots.into_iter().collect();
        while let Some(id) = todo.pop() {
            let Some(cohort) = self.by_id.get(&id) else {
                continue;
            };
            if !reached.insert(id) {
                continue;
            }
            if let PreparedCohort::Dynamic { node, .. } = cohort {
                node.cohort_ids(&mut todo);
            }
        }
        reached
    }

    /// The cohorts whose stored membership `roots` need, nested ones included: what the SDK
    /// path reads for the person before evaluating.
    pub fn stored_reached_from(&self, roots: impl IntoIterator<Item = i64>) -> BTreeSet<i64> {
        let mut stored = self.reached_from(roots);
        stored.retain(|id| matches!(self.by_id.get(id), Some(PreparedCohort::Stored)));
        stored
    }

    /// The person-property keys the person-property cohorts `roots` reach read.
    pub fn person_keys_reached_from(
        &self,
        roots: impl IntoIterator<Item = i64>,
    ) -> BTreeSet<String> {
        let mut keys = BTreeSet::new();
        for id in self.reached_from(roots) {
            if let Some(PreparedCohort::Dynamic { node, .. }) = self.by_id.get(&id) {
                node.person_keys(&mut keys);
            }
        }
        keys
    }

    /// local evaluation's `cohorts`: the definitions of the person-property cohorts `roots`
    /// reach, keyed by id as text, in the shape posthog-python's `match_cohort` reads. Static
    /// and behavioural cohorts are left out, so an SDK meeting one raises
    /// `RequiresServerEvaluation` and asks `/flags` instead of guessing.
    pub fn local_definitions(
        &self,
        roots: impl IntoIterator<Item = i64>,
    ) -> BTreeMap<String, &Node> {
        self.reached_from(roots)
            .into_iter()
            .filter_map(|id| match self.by_id.get(&id) {
                Some(PreparedCohort::Dynamic { definition, .. }) => {
                    Some((id.to_string(), definition.as_ref()))
                }
                _ => None,
            })
            .collect()
    }

    /// Whether the subject is in cohort `id`: `properties` are the person's (request over
    /// stored), `memberships` the stored-membership cohorts the person is in (None: not read).
    pub fn contains(
        &self,
        id: i64,
        properties: &Map<String, Value>,
        memberships: Option<&BTreeSet<i64>>,
        now: DateTime<Utc>,
    ) -> Result<bool, EvaluationError> {
        self.contains_at(id, properties, memberships, now, 0)
    }

    fn contains_at(
        &self,
        id: i64,
        properties: &Map<String, Value>,
        memberships: Option<&BTreeSet<i64>>,
        now: DateTime<Utc>,
        depth: usize,
    ) -> Result<bool, EvaluationError> {
        if depth > MAX_DEPTH {
            return Err(EvaluationError::Inconclusive(format!(
                "cohort {id} names cohorts more than {MAX_DEPTH} levels deep"
            )));
        }
        match self.by_id.get(&id) {
            None => Err(EvaluationError::Inconclusive(format!(
                "cohort {id} does not exist"
            ))),
            Some(PreparedCohort::Stored) => match memberships {
                Some(memberships) => Ok(memberships.contains(&id)),
                None => Err(EvaluationError::Inconclusive(format!(
                    "the stored members of cohort {id} were not read"
                ))),
            },
            Some(PreparedCohort::Dynamic { node, .. }) => {
                self.node(node, properties, memberships, now, depth + 1)
            }
        }
    }

    /// posthog-python's `match_property_group`: an AND group fails on its first entry that
    /// does not match (after negation), an OR group holds on its first that does; an entry that
    /// cannot be decided only matters when no other entry decides the group.
    fn node(
        &self,
        node: &PreparedNode,
        properties: &Map<String, Value>,
        memberships: Option<&BTreeSet<i64>>,
        now: DateTime<Utc>,
        depth: usize,
    ) -> Result<bool, EvaluationError> {
        match node {
            PreparedNode::Person { matcher, negated } => {
                Ok(matcher.matches_in(properties, now) != *negated)
            }
            PreparedNode::Never => Ok(false),
            PreparedNode::Cohort { id, negated } => {
                Ok(self.contains_at(*id, properties, memberships, now, depth)? != *negated)
            }
            PreparedNode::Group { all, values } => {
                let mut undecided = None;
                for value in values {
                    match self.node(value, properties, memberships, now, depth) {
                        Ok(matched) if matched != *all => return Ok(matched),
                        Ok(_) => {}
                        Err(error) => {
                            undecided.get_or_insert(error);
                        }
                    }
                }
                match undecided {
                    Some(error) => Err(error),
                    // AND: every entry matched; OR: none did (an empty group matches).
                    None => Ok(*all || values.is_empty()),
                }
            }
        }
    }
}

impl PreparedCohort {
    fn new(cohort: &Cohort) -> Self {
        match &cohort.filters {
            Some(filters) if !cohort.is_static && !filters.has_behavioral() => Self::Dynamic {
                node: PreparedNode::new(&filters.properties),
                definition: Box::new(filters.properties.clone()),
            },
            // A static cohort, or one whose members only the calculation job can know.
            _ => Self::Stored,
        }
    }
}

impl PreparedNode {
    fn new(node: &Node) -> Self {
        match node {
            Node::And(group) | Node::Or(group) => Self::Group {
                all: matches!(node, Node::And(_)),
                values: group.values.iter().map(Self::new).collect(),
            },
            Node::Person(filter) => Self::Person {
                matcher: PropertyMatcher::new(&person_filter(filter)),
                negated: filter.negation,
            },
            Node::Cohort(filter) => Self::Cohort {
                id: filter.value,
                negated: filter.negation,
            },
            // Not reached: a cohort with behavioural filters is prepared as `Stored`.
            Node::Behavioral(_) => Self::Never,
        }
    }

    fn person_keys(&self, into: &mut BTreeSet<String>) {
        match self {
            Self::Group { values, .. } => values.iter().for_each(|value| value.person_keys(into)),
            Self::Person { matcher, .. } => {
                into.insert(matcher.key().to_owned());
            }
            Self::Cohort { .. } | Self::Never => {}
        }
    }

    fn cohort_ids(&self, into: &mut Vec<i64>) {
        match self {
            Self::Group { values, .. } => values.iter().for_each(|value| value.cohort_ids(into)),
            Self::Cohort { id, .. } => into.push(*id),
            Self::Person { .. } | Self::Never => {}
        }
    }
}

/// A cohort's person filter as a flag's person condition. An operator flags do not know
/// becomes `in`, which never matches a property (PostHog's service answers no match).
fn person_filter(filter: &PersonFilter) -> PropertyFilter {
    let operator = match &filter.operator {
        None => Operator::Exact,
        Some(name) => serde_json::from_value(Value::String(name.clone())).unwrap_or(Operator::In),
    };
    PropertyFilter {
        key: filter.key.clone(),
        value: filter.value.clone(),
        operator,
        kind: PropertyKind::Person,
        group_type_index: None,
        negation: None,
        label: None,
        dependency_chain: None,
    }
}
