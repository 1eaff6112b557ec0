//! The dialect text of the steps view: per actor the furthest step reached (the engine's
//! `aggregateFunnel` over step and exclusion bit masks), then per step (and breakdown
//! combination or cohort) the actors and conversion times. The other views, and the persons of
//! a step ([`super::persons`]), build on the per-actor query and the masks.

use super::{Funnel, Order};
use crate::sql_text;

/// `if(a, 1, 0) + if(b, 2, 0) + ...`: bit `i` set when `conditions[i]` holds.
fn bit_mask(conditions: &[Option<String>]) -> String {
    let terms: Vec<String> = conditions
        .iter()
        .enumerate()
        .filter_map(|(bit, condition)| {
            condition
                .as_ref()
                .map(|condition| format!("if({condition}, {}, 0)", 1u64 << bit))
        })
        .collect();
    if terms.is_empty() {
        "0".to_owned()
    } else {
        terms.join(" + ")
    }
}

/// The exclusion mask: bit `s` when the event excludes an attempt standing at step `s`.
pub(super) fn exclusion_mask(funnel: &Funnel) -> String {
    let per_step: Vec<Option<String>> = (0..funnel.steps.len())
        .map(|step| {
            let conditions: Vec<&str> = funnel
                .exclusions
                .iter()
                .filter(|exclusion| exclusion.from_step <= step && step < exclusion.to_step)
                .map(|exclusion| exclusion.condition.as_str())
                .collect();
            (!conditions.is_empty()).then(|| conditions.join(" OR "))
        })
        .collect();
    bit_mask(&per_step)
}

/// The step mask: bit `i` when the event is step `i`.
pub(super) fn step_mask(funnel: &Funnel) -> String {
    bit_mask(
        &funnel
            .steps
            .iter()
            .map(|step| Some(step.condition.clone()))
            .collect::<Vec<_>>(),
    )
}

/// The conditions of the events a funnel reads: the scope and, unless strict (where every
/// event of the actor counts, as any other event breaks a sequence), a step or an exclusion.
pub(super) fn event_conditions(funnel: &Funnel) -> String {
    let mut conditions = vec![funnel.scope.clone()];
    if funnel.order != Order::Strict {
        let relevant: Vec<&str> = funnel
            .steps
            .iter()
            .map(|step| step.condition.as_str())
            .chain(funnel.exclusions.iter().map(|e| e.condition.as_str()))
            .collect();
        if !relevant.contains(&"true") {
            conditions.push(format!("({})", relevant.join(" OR ")));
        }
    }
    conditions.join(" AND ")
}

/// The per-actor query: `actor`, `reached`, `time_1`..`time_{n-1}`, with a property breakdown
/// `breakdown` (the key of the actor's combination) and, with `event_count`, `event_count` (the
/// actor's events that are a step). Only actors who reached the first step have a row.
pub(super) fn actors_query(funnel: &Funnel, event_count: bool) -> String {
    let count = funnel.steps.len();
    let aggregate = format!(
        "aggregateFunnel({count}, {}, {}, timestamp, {}, {})",
        funnel.window_seconds,
        sql_text::string(funnel.order.name()),
        step_mask(funnel),
        exclusion_mask(funnel)
    );
    let properties = funnel
        .breakdown
        .as_ref()
        .and_then(|breakdown| breakdown.by.properties());
    let breakdown = match (properties, &funnel.breakdown) {
        (Some(properties), Some(breakdown)) => {
            // The values of the first (last) event with any value; all '' when none has one.
            let pick = if breakdown.last_touch {
                "argMaxIf"
            } else {
                "argMinIf"
            };
            let values = properties.funnel_values();
            let present = values
                .iter()
                .map(|value| format!("{value} != ''"))
                .collect::<Vec<_>>()
                .join(" OR ");
            let none = sql_text::string(&properties.encode(&vec![""; values.len()]));
            format!(
                ", ifNull({pick}({key}, timestamp, {present}), {none}) AS breakdown",
                key = properties.key_sql(&values)
            )
        }
        _ => String::new(),
    };
    let counted = if event_count {
        let any_step: Vec<&str> = funnel
            .steps
            .iter()
            .map(|step| step.condition.as_str())
            .collect();
        format!(", countIf({}) AS event_count", any_step.join(" OR "))
    } else {
        String::new()
    };
    let times: String = (1..count)
        .map(|step| format!(", arrayElement(funnel, {}) AS time_{step}", step + 1))
        .collect();
    let carried = format!(
        "{}{}",
        if properties.is_some() {
            ", breakdown"
        } else {
            ""
        },
        if event_count { ", event_count" } else { "" }
    );
    format!(
        "SELECT actor, arrayElement(funnel, 1) AS reached{times}{carried} FROM (\
         SELECT {actor} AS actor, {aggregate} AS funnel{breakdown}{counted} FROM events WHERE {where_clause} GROUP BY actor\
         ) WHERE funnel IS NOT NULL",
        actor = funnel.actor,
        where_clause = event_conditions(funnel),
    )
}

