//! FunnelsQuery: per actor, the furthest step reached within the conversion window (the
//! engine's `aggregateFunnel`, which follows PostHog's `aggregate_funnel` UDF), then per step the
//! actors who reached at least that step and the average/median seconds from the step before.
//!
//! Choices, as PostHog makes them:
//! - The window counts from the attempt's first step and is inclusive: a step exactly
//!   `funnelWindowInterval` units after it counts, one second later does not. A month is 30 days.
//! - Conversion times of 0 seconds are left out of the average and the median (PostHog keeps
//!   `timings[i] > 0` only).
//! - An exclusion drops the attempt it interrupts (an excluded event after the attempt reached
//!   `funnelFromStep` and before it reached `funnelToStep`, within its window); an actor whose
//!   furthest attempt was excluded is left out of every step.
//! - A breakdown takes the actor's first (`first_touch`) or last (`last_touch`) non-null value of
//!   the property over their funnel events (`''` when none); the `breakdown_limit` (25) values
//!   with the most conversions are kept, the rest summed as "Other".
//!
//! `funnelsFilter.funnelVizType` picks the view: `steps` (the above), `trends` (conversion rate
//! per interval of the attempts' start) or `time_to_convert` (a histogram of conversion times);
//! the notes before `compile_trends` and `compile_time_to_convert` say how each follows PostHog.

use chrono::{DateTime, Utc};
use chrono_tz::Tz;
use serde_json::{Map, Value, json};

use crate::date_range::{self, Interval, Range};
use crate::{Compiled, Context, Invalid, Table, filters, sql_text};

/// The engine's bit masks hold 63 steps; PostHog's UI stops well before this.
const MAX_STEPS: usize = 30;
const DEFAULT_BREAKDOWN_LIMIT: u64 = 25;
/// The bucket the values past the breakdown limit are summed into.
const OTHER: &str = "Other";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Order {
    Ordered,
    Strict,
    Unordered,
}

impl Order {
    fn name(self) -> &'static str {
        match self {
            Order::Ordered => "ordered",
            Order::Strict => "strict",
            Order::Unordered => "unordered",
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
struct Step {
    event: Option<String>,
    custom_name: Option<String>,
    /// The dialect condition an event meets to be this step.
    condition: String,
}

#[derive(Debug, Clone, PartialEq)]
struct Exclusion {
    condition: String,
    from_step: usize,
    to_step: usize,
}

#[derive(Debug, Clone, PartialEq)]
struct Breakdown {
    /// The dialect expression of the property.
    property: String,
    /// `breakdown` was given as a list: values are then one-element lists, as PostHog returns.
    as_list: bool,
    last_touch: bool,
    limit: u64,
}

/// `funnelsFilter.funnelVizType`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Viz {
    Steps,
    Trends,
    TimeToConvert,
}

#[derive(Debug, Clone, PartialEq)]
struct Funnel {
    steps: Vec<Step>,
    exclusions: Vec<Exclusion>,
    order: Order,
    window_seconds: i64,
    actor: String,
    /// Conditions every event must meet (date range, node properties).
    scope: String,
    breakdown: Option<Breakdown>,
    viz: Viz,
    /// `funnelFromStep` / `funnelToStep` (0-based; default the first and the last step): the
    /// conversion the trends and time to convert views measure.
    from_step: usize,
    to_step: usize,
    /// `binCount`, clamped to 1..=90 as PostHog does; `None` picks it from the sample count.
    bin_count: Option<i64>,
    interval: Interval,
    range: Range,
}

pub fn compile(node: &Value, ctx: &Context) -> Result<Compiled, Invalid> {
    let funnel = parse(node, ctx)?;
    match funnel.viz {
        Viz::Steps => {}
        Viz::Trends => return compile_trends(&funnel, ctx),
        Viz::TimeToConvert => return Ok(compile_time_to_convert(&funnel)),
    }
    let query = steps_query(&funnel);
    let steps = funnel.steps.clone();
    let order = funnel.order;
    let breakdown = funnel.breakdown.clone();
    Ok(Compiled::new(vec![query], move |tables| {
        let table = tables
            .into_iter()
            .next()
            .ok_or_else(|| Invalid::new("series", "The funnel query gave no result."))?;
        Ok(json!({
            "results": assemble(&table, &steps, order, breakdown.as_ref()),
            "isUdf": true,
        }))
    }))
}

fn object<'a>(
    value: Option<&'a Value>,
    attr: &str,
) -> Result<Option<&'a Map<String, Value>>, Invalid> {
    match value {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Object(map)) => Ok(Some(map)),
        Some(_) => Err(Invalid::new(attr, format!("{attr} must be an object."))),
    }
}

fn text<'a>(
    map: Option<&'a Map<String, Value>>,
    key: &str,
    attr: &str,
) -> Result<Option<&'a str>, Invalid> {
    match map.and_then(|map| map.get(key)) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(text)) => Ok(Some(text)),
        Some(_) => Err(Invalid::new(attr, format!("{attr} must be a string."))),
    }
}

/// A string field naming one of `choices`; the first is the default when it is absent.
fn choice<T: Copy>(
    map: Option<&Map<String, Value>>,
    key: &str,
    attr: &str,
    choices: &[(&str, T)],
) -> Result<T, Invalid> {
    let Some(name) = text(map, key, attr)? else {
        return Ok(choices[0].1);
    };
    choices
        .iter()
        .find(|(known, _)| *known == name)
        .map(|(_, value)| *value)
        .ok_or_else(|| {
            let known: Vec<&str> = choices.iter().map(|(known, _)| *known).collect();
            Invalid::new(
                attr,
                format!(
                    "'{name}' is not supported for {key}: use {}.",
                    known.join(", ")
                ),
            )
        })
}

fn integer(
    map: Option<&Map<String, Value>>,
    key: &str,
    attr: &str,
) -> Result<Option<i64>, Invalid> {
    match map.and_then(|map| map.get(key)) {
        None | Some(Value::Null) => Ok(None),
        Some(value) => value
            .as_i64()
            .or_else(|| {
                value
                    .as_f64()
                    .filter(|f| f.fract() == 0.0)
                    .map(|f| f as i64)
            })
            .map(Some)
            .ok_or_else(|| Invalid::new(attr, format!("{attr} must be an integer."))),
    }
}

