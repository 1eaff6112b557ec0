//! Reading and checking a LifecycleQuery node into a [`Plan`].

use chrono::{Duration, Utc};
use serde::Deserialize;
use serde::de::IgnoredAny;
use serde_json::Value;

use super::Plan;
use crate::date_range::{self, Interval};
use crate::series::{self, EventSeries};
use crate::{Context, Invalid, filters};

/// `lifecycleFilter`; the display settings are accepted and left to the frontend.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct LifecycleFilter {
    /// Checked only: PostHog's frontend hides the statuses left out.
    #[serde(rename = "toggledLifecycles")]
    _toggled_lifecycles: Option<Vec<Status>>,
    #[serde(rename = "legendPosition")]
    _legend_position: Option<IgnoredAny>,
    #[serde(rename = "showLegend")]
    _show_legend: Option<IgnoredAny>,
    #[serde(rename = "showPercentagesOnSeries")]
    _show_percentages_on_series: Option<IgnoredAny>,
    #[serde(rename = "showValuesOnSeries")]
    _show_values_on_series: Option<IgnoredAny>,
    #[serde(rename = "stacked")]
    _stacked: Option<IgnoredAny>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "snake_case")]
enum Status {
    New,
    Returning,
    Resurrecting,
    Dormant,
}

impl Plan {
    pub(super) fn parse(node: &Value, ctx: &Context) -> Result<Plan, Invalid> {
        let interval = Interval::from_field(node.get("interval"), Interval::Day, "interval")?;
        for key in ["aggregation_group_type_index", "customAggregationTarget"] {
            if !matches!(
                node.get(key),
                None | Some(Value::Null) | Some(Value::Bool(false))
            ) {
                return Err(Invalid::new(
                    key,
                    "Lifecycles of groups or custom aggregation targets are not supported.",
                ));
            }
        }
        let range = date_range::resolve(node.get("dateRange"), interval, ctx, "dateRange")?;
        if range.from_all() {
            return Err(Invalid::new(
                "dateRange.date_from",
                "Lifecycle needs a bounded date range: date_from \"all\" is not supported.",
            ));
        }
        let buckets = range.buckets(interval, ctx, "interval")?;
        let (Some(first), Some(last)) = (buckets.first(), buckets.last()) else {
            return Err(Invalid::new(
                "dateRange",
                "The date range holds no interval.",
            ));
        };
        // Any instant just before the first interval lies in the one before it.
        let before_first = first.with_timezone(&Utc) - Duration::microseconds(1);
        let activity_from =
            date_range::bucket_start(before_first, interval, ctx).with_timezone(&Utc);
        let activity_to = date_range::next_bucket(*last, interval).with_timezone(&Utc);

        let entries = series::entries(node, "A lifecycle needs a series.")?;
        let mut conditions = Vec::new();
        let mut first = None;
        for (index, item) in entries.iter().enumerate() {
            let series = EventSeries::read(item, index, ctx)?;
            conditions.push(series.condition.clone());
            first.get_or_insert(series);
        }
        let first = first.ok_or_else(|| Invalid::new("series", "A lifecycle needs a series."))?;
        conditions.push(filters::node_properties(node, ctx)?);
        let conditions: Vec<String> = conditions
            .into_iter()
            .filter(|condition| condition != "true")
            .map(|condition| format!("({condition})"))
            .collect();
        let condition = if conditions.is_empty() {
            "true".to_string()
        } else {
            conditions.join(" AND ")
        };

        let _: LifecycleFilter = series::settings(node, "lifecycleFilter")?;
        Ok(Plan {
            ctx: ctx.clone(),
            interval,
            buckets,
            activity_from,
            activity_to,
            condition,
            first,
        })
    }
}
