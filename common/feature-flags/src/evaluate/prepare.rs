//! The per-definition work done once per project: hash prefixes, cumulative variant tables,
//! compiled property conditions and resolved flag dependencies.

use std::collections::HashMap;

use serde_json::Value;

use crate::cohort_conditions::cohort_id;
use crate::hash::flag_prefix;
use crate::matching::PropertyMatcher;
use crate::model::{FeatureFlag, FlagGroup, Operator, PropertyFilter, PropertyKind};

#[derive(Debug)]
pub(super) struct PreparedFlag {
    pub active: bool,
    /// `"<key>."`, the rollout and variant hash prefix.
    pub hash_prefix: String,
    pub aggregation: Option<i64>,
    pub continuity: bool,
    pub holdout: Option<PreparedHoldout>,
    /// The first super group with properties (PostHog's service looks at that one only).
    pub super_condition: Option<PreparedCondition>,
    pub conditions: Vec<PreparedCondition>,
    pub variants: Vec<VariantRange>,
    /// A `type: flag` condition names a flag the project does not have.
    pub missing_dependency: bool,
}

#[derive(Debug)]
pub(super) struct PreparedHoldout {
    /// `exclusion_percentage / 100` clamped to [0, 1]; None for 100%, which takes everyone
    /// without hashing.
    pub threshold: Option<f64>,
    /// `holdout-<id>`.
    pub variant: String,
}

/// `[min, max)` of the variant hash, built as posthog-python's `variant_lookup_table` adds
/// percentages, so the float bounds are bit for bit the SDK's.
#[derive(Debug)]
pub(super) struct VariantRange {
    pub key: String,
    pub min: f64,
    pub max: f64,
}

#[derive(Debug)]
pub(super) struct PreparedCondition {
    pub index: usize,
    /// The condition's own aggregation, else the flag's.
    pub aggregation: Option<i64>,
    pub filters: Vec<PreparedFilter>,
    /// `rollout_percentage / 100` when it can exclude anyone; None for none given or >= 100.
    pub rollout: Option<f64>,
    /// Index into `variants` of the condition's override, when it names a variant.
    pub variant_override: Option<usize>,
}

#[derive(Debug)]
pub(super) enum PreparedFilter {
    Person(PropertyMatcher),
    /// Properties of the group type `index` (the filter's, else the condition's aggregation).
    Group {
        index: Option<i64>,
        matcher: PropertyMatcher,
    },
    Flag(FlagCondition),
    /// Membership of a cohort (None: the value names no cohort id); `not_in` negates.
    Cohort {
        id: Option<i64>,
        not_in: bool,
    },
}

#[derive(Debug)]
pub(super) enum FlagCondition {
    /// The other flag (an index among the prepared flags) must evaluate to this.
    Evaluates { flag: usize, expected: Expected },
    /// A wrong operator or value: never matches (posthog-python and the service agree).
    Malformed,
    /// No such flag.
    Missing,
}

#[derive(Debug)]
pub(super) enum Expected {
    /// `true`: any enabled value (a variant too); `false`: disabled.
    Enabled(bool),
    Variant(String),
}

impl PreparedFlag {
    pub fn new(
        flag: &FeatureFlag,
        by_key: &HashMap<String, usize>,
        by_id: &HashMap<i64, usize>,
    ) -> Self {
        let filters = &flag.filters;
        let mut variants = Vec::new();
        let mut min = 0.0_f64;
        for variant in filters.multivariate.iter().flat_map(|m| m.variants.iter()) {
            let max = min + variant.rollout_percentage / 100.0;
            variants.push(VariantRange {
                key: variant.key.clone(),
                min,
                max,
            });
            min = max;
        }
        let holdout = filters.holdout.as_ref().map(|holdout| {
            let percentage = holdout.exclusion_percentage.clamp(0.0, 100.0);
            PreparedHoldout {
                threshold: (percentage < 100.0).then_some(percentage / 100.0),
                variant: format!("holdout-{}", holdout.id),
            }
        });
        let prepare = |index: usize, group: &FlagGroup| {
            PreparedCondition::new(
                index,
                group,
                filters.aggregation_group_type_index,
                &variants,
                by_key,
                by_id,
            )
        };
        let super_condition = filters
            .super_groups
            .first()
            .filter(|group| !group.properties.is_empty())
            .map(|group| {
                let mut condition = prepare(0, group);
                // Enrollment is a person matter even on group flags.
                condition.aggregation = None;
                condition
            });
        let conditions: Vec<PreparedCondition> = filters
            .groups
            .iter()
            .enumerate()
            .map(|(index, group)| prepare(index, group))
            .collect();
        let missing_dependency = conditions
            .iter()
            .chain(super_condition.iter())
            .flat_map(|condition| condition.filters.iter())
            .any(|filter| matches!(filter, PreparedFilter::Flag(FlagCondition::Missing)));
        Self {
            active: flag.active,
            hash_prefix: flag_prefix(&flag.key),
            aggregation: filters.aggregation_group_type_index,
            continuity: flag.ensure_experience_continuity,
            holdout,
            super_condition,
            conditions,
            variants,
            missing_dependency,
        }
    }