/// The condition of an `EventsNode` (a step or an exclusion): its event and its properties.
fn entity_condition(
    entity: &Value,
    ctx: &Context,
    attr: &str,
) -> Result<(Option<String>, String), Invalid> {
    let map = object(Some(entity), attr)?;
    match text(map, "kind", &format!("{attr}.kind"))? {
        None | Some("EventsNode") | Some("FunnelExclusionEventsNode") => {}
        Some("ActionsNode") | Some("FunnelExclusionActionsNode") => {
            return Err(Invalid::new(
                format!("{attr}.kind"),
                "Actions are not supported in funnels yet: use an EventsNode.",
            ));
        }
        Some(other) => {
            return Err(Invalid::new(
                format!("{attr}.kind"),
                format!("{other} is not supported as a funnel step."),
            ));
        }
    }
    let event = text(map, "event", &format!("{attr}.event"))?.map(str::to_owned);
    let mut parts = Vec::new();
    if let Some(event) = &event {
        parts.push(format!("event = {}", sql_text::string(event)));
    }
    for key in ["properties", "fixedProperties"] {
        let condition = filters::expression(
            map.and_then(|map| map.get(key)),
            ctx,
            &format!("{attr}.{key}"),
        )?;
        if condition != "true" {
            parts.push(condition);
        }
    }
    let condition = if parts.is_empty() {
        "true".to_owned()
    } else {
        format!("({})", parts.join(" AND "))
    };
    Ok((event, condition))
}

fn window_unit_seconds(unit: &str) -> Option<i64> {
    Some(match unit {
        "second" => 1,
        "minute" => 60,
        "hour" => 3_600,
        "day" => 86_400,
        "week" => 7 * 86_400,
        // PostHog's DATERANGE_MAP makes a month 30 days.
        "month" => 30 * 86_400,
        _ => return None,
    })
}

fn parse(node: &Value, ctx: &Context) -> Result<Funnel, Invalid> {
    let series = match node.get("series") {
        Some(Value::Array(series)) => series,
        _ => {
            return Err(Invalid::new(
                "series",
                "series must be a list of funnel steps.",
            ));
        }
    };
    if series.len() < 2 {
        return Err(Invalid::new("series", "Funnels need at least two steps."));
    }
    if series.len() > MAX_STEPS {
        return Err(Invalid::new(
            "series",
            format!("Funnels can have at most {MAX_STEPS} steps."),
        ));
    }
    let funnels_filter = object(node.get("funnelsFilter"), "funnelsFilter")?;
    let order = choice(
        funnels_filter,
        "funnelOrderType",
        "funnelsFilter.funnelOrderType",
        &[
            ("ordered", Order::Ordered),
            ("strict", Order::Strict),
            ("unordered", Order::Unordered),
        ],
    )?;
    let viz = choice(
        funnels_filter,
        "funnelVizType",
        "funnelsFilter.funnelVizType",
        &[
            ("steps", Viz::Steps),
            ("trends", Viz::Trends),
            ("time_to_convert", Viz::TimeToConvert),
        ],
    )?;
    let (from_step, to_step) = parse_step_range(funnels_filter, series.len())?;
    let bin_count = integer(funnels_filter, "binCount", "funnelsFilter.binCount")?
        .map(|count| count.clamp(1, 90));
    let window = integer(
        funnels_filter,
        "funnelWindowInterval",
        "funnelsFilter.funnelWindowInterval",
    )?
    .unwrap_or(14);
    if window <= 0 {
        return Err(Invalid::new(
            "funnelsFilter.funnelWindowInterval",
            "The conversion window must be positive.",
        ));
    }
    let unit = text(
        funnels_filter,
        "funnelWindowIntervalUnit",
        "funnelsFilter.funnelWindowIntervalUnit",
    )?
    .unwrap_or("day");
    let unit_seconds = window_unit_seconds(unit).ok_or_else(|| {
        Invalid::new(
            "funnelsFilter.funnelWindowIntervalUnit",
            format!("Unknown window unit '{unit}': use second, minute, hour, day, week or month."),
        )
    })?;
    let window_seconds = window.checked_mul(unit_seconds).ok_or_else(|| {
        Invalid::new(
            "funnelsFilter.funnelWindowInterval",
            "The conversion window is too long.",
        )
    })?;

    let mut steps = Vec::with_capacity(series.len());
    for (index, entity) in series.iter().enumerate() {
        let attr = format!("series[{index}]");
        let (event, condition) = entity_condition(entity, ctx, &attr)?;
        let custom_name = text(
            object(Some(entity), &attr)?,
            "custom_name",
            &format!("{attr}.custom_name"),
        )?
        .map(str::to_owned);
        steps.push(Step {
            event,
            custom_name,
            condition,
        });
    }

    let exclusions = parse_exclusions(funnels_filter, steps.len(), order, ctx)?;

    if node
        .get("aggregation_group_type_index")
        .is_some_and(|value| !value.is_null())
    {
        return Err(Invalid::new(
            "aggregation_group_type_index",
            "Funnels by group are not supported yet.",
        ));
    }
    let actor = match text(
        funnels_filter,
        "funnelAggregateByHogQL",
        "funnelsFilter.funnelAggregateByHogQL",
    )? {
        None => "person_id".to_owned(),
        Some(expression) if expression.trim().is_empty() || expression.trim() == "person_id" => {
            "person_id".to_owned()
        }
        Some(expression) => {
            (ctx.check_expression)(expression)
                .map_err(|detail| Invalid::new("funnelsFilter.funnelAggregateByHogQL", detail))?;
            format!("({expression})")
        }
    };

    let interval = Interval::from_field(node.get("interval"), Interval::Day, "interval")?;
    let range = date_range::resolve(node.get("dateRange"), interval, ctx, "dateRange")?;
    let mut scope = vec![range.sql_condition("timestamp")];
    let properties = filters::expression(node.get("properties"), ctx, "properties")?;
    if properties != "true" {
        scope.push(properties);
    }

    let breakdown = parse_breakdown(node, funnels_filter)?;
    if viz == Viz::Trends && breakdown.is_some() {
        return Err(Invalid::new(
            "breakdownFilter.breakdown",
            "Breakdowns of funnel trends are not supported yet: use the steps view.",
        ));
    }
    Ok(Funnel {
        steps,
        exclusions,
        order,
        window_seconds,
        actor,
        scope: scope.join(" AND "),
        breakdown,
        viz,
        from_step,
        to_step,
        bin_count,
        interval,
        range,
    })
}

