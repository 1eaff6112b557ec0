//! Evaluation of a project's flags for one subject (posthog-python's `get_match` order, reference
//! 3.2). OWNER: evaluation helper.

use std::collections::{BTreeMap, HashMap};

use serde::Serialize;
use serde_json::{Map, Value};

use crate::FeatureFlag;

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

/// PostHog's `FeatureFlagMatchReason` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ReasonCode {
    SuperConditionValue,
    HoldoutConditionValue,
    ConditionMatch,
    NoConditionMatch,
    OutOfRolloutBound,
    NoGroupType,
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
}

impl PreparedFlags {
    /// From a project's flags; deleted ones are dropped, inactive ones kept (dependencies may
    /// name them) but never answered.
    pub fn new(flags: Vec<FeatureFlag>) -> Self {
        let _ = &flags;
        todo!("evaluation helper")
    }

    pub fn flags(&self) -> &[FeatureFlag] {
        &self.flags
    }

    /// Whether any active flag has a person-property condition (the SDK path then reads the
    /// stored person, once per request).
    pub fn needs_person_properties(&self) -> bool {
        todo!("evaluation helper")
    }

    /// Evaluates the active flags for `subject`, limited to `only` keys when given. Flag
    /// dependencies (`type: flag`) are resolved among these flags.
    pub fn evaluate(
        &self,
        subject: &Subject<'_>,
        only: Option<&[String]>,
    ) -> BTreeMap<String, Result<Evaluation, EvaluationError>> {
        let _ = (subject, only);
        todo!("evaluation helper")
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
