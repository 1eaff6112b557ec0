//! `ExperimentMetric` (reference 2.6) read through typed serde structs: mean, funnel and ratio
//! metrics with their sources, conversion window and outlier handling.
//!
//! Errors imitate PostHog's pydantic validation (`{loc, type, msg}`, at most 15). Each part (the
//! metric, each source) is read by its own struct with `deny_unknown_fields`, dispatched on its
//! tag by hand so the error paths stay exact. Unknown fields are refused as pydantic's
//! `extra="forbid"` does, except the fields the web app is known to send along (`response`,
//! `version`, an EventsNode's display and math settings): those are accepted and ignored, so a
//! metric copied from an insight is not refused for a field that changes nothing here.

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// PostHog caps the errors it reports per metric.
pub const MAX_ERRORS: usize = 15;

/// One error of a metric as PostHog's pydantic validation reports it (`{loc, type, msg}`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MetricError {
    pub loc: Vec<Value>,
    #[serde(rename = "type")]
    pub kind: String,
    pub msg: String,
}

impl MetricError {
    fn new(loc: Vec<Value>, kind: &str, msg: impl Into<String>) -> Self {
        Self {
            loc,
            kind: kind.to_owned(),
            msg: msg.into(),
        }
    }
}

/// A metric, typed.
#[derive(Debug, Clone, PartialEq)]
pub struct ExperimentMetric {
    pub uuid: Option<String>,
    pub fingerprint: Option<String>,
    pub name: Option<String>,
    pub conversion_window: Option<u64>,
    pub conversion_window_unit: Option<WindowUnit>,
    pub goal: Option<Goal>,
    pub is_shared_metric: Option<bool>,
    pub shared_metric_id: Option<Value>,
    pub breakdown_filter: Option<Value>,
    pub metric_type: MetricType,
}

#[derive(Debug, Clone, PartialEq)]
pub enum MetricType {
    Mean(MeanMetric),
    Funnel(FunnelMetric),
    Ratio(RatioMetric),
}

#[derive(Debug, Clone, PartialEq)]
pub struct MeanMetric {
    pub source: MetricSource,
    /// Percentiles in (0, 100]: values are clamped to the pooled per-entity quantiles.
    pub lower_bound_percentile: Option<f64>,
    pub upper_bound_percentile: Option<f64>,
    /// Zeros are left out when computing the bounds.
    pub ignore_zeros: bool,
}

#[derive(Debug, Clone, PartialEq)]
pub struct FunnelMetric {
    /// At least one step; the exposure is prepended as step 0 when computing.
    pub series: Vec<MetricSource>,
    pub funnel_order_type: FunnelOrder,
}

#[derive(Debug, Clone, PartialEq)]
pub struct RatioMetric {
    pub numerator: MetricSource,
    pub denominator: MetricSource,
}

#[derive(Debug, Clone, PartialEq)]
pub enum MetricSource {
    Events(Box<EventsSource>),
    Actions(Box<ActionsSource>),
}

impl MetricSource {
    pub fn math(&self) -> MathType {
        match self {
            MetricSource::Events(source) => source.math.unwrap_or(MathType::Total),
            MetricSource::Actions(source) => source.math.unwrap_or(MathType::Total),
        }
    }

