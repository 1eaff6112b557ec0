//! Reading and checking a StickinessQuery node into a [`Plan`].

use serde::Deserialize;
use serde::de::IgnoredAny;
use serde_json::Value;

use super::{Criteria, Period, Plan, Series};
use crate::date_range::{self, Interval, Range};
use crate::series::{self, EventSeries};
use crate::{Context, Invalid, filters};

/// `stickinessFilter`; the display settings are accepted and left to the frontend.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct StickinessFilter {
    computed_as: Option<ComputedAs>,
    stickiness_criteria: Option<StickinessCriteria>,
    #[serde(rename = "display")]
    _display: Option<IgnoredAny>,
    #[serde(rename = "hiddenLegendIndexes")]
    _hidden_legend_indexes: Option<IgnoredAny>,
    #[serde(rename = "legendPosition")]
    _legend_position: Option<IgnoredAny>,
    #[serde(rename = "resultCustomizationBy")]
    _result_customization_by: Option<IgnoredAny>,
    #[serde(rename = "resultCustomizations")]
    _result_customizations: Option<IgnoredAny>,
    #[serde(rename = "showLegend")]
    _show_legend: Option<IgnoredAny>,
    #[serde(rename = "showMultipleYAxes")]
    _show_multiple_y_axes: Option<IgnoredAny>,
    #[serde(rename = "showValuesOnSeries")]
    _show_values_on_series: Option<IgnoredAny>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
enum ComputedAs {
    NonCumulative,
    Cumulative,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct StickinessCriteria {
    operator: CriteriaOperator,
    value: u64,
}

#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(rename_all = "snake_case")]
enum CriteriaOperator {
    Gte,
    Lte,
    Exact,
}

/// `compareFilter`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct CompareFilter {
    compare: Option<bool>,
    compare_to: Option<String>,
}

impl Plan {
    pub(super) fn parse(node: &Value, ctx: &Context) -> Result<Plan, Invalid> {
        let interval = Interval::from_field(node.get("interval"), Interval::Day, "interval")?;
        if !matches!(node.get("intervalCount"), None | Some(Value::Null)) {
            return Err(Invalid::new(
                "intervalCount",
                "intervalCount (intervals per period, for cohorts) is not supported: leave it out.",
            ));
        }
        if !matches!(
            node.get("aggregation_group_type_index"),
            None | Some(Value::Null)
        ) {
            return Err(Invalid::new(
                "aggregation_group_type_index",
                "Aggregating by groups is not supported.",
            ));
        }
        let date_range = node.get("dateRange");
        let range = date_range::resolve(date_range, interval, ctx, "dateRange")?;
        if range.from_all() {
            return Err(Invalid::new(
                "dateRange.date_from",
                "Stickiness needs a bounded date range: date_from \"all\" is not supported.",
            ));
        }
        let explicit = date_range::explicit_date(date_range);

        let series = series::entries(node, "Stickiness needs at least one series.")?
            .iter()
            .enumerate()
            .map(|(index, item)| {
                Ok(Series {
                    events: EventSeries::read(item, index, ctx)?,
                    actor: actor(item, index, ctx)?,
                })
            })
            .collect::<Result<Vec<_>, Invalid>>()?;
        let node_condition = filters::node_properties(node, ctx)?;

        let filter: StickinessFilter = series::settings(node, "stickinessFilter")?;
        let criteria = match filter.stickiness_criteria {
            None => None,
            Some(StickinessCriteria { value: 0, .. }) => {
                return Err(Invalid::new(
                    "stickinessFilter.stickinessCriteria.value",
                    "value must be at least 1.",
                ));
            }
            Some(StickinessCriteria { operator, value }) => Some(Criteria {
                operator: match operator {
                    CriteriaOperator::Gte => ">=",
                    CriteriaOperator::Lte => "<=",
                    CriteriaOperator::Exact => "=",
                },
                value,
            }),
        };

        let mut periods = vec![period(range, explicit, interval, ctx, None)?];
        let compare: CompareFilter = series::settings(node, "compareFilter")?;
        if compare.compare == Some(true) {
            let previous = match &compare.compare_to {
                None => range.previous_period(interval, date_range, ctx),
                Some(amount) => range.shifted_back(amount, ctx, "compareFilter.compare_to")?,
            };
            periods[0].compare_label = Some("current");
            periods.push(period(previous, explicit, interval, ctx, Some("previous"))?);
        }

        Ok(Plan {
            ctx: ctx.clone(),
            interval,
            series,
            periods,
            node_condition,
            criteria,
            cumulative: filter.computed_as == Some(ComputedAs::Cumulative),
        })
    }
}

fn period(
    range: Range,
    explicit: bool,
    interval: Interval,
    ctx: &Context,
    compare_label: Option<&'static str>,
) -> Result<Period, Invalid> {
    let buckets = range.buckets(interval, ctx, "interval")?;
    Ok(Period {
        range,
        counted_from: range.counted_from(explicit, interval, ctx),
        first_interval: date_range::bucket_start(range.from, interval, ctx)
            .with_timezone(&chrono::Utc),
        intervals: buckets.len(),
        compare_label,
    })
}

/// Who is counted (PostHog's `_aggregation_expressions`): the `math_hogql` expression with
/// `math: hogql`, else the person. Group math is refused.
fn actor(item: &Value, index: usize, ctx: &Context) -> Result<String, Invalid> {
    match item.get("math").and_then(Value::as_str) {
        Some("hogql") => {
            let attr = format!("series[{index}].math_hogql");
            let Some(Value::String(expression)) = item.get("math_hogql") else {
                return Err(Invalid::new(
                    attr,
                    "math hogql needs a math_hogql expression.",
                ));
            };
            (ctx.check_expression)(expression).map_err(|problem| Invalid::new(&attr, problem))?;
            Ok(format!("({expression})"))
        }
        Some("unique_group") => Err(Invalid::new(
            format!("series[{index}].math"),
            "Group math (unique_group) is not supported.",
        )),
        _ => Ok("person_id".to_string()),
    }
}