/// `funnelFromStep` and `funnelToStep`, checked as PostHog's `ValidateFunnelStepRange`: from in
/// `0..=n-2`, to in `1..=n-1`, from before to.
fn parse_step_range(
    funnels_filter: Option<&Map<String, Value>>,
    steps: usize,
) -> Result<(usize, usize), Invalid> {
    let last = steps as i64 - 1;
    let from = integer(
        funnels_filter,
        "funnelFromStep",
        "funnelsFilter.funnelFromStep",
    )?;
    let to = integer(funnels_filter, "funnelToStep", "funnelsFilter.funnelToStep")?;
    if let Some(from) = from
        && !(0..last).contains(&from)
    {
        return Err(Invalid::new(
            "funnelsFilter.funnelFromStep",
            format!(
                "funnelFromStep is out of bounds. It must be between 0 and {}.",
                last - 1
            ),
        ));
    }
    if let Some(to) = to
        && !(1..=last).contains(&to)
    {
        return Err(Invalid::new(
            "funnelsFilter.funnelToStep",
            format!("funnelToStep is out of bounds. It must be between 1 and {last}."),
        ));
    }
    let (from, to) = (from.unwrap_or(0), to.unwrap_or(last));
    if from >= to {
        return Err(Invalid::new(
            "funnelsFilter.funnelToStep",
            "Funnel step range is invalid. funnelToStep should be greater than funnelFromStep.",
        ));
    }
    Ok((from as usize, to as usize))
}

fn parse_exclusions(
    funnels_filter: Option<&Map<String, Value>>,
    steps: usize,
    order: Order,
    ctx: &Context,
) -> Result<Vec<Exclusion>, Invalid> {
    let list = match funnels_filter.and_then(|map| map.get("exclusions")) {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::Array(list)) => list,
        Some(_) => {
            return Err(Invalid::new(
                "funnelsFilter.exclusions",
                "exclusions must be a list.",
            ));
        }
    };
    let mut exclusions = Vec::with_capacity(list.len());
    for (index, entity) in list.iter().enumerate() {
        let attr = format!("funnelsFilter.exclusions[{index}]");
        let (_, condition) = entity_condition(entity, ctx, &attr)?;
        let map = object(Some(entity), &attr)?;
        let from_attr = format!("{attr}.funnelFromStep");
        let to_attr = format!("{attr}.funnelToStep");
        let from_step = integer(map, "funnelFromStep", &from_attr)?.unwrap_or(0);
        let to_step = integer(map, "funnelToStep", &to_attr)?.unwrap_or(steps as i64 - 1);
        if from_step < 0 || from_step >= steps as i64 - 1 {
            return Err(Invalid::new(
                from_attr,
                "Exclusion event range is invalid. Start of range is greater than number of steps.",
            ));
        }
        if to_step <= from_step {
            return Err(Invalid::new(
                to_attr,
                "Exclusion event range is invalid. End of range should be greater than start.",
            ));
        }
        if to_step > steps as i64 - 1 {
            return Err(Invalid::new(
                to_attr,
                "Exclusion event range is invalid. End of range is greater than number of steps.",
            ));
        }
        if order == Order::Unordered && (from_step != 0 || to_step != steps as i64 - 1) {
            return Err(Invalid::new(
                from_attr,
                "Partial Exclusions not allowed in unordered funnels",
            ));
        }
        exclusions.push(Exclusion {
            condition,
            from_step: from_step as usize,
            to_step: to_step as usize,
        });
    }
    Ok(exclusions)
}

