//! The answer's shapes, per route and `v`, as PostHog's flags service writes them
//! (`FlagsResponse`, `LegacyFlagsResponse`, `DecideV1Response`, `DecideV2Response`).

use std::collections::BTreeMap;

use feature_flags::cache::ProjectFlags;
use feature_flags::{Evaluation, EvaluationError, FeatureFlag, Reason};
use serde::Serialize;
use serde_json::Value;
use uuid::Uuid;

/// Which shape the caller gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// `flags: {key: {key, enabled, variant, reason, metadata}}`.
    Flags,
    /// `featureFlags: {key: value}` and `featureFlagPayloads`.
    Legacy,
    /// `featureFlags: [enabled keys]`.
    DecideV1,
    /// `featureFlags: {enabled key: value}`.
    DecideV2,
}

impl Shape {
    /// `/flags`: v2 and later get the detailed map, v1 the legacy maps.
    pub fn for_flags(version: i32) -> Self {
        if version >= 2 {
            Shape::Flags
        } else {
            Shape::Legacy
        }
    }

    /// `/decide`: v1 (or none) a list, v2 a map of enabled flags, v3 the legacy maps, v4 and
    /// later the detailed map.
    pub fn for_decide(version: Option<i32>) -> Self {
        match version {
            Some(2) => Shape::DecideV2,
            Some(3) => Shape::Legacy,
            Some(v) if v >= 4 => Shape::Flags,
            _ => Shape::DecideV1,
        }
    }
}

/// The remote-config keys `/decide` (and `/flags?config=true`) carry, for SDKs that read their
/// settings there. Features this service does not have are off.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Config {
    pub has_feature_flags: bool,
    pub supported_compression: [&'static str; 2],
    pub session_recording: bool,
    pub surveys: bool,
    pub heatmaps: bool,
    pub capture_performance: bool,
    pub autocapture_exceptions: bool,
    pub is_authenticated: bool,
    pub toolbar_params: Empty,
    pub site_apps: [Empty; 0],
    pub config: CollectConfig,
}

#[derive(Debug, Serialize)]
pub struct Empty {}

#[derive(Debug, Serialize)]
pub struct CollectConfig {
    pub enable_collect_everything: bool,
}

impl Config {
    /// `surveys`: a survey of the project runs, so posthog-js should fetch them.
    pub fn new(has_feature_flags: bool, surveys: bool) -> Self {
        Self {
            has_feature_flags,
            supported_compression: ["gzip", "gzip-js"],
            session_recording: false,
            surveys,
            heatmaps: false,
            capture_performance: false,
            autocapture_exceptions: false,
            is_authenticated: false,
            toolbar_params: Empty {},
            site_apps: [],
            config: CollectConfig {
                enable_collect_everything: false,
            },
        }
    }
}

/// One request's evaluations with what the answer says about them.
pub struct Answer<'a> {
    pub project: Option<&'a ProjectFlags>,
    pub results: BTreeMap<String, Result<Evaluation, EvaluationError>>,
    pub request_id: Uuid,
    pub evaluated_at: i64,
    pub config: Option<Config>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct FlagsBody<'a> {
    flags: BTreeMap<&'a str, FlagDetails<'a>>,
    errors_while_computing_flags: bool,
    request_id: Uuid,
    evaluated_at: i64,
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    config: Option<&'a Config>,
}

#[derive(Serialize)]
struct FlagDetails<'a> {
    key: &'a str,
    enabled: bool,
    variant: Option<&'a str>,
    reason: &'a Reason,
    metadata: Metadata<'a>,
}

#[derive(Serialize)]
struct Metadata<'a> {
    id: i64,
    version: u64,
    /// PostHog's flags service leaves it empty.
    description: Option<&'a str>,
    payload: Option<&'a Value>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct LegacyBody<'a> {
    feature_flags: BTreeMap<&'a str, FlagValue<'a>>,
    feature_flag_payloads: BTreeMap<&'a str, &'a Value>,
    errors_while_computing_flags: bool,
    request_id: Uuid,
    evaluated_at: i64,
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    config: Option<&'a Config>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct DecideBody<'a, F: Serialize> {
    feature_flags: F,
    request_id: Uuid,
    evaluated_at: i64,
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    config: Option<&'a Config>,
}

/// A flag's value in the legacy shapes: its variant, else whether it is on.
#[derive(Serialize)]
#[serde(untagged)]
enum FlagValue<'a> {
    Variant(&'a str),
    Enabled(bool),
}

fn value_of(evaluation: &Evaluation) -> FlagValue<'_> {
    match &evaluation.variant {
        Some(variant) => FlagValue::Variant(variant),
        None => FlagValue::Enabled(evaluation.enabled),
    }
}

impl Answer<'_> {
    /// Evaluations that succeeded (a failed one is left out, as PostHog's older answers do).
    fn evaluated(&self) -> impl Iterator<Item = (&str, &Evaluation)> {
        self.results
            .iter()
            .filter_map(|(key, result)| Some((key.as_str(), result.as_ref().ok()?)))
    }

    fn errors(&self) -> bool {
        self.results.values().any(Result::is_err)
    }

    fn flag(&self, key: &str) -> Option<&FeatureFlag> {
        self.project.and_then(|project| project.flag(key))
    }

    pub fn render(&self, shape: Shape) -> Result<Vec<u8>, serde_json::Error> {
        let config = self.config.as_ref();
        match shape {
            Shape::Flags => serde_json::to_vec(&FlagsBody {
                flags: self
                    .evaluated()
                    .filter_map(|(key, evaluation)| {
                        let flag = self.flag(key)?;
                        Some((
                            key,
                            FlagDetails {
                                key,
                                enabled: evaluation.enabled,
                                variant: evaluation.variant.as_deref(),
                                reason: &evaluation.reason,
                                metadata: Metadata {
                                    id: flag.id,
                                    version: flag.version,
                                    description: None,
                                    payload: evaluation.payload.as_ref(),
                                },
                            },
                        ))
                    })
                    .collect(),
                errors_while_computing_flags: self.errors(),
                request_id: self.request_id,
                evaluated_at: self.evaluated_at,
                config,
            }),
            Shape::Legacy => serde_json::to_vec(&LegacyBody {
                feature_flags: self
                    .evaluated()
                    .map(|(key, evaluation)| (key, value_of(evaluation)))
                    .collect(),
                feature_flag_payloads: self
                    .evaluated()
                    .filter_map(|(key, evaluation)| Some((key, evaluation.payload.as_ref()?)))
                    .collect(),
                errors_while_computing_flags: self.errors(),
                request_id: self.request_id,
                evaluated_at: self.evaluated_at,
                config,
            }),
            Shape::DecideV1 => serde_json::to_vec(&DecideBody {
                feature_flags: self
                    .evaluated()
                    .filter(|(_, evaluation)| evaluation.enabled)
                    .map(|(key, _)| key)
                    .collect::<Vec<_>>(),
                request_id: self.request_id,
                evaluated_at: self.evaluated_at,
                config,
            }),
            Shape::DecideV2 => serde_json::to_vec(&DecideBody {
                feature_flags: self
                    .evaluated()
                    .filter(|(_, evaluation)| evaluation.enabled)
                    .map(|(key, evaluation)| (key, value_of(evaluation)))
                    .collect::<BTreeMap<_, _>>(),
                request_id: self.request_id,
                evaluated_at: self.evaluated_at,
                config,
            }),
        }
    }
}
