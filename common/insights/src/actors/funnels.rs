//! The persons behind a funnel step, as PostHog's `funnel_persons` / `funnel_actors` find them:
//! `funnelStep` n > 0 = those who reached at least step n (1-based), n < 0 = those who reached
//! step |n| - 1 but not step |n| (dropped off before it). Each person's furthest step comes from
//! the engine's `aggregateFunnel`, as the FunnelsQuery's own steps do; `event_count` is the
//! person's events that are one of the steps.
//!
//! Read here: the steps (events and their filters), `funnelOrderType`, the conversion window,
//! `dateRange` and `properties`. Exclusions, breakdowns (`funnelStepBreakdown`) and a custom
//! aggregation are refused rather than answered differently from the funnel.

use serde_json::Value;

use super::Matched;
use super::source::{InsightActorsQuery, under_insight};
use crate::date_range::{self, Interval};
use crate::series::EventSeries;
use crate::{Context, Invalid, filters, sql_text};

pub(super) fn matched(query: &InsightActorsQuery, ctx: &Context) -> Result<Matched, Invalid> {
    let node = &query.source;
    let steps = match node.get("series") {
        Some(Value::Array(steps)) if steps.len() >= 2 => steps,
        _ => {
            return Err(Invalid::new(
                "source.source.series",
                "Funnels need at least two steps.",
            ));
        }
    };
    let Some(step) = query.funnel_step.filter(|step| *step != 0) else {
        return Err(Invalid::new(
            "source.funnelStep",
            "funnelStep is required: n for persons who reached step n, -n for those who dropped off before it.",
        ));
    };
    let count = steps.len() as i64;
    if step.abs() > count || step == -1 {
        return Err(Invalid::new(
            "source.funnelStep",
            format!("funnelStep must be from 1 to {count}, or from -2 to -{count}."),
        ));
    }
    if query
        .funnel_step_breakdown
        .as_ref()
        .is_some_and(|value| !value.is_null())
    {
        return Err(Invalid::new(
            "source.funnelStepBreakdown",
            "Persons of one breakdown value of a funnel are not supported.",
        ));
    }
    let filter = node.get("funnelsFilter").cloned().unwrap_or(Value::Null);
    for (key, what) in [
        ("exclusions", "exclusions"),
        ("funnelAggregateByHogQL", "a custom aggregation"),
    ] {
        if filter.get(key).is_some_and(|value| {
            !value.is_null() && value != &Value::Array(vec![]) && value != "person_id"
        }) {
            return Err(Invalid::new(
                format!("source.source.funnelsFilter.{key}"),
                format!("Persons of a funnel with {what} are not supported."),
            ));
        }
    }
    if node
        .get("breakdownFilter")
        .and_then(|breakdown| breakdown.get("breakdown"))
        .is_some_and(|value| !value.is_null())
    {
        return Err(Invalid::new(
            "source.source.breakdownFilter",
            "Persons of a funnel with a breakdown are not supported.",
        ));
    }
    let order = match filter.get("funnelOrderType").and_then(Value::as_str) {
        None => "ordered",
        Some(order @ ("ordered" | "strict" | "unordered")) => order,
        Some(_) => {
            return Err(Invalid::new(
                "source.source.funnelsFilter.funnelOrderType",
                "funnelOrderType must be ordered, strict or unordered.",
            ));
        }
    };
    let window = filter
        .get("funnelWindowInterval")
        .and_then(Value::as_i64)
        .unwrap_or(14);
    let unit = filter
        .get("funnelWindowIntervalUnit")
        .and_then(Value::as_str)
        .unwrap_or("day");
    let window_seconds = window_unit_seconds(unit)
        .and_then(|seconds| seconds.checked_mul(window))
        .filter(|seconds| *seconds > 0)
        .ok_or_else(|| {
            Invalid::new(
                "source.source.funnelsFilter.funnelWindowInterval",
                "The conversion window must be a positive number of second, minute, hour, day, week or month.",
            )
        })?;

    let mut step_conditions = Vec::new();
    for (index, item) in steps.iter().enumerate() {
        let series = EventSeries::read(item, index, ctx).map_err(under_insight)?;
        step_conditions.push(series.condition);
    }
    let interval = Interval::from_field(node.get("interval"), Interval::Day, "interval")
        .map_err(under_insight)?;
    let range = date_range::resolve(node.get("dateRange"), interval, ctx, "dateRange")
        .map_err(under_insight)?;
    let mut scope = vec![range.sql_condition("timestamp")];
    let properties = filters::node_properties(node, ctx).map_err(under_insight)?;
    if properties != "true" {
        scope.push(format!("({properties})"));
    }
    // Strict funnels see every event of the person (any other event breaks a sequence).
    if order != "strict" && !step_conditions.iter().any(|condition| condition == "true") {
        scope.push(format!("({})", step_conditions.join(" OR ")));
    }
    let mask: Vec<String> = step_conditions
        .iter()
        .enumerate()
        .map(|(bit, condition)| format!("if({condition}, {}, 0)", 1u64 << bit))
        .collect();
    let is_step = step_conditions
        .iter()
        .map(|condition| format!("({condition})"))
        .collect::<Vec<_>>()
        .join(" OR ");
    // `reached` is the 0-based furthest step.
    let reached = match step {
        step if step > 0 => format!("reached >= {}", step - 1),
        step => format!("reached = {}", -step - 2),
    };
    Ok(Matched {
        ctes: String::new(),
        query: format!(
            "SELECT actor_id, event_count FROM (\
             SELECT actor_id, arrayElement(funnel, 1) AS reached, event_count FROM (\
             SELECT person_id AS actor_id, \
             aggregateFunnel({count}, {window_seconds}, {order}, timestamp, {mask}, 0) AS funnel, \
             countIf({is_step}) AS event_count \
             FROM events WHERE {scope} GROUP BY actor_id) WHERE funnel IS NOT NULL) WHERE {reached}",
            order = sql_text::string(order),
            mask = mask.join(" + "),
            scope = scope.join(" AND "),
        ),
    })
}

/// Seconds per `funnelWindowIntervalUnit` (PostHog makes a month 30 days).
fn window_unit_seconds(unit: &str) -> Option<i64> {
    Some(match unit {
        "second" => 1,
        "minute" => 60,
        "hour" => 3_600,
        "day" => 86_400,
        "week" => 7 * 86_400,
        "month" => 30 * 86_400,
        _ => return None,
    })
}