    /// The source's `properties` and `fixedProperties`.
    pub fn filters(&self) -> [(&'static str, Option<&Value>); 2] {
        let (properties, fixed) = match self {
            MetricSource::Events(source) => (&source.properties, &source.fixed_properties),
            MetricSource::Actions(source) => (&source.properties, &source.fixed_properties),
        };
        [
            ("properties", properties.as_ref()),
            ("fixedProperties", fixed.as_ref()),
        ]
    }

    /// The numeric property a property math aggregates, whose it is, and the multiplier.
    pub fn math_settings(&self) -> (Option<&str>, Option<&str>, Option<f64>) {
        let (key, kind, multiplier) = match self {
            MetricSource::Events(s) => (&s.math_property, &s.math_property_type, s.math_multiplier),
            MetricSource::Actions(s) => {
                (&s.math_property, &s.math_property_type, s.math_multiplier)
            }
        };
        (key.as_deref(), kind.as_deref(), multiplier)
    }
}

/// PostHog's `ExperimentMetricMathType`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum MathType {
    Total,
    Sum,
    Avg,
    Min,
    Max,
    UniqueSession,
    Dau,
    UniqueGroup,
    Hogql,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EventsSource {
    /// Always "EventsNode" (dispatched on before reading).
    pub kind: String,
    /// `None`: every event.
    #[serde(default)]
    pub event: Option<String>,
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub custom_name: Option<String>,
    #[serde(default)]
    pub math: Option<MathType>,
    #[serde(default)]
    pub math_property: Option<String>,
    #[serde(default)]
    pub math_property_type: Option<String>,
    #[serde(default)]
    pub math_hogql: Option<String>,
    #[serde(default)]
    pub math_multiplier: Option<f64>,
    #[serde(default)]
    pub properties: Option<Value>,
    #[serde(default, rename = "fixedProperties")]
    pub fixed_properties: Option<Value>,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ActionsSource {
    /// Always "ActionsNode".
    pub kind: String,
    pub id: i64,
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub custom_name: Option<String>,
    #[serde(default)]
    pub math: Option<MathType>,
    #[serde(default)]
    pub math_property: Option<String>,
    #[serde(default)]
    pub math_property_type: Option<String>,
    #[serde(default)]
    pub math_hogql: Option<String>,
    #[serde(default)]
    pub math_multiplier: Option<f64>,
    #[serde(default)]
    pub properties: Option<Value>,
    #[serde(default, rename = "fixedProperties")]
    pub fixed_properties: Option<Value>,
}

/// Entity-node fields the web app sends that change nothing for a metric: removed before the
/// typed read (`serde(flatten)` does not combine with `deny_unknown_fields`).
const IGNORED_ENTITY_FIELDS: &[&str] = &[
    "response",
    "version",
    "limit",
    "orderBy",
    "optionalInFunnel",
    "math_group_type_index",
    "math_property_revenue_currency",
];

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum WindowUnit {
    Second,
    Minute,
    Hour,
    Day,
    Week,
    Month,
}

impl WindowUnit {
    /// Seconds per unit; PostHog's DATERANGE_MAP makes a month 30 days.
    pub fn seconds(self) -> u64 {
        match self {
            WindowUnit::Second => 1,
            WindowUnit::Minute => 60,
            WindowUnit::Hour => 3_600,
            WindowUnit::Day => 86_400,
            WindowUnit::Week => 7 * 86_400,
            WindowUnit::Month => 30 * 86_400,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Goal {
    Increase,
    Decrease,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FunnelOrder {
    #[default]
    Ordered,
    Unordered,
    Strict,
}

impl FunnelOrder {
    pub fn name(self) -> &'static str {
        match self {
            FunnelOrder::Ordered => "ordered",
            FunnelOrder::Unordered => "unordered",
            FunnelOrder::Strict => "strict",
        }
    }
}

impl ExperimentMetric {
    /// The conversion window in seconds, when one is set (unit default: day).
    pub fn window_seconds(&self) -> Option<u64> {
        self.conversion_window.map(|n| {
            n * self
                .conversion_window_unit
                .unwrap_or(WindowUnit::Day)
                .seconds()
        })
    }
}

/// The metric's own fields (besides the ones of its type).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Common {
    kind: String,
    #[serde(default)]
    uuid: Option<String>,
    #[serde(default)]
    fingerprint: Option<String>,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    conversion_window: Option<u64>,
    #[serde(default)]
    conversion_window_unit: Option<WindowUnit>,
    #[serde(default)]
    goal: Option<Goal>,
    #[serde(default, rename = "isSharedMetric")]
    is_shared_metric: Option<bool>,
    #[serde(default, rename = "sharedMetricId")]
    shared_metric_id: Option<Value>,
    #[serde(default, rename = "breakdownFilter")]
    breakdown_filter: Option<Value>,
    // Accepted and ignored (the web app sends them; they change nothing computed).
    #[serde(default)]
    response: Option<Value>,
    #[serde(default)]
    version: Option<Value>,
    #[serde(default)]
    only_count_matured_users: Option<Value>,
}

const COMMON_FIELDS: &[&str] = &[
    "kind",
    "uuid",
    "fingerprint",
    "name",
    "conversion_window",
    "conversion_window_unit",
    "goal",
    "isSharedMetric",
    "sharedMetricId",
    "breakdownFilter",
    "response",
    "version",
    "only_count_matured_users",
];

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct MeanBody {
    #[allow(dead_code)]
    metric_type: String,
    source: Value,
    #[serde(default)]
    lower_bound_percentile: Option<f64>,
    #[serde(default)]
    upper_bound_percentile: Option<f64>,
    #[serde(default)]
    ignore_zeros: Option<bool>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct FunnelBody {
    #[allow(dead_code)]
    metric_type: String,
    series: Vec<Value>,
    #[serde(default)]
    funnel_order_type: Option<FunnelOrder>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RatioBody {
    #[allow(dead_code)]
    metric_type: String,
    numerator: Value,
    denominator: Value,
}

/// Reads a metric as PostHog's pydantic model does, with every error found (at most 15).
pub fn parse(metric: &Value) -> Result<ExperimentMetric, Vec<MetricError>> {
    let mut errors = Vec::new();
    let parsed = read_metric(metric, &mut errors);
    errors.truncate(MAX_ERRORS);
    match parsed {
        Some(metric) if errors.is_empty() => Ok(metric),
        _ => Err(errors),
    }
}

fn read_metric(metric: &Value, errors: &mut Vec<MetricError>) -> Option<ExperimentMetric> {
    let Value::Object(object) = metric else {
        errors.push(MetricError::new(
            vec![],
            "model_type",
            "Input should be a valid dictionary or object to extract fields from",
        ));
        return None;
    };
    match object.get("kind") {
        None => {
            errors.push(missing(vec!["kind".into()]));
        }
        Some(Value::String(kind)) if kind == "ExperimentMetric" => {}
        Some(Value::String(kind))
            if kind == "ExperimentTrendsQuery" || kind == "ExperimentFunnelsQuery" =>
        {
            errors.push(MetricError::new(
                vec!["kind".into()],
                "literal_error",
                format!(
                    "Input should be 'ExperimentMetric': legacy {kind} metrics are no longer supported"
                ),
            ));
        }
        Some(_) => errors.push(MetricError::new(
            vec!["kind".into()],
            "literal_error",
            "Input should be 'ExperimentMetric'",
        )),
    }
    let (common_part, body_part): (Map<String, Value>, Map<String, Value>) = object
        .iter()
        .map(|(key, value)| (key.clone(), value.clone()))
        .partition(|(key, _)| COMMON_FIELDS.contains(&key.as_str()));
    let mut common_part = common_part;
    // `kind` was checked above with a better message.
    common_part.insert("kind".into(), Value::String("ExperimentMetric".into()));
    let common: Option<Common> = typed(&Value::Object(common_part), &[], errors);
    let body = Value::Object(body_part);
    let metric_type = match object.get("metric_type") {
        None => {
            errors.push(missing(vec!["metric_type".into()]));
            None
        }
        Some(Value::String(kind)) => match kind.as_str() {
            "mean" => read_mean(&body, errors).map(MetricType::Mean),
            "funnel" => read_funnel(&body, errors).map(MetricType::Funnel),
            "ratio" => read_ratio(&body, errors).map(MetricType::Ratio),
            "retention" => {
                errors.push(MetricError::new(
                    vec!["metric_type".into()],
                    "value_error",
                    "Retention metrics are not supported yet",
                ));
                None
            }
            _ => {
                errors.push(tag_invalid(vec!["metric_type".into()], kind, METRIC_TYPES));
                None
            }
        },
        Some(_) => {
            errors.push(MetricError::new(
                vec!["metric_type".into()],
                "union_tag_invalid",
                format!("Input tag should be one of {}", quoted_list(METRIC_TYPES)),
            ));
            None
        }
    };
    if let Some(common) = &common
        && common.conversion_window == Some(0)
    {
        errors.push(MetricError::new(
            vec!["conversion_window".into()],
            "greater_than",
            "Input should be greater than 0",
        ));
    }
    let common = common?;
    let _ = (&common.kind, &common.response, &common.version);
    let _ = &common.only_count_matured_users;
    Some(ExperimentMetric {
        uuid: common.uuid,
        fingerprint: common.fingerprint,
        name: common.name,
        conversion_window: common.conversion_window,
        conversion_window_unit: common.conversion_window_unit,
        goal: common.goal,
        is_shared_metric: common.is_shared_metric,
        shared_metric_id: common.shared_metric_id,
        breakdown_filter: common.breakdown_filter,
        metric_type: metric_type?,
    })
}

const METRIC_TYPES: &[&str] = &["mean", "funnel", "ratio", "retention"];

fn read_mean(body: &Value, errors: &mut Vec<MetricError>) -> Option<MeanMetric> {
    let mean: MeanBody = typed(body, &[], errors)?;
    let source = read_source(&mean.source, vec!["source".into()], errors);
    for (field, value) in [
        ("lower_bound_percentile", mean.lower_bound_percentile),
        ("upper_bound_percentile", mean.upper_bound_percentile),
    ] {
        if let Some(p) = value
            && !(0.0..=1.0).contains(&p)
        {
            errors.push(MetricError::new(
                vec![field.into()],
                "value_error",
                "Percentiles are fractions from 0 to 1 (0.95 is the 95th percentile), as PostHog stores them",
            ));
        }
    }
    if let (Some(lo), Some(hi)) = (mean.lower_bound_percentile, mean.upper_bound_percentile)
        && lo > hi
    {
        errors.push(MetricError::new(
            vec!["lower_bound_percentile".into()],
            "value_error",
            "lower_bound_percentile must not exceed upper_bound_percentile",
        ));
    }
    Some(MeanMetric {
        source: source?,
        lower_bound_percentile: mean.lower_bound_percentile,
        upper_bound_percentile: mean.upper_bound_percentile,
        ignore_zeros: mean.ignore_zeros.unwrap_or(false),
    })
}

fn read_funnel(body: &Value, errors: &mut Vec<MetricError>) -> Option<FunnelMetric> {
    let funnel: FunnelBody = typed(body, &[], errors)?;
    if funnel.series.is_empty() {
        errors.push(MetricError::new(
            vec!["series".into()],
            "too_short",
            "List should have at least 1 item after validation, not 0",
        ));
        return None;
    }
    let series: Vec<Option<MetricSource>> = funnel
        .series
        .iter()
        .enumerate()
        .map(|(index, step)| read_source(step, vec!["series".into(), index.into()], errors))
        .collect();
    Some(FunnelMetric {
        series: series.into_iter().collect::<Option<Vec<_>>>()?,
        funnel_order_type: funnel.funnel_order_type.unwrap_or_default(),
    })
}

fn read_ratio(body: &Value, errors: &mut Vec<MetricError>) -> Option<RatioMetric> {
    let ratio: RatioBody = typed(body, &[], errors)?;
    let numerator = read_source(&ratio.numerator, vec!["numerator".into()], errors);
    let denominator = read_source(&ratio.denominator, vec!["denominator".into()], errors);
    Some(RatioMetric {
        numerator: numerator?,
        denominator: denominator?,
    })
}

const SOURCE_KINDS: &[&str] = &["EventsNode", "ActionsNode"];

fn read_source(
    value: &Value,
    loc: Vec<Value>,
    errors: &mut Vec<MetricError>,
) -> Option<MetricSource> {
    let Value::Object(object) = value else {
        errors.push(MetricError::new(
            loc,
            "model_attributes_type",
            "Input should be a valid dictionary or object to extract fields from",
        ));
        return None;
    };
    let mut kind_loc = loc.clone();
    kind_loc.push("kind".into());
    let mut cleaned = object.clone();
    for field in IGNORED_ENTITY_FIELDS {
        cleaned.remove(*field);
    }
    let cleaned = Value::Object(cleaned);
    match object.get("kind") {
        Some(Value::String(kind)) if kind == "EventsNode" => {
            if object.contains_key("id") {
                let mut id_loc = loc.clone();
                id_loc.push("id".into());
                errors.push(MetricError::new(
                    id_loc,
                    "extra_forbidden",
                    "Extra inputs are not permitted: an EventsNode names its event in `event`; \
                     to use an action, send {\"kind\": \"ActionsNode\", \"id\": <action id>}",
                ));
                return None;
            }
            typed(&cleaned, &loc, errors).map(|source| MetricSource::Events(Box::new(source)))
        }
        Some(Value::String(kind)) if kind == "ActionsNode" => {
            typed(&cleaned, &loc, errors).map(|source| MetricSource::Actions(Box::new(source)))
        }
        Some(Value::String(kind)) => {
            errors.push(tag_invalid(kind_loc, kind, SOURCE_KINDS));
            None
        }
        Some(_) | None => {
            errors.push(MetricError::new(
                kind_loc,
                "union_tag_not_found",
                "Unable to extract tag using discriminator 'kind'",
            ));
            None
        }
    }
}

fn missing(loc: Vec<Value>) -> MetricError {
    MetricError::new(loc, "missing", "Field required")
}

fn quoted_list(items: &[&str]) -> String {
    items
        .iter()
        .map(|item| format!("'{item}'"))
        .collect::<Vec<_>>()
        .join(", ")
}

fn tag_invalid(loc: Vec<Value>, tag: &str, expected: &[&str]) -> MetricError {
    MetricError::new(
        loc,
        "union_tag_invalid",
        format!(
            "Input tag '{tag}' found using the discriminator does not match any of the expected tags: {}",
            quoted_list(expected)
        ),
    )
}

/// Reads `value` as `T`, recording its errors under `loc`. Extra fields are all reported (each
/// is removed and the read retried); any other error ends the read of this part.
fn typed<T: DeserializeOwned>(
    value: &Value,
    loc: &[Value],
    errors: &mut Vec<MetricError>,
) -> Option<T> {
    let mut value = value.clone();
    for _ in 0..MAX_ERRORS {
        match serde_path_to_error::deserialize::<_, T>(&value) {
            Ok(read) => return Some(read),
            Err(error) => {
                let mut path: Vec<Value> = loc.to_vec();
                let mut keys: Vec<String> = Vec::new();
                for segment in error.path().iter() {
                    match segment {
                        serde_path_to_error::Segment::Seq { index } => path.push((*index).into()),
                        serde_path_to_error::Segment::Map { key } => {
                            path.push(key.clone().into());
                            keys.push(key.clone());
                        }
                        _ => {}
                    }
                }
                let message = error.inner().to_string();
                if let Some(field) = between(&message, "unknown field `", "`") {
                    // The path may or may not end at the unknown key itself.
                    if keys.last() == Some(&field) {
                        path.pop();
                    }
                    if remove_at(&mut value, &error, &field) {
                        path.push(field.into());
                        errors.push(MetricError::new(
                            path,
                            "extra_forbidden",
                            "Extra inputs are not permitted",
                        ));
                        continue;
                    }
                    path.push(field.into());
                    errors.push(MetricError::new(
                        path,
                        "extra_forbidden",
                        "Extra inputs are not permitted",
                    ));
                    return None;
                }
                if let Some(field) = between(&message, "missing field `", "`") {
                    path.push(field.into());
                    errors.push(missing(path));
                    return None;
                }
                let kind = if message.starts_with("unknown variant") {
                    "enum"
                } else if message.contains("expected u64") || message.contains("expected i64") {
                    "int_type"
                } else if message.contains("expected a string") {
                    "string_type"
                } else if message.contains("expected a boolean") {
                    "bool_type"
                } else if message.contains("expected f64") {
                    "float_type"
                } else if message.contains("expected a sequence") {
                    "list_type"
                } else {
                    "value_error"
                };
                errors.push(MetricError::new(path, kind, message));
                return None;
            }
        }
    }
    None
}

/// Removes `field` from the object at the error's path; false when there is none.
fn remove_at(
    value: &mut Value,
    error: &serde_path_to_error::Error<serde_json::Error>,
    field: &str,
) -> bool {
    let mut target = value;
    let segments: Vec<_> = error.path().iter().collect();
    let parent = match segments.last() {
        Some(serde_path_to_error::Segment::Map { key }) if key == field => {
            &segments[..segments.len() - 1]
        }
        _ => &segments[..],
    };
    for segment in parent {
        let next = match segment {
            serde_path_to_error::Segment::Seq { index } => target.get_mut(*index),
            serde_path_to_error::Segment::Map { key } => target.get_mut(key.as_str()),
            _ => Some(target),
        };
        match next {
            Some(next) => target = next,
            None => return false,
        }
    }
    target
        .as_object_mut()
        .is_some_and(|object| object.remove(field).is_some())
}

fn between(text: &str, start: &str, end: &str) -> Option<String> {
    let rest = &text[text.find(start)? + start.len()..];
    Some(rest[..rest.find(end)?].to_owned())
}

#[cfg(test)]
mod tests;
