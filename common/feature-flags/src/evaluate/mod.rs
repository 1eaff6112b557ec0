//! Evaluation of a project's flags for one subject, in the order of posthog-python 7.91.1's
//! `match_feature_flag_properties` and PostHog's flags service (`FeatureFlagMatcher::get_match`):
//! identifier, super condition, holdout, then the release conditions in their stored order.
//!
//! Conditions are NOT re-sorted to put variant overrides first: older PostHog code did that, but
//! posthog-python 7.91.1 (`_match_flag_conditions`) and the current flags service walk them in
//! order, and the SDK evaluating locally is what our answers must equal.

mod prepare;
mod run;

#[cfg(test)]
mod tests;

use std::collections::{BTreeMap, BTreeSet, HashMap};

use chrono::{DateTime, Utc};
use serde::Serialize;
use serde_json::{Map, Value};

use cohort_core::Cohort;
use cohort_core::definition::Node;

use crate::FeatureFlag;
use crate::cohort_conditions::PreparedCohorts;
use prepare::PreparedFlag;

/// Who the flags are evaluated for, as an SDK's request describes them.
#[derive(Debug, Clone, Copy)]
pub struct Subject<'a> {
    pub distinct_id: &'a str,
    pub device_id: Option<&'a str>,
    /// Group type name -> group key (the request's `groups`).
    pub groups: &'a Map<String, Value>,
    /// The request's person properties over the stored person's.
    pub person_properties: &'a Map<String, Value>,
    /// Group type name -> that group's properties.
    pub group_properties: &'a Map<String, Value>,
    /// The project's group types: index -> name.
    pub group_types: &'a BTreeMap<i64, String>,
    /// Experience continuity: flag key -> the identifier to hash instead of `distinct_id`.
    pub hash_key_overrides: Option<&'a HashMap<String, String>>,
    /// Of [`PreparedFlags::stored_cohorts`], those the person is a stored member of; `None`
    /// when not read (a condition that needs one is then inconclusive).
    pub cohort_memberships: Option<&'a BTreeSet<i64>>,
    /// The instant relative date conditions (`is_date_after: -7d`) are read at.
    pub now: DateTime<Utc>,
}

/// One flag's answer.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Evaluation {
    pub enabled: bool,
    pub variant: Option<String>,
    pub reason: Reason,
    /// The payload of the matched variant (or of `"true"`), as stored.
    pub payload: Option<Value>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Reason {
    pub code: ReasonCode,
    pub condition_index: Option<usize>,
    pub description: String,
}

/// PostHog's `FeatureFlagMatchReason` values as its /flags v2+ responses spell them
/// (`rust/feature-flags/src/flags/flag_match_reason.rs`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ReasonCode {
    SuperConditionValue,
    HoldoutConditionValue,
    ConditionMatch,
    NoConditionMatch,
    OutOfRolloutBound,
    NoGroupType,
    /// A `type: flag` condition names a flag the project no longer has: the flag is false.
    MissingDependency,
}

impl ReasonCode {
    /// When no condition matches, the reason reported is the highest-scoring one met
    /// (`FeatureFlagMatchReason::score`).
    fn score(self) -> i32 {
        match self {
            Self::SuperConditionValue => 6,
            Self::HoldoutConditionValue => 5,
            Self::ConditionMatch => 4,
            Self::OutOfRolloutBound => 3,
            Self::NoConditionMatch => 2,
            Self::NoGroupType => 1,
            Self::MissingDependency => -1,
        }
    }
}

impl Reason {
    /// The description PostHog's flags service gives each code (`get_reason_description` in
    /// `rust/feature-flags/src/api/types.rs`), verified there for every text used here.
    fn new(code: ReasonCode, condition_index: Option<usize>) -> Self {
        let description = match code {
            ReasonCode::ConditionMatch => {
                format!("Matched condition set {}", condition_index.unwrap_or(0) + 1)
            }
            ReasonCode::NoConditionMatch => "No matching condition set".to_owned(),
            ReasonCode::OutOfRolloutBound => "Out of rollout bound".to_owned(),
            ReasonCode::NoGroupType => "No group type".to_owned(),
            ReasonCode::SuperConditionValue => "Super condition value".to_owned(),
            ReasonCode::HoldoutConditionValue => "Holdout condition value".to_owned(),
            ReasonCode::MissingDependency => {
                "Flag cannot be evaluated due to missing dependency".to_owned()
            }
        };
        Self {
            code,
            condition_index,
            description,
        }
    }

    /// PostHog's `NoConditionMatchGroupsNotEvaluated`: code `no_condition_match`, with a
    /// description saying group conditions were skipped.
    fn no_match_groups_not_evaluated(condition_index: Option<usize>) -> Self {
        Self {
            code: ReasonCode::NoConditionMatch,
            condition_index,
            description: "No matching condition set (group conditions were not evaluated because \
                          no group type was provided)"
                .to_owned(),
        }
    }
}

/// Why a flag could not be evaluated (it is left out and `errorsWhileComputingFlags` is set).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum EvaluationError {
    #[error("{0}")]
    Inconclusive(String),
}

