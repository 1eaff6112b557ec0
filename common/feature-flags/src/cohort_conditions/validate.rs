//! What a flag's cohort conditions must name when it is saved (PostHog's
//! `FeatureFlagSerializer.validate_filters`): a live cohort of the project, and no cohort among
//! it and the cohorts it names (to any depth) whose members cannot be known per request. A
//! behavioural cohort is usable once the calculation job has computed its members (PostHog's
//! "backfilled" realtime cohorts); static cohorts always are.

use std::collections::{BTreeMap, BTreeSet};

use cohort_core::Cohort;
use cohort_core::definition::Node;
use common::error::ApiError;

use super::cohort_id;
use crate::model::{FlagFilters, PropertyKind};
use crate::validate::value_text;

/// Checks every cohort condition of `filters` against the project's live cohorts.
pub fn check(filters: &FlagFilters, cohorts: &[Cohort]) -> Result<(), ApiError> {
    let by_id: BTreeMap<i64, &Cohort> = cohorts
        .iter()
        .filter(|cohort| !cohort.deleted)
        .map(|cohort| (cohort.id, cohort))
        .collect();
    for property in filters
        .groups
        .iter()
        .chain(&filters.super_groups)
        .flat_map(|group| &group.properties)
        .filter(|property| property.kind == PropertyKind::Cohort)
    {
        let Some(cohort) = cohort_id(&property.value).and_then(|id| by_id.get(&id)) else {
            return Err(ApiError::field(
                "filters",
                "cohort_does_not_exist",
                format!(
                    "Cohort with id {} does not exist",
                    value_text(&property.value)
                ),
            ));
        };
        for named in with_dependents(cohort, &by_id) {
            if named.is_behavioral() && named.last_calculation.is_none() {
                return Err(ApiError::field(
                    "filters",
                    "behavioral_cohort_found",
                    format!(
                        "Cohort '{}' is still being backfilled and cannot be used in feature flags yet. It will become available once its initial backfill completes.",
                        named.name
                    ),
                ));
            }
        }
    }
    Ok(())
}

/// `cohort` and every live cohort it names, to any depth, each once, `cohort` first
/// (PostHog's `[initial_cohort, *get_dependent_cohorts(initial_cohort)]`).
fn with_dependents<'a>(cohort: &'a Cohort, by_id: &BTreeMap<i64, &'a Cohort>) -> Vec<&'a Cohort> {
    let mut seen = BTreeSet::from([cohort.id]);
    let mut found = vec![cohort];
    let mut next = 0;
    while let Some(current) = found.get(next).copied() {
        next += 1;
        if current.is_static {
            continue;
        }
        let Some(filters) = &current.filters else {
            continue;
        };
        let mut named = Vec::new();
        filters.properties.visit(&mut |node| {
            if let Node::Cohort(filter) = node {
                named.push(filter.value);
            }
        });
        for id in named {
            if let Some(dependent) = by_id.get(&id)
                && seen.insert(id)
            {
                found.push(dependent);
            }
        }
    }
    found
}
