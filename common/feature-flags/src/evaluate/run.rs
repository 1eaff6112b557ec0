//! One evaluation pass over a project's prepared flags for one subject; each flag is evaluated
//! at most once, dependencies on demand.

use std::borrow::Cow;

use serde_json::{Map, Value};

use super::prepare::{Expected, FlagCondition, PreparedCondition, PreparedFilter, PreparedFlag};
use super::{Evaluation, EvaluationError, PreparedFlags, Reason, ReasonCode, Subject};
use crate::hash::{holdout_hash, rollout_hash, variant_hash};

type Outcome = Result<Evaluation, EvaluationError>;

enum Slot {
    Todo,
    /// Being evaluated: meeting it again is a dependency cycle.
    Busy,
    Done(Outcome),
}

pub(super) struct Run<'a> {
    flags: &'a PreparedFlags,
    subject: &'a Subject<'a>,
    slots: Vec<Slot>,
}

/// What one condition says.
enum ConditionResult {
    Match,
    NoMatch,
    OutOfRollout,
}

static EMPTY: std::sync::LazyLock<Map<String, Value>> = std::sync::LazyLock::new(Map::new);

impl<'a> Run<'a> {
    pub fn new(flags: &'a PreparedFlags, subject: &'a Subject<'a>) -> Self {
        let slots = std::iter::repeat_with(|| Slot::Todo)
            .take(flags.prepared.len())
            .collect();
        Self {
            flags,
            subject,
            slots,
        }
    }

    pub fn into_results(self) -> Vec<Option<Outcome>> {
        self.slots
            .into_iter()
            .map(|slot| match slot {
                Slot::Done(outcome) => Some(outcome),
                Slot::Todo | Slot::Busy => None,
            })
            .collect()
    }

    /// Evaluates flag `index` (once) and returns its outcome.
    pub fn evaluate(&mut self, index: usize) -> &Outcome {
        if matches!(self.slots[index], Slot::Todo) {
            self.slots[index] = Slot::Busy;
            let outcome = self.compute(index);
            self.slots[index] = Slot::Done(outcome);
        }
        match &self.slots[index] {
            Slot::Done(outcome) => outcome,
            // Only `compute` leaves a slot Busy, and it is Done by now.
            Slot::Todo | Slot::Busy => unreachable!("flag slot settled above"),
        }
    }