/// A project's live flags made ready to evaluate many times (regexes compiled once, variant
/// tables built once): what the SDK path caches per project.
#[derive(Debug)]
pub struct PreparedFlags {
    flags: Vec<FeatureFlag>,
    prepared: Vec<PreparedFlag>,
    by_key: HashMap<String, usize>,
    needs_person_properties: bool,
    /// The person-property keys active flags read, their person-property cohorts' included.
    person_keys: BTreeSet<String>,
    cohorts: PreparedCohorts,
    /// The static and behavioural cohorts active flags reach (their membership is read per
    /// request).
    stored_cohorts: BTreeSet<i64>,
}

impl PreparedFlags {
    /// From a project's flags; deleted ones are dropped, inactive ones kept (dependencies may
    /// name them) but never answered. Cohort conditions are inconclusive (see
    /// [`Self::with_cohorts`]).
    pub fn new(flags: Vec<FeatureFlag>) -> Self {
        Self::with_cohorts(flags, &[])
    }

    /// [`Self::new`] with the project's cohorts, which cohort conditions name.
    pub fn with_cohorts(flags: Vec<FeatureFlag>, cohorts: &[Cohort]) -> Self {
        let flags: Vec<FeatureFlag> = flags.into_iter().filter(|flag| !flag.deleted).collect();
        let by_key: HashMap<String, usize> = flags
            .iter()
            .enumerate()
            .map(|(index, flag)| (flag.key.clone(), index))
            .collect();
        let by_id: HashMap<i64, usize> = flags
            .iter()
            .enumerate()
            .map(|(index, flag)| (flag.id, index))
            .collect();
        let prepared: Vec<PreparedFlag> = flags
            .iter()
            .map(|flag| PreparedFlag::new(flag, &by_key, &by_id))
            .collect();
        let needs_person_properties = prepared
            .iter()
            .any(|flag| flag.active && flag.reads_person_properties());
        let cohorts = PreparedCohorts::new(cohorts);
        let active = || prepared.iter().filter(|flag| flag.active);
        let mut person_keys: BTreeSet<String> = active()
            .flat_map(PreparedFlag::person_property_keys)
            .map(str::to_owned)
            .collect();
        person_keys
            .extend(cohorts.person_keys_reached_from(active().flat_map(PreparedFlag::cohort_ids)));
        let stored_cohorts =
            cohorts.stored_reached_from(active().flat_map(PreparedFlag::cohort_ids));
        Self {
            flags,
            prepared,
            by_key,
            needs_person_properties,
            person_keys,
            cohorts,
            stored_cohorts,
        }
    }

    /// The static and behavioural cohorts whose stored membership active flags read: the SDK
    /// path reads the person's membership of these before evaluating.
    pub fn stored_cohorts(&self) -> &BTreeSet<i64> {
        &self.stored_cohorts
    }

    /// Local evaluation's `cohorts`: the person-property cohorts the flags reach, by id
    /// (see [`PreparedCohorts::local_definitions`]).
    pub fn local_cohorts(&self) -> BTreeMap<String, &Node> {
        self.cohorts
            .local_definitions(self.prepared.iter().flat_map(PreparedFlag::cohort_ids))
    }

    pub fn flags(&self) -> &[FeatureFlag] {
        &self.flags
    }

    /// Whether any active flag has a person-property condition (the SDK path then reads the
    /// stored person, once per request).
    pub fn needs_person_properties(&self) -> bool {
        self.needs_person_properties
    }

    /// Whether the stored person can change an answer given the request's own person
    /// properties: not when the request carries every key a condition reads (request values
    /// win over stored ones), which spares the SDK path its one Store read.
    pub fn needs_stored_person(&self, request: &Map<String, Value>) -> bool {
        self.needs_person_properties
            && self
                .person_keys
                .iter()
                .any(|key| !request.contains_key(key))
    }

    /// Evaluates the active flags for `subject`, limited to `only` keys when given. Flag
    /// dependencies (`type: flag`) are resolved among these flags.
    pub fn evaluate(
        &self,
        subject: &Subject<'_>,
        only: Option<&[String]>,
    ) -> BTreeMap<String, Result<Evaluation, EvaluationError>> {
        let wanted: Vec<usize> = match only {
            Some(keys) => {
                let mut wanted: Vec<usize> = keys
                    .iter()
                    .filter_map(|key| self.by_key.get(key).copied())
                    .collect();
                wanted.sort_unstable();
                wanted.dedup();
                wanted
            }
            None => (0..self.flags.len()).collect(),
        };
        let mut run = run::Run::new(self, subject);
        for &index in &wanted {
            if self.prepared[index].active {
                run.evaluate(index);
            }
        }
        let mut results = run.into_results();
        wanted
            .into_iter()
            .filter(|&index| self.prepared[index].active)
            .filter_map(|index| {
                let result = results[index].take()?;
                Some((self.flags[index].key.clone(), result))
            })
            .collect()
    }
}

/// [`PreparedFlags::evaluate`] for flags used once.
pub fn evaluate_all(
    flags: &[FeatureFlag],
    subject: &Subject<'_>,
    only: Option<&[String]>,
) -> BTreeMap<String, Result<Evaluation, EvaluationError>> {
    PreparedFlags::new(flags.to_vec()).evaluate(subject, only)
}