    /// Whether evaluating this flag reads person properties (a cohort is person-level too).
    pub fn reads_person_properties(&self) -> bool {
        self.conditions
            .iter()
            .chain(self.super_condition.iter())
            .any(|condition| {
                condition.filters.iter().any(|filter| {
                    matches!(
                        filter,
                        PreparedFilter::Person(_) | PreparedFilter::Cohort { .. }
                    )
                })
            })
    }

    /// The cohorts this flag's conditions name directly.
    pub fn cohort_ids(&self) -> impl Iterator<Item = i64> + '_ {
        self.conditions
            .iter()
            .chain(self.super_condition.iter())
            .flat_map(|condition| condition.filters.iter())
            .filter_map(|filter| match filter {
                PreparedFilter::Cohort { id, .. } => *id,
                _ => None,
            })
    }
}

impl PreparedFlag {
    /// The person-property keys this flag's own conditions read (its cohorts' are the
    /// cohorts' to say).
    pub fn person_property_keys(&self) -> impl Iterator<Item = &str> + '_ {
        self.conditions
            .iter()
            .chain(self.super_condition.iter())
            .flat_map(|condition| condition.filters.iter())
            .filter_map(|filter| match filter {
                PreparedFilter::Person(matcher) => Some(matcher.key()),
                _ => None,
            })
    }
}

impl PreparedCondition {
    fn new(
        index: usize,
        group: &FlagGroup,
        flag_aggregation: Option<i64>,
        variants: &[VariantRange],
        by_key: &HashMap<String, usize>,
        by_id: &HashMap<i64, usize>,
    ) -> Self {
        let aggregation = group.aggregation_group_type_index.or(flag_aggregation);
        let mut filters = Vec::with_capacity(group.properties.len());
        for filter in &group.properties {
            match filter.kind {
                PropertyKind::Person => {
                    filters.push(PreparedFilter::Person(PropertyMatcher::new(filter)))
                }
                PropertyKind::Group => filters.push(PreparedFilter::Group {
                    index: filter.group_type_index.or(aggregation),
                    matcher: PropertyMatcher::new(filter),
                }),
                PropertyKind::Flag => filters.push(PreparedFilter::Flag(FlagCondition::new(
                    filter, by_key, by_id,
                ))),
                PropertyKind::Cohort => filters.push(PreparedFilter::Cohort {
                    id: cohort_id(&filter.value),
                    not_in: filter.operator == Operator::NotIn,
                }),
            }
        }
        let rollout = group
            .rollout_percentage
            .filter(|percentage| *percentage < 100.0)
            .map(|percentage| percentage / 100.0);
        let variant_override = group
            .variant
            .as_deref()
            .and_then(|key| variants.iter().position(|variant| variant.key == key));
        Self {
            index,
            aggregation,
            filters,
            rollout,
            variant_override,
        }
    }
}

impl FlagCondition {
    /// The dependency's `key` is the other flag's key (as local evaluation shows it) or its id
    /// (as PostHog stores it).
    fn new(
        filter: &PropertyFilter,
        by_key: &HashMap<String, usize>,
        by_id: &HashMap<i64, usize>,
    ) -> Self {
        let expected = match &filter.value {
            Value::Bool(enabled) => Expected::Enabled(*enabled),
            Value::String(variant) => Expected::Variant(variant.clone()),
            _ => return Self::Malformed,
        };
        if filter.operator != Operator::FlagEvaluatesTo || filter.key.is_empty() {
            return Self::Malformed;
        }
        let flag = by_key.get(&filter.key).copied().or_else(|| {
            let id = filter.key.parse::<i64>().ok()?;
            by_id.get(&id).copied()
        });
        match flag {
            Some(flag) => Self::Evaluates { flag, expected },
            None => Self::Missing,
        }
    }
}