    fn compute(&mut self, index: usize) -> Outcome {
        let flags = self.flags;
        let flag = &flags.prepared[index];
        let key = &flags.flags[index].key;
        if flag.missing_dependency {
            return Ok(not_enabled(Reason::new(
                ReasonCode::MissingDependency,
                None,
            )));
        }
        let person_identifier = self.person_identifier(flag, key);

        if let Some(condition) = &flag.super_condition {
            let relevant = condition.filters.iter().any(|filter| match filter {
                PreparedFilter::Person(matcher) => {
                    self.subject.person_properties.contains_key(matcher.key())
                }
                _ => false,
            });
            if relevant {
                let result = self.condition(flag, condition, person_identifier)?;
                let enabled = matches!(result, ConditionResult::Match);
                return Ok(Evaluation {
                    enabled,
                    variant: None,
                    reason: Reason::new(ReasonCode::SuperConditionValue, Some(0)),
                    payload: payload(flags, index, None),
                });
            }
        }

        let flag_identifier = match flag.aggregation {
            Some(group_type) => self.group_key(group_type),
            None => Some(Cow::Borrowed(person_identifier)),
        };
        if let (Some(holdout), Some(identifier)) = (&flag.holdout, flag_identifier) {
            let held_out = match holdout.threshold {
                None => true,
                Some(threshold) => holdout_hash(&identifier) <= threshold,
            };
            if held_out {
                return Ok(Evaluation {
                    enabled: true,
                    variant: Some(holdout.variant.clone()),
                    reason: Reason::new(ReasonCode::HoldoutConditionValue, None),
                    payload: payload(flags, index, Some(&holdout.variant)),
                });
            }
        }

        // The highest-scoring reason met so far, seeded as the service seeds it.
        let mut reason = (ReasonCode::NoGroupType, None);
        let mut skipped_group_condition = false;
        let mut inconclusive: Option<EvaluationError> = None;
        for condition in &flag.conditions {
            let identifier = match condition.aggregation {
                Some(group_type) => match self.group_key(group_type) {
                    Some(group_key) => group_key,
                    None => {
                        skipped_group_condition = true;
                        raise(&mut reason, ReasonCode::NoGroupType, condition.index);
                        continue;
                    }
                },
                None => Cow::Borrowed(person_identifier),
            };
            match self.condition(flag, condition, &identifier) {
                // The SDK tries the later conditions; any of them matching settles the flag.
                Err(error) => {
                    inconclusive.get_or_insert(error);
                }
                Ok(ConditionResult::NoMatch) => {
                    raise(&mut reason, ReasonCode::NoConditionMatch, condition.index);
                }
                Ok(ConditionResult::OutOfRollout) => {
                    raise(&mut reason, ReasonCode::OutOfRolloutBound, condition.index);
                }
                Ok(ConditionResult::Match) => {
                    let variant = match condition.variant_override {
                        Some(variant) => Some(flag.variants[variant].key.as_str()),
                        None => matching_variant(flag, &identifier),
                    };
                    return Ok(Evaluation {
                        enabled: true,
                        variant: variant.map(str::to_owned),
                        reason: Reason::new(ReasonCode::ConditionMatch, Some(condition.index)),
                        payload: payload(flags, index, variant),
                    });
                }
            }
        }
        if let Some(error) = inconclusive {
            return Err(error);
        }
        let reason = match reason {
            // No condition at all: nothing was skipped, nothing matched.
            (ReasonCode::NoGroupType, None) => Reason::new(ReasonCode::NoConditionMatch, None),
            (ReasonCode::NoConditionMatch, index) if skipped_group_condition => {
                Reason::no_match_groups_not_evaluated(index)
            }
            (code, index) => Reason::new(code, index),
        };
        Ok(not_enabled(reason))
    }

