//! Reading and checking a TrendsQuery node into a [`Plan`]: the series, breakdown (read by
//! [`crate::breakdown`]), periods (with the compared one), formulas and the legacy `filter`
//! echoed in every result.

use serde_json::{Map, Value, json};

use super::formula::Expression;
use super::{
    CUMULATIVE_DISPLAY, Formula, MAX_ACTIVE_USER_BUCKETS, Period, Plan, Series,
    TOTAL_VALUE_DISPLAYS,
};
use crate::breakdown::{self, Breakdown, Insight};
use crate::date_range::{self, Interval, Range};
use crate::math::{self, Math};
use crate::series::{self, EventSeries};
use crate::{Context, Invalid, filters};

impl Plan {
    pub(super) fn parse(node: &Value, ctx: &Context) -> Result<Plan, Invalid> {
        let interval = Interval::from_field(node.get("interval"), Interval::Day, "interval")?;
        let date_range = node.get("dateRange");
        let range = date_range::resolve(date_range, interval, ctx, "dateRange")?;
        let explicit = date_range::explicit_date(date_range);
        let from_all = range.from_all();

        if !matches!(
            node.get("aggregation_group_type_index"),
            None | Some(Value::Null)
        ) {
            return Err(Invalid::new(
                "aggregation_group_type_index",
                "Aggregating by groups is not supported.",
            ));
        }
        let series = parse_series(node, ctx)?;
        let node_condition = filters::node_properties(node, ctx)?;

        let trends_filter = object_field(node, "trendsFilter")?;
        let display = match trends_filter.and_then(|filter| filter.get("display")) {
            None | Some(Value::Null) => "ActionsLineGraph",
            Some(Value::String(display)) => display.as_str(),
            Some(_) => {
                return Err(Invalid::new(
                    "trendsFilter.display",
                    "display must be a string.",
                ));
            }
        };
        let total_value = TOTAL_VALUE_DISPLAYS.contains(&display);
        let cumulative = display == CUMULATIVE_DISPLAY;
        let formulas = parse_formulas(trends_filter, series.len())?;
        let breakdown = breakdown::parse(node, Insight::Trends, ctx)?;
        refuse_binned_quantiles(node, breakdown.as_ref())?;
        let cohort_conditions = breakdown
            .as_ref()
            .and_then(|breakdown| breakdown.cohorts())
            .unwrap_or_default()
            .iter()
            .map(|cohort| cohort.events_condition(ctx))
            .collect::<Result<Vec<_>, _>>()?;

        let has_active_users = series
            .iter()
            .any(|series| matches!(series.math.math, Math::ActiveUsers { .. }));
        if from_all && has_active_users && !total_value {
            return Err(Invalid::new(
                "dateRange.date_from",
                "date_from all cannot be used with weekly_active or monthly_active math: give a start date.",
            ));
        }

        let mut periods = vec![period(range, explicit, interval, ctx, None, from_all)?];
        if let Some(compare) = object_field(node, "compareFilter")? {
            let wanted = compare
                .get("compare")
                .and_then(Value::as_bool)
                .unwrap_or(false);
            // PostHog ignores compare for "all time".
            if wanted && !from_all {
                let previous = match compare.get("compare_to") {
                    None | Some(Value::Null) => range.previous_period(interval, date_range, ctx),
                    Some(Value::String(amount)) => {
                        range.shifted_back(amount, ctx, "compareFilter.compare_to")?
                    }
                    Some(_) => {
                        return Err(Invalid::new(
                            "compareFilter.compare_to",
                            "compare_to must be a string such as -1w.",
                        ));
                    }
                };
                periods[0].compare_label = Some("current");
                periods.push(period(
                    previous,
                    explicit,
                    interval,
                    ctx,
                    Some("previous"),
                    false,
                )?);
            }
        }
        if has_active_users && !total_value {
            for period in &periods {
                if period
                    .buckets
                    .as_ref()
                    .is_some_and(|buckets| buckets.len() > MAX_ACTIVE_USER_BUCKETS)
                {
                    return Err(Invalid::new(
                        "interval",
                        format!(
                            "weekly/monthly active users are computed for at most {MAX_ACTIVE_USER_BUCKETS} buckets: use a larger interval or a shorter range."
                        ),
                    ));
                }
            }
        }

        let filter = legacy_filter(node, interval, &range, display, ctx);
        Ok(Plan {
            ctx: ctx.clone(),
            interval,
            series,
            periods,
            node_condition,
            breakdown,
            cohort_conditions,
            total_value,
            cumulative,
            formulas,
            from_all,
            filter,
        })
    }
}

fn period(
    range: Range,
    explicit: bool,
    interval: Interval,
    ctx: &Context,
    compare_label: Option<&'static str>,
    from_all: bool,
) -> Result<Period, Invalid> {
    let filter_from = if from_all {
        range.from
    } else {
        range.counted_from(explicit, interval, ctx)
    };
    let buckets = if from_all {
        None
    } else {
        Some(range.buckets(interval, ctx, "interval")?)
    };
    Ok(Period {
        range,
        filter_from,
        buckets,
        compare_label,
    })
}