fn parse_breakdown(
    node: &Value,
    funnels_filter: Option<&Map<String, Value>>,
) -> Result<Option<Breakdown>, Invalid> {
    let filter = object(node.get("breakdownFilter"), "breakdownFilter")?;
    if filter
        .and_then(|map| map.get("breakdowns"))
        .is_some_and(|value| value.as_array().is_some_and(|list| !list.is_empty()))
    {
        return Err(Invalid::new(
            "breakdownFilter.breakdowns",
            "Multiple breakdowns are not supported in funnels yet: use breakdown.",
        ));
    }
    let (key, as_list) = match filter.and_then(|map| map.get("breakdown")) {
        None | Some(Value::Null) => return Ok(None),
        Some(Value::String(key)) => (key.clone(), false),
        Some(Value::Array(keys)) => match keys.as_slice() {
            [] => return Ok(None),
            [Value::String(key)] => (key.clone(), true),
            _ => {
                return Err(Invalid::new(
                    "breakdownFilter.breakdown",
                    "Funnels break down by one property.",
                ));
            }
        },
        Some(_) => {
            return Err(Invalid::new(
                "breakdownFilter.breakdown",
                "breakdown must be a property name.",
            ));
        }
    };
    let person = choice(
        filter,
        "breakdown_type",
        "breakdownFilter.breakdown_type",
        &[("event", false), ("person", true)],
    )?;
    let limit = match integer(filter, "breakdown_limit", "breakdownFilter.breakdown_limit")? {
        None => DEFAULT_BREAKDOWN_LIMIT,
        Some(limit) if limit > 0 => limit as u64,
        Some(_) => {
            return Err(Invalid::new(
                "breakdownFilter.breakdown_limit",
                "breakdown_limit must be positive.",
            ));
        }
    };
    let last_touch = choice(
        funnels_filter,
        "breakdownAttributionType",
        "funnelsFilter.breakdownAttributionType",
        &[("first_touch", false), ("last_touch", true)],
    )?;
    Ok(Some(Breakdown {
        property: sql_text::property(&key, person),
        as_list,
        last_touch,
        limit,
    }))
}

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
fn exclusion_mask(funnel: &Funnel) -> String {
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

/// The per-actor query: `reached`, `time_1`..`time_{n-1}` and, with a breakdown, `breakdown`.
/// The step mask: bit `i` when the event is step `i`.
fn step_mask(funnel: &Funnel) -> String {
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
fn event_conditions(funnel: &Funnel) -> String {
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

fn actors_query(funnel: &Funnel) -> String {
    let count = funnel.steps.len();
    let aggregate = format!(
        "aggregateFunnel({count}, {}, {}, timestamp, {}, {})",
        funnel.window_seconds,
        sql_text::string(funnel.order.name()),
        step_mask(funnel),
        exclusion_mask(funnel)
    );
    let breakdown = match &funnel.breakdown {
        Some(breakdown) => {
            let pick = if breakdown.last_touch {
                "argMaxIf"
            } else {
                "argMinIf"
            };
            format!(
                ", ifNull({pick}({property}, timestamp, isNotNull({property})), '') AS breakdown",
                property = breakdown.property
            )
        }
        None => String::new(),
    };
    let times: String = (1..count)
        .map(|step| format!(", arrayElement(funnel, {}) AS time_{step}", step + 1))
        .collect();
    let carried_breakdown = if funnel.breakdown.is_some() {
        ", breakdown"
    } else {
        ""
    };
    format!(
        "SELECT arrayElement(funnel, 1) AS reached{times}{carried_breakdown} FROM (\
         SELECT {actor} AS actor, {aggregate} AS funnel{breakdown} FROM events WHERE {where_clause} GROUP BY actor\
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

fn steps_query(funnel: &Funnel) -> String {
    let count = funnel.steps.len();
    let actors = actors_query(funnel);
    let columns = step_columns(count);
    let Some(breakdown) = &funnel.breakdown else {
        return format!("SELECT {columns} FROM ({actors}) LIMIT 1");
    };
    // Rank the values by conversions (furthest step first, as PostHog orders them), then keep the
    // top `limit` and sum the rest into one bucket numbered `limit + 1`.
    let times: String = (1..count).map(|step| format!(", time_{step}")).collect();
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
    let limit = breakdown.limit;
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

// ---------------------------------------------------------------------------------------------
// funnelVizType: "trends".
//
// As PostHog's `FunnelTrendsUDF` (`funnel_trends_udf.py` with the `aggregate_funnel_trends` UDF):
// - The funnel is cut after `funnelToStep` (PostHog overrides `max_steps` with `funnelToStep + 1`).
// - An actor enters an interval (the project-time-zone bucket of `interval`, default day) with
//   an attempt's first event there: a step 0 event, or any step event in an unordered funnel.
//   Each actor counts at most once per interval they entered in, and may count in several:
//   the attempts opened in an interval are evaluated on their own (the engine's `NO_START` flag
//   keeps other intervals' first events from opening one), and the furthest of them decides.
// - `reached_from_step_count` per interval: actors whose attempt reached `funnelFromStep`;
//   `reached_to_step_count`: those that reached `funnelToStep`. The rate is
//   `round(to / from * 100, 2)` (ClickHouse rounds half to even), 0 when no one reached from.
// - Every interval of the date range is listed (zero-filled). The response, as
//   `FunnelTrends._format_single_summary`: `[{count: intervals, data: rates, days, labels}]`,
//   `days` as `%Y-%m-%d` (with ` %H:%M:%S` for the hour interval), `labels` as `%-d-%b-%Y`. The
//   per-interval counts are not part of it (PostHog only keeps them when `just_summarize`).
// - Exclusions work as in the steps view, per interval: an interval whose furthest attempt was
//   excluded does not count (PostHog's UDF drops an actor's unconverted intervals when any of
//   them was excluded after reaching a later step; the difference is confined to exclusions).

/// The first query of `date_from: all`: the earliest event, where the intervals start (as
/// PostHog's `get_earliest_timestamp`).
const EARLIEST_QUERY: &str = "SELECT min(timestamp) AS earliest FROM events LIMIT 1";

fn compile_trends(funnel: &Funnel, ctx: &Context) -> Result<Compiled, Invalid> {
    let interval = funnel.interval;
    let from_all = funnel.range.from_all();
    let buckets = if from_all {
        None
    } else {
        Some(funnel.range.buckets(interval, ctx, "interval")?)
    };
    let rows = buckets.as_ref().map_or(date_range::MAX_BUCKETS, Vec::len) + 1;
    let mut queries = Vec::new();
    if from_all {
        queries.push(EARLIEST_QUERY.to_owned());
    }
    queries.push(trends_query(funnel, ctx, rows));
    let range = funnel.range;
    let ctx = ctx.clone();
    Ok(Compiled::new(queries, move |tables| {
        let mut tables = tables.into_iter();
        let buckets = match buckets {
            Some(buckets) => buckets,
            None => {
                let earliest = tables
                    .next()
                    .and_then(|table| table.rows.into_iter().next())
                    .and_then(|row| row.into_iter().next())
                    .and_then(|cell| date_range::parse_engine_time(&cell, &ctx))
                    .map(|moment| moment.with_timezone(&Utc));
                Range {
                    from: earliest.unwrap_or(range.to).min(range.to),
                    to: range.to,
                }
                .buckets(interval, &ctx, "interval")?
            }
        };
        let table = tables.next().unwrap_or_default();
        Ok(json!({
            "results": assemble_trends(&table, &buckets, interval, &ctx),
            "isUdf": true,
        }))
    }))
}

/// Rows `(period, reached_from, reached_to)`, one per interval some actor entered in.
fn trends_query(funnel: &Funnel, ctx: &Context, rows: usize) -> String {
    // Cut after funnelToStep; the exclusion mask then only covers the stretches kept.
    let mut cut = funnel.clone();
    cut.steps.truncate(funnel.to_step + 1);
    let count = cut.steps.len();
    let opens = if cut.order == Order::Unordered {
        let any: Vec<&str> = cut.steps.iter().map(|s| s.condition.as_str()).collect();
        format!("({})", any.join(" OR "))
    } else {
        cut.steps[0].condition.clone()
    };
    let no_start = 1u64 << 62;
    format!(
        "WITH funnel_events AS (\
         SELECT {actor} AS actor, timestamp, {steps} AS steps, {exclusions} AS exclusions, \
         {opens} AS opens, {period} AS period FROM events WHERE {where_clause}), \
         entries AS (\
         SELECT actor, period, min(timestamp) AS first_start, max(timestamp) AS last_start \
         FROM funnel_events WHERE opens GROUP BY actor, period) \
         SELECT period, countIf(reached >= {from}) AS reached_from, countIf(reached >= {to}) AS reached_to FROM (\
         SELECT period, arrayElement(funnel, 1) AS reached FROM (\
         SELECT entries.actor AS actor, entries.period AS period, \
         aggregateFunnel({count}, {window}, {order}, funnel_events.timestamp, \
         funnel_events.steps + if(funnel_events.period = entries.period, 0, {no_start}), \
         funnel_events.exclusions) AS funnel \
         FROM entries JOIN funnel_events ON entries.actor = funnel_events.actor \
         WHERE funnel_events.timestamp >= entries.first_start \
         AND funnel_events.timestamp <= entries.last_start + toIntervalSecond({window}) \
         GROUP BY entries.actor, entries.period) WHERE funnel IS NOT NULL) \
         GROUP BY period ORDER BY period LIMIT {rows}",
        actor = cut.actor,
        steps = step_mask(&cut),
        exclusions = exclusion_mask(&cut),
        period = funnel.interval.bucket_sql("timestamp", ctx),
        where_clause = event_conditions(&cut),
        from = funnel.from_step,
        to = funnel.to_step,
        window = cut.window_seconds,
        order = sql_text::string(cut.order.name()),
    )
}

/// `round(x, 2)` of a ClickHouse float: scaled, rounded half to even, scaled back.
fn round_2(value: f64) -> f64 {
    (value * 100.0).round_ties_even() / 100.0
}

fn assemble_trends(
    table: &Table,
    buckets: &[DateTime<Tz>],
    interval: Interval,
    ctx: &Context,
) -> Value {
    let index_of: std::collections::HashMap<DateTime<Utc>, usize> = buckets
        .iter()
        .enumerate()
        .map(|(index, start)| (start.with_timezone(&Utc), index))
        .collect();
    let mut reached = vec![(0u64, 0u64); buckets.len()];
    for row in &table.rows {
        let index = row
            .first()
            .and_then(|cell| date_range::parse_engine_time(cell, ctx))
            .map(|moment| date_range::bucket_start(moment.with_timezone(&Utc), interval, ctx))
            .and_then(|start| index_of.get(&start.with_timezone(&Utc)).copied());
        if let Some(index) = index {
            reached[index].0 += count(row.get(1));
            reached[index].1 += count(row.get(2));
        }
    }
    let data: Vec<f64> = reached
        .iter()
        .map(|&(from, to)| {
            if from > 0 {
                round_2(to as f64 / from as f64 * 100.0)
            } else {
                0.0
            }
        })
        .collect();
    // PostHog's strftime formats: the time only for the hour interval, never in labels.
    let day_format = if interval == Interval::Hour {
        "%Y-%m-%d %H:%M:%S"
    } else {
        "%Y-%m-%d"
    };
    let days: Vec<String> = buckets
        .iter()
        .map(|start| start.format(day_format).to_string())
        .collect();
    let labels: Vec<String> = buckets
        .iter()
        .map(|start| start.format("%-d-%b-%Y").to_string())
        .collect();
    json!([{
        "count": buckets.len(),
        "data": data,
        "days": days,
        "labels": labels,
    }])
}

// ---------------------------------------------------------------------------------------------
// funnelVizType: "time_to_convert".
//
// As PostHog's `FunnelTimeToConvertUDF` (`funnel_time_to_convert_udf.py`), over the steps view's
// per-actor outcome (the full funnel, breakdown ignored):
// - An actor's time is the sum of their step-to-step times from `funnelFromStep` to
//   `funnelToStep` (`arraySum(arraySlice(timings, from + 1, to - from))`), for actors who reached
//   `funnelToStep`. Zero times count here (unlike the steps view's averages).
// - `bin_count`: `binCount` clamped to 1..=90, else `least(60, greatest(1, ceil(cbrt(samples))))`.
// - `min = floor(min time)`, `max = ceil(max time)`, `width = ceil((max - min) / bin_count)`, or 60
//   when that is 0. Bin `n` starts at `round(min + n * width)` for `n` in `0..=bin_count` (one
//   more bin than `bin_count`, as PostHog's `range(0, bin_count + 1)`); a time falls in bin
//   `floor((time - min) / width)`.
// - `average_conversion_time`: the plain mean of the times (`arrayAvg`), null without samples;
//   then the bins are `[[0, 0], [60, 0]]` (min and max 0, one bin, the 60 s fallback width).

/// `ceil(cbrt(samples))` clamped to 1..=60, in exact integer arithmetic: 1 plus the number of
/// `k` in 1..=59 with `k³ < samples`.
fn auto_bin_count_sql(samples: &str) -> String {
    let mut terms = vec!["1".to_owned()];
    terms.extend((1..60i64).map(|k| format!("if({samples} > {}, 1, 0)", k * k * k)));
    terms.join(" + ")
}

fn compile_time_to_convert(funnel: &Funnel) -> Compiled {
    let mut whole = funnel.clone();
    whole.breakdown = None;
    let actors = actors_query(&whole);
    let time: Vec<String> = (funnel.from_step + 1..=funnel.to_step)
        .map(|step| format!("time_{step}"))
        .collect();
    let bins = funnel
        .bin_count
        .map_or_else(|| auto_bin_count_sql("samples"), |count| count.to_string());
    let query = format!(
        "WITH timings AS (SELECT {time} AS timing FROM ({actors}) WHERE reached >= {to}), \
         params AS (SELECT count() AS samples, floor(min(timing)) AS low, ceil(max(timing)) AS high, \
         avg(timing) AS average FROM timings), \
         shape AS (SELECT samples, low, average, {bins} AS bins, \
         if(ceil((high - low) / ({bins})) > 0, ceil((high - low) / ({bins})), 60) AS width FROM params) \
         SELECT floor((timing - shape.low) / shape.width) AS bin, count() AS actors, \
         shape.low AS low, shape.width AS width, shape.bins AS bins, shape.average AS average \
         FROM timings CROSS JOIN shape \
         GROUP BY bin, low, width, bins, average ORDER BY bin LIMIT 100",
        time = time.join(" + "),
        to = funnel.to_step,
    );
    Compiled::new(vec![query], move |tables| {
        let table = tables.into_iter().next().unwrap_or_default();
        Ok(json!({
            "results": assemble_time_to_convert(&table),
            "isUdf": true,
        }))
    })
}

fn assemble_time_to_convert(table: &Table) -> Value {
    let Some(first) = table.rows.first() else {
        return json!({"average_conversion_time": null, "bins": [[0, 0], [60, 0]]});
    };
    let low = number(first.get(2)).unwrap_or(0.0);
    let width = number(first.get(3)).filter(|w| *w > 0.0).unwrap_or(60.0);
    // At most 90 bins (a custom count is clamped to 90, an automatic one to 60).
    let bin_count = count(first.get(4)).clamp(1, 90) as usize;
    let mut counts = vec![0u64; bin_count + 1];
    for row in &table.rows {
        if let Some(bin) = number(row.first()).filter(|bin| *bin >= 0.0)
            && let Some(slot) = counts.get_mut(bin as usize)
        {
            *slot += count(row.get(1));
        }
    }
    let bins: Vec<Value> = counts
        .iter()
        .enumerate()
        .map(|(n, actors)| json!([(low + n as f64 * width).round() as i64, actors]))
        .collect();
    json!({
        "average_conversion_time": seconds(first.get(5)),
        "bins": bins,
    })
}

fn number(value: Option<&Value>) -> Option<f64> {
    match value? {
        Value::Number(number) => number.as_f64(),
        Value::String(text) => text.parse().ok(),
        _ => None,
    }
}

fn count(value: Option<&Value>) -> u64 {
    number(value).map_or(0, |value| value.max(0.0) as u64)
}

fn seconds(value: Option<&Value>) -> Value {
    number(value)
        .filter(|value| value.is_finite())
        .map_or(Value::Null, |value| json!(value))
}

/// One step array from a row laid out as [count_0.., average_1.., median_1..] from `offset`.
fn step_array(
    row: &[Value],
    offset: usize,
    steps: &[Step],
    order: Order,
    breakdown: Option<(&Value, &Value)>,
) -> Vec<Value> {
    let total = steps.len();
    steps
        .iter()
        .enumerate()
        .map(|(index, step)| {
            let (action_id, name, custom_name) = if order == Order::Unordered {
                let plural = if index == 0 { "" } else { "s" };
                (
                    Value::Null,
                    json!(format!("Completed {} step{plural}", index + 1)),
                    Value::Null,
                )
            } else {
                (
                    json!(step.event),
                    json!(step.event),
                    json!(step.custom_name),
                )
            };
            let (average, median) = if index == 0 {
                (Value::Null, Value::Null)
            } else {
                (
                    seconds(row.get(offset + total + index - 1)),
                    seconds(row.get(offset + 2 * total - 2 + index)),
                )
            };
            let mut result = json!({
                "action_id": action_id,
                "name": name,
                "custom_name": custom_name,
                "order": index,
                "people": [],
                "count": count(row.get(offset + index)),
                "type": "events",
                "average_conversion_time": average,
                "median_conversion_time": median,
            });
            if let (Some((shown, value)), Some(object)) = (breakdown, result.as_object_mut()) {
                object.insert("breakdown".into(), shown.clone());
                object.insert("breakdown_value".into(), value.clone());
            }
            result
        })
        .collect()
}

fn assemble(table: &Table, steps: &[Step], order: Order, breakdown: Option<&Breakdown>) -> Value {
    let Some(breakdown) = breakdown else {
        return match table.rows.first() {
            // No actor entered the funnel: PostHog answers an empty list.
            Some(row) if count(row.first()) > 0 => {
                Value::Array(step_array(row, 0, steps, order, None))
            }
            _ => json!([]),
        };
    };
    let other_bucket = breakdown.limit + 1;
    let results: Vec<Value> = table
        .rows
        .iter()
        .filter(|row| count(row.get(2)) > 0)
        .map(|row| {
            let label = if count(row.first()) == other_bucket {
                OTHER.to_owned()
            } else {
                row.get(1)
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned()
            };
            let value = if breakdown.as_list {
                json!([label])
            } else {
                json!(label)
            };
            Value::Array(step_array(row, 2, steps, order, Some((&value, &value))))
        })
        .collect();
    Value::Array(results)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ctx() -> Context {
        crate::testing::context(chrono_tz::UTC, "2024-01-10T12:00:00Z", 0)
    }

    fn node(extra: Value) -> Value {
        let mut node = json!({
            "kind": "FunnelsQuery",
            "series": [
                {"kind": "EventsNode", "event": "signup"},
                {"kind": "EventsNode", "event": "pay", "custom_name": "Paid"},
            ],
            "dateRange": {"date_from": "2024-01-01", "date_to": "2024-01-09"},
        });
        if let (Some(target), Value::Object(extra)) = (node.as_object_mut(), extra) {
            target.extend(extra);
        }
        node
    }

    fn error(node: &Value) -> Invalid {
        match compile(node, &ctx()) {
            Ok(_) => panic!("expected an error for {node}"),
            Err(error) => error,
        }
    }

    #[test]
    fn invalid_nodes_name_the_field() {
        let one_step =
            json!({"kind": "FunnelsQuery", "series": [{"kind": "EventsNode", "event": "a"}]});
        assert_eq!(error(&one_step).attr, "series");
        assert_eq!(
            error(&node(
                json!({"funnelsFilter": {"funnelWindowIntervalUnit": "fortnight"}})
            ))
            .attr,
            "funnelsFilter.funnelWindowIntervalUnit"
        );
        assert_eq!(
            error(&node(
                json!({"funnelsFilter": {"funnelOrderType": "random"}})
            ))
            .attr,
            "funnelsFilter.funnelOrderType"
        );
        assert_eq!(
            error(&node(json!({"funnelsFilter": {"funnelWindowInterval": 0}}))).attr,
            "funnelsFilter.funnelWindowInterval"
        );
        assert_eq!(
            error(&node(json!({"funnelsFilter": {"exclusions": [
                {"kind": "EventsNode", "event": "x", "funnelFromStep": 1, "funnelToStep": 1}
            ]}})))
            .attr,
            "funnelsFilter.exclusions[0].funnelFromStep"
        );
        assert_eq!(
            error(&node(json!({"funnelsFilter": {"exclusions": [
                {"kind": "EventsNode", "event": "x", "funnelFromStep": 0, "funnelToStep": 0}
            ]}})))
            .attr,
            "funnelsFilter.exclusions[0].funnelToStep"
        );
        assert_eq!(
            error(&node(json!({"dateRange": {"date_from": "yesterday-ish"}}))).attr,
            "dateRange.date_from"
        );
        assert_eq!(
            error(&node(
                json!({"breakdownFilter": {"breakdown": "$browser", "breakdown_type": "cohort"}})
            ))
            .attr,
            "breakdownFilter.breakdown_type"
        );
        assert_eq!(
            error(&node(
                json!({"funnelsFilter": {"funnelAggregateByHogQL": "1); select 1"}})
            ))
            .attr,
            "funnelsFilter.funnelAggregateByHogQL"
        );
        assert_eq!(
            error(&node(json!({"series": [
                {"kind": "EventsNode", "event": "a"},
                {"kind": "ActionsNode", "id": 3}
            ]})))
            .attr,
            "series[1].kind"
        );
    }

    #[test]
    fn invalid_views_name_the_field() {
        let three = json!({"series": [
            {"kind": "EventsNode", "event": "a"},
            {"kind": "EventsNode", "event": "b"},
            {"kind": "EventsNode", "event": "c"}
        ]});
        let with = |extra: Value| {
            let mut node = node(three.clone());
            if let (Some(target), Value::Object(extra)) = (node.as_object_mut(), extra) {
                target.extend(extra);
            }
            node
        };
        let cases = [
            (
                json!({"funnelsFilter": {"funnelVizType": "sideways"}}),
                "funnelsFilter.funnelVizType",
            ),
            (
                json!({"funnelsFilter": {"funnelVizType": "trends", "funnelToStep": 0}}),
                "funnelsFilter.funnelToStep",
            ),
            (
                json!({"funnelsFilter": {"funnelVizType": "trends", "funnelToStep": 3}}),
                "funnelsFilter.funnelToStep",
            ),
            (
                json!({"funnelsFilter": {"funnelFromStep": 2}}),
                "funnelsFilter.funnelFromStep",
            ),
            (
                json!({"funnelsFilter": {"funnelFromStep": 1, "funnelToStep": 1}}),
                "funnelsFilter.funnelToStep",
            ),
            (
                json!({"funnelsFilter": {"funnelVizType": "time_to_convert", "binCount": "many"}}),
                "funnelsFilter.binCount",
            ),
            (
                json!({"funnelsFilter": {"funnelVizType": "trends"}, "breakdownFilter": {"breakdown": "$browser"}}),
                "breakdownFilter.breakdown",
            ),
            (
                json!({"funnelsFilter": {"funnelVizType": "trends"}, "interval": "fortnight"}),
                "interval",
            ),
        ];
        for (extra, attr) in cases {
            assert_eq!(error(&with(extra.clone())).attr, attr, "{extra}");
        }
    }

    #[test]
    fn trends_cut_the_funnel_and_bucket_entries() {
        let compiled = compile(
            &node(json!({
                "series": [
                    {"kind": "EventsNode", "event": "a"},
                    {"kind": "EventsNode", "event": "b"},
                    {"kind": "EventsNode", "event": "c"}
                ],
                "funnelsFilter": {"funnelVizType": "trends", "funnelToStep": 1},
            })),
            &ctx(),
        )
        .unwrap_or_else(|error| panic!("{error:?}"));
        assert_eq!(compiled.queries.len(), 1);
        let query = &compiled.queries[0];
        assert!(
            query.contains("aggregateFunnel(2, 1209600, 'ordered'"),
            "{query}"
        );
        assert!(!query.contains("'c'"), "{query}");
        assert!(
            query.contains("toStartOfDay(toTimeZone(timestamp, 'UTC')) AS period"),
            "{query}"
        );
        assert!(
            query.contains("if(funnel_events.period = entries.period, 0, 4611686018427387904)")
        );
        assert!(query.contains(
            "countIf(reached >= 0) AS reached_from, countIf(reached >= 1) AS reached_to"
        ));
        assert!(query.ends_with("LIMIT 10"), "{query}");

        let table = Table {
            rows: vec![
                vec![json!("2024-01-02T00:00:00Z"), json!(3), json!(1)],
                vec![json!("2024-01-05 00:00:00"), json!(8), json!(8)],
                vec![json!("2024-01-06 00:00:00"), json!(0), json!(0)],
            ],
            ..Default::default()
        };
        let response = compiled
            .assemble(vec![table])
            .unwrap_or_else(|error| panic!("{error:?}"));
        assert_eq!(
            response["results"],
            json!([{
                "count": 9,
                "data": [0.0, 33.33, 0.0, 0.0, 100.0, 0.0, 0.0, 0.0, 0.0],
                "days": ["2024-01-01", "2024-01-02", "2024-01-03", "2024-01-04", "2024-01-05",
                         "2024-01-06", "2024-01-07", "2024-01-08", "2024-01-09"],
                "labels": ["1-Jan-2024", "2-Jan-2024", "3-Jan-2024", "4-Jan-2024", "5-Jan-2024",
                           "6-Jan-2024", "7-Jan-2024", "8-Jan-2024", "9-Jan-2024"],
            }])
        );
        assert_eq!(round_2(2.0 / 3.0 * 100.0), 66.67);
        assert_eq!(round_2(0.125), 0.12);
    }

    #[test]
    fn trends_of_all_time_start_at_the_earliest_event() {
        let compiled = compile(
            &node(json!({
                "funnelsFilter": {"funnelVizType": "trends"},
                "interval": "hour",
                "dateRange": {"date_from": "all", "date_to": "2024-01-01T02:30:00", "explicitDate": true},
            })),
            &ctx(),
        )
        .unwrap_or_else(|error| panic!("{error:?}"));
        assert_eq!(compiled.queries[0], EARLIEST_QUERY);
        let earliest = Table {
            rows: vec![vec![json!("2024-01-01T00:10:00Z")]],
            ..Default::default()
        };
        let response = compiled
            .assemble(vec![earliest, Table::default()])
            .unwrap_or_else(|error| panic!("{error:?}"));
        assert_eq!(response["results"][0]["count"], json!(3));
        assert_eq!(
            response["results"][0]["days"][2],
            json!("2024-01-01 02:00:00")
        );
        assert_eq!(response["results"][0]["labels"][2], json!("1-Jan-2024"));
    }

    #[test]
    fn time_to_convert_bins_as_posthog() {
        // PostHog's test_auto_bin_count_single_step: times 3600, 2220 and 82800 s, 2 bins.
        let compiled = compile(
            &node(json!({"funnelsFilter": {"funnelVizType": "time_to_convert"}})),
            &ctx(),
        )
        .unwrap_or_else(|error| panic!("{error:?}"));
        let query = &compiled.queries[0];
        assert!(query.contains("SELECT time_1 AS timing FROM"), "{query}");
        assert!(query.contains("WHERE reached >= 1"), "{query}");
        assert!(query.contains("if(samples > 205379, 1, 0)"), "{query}");
        let table = Table {
            rows: vec![
                vec![
                    json!(0.0),
                    json!(2),
                    json!(2220.0),
                    json!(40290.0),
                    json!(2),
                    json!(29540.0),
                ],
                vec![
                    json!(2.0),
                    json!(1),
                    json!(2220.0),
                    json!(40290.0),
                    json!(2),
                    json!(29540.0),
                ],
            ],
            ..Default::default()
        };
        let response = compiled
            .assemble(vec![table])
            .unwrap_or_else(|error| panic!("{error:?}"));
        assert_eq!(
            response["results"],
            json!({"average_conversion_time": 29540.0, "bins": [[2220, 2], [42510, 0], [82800, 1]]})
        );
        let custom = compile(
            &node(json!({"funnelsFilter": {"funnelVizType": "time_to_convert", "binCount": 500}})),
            &ctx(),
        )
        .unwrap_or_else(|error| panic!("{error:?}"));
        assert!(
            custom.queries[0].contains("90 AS bins"),
            "{}",
            custom.queries[0]
        );
        assert_eq!(
            custom
                .assemble(vec![Table::default()])
                .unwrap_or_else(|error| panic!("{error:?}"))["results"],
            json!({"average_conversion_time": null, "bins": [[0, 0], [60, 0]]})
        );
    }

    #[test]
    fn window_and_masks_in_the_query() {
        let compiled = compile(
            &node(json!({
                "funnelsFilter": {
                    "funnelWindowInterval": 2,
                    "funnelWindowIntervalUnit": "hour",
                    "exclusions": [{"kind": "EventsNode", "event": "quit", "funnelFromStep": 0, "funnelToStep": 1}]
                }
            })),
            &ctx(),
        )
        .unwrap_or_else(|error| panic!("{error:?}"));
        let query = &compiled.queries[0];
        assert!(query.contains("aggregateFunnel(2, 7200, 'ordered', timestamp, if((event = 'signup'), 1, 0) + if((event = 'pay'), 2, 0), if((event = 'quit'), 1, 0))"), "{query}");
        assert!(
            query.contains("(event = 'quit')) GROUP BY actor"),
            "{query}"
        );
        assert!(query.ends_with("LIMIT 1"), "{query}");
    }

    #[test]
    fn strict_funnels_read_every_event() {
        let compiled = compile(
            &node(json!({"funnelsFilter": {"funnelOrderType": "strict"}})),
            &ctx(),
        )
        .unwrap_or_else(|error| panic!("{error:?}"));
        assert!(
            !compiled.queries[0].contains("OR (event"),
            "{}",
            compiled.queries[0]
        );
    }

    #[test]
    fn steps_are_assembled_with_cumulative_counts() {
        let compiled =
            compile(&node(json!({})), &ctx()).unwrap_or_else(|error| panic!("{error:?}"));
        let table = Table {
            rows: vec![vec![json!(10), json!(4), json!(12.5), json!(10.0)]],
            ..Default::default()
        };
        let response = compiled
            .assemble(vec![table])
            .unwrap_or_else(|error| panic!("{error:?}"));
        assert_eq!(
            response["results"],
            json!([
                {"action_id": "signup", "name": "signup", "custom_name": null, "order": 0, "people": [], "count": 10,
                 "type": "events", "average_conversion_time": null, "median_conversion_time": null},
                {"action_id": "pay", "name": "pay", "custom_name": "Paid", "order": 1, "people": [], "count": 4,
                 "type": "events", "average_conversion_time": 12.5, "median_conversion_time": 10.0},
            ])
        );
        let empty = compile(&node(json!({})), &ctx()).unwrap_or_else(|error| panic!("{error:?}"));
        let zero = Table {
            rows: vec![vec![json!(0), json!(0), Value::Null, Value::Null]],
            ..Default::default()
        };
        assert_eq!(
            empty
                .assemble(vec![zero])
                .unwrap_or_else(|error| panic!("{error:?}"))["results"],
            json!([])
        );
    }

    #[test]
    fn breakdown_buckets_past_the_limit_are_other() {
        let compiled = compile(
            &node(json!({
                "funnelsFilter": {"funnelOrderType": "unordered"},
                "breakdownFilter": {"breakdown": ["$browser"], "breakdown_limit": 1}
            })),
            &ctx(),
        )
        .unwrap_or_else(|error| panic!("{error:?}"));
        assert!(compiled.queries[0].contains("argMinIf(properties['$browser'], timestamp"));
        let table = Table {
            rows: vec![
                vec![
                    json!(1),
                    json!("Chrome"),
                    json!(3),
                    json!(2),
                    json!(5.0),
                    json!(5.0),
                ],
                vec![
                    json!(2),
                    json!(""),
                    json!(2),
                    json!(0),
                    Value::Null,
                    Value::Null,
                ],
            ],
            ..Default::default()
        };
        let response = compiled
            .assemble(vec![table])
            .unwrap_or_else(|error| panic!("{error:?}"));
        let results = &response["results"];
        assert_eq!(results[0][0]["breakdown_value"], json!(["Chrome"]));
        assert_eq!(results[0][1]["name"], json!("Completed 2 steps"));
        assert_eq!(results[0][1]["count"], json!(2));
        assert_eq!(results[1][0]["breakdown"], json!(["Other"]));
        assert_eq!(results[1][1]["average_conversion_time"], Value::Null);
    }
}