    /// The distinct id, or for experience continuity the identifier it was first hashed with.
    fn person_identifier(&self, flag: &PreparedFlag, key: &str) -> &'a str {
        let subject = self.subject;
        if flag.continuity
            && let Some(identifier) = subject.hash_key_overrides.and_then(|map| map.get(key))
        {
            return identifier;
        }
        subject.distinct_id
    }

    /// The request's key of the group type at `index`: a non-empty string, or a number's
    /// digits, as the service accepts; None when the request does not name that group.
    fn group_key(&self, index: i64) -> Option<Cow<'a, str>> {
        let subject = self.subject;
        let name = subject.group_types.get(&index)?;
        match subject.groups.get(name)? {
            Value::String(key) if !key.is_empty() => Some(Cow::Borrowed(key)),
            Value::Number(number) => Some(Cow::Owned(number.to_string())),
            _ => None,
        }
    }

    fn condition(
        &mut self,
        flag: &PreparedFlag,
        condition: &PreparedCondition,
        identifier: &str,
    ) -> Result<ConditionResult, EvaluationError> {
        let mut inconclusive = None;
        for filter in &condition.filters {
            let matched = match filter {
                PreparedFilter::Person(matcher) => {
                    matcher.matches_in(self.subject.person_properties, self.subject.now)
                }
                PreparedFilter::Group { index, matcher } => {
                    matcher.matches_in(self.group_properties(*index), self.subject.now)
                }
                PreparedFilter::Flag(dependency) => match self.dependency(dependency) {
                    Ok(matched) => matched,
                    Err(error) => {
                        inconclusive.get_or_insert(error);
                        continue;
                    }
                },
                PreparedFilter::Cohort { id, not_in } => match self.cohort(*id) {
                    Ok(member) => member != *not_in,
                    Err(error) => {
                        inconclusive.get_or_insert(error);
                        continue;
                    }
                },
            };
            if !matched {
                return Ok(ConditionResult::NoMatch);
            }
        }
        if let Some(error) = inconclusive {
            return Err(error);
        }
        if let Some(threshold) = condition.rollout
            && rollout_hash(&flag.hash_prefix, identifier) > threshold
        {
            return Ok(ConditionResult::OutOfRollout);
        }
        Ok(ConditionResult::Match)
    }

    /// Whether the person is in cohort `id` (a person-property cohort from the properties, a
    /// static or behavioural one from the memberships read before).
    fn cohort(&self, id: Option<i64>) -> Result<bool, EvaluationError> {
        let Some(id) = id else {
            return Err(EvaluationError::Inconclusive(
                "a cohort condition names no cohort id".to_owned(),
            ));
        };
        self.flags.cohorts.contains(
            id,
            self.subject.person_properties,
            self.subject.cohort_memberships,
            self.subject.now,
        )
    }

    fn group_properties(&self, index: Option<i64>) -> &'a Map<String, Value> {
        let subject = self.subject;
        index
            .and_then(|index| subject.group_types.get(&index))
            .and_then(|name| subject.group_properties.get(name))
            .and_then(Value::as_object)
            .unwrap_or(&EMPTY)
    }

    /// `matches_dependency_value`: `true` takes any enabled value, `false` a disabled one, a
    /// string that variant. An inactive flag is disabled.
    fn dependency(&mut self, dependency: &FlagCondition) -> Result<bool, EvaluationError> {
        let (index, expected) = match dependency {
            FlagCondition::Evaluates { flag, expected } => (*flag, expected),
            FlagCondition::Malformed | FlagCondition::Missing => return Ok(false),
        };
        let flags = self.flags;
        let (enabled, variant) = if !flags.prepared[index].active {
            (false, None)
        } else {
            if matches!(self.slots[index], Slot::Busy) {
                return Err(EvaluationError::Inconclusive(format!(
                    "circular flag dependency through {}",
                    flags.flags[index].key
                )));
            }
            match self.evaluate(index) {
                Ok(evaluation) => (evaluation.enabled, evaluation.variant.clone()),
                Err(error) => {
                    return Err(EvaluationError::Inconclusive(format!(
                        "flag dependency {} could not be evaluated: {error}",
                        flags.flags[index].key
                    )));
                }
            }
        };
        Ok(match expected {
            Expected::Enabled(wanted) => enabled == *wanted,
            Expected::Variant(wanted) => enabled && variant.as_deref() == Some(wanted.as_str()),
        })
    }
}

/// Keeps the higher-scoring reason; on a tie the later condition's index, as the service does.
fn raise(reason: &mut (ReasonCode, Option<usize>), code: ReasonCode, index: usize) {
    if reason.0.score() <= code.score() {
        *reason = (code, Some(index));
    }
}

fn not_enabled(reason: Reason) -> Evaluation {
    Evaluation {
        enabled: false,
        variant: None,
        reason,
        payload: None,
    }
}

fn matching_variant<'f>(flag: &'f PreparedFlag, identifier: &str) -> Option<&'f str> {
    if flag.variants.is_empty() {
        return None;
    }
    let hash = variant_hash(&flag.hash_prefix, identifier);
    flag.variants
        .iter()
        .find(|range| hash >= range.min && hash < range.max)
        .map(|range| range.key.as_str())
}

/// `payloads[variant]`, or `payloads["true"]` without a variant.
fn payload(flags: &PreparedFlags, index: usize, variant: Option<&str>) -> Option<Value> {
    flags.flags[index]
        .filters
        .payloads
        .get(variant.unwrap_or("true"))
        .cloned()
}