fn object_field<'a>(node: &'a Value, key: &str) -> Result<Option<&'a Value>, Invalid> {
    match node.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(value @ Value::Object(_)) => Ok(Some(value)),
        Some(_) => Err(Invalid::new(key, format!("{key} must be an object."))),
    }
}

/// PostHog refuses a median or percentile of a property with histogram bins (it merges each
/// bin from its values' results, which those cannot be).
fn refuse_binned_quantiles(node: &Value, breakdown: Option<&Breakdown>) -> Result<(), Invalid> {
    let binned = breakdown
        .and_then(Breakdown::properties)
        .is_some_and(|properties| properties.items.iter().any(|item| item.bins.is_some()));
    if !binned {
        return Ok(());
    }
    for (index, item) in series::entries(node, "A trend needs at least one series.")?
        .iter()
        .enumerate()
    {
        if let Some(math @ ("median" | "p75" | "p90" | "p95" | "p99")) =
            item.get("math").and_then(Value::as_str)
        {
            return Err(Invalid::new(
                format!("series[{index}].math"),
                format!(
                    "{math} is not supported when breakdown values are grouped into bins: use avg, or turn off the bins."
                ),
            ));
        }
    }
    Ok(())
}

fn parse_series(node: &Value, ctx: &Context) -> Result<Vec<Series>, Invalid> {
    series::entries(node, "A trend needs at least one series.")?
        .iter()
        .enumerate()
        .map(|(index, item)| {
            let attr = format!("series[{index}]");
            let events = EventSeries::read(item, index, ctx)?;
            let math = math::parse(item, ctx, &attr)?;
            let label = events.label();
            let field = |key: &str| item.get(key).cloned().unwrap_or(Value::Null);
            let mut action = Map::new();
            action.insert("id".into(), events.entity_id());
            action.insert("type".into(), json!(events.entity_type()));
            action.insert("order".into(), json!(index));
            action.insert("name".into(), Value::String(label.clone()));
            for key in [
                "custom_name",
                "math",
                "math_property",
                "math_hogql",
                "math_group_type_index",
            ] {
                action.insert(key.into(), field(key));
            }
            action.insert("properties".into(), json!({}));
            Ok(Series {
                math,
                condition: events.condition,
                label,
                action,
            })
        })
        .collect()
}

/// `trendsFilter.formulaNodes` (or `formulas`, or the deprecated `formula`).
fn parse_formulas(
    trends_filter: Option<&Value>,
    series_count: usize,
) -> Result<Vec<Formula>, Invalid> {
    let Some(filter) = trends_filter else {
        return Ok(Vec::new());
    };
    let mut sources: Vec<(String, Option<String>, String)> = Vec::new();
    if let Some(Value::Array(nodes)) = filter.get("formulaNodes") {
        for (index, node) in nodes.iter().enumerate() {
            let attr = format!("trendsFilter.formulaNodes[{index}].formula");
            let text = node
                .get("formula")
                .and_then(Value::as_str)
                .ok_or_else(|| Invalid::new(&attr, "A formula node needs a formula."))?;
            let custom = node
                .get("custom_name")
                .and_then(Value::as_str)
                .map(str::to_string);
            sources.push((text.to_string(), custom, attr));
        }
    }
    if sources.is_empty()
        && let Some(Value::Array(list)) = filter.get("formulas")
    {
        for (index, item) in list.iter().enumerate() {
            let attr = format!("trendsFilter.formulas[{index}]");
            let text = item
                .as_str()
                .ok_or_else(|| Invalid::new(&attr, "A formula must be a string."))?;
            sources.push((text.to_string(), None, attr));
        }
    }
    if sources.is_empty()
        && let Some(Value::String(text)) = filter.get("formula")
    {
        sources.push((text.clone(), None, "trendsFilter.formula".to_string()));
    }
    sources
        .into_iter()
        .filter(|(text, _, _)| !text.trim().is_empty())
        .map(|(text, custom, attr)| {
            let expression = Expression::parse(&text, series_count)
                .map_err(|problem| Invalid::new(attr, problem))?;
            let label = custom.unwrap_or_else(|| format!("Formula ({text})"));
            Ok(Formula { expression, label })
        })
        .collect()
}

fn legacy_filter(
    node: &Value,
    interval: Interval,
    range: &Range,
    display: &str,
    ctx: &Context,
) -> Value {
    let mut filter = Map::new();
    filter.insert("insight".into(), json!("TRENDS"));
    filter.insert("interval".into(), json!(interval.name()));
    let date_from = if range.from_all() {
        "all".to_string()
    } else {
        date_range::iso(range.from, ctx)
    };
    filter.insert("date_from".into(), json!(date_from));
    filter.insert("date_to".into(), json!(date_range::iso(range.to, ctx)));
    filter.insert("entity_type".into(), json!("events"));
    filter.insert("display".into(), json!(display));
    for (key, legacy) in [
        ("properties", "properties"),
        ("filterTestAccounts", "filter_test_accounts"),
    ] {
        if let Some(value) = node.get(key).filter(|value| !value.is_null()) {
            filter.insert(legacy.into(), value.clone());
        }
    }
    if let Some(Value::Object(breakdown)) = node.get("breakdownFilter") {
        for (key, value) in breakdown.iter().filter(|(_, value)| !value.is_null()) {
            filter.insert(key.clone(), value.clone());
        }
    }
    Value::Object(filter)
}
