//! Reading and checking a FunnelsQuery node into a [`Funnel`]: steps, exclusions, the
//! conversion window, the view and its step range, the breakdown (read by [`crate::breakdown`]).

use serde_json::{Map, Value};

use super::{Breakdown, Exclusion, Funnel, MAX_STEPS, Order, Step, Viz};
use crate::breakdown::{self, Insight};
use crate::date_range::{self, Interval};
use crate::{Context, Invalid, actions, filters, sql_text};

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

/// What a step or an exclusion names: its event (`None`: any), or the action (id and name) of
/// an `ActionsNode`; and the condition of it and its properties.
type Entity = (Option<String>, Option<(i64, String)>, String);

/// The condition of an `EventsNode` or `ActionsNode` (a step or an exclusion): its event (or
/// its action's condition) and its properties.
fn entity_condition(entity: &Value, ctx: &Context, attr: &str) -> Result<Entity, Invalid> {
    let map = object(Some(entity), attr)?;
    let mut parts = Vec::new();
    let mut action = None;
    match text(map, "kind", &format!("{attr}.kind"))? {
        None | Some("EventsNode") | Some("FunnelExclusionEventsNode") => {}
        Some("ActionsNode") | Some("FunnelExclusionActionsNode") => {
            let named = actions::named(entity, ctx, attr)?;
            let condition = actions::condition(named, ctx, attr)?;
            if condition != "true" {
                parts.push(condition);
            }
            action = Some((named.id, named.name.clone()));
        }
        Some(other) => {
            return Err(Invalid::new(
                format!("{attr}.kind"),
                format!("{other} is not supported as a funnel step."),
            ));
        }
    }
    let event = match action {
        Some(_) => None,
        None => text(map, "event", &format!("{attr}.event"))?.map(str::to_owned),
    };
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
    Ok((event, action, condition))
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

pub(super) fn parse(node: &Value, ctx: &Context) -> Result<Funnel, Invalid> {
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
        let (event, action, condition) = entity_condition(entity, ctx, &attr)?;
        let custom_name = text(
            object(Some(entity), &attr)?,
            "custom_name",
            &format!("{attr}.custom_name"),
        )?
        .map(str::to_owned);
        steps.push(Step {
            event,
            action,
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
    let properties = filters::node_properties(node, ctx)?;
    if properties != "true" {
        scope.push(properties);
    }

    let breakdown = parse_breakdown(node, funnels_filter, &actor, ctx)?;
    if viz == Viz::Trends
        && let Some(breakdown) = &breakdown
    {
        return Err(Invalid::new(
            breakdown.by.attr,
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
        let (_, _, condition) = entity_condition(entity, ctx, &attr)?;
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
    actor: &str,
    ctx: &Context,
) -> Result<Option<Breakdown>, Invalid> {
    let Some(by) = breakdown::parse(node, Insight::Funnels, ctx)? else {
        return Ok(None);
    };
    let last_touch = choice(
        funnels_filter,
        "breakdownAttributionType",
        "funnelsFilter.breakdownAttributionType",
        &[("first_touch", false), ("last_touch", true)],
    )?;
    let cohort_conditions = match by.cohorts() {
        Some(_) if actor != "person_id" => {
            return Err(Invalid::new(
                "breakdownFilter.breakdown_type",
                "Cohort breakdowns need persons as the funnel's actors: remove funnelAggregateByHogQL.",
            ));
        }
        Some(cohorts) => cohorts
            .iter()
            .map(|cohort| cohort.condition("actor", ctx))
            .collect::<Result<Vec<_>, _>>()?,
        None => Vec::new(),
    };
    Ok(Some(Breakdown {
        by,
        last_touch,
        cohort_conditions,
    }))
}