/// Per step: actors who reached it, and the average/median seconds from the step before
/// (zeros left out, as PostHog's `timings[i] > 0`).
fn step_columns(count: usize) -> String {
    let mut columns: Vec<String> = (0..count)
        .map(|step| format!("countIf(reached >= {step}) AS count_{step}"))
        .collect();
    columns.extend(
        (1..count).map(|step| format!("avgIf(time_{step}, time_{step} > 0) AS average_{step}")),
    );
    columns.extend(
        (1..count).map(|step| format!("medianIf(time_{step}, time_{step} > 0) AS median_{step}")),
    );
    columns.join(", ")
}

pub(super) fn steps_query(funnel: &Funnel) -> String {
    let count = funnel.steps.len();
    let actors = actors_query(funnel, false);
    let columns = step_columns(count);
    let Some(breakdown) = &funnel.breakdown else {
        return format!("SELECT {columns} FROM ({actors}) LIMIT 1");
    };
    let times: String = (1..count).map(|step| format!(", time_{step}")).collect();
    if !breakdown.cohort_conditions.is_empty() {
        // A bucket per cohort: its persons among the actors (the assembly orders them).
        let parts: Vec<String> = breakdown
            .cohort_conditions
            .iter()
            .enumerate()
            .map(|(index, condition)| {
                let filter = match condition.as_str() {
                    "true" => String::new(),
                    condition => format!(" WHERE {condition}"),
                };
                format!("SELECT {index} AS bucket, reached{times} FROM actors{filter}")
            })
            .collect();
        return format!(
            "WITH actors AS ({actors}) SELECT bucket, '' AS breakdown, {columns} FROM ({}) \
             GROUP BY bucket ORDER BY bucket LIMIT {}",
            parts.join(" UNION ALL "),
            parts.len()
        );
    }
    // Rank the values by conversions (furthest step first, as PostHog orders them), then keep the
    // top `limit` and sum the rest into one bucket numbered `limit + 1`.
    let reached_per_value: String = (0..count)
        .map(|step| {
            format!(
                ", sum(if(reached >= {step}, 1, 0)) OVER (PARTITION BY breakdown) AS reached_{step}"
            )
        })
        .collect();
    let ranking: String = (0..count)
        .rev()
        .map(|step| format!("reached_{step} DESC, "))
        .collect();
    let limit = breakdown.by.limit;
    format!(
        "SELECT bucket, min(breakdown) AS breakdown, {columns} FROM (\
         SELECT reached{times}, breakdown, if(position <= {limit}, position, {other}) AS bucket FROM (\
         SELECT reached{times}, breakdown, dense_rank() OVER (ORDER BY {ranking}breakdown ASC) AS position FROM (\
         SELECT reached{times}, breakdown{reached_per_value} FROM ({actors})))) \
         GROUP BY bucket ORDER BY bucket LIMIT {rows}",
        other = limit + 1,
        rows = limit + 1,
    )
}
