//! An ActorsQuery's `source`: an `InsightActorsQuery` naming an insight node and one point of
//! it, read into the persons of that point ([`Matched`]) by the insight kind's file.

use serde::Deserialize;
use serde::de::IgnoredAny;
use serde_json::{Value, json};

use super::{Matched, funnels, lifecycle, paths, retention, stickiness, trends};
use crate::{Context, Invalid, fields, series};

/// `InsightActorsQuery`, as PostHog's schema has it.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(super) struct InsightActorsQuery {
    #[serde(rename = "kind")]
    _kind: Option<IgnoredAny>,
    pub source: Value,
    /// A trends or lifecycle bucket (`2024-03-05`), or a stickiness interval count.
    pub day: Option<Value>,
    /// A lifecycle status.
    pub status: Option<String>,
    /// The series index (trends, stickiness).
    pub series: Option<usize>,
    /// A trends breakdown value.
    pub breakdown: Option<Value>,
    /// `current` / `previous`: which period of a compared insight.
    pub compare: Option<String>,
    /// A retention cohort row (0-based).
    pub interval: Option<Value>,
    /// Funnels: positive = reached that step (1-based), negative = dropped off before it.
    pub funnel_step: Option<i64>,
    pub funnel_step_breakdown: Option<Value>,
    pub funnel_trends_drop_off: Option<bool>,
    pub funnel_trends_entrance_period_start: Option<String>,
    #[serde(rename = "includeRecordings")]
    _include_recordings: Option<IgnoredAny>,
    #[serde(rename = "modifiers")]
    _modifiers: Option<IgnoredAny>,
    #[serde(rename = "response")]
    _response: Option<IgnoredAny>,
    #[serde(rename = "version")]
    _version: Option<IgnoredAny>,
    #[serde(rename = "tags")]
    _tags: Option<IgnoredAny>,
}

/// The persons of the point `source` names.
pub(super) fn matched(source: &Value, ctx: &Context) -> Result<Matched, Invalid> {
    // The kind first: another kind's fields are not this one's unknown fields.
    match source.get("kind").and_then(Value::as_str) {
        Some("InsightActorsQuery") => {}
        Some(other) => {
            return Err(Invalid::new(
                "source.kind",
                format!("Source kind {other} is not supported: use InsightActorsQuery."),
            ));
        }
        None => return Err(Invalid::new("source.kind", "source.kind is required.")),
    }
    let query: InsightActorsQuery = series::settings(&json!({ "source": source }), "source")?;
    if query.funnel_trends_drop_off.is_some() || query.funnel_trends_entrance_period_start.is_some()
    {
        return Err(Invalid::new(
            "source.funnelTrendsEntrancePeriodStart",
            "Persons of a funnel trends point are not supported.",
        ));
    }
    let insight = &query.source;
    let kind = insight
        .get("kind")
        .and_then(Value::as_str)
        .unwrap_or_default();
    fields::check(insight, kind).map_err(under_insight)?;
    match kind {
        "TrendsQuery" => trends::matched(&query, ctx),
        "FunnelsQuery" => funnels::matched(&query, ctx),
        "LifecycleQuery" => lifecycle::matched(&query, ctx),
        "StickinessQuery" => stickiness::matched(&query, ctx),
        "PathsQuery" => paths::matched(&query, ctx),
        "RetentionQuery" => retention::matched(&query, ctx),
        "" => Err(Invalid::new(
            "source.source.kind",
            "The insight's kind is required.",
        )),
        other => Err(Invalid::new(
            "source.source.kind",
            format!(
                "Persons of a {other} are not supported: use TrendsQuery, FunnelsQuery, \
                 RetentionQuery, LifecycleQuery, StickinessQuery or PathsQuery."
            ),
        )),
    }
}

/// An error about the insight node, named under `source.source`.
pub(super) fn under_insight(invalid: Invalid) -> Invalid {
    Invalid::new(format!("source.source.{}", invalid.attr), invalid.detail)
}

/// The series index asked for (default 0), checked against the insight's series.
pub(super) fn series_index(query: &InsightActorsQuery, count: usize) -> Result<usize, Invalid> {
    let index = query.series.unwrap_or(0);
    match index < count {
        true => Ok(index),
        false => Err(Invalid::new(
            "source.series",
            format!("The insight has {count} series: series must be below that."),
        )),
    }
}
