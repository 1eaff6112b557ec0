//! TrendsQuery (reference 4.6): per series, an aggregation per time bucket (or one total for
//! the total-value displays), optionally broken down by a property, compared with the previous
//! period, and combined by formulas.
//!
//! One dialect query per series and period (current, then previous when comparing), in the
//! order PostHog lists results: every current series, then every previous one. With `dateRange`
//! `all` a first query finds the earliest event, where the buckets start.
//!
//! Breakdowns keep the top `breakdown_limit` values (ranked by the sum of the per-bucket values,
//! or by the total for total-value displays) and aggregate every other value together as
//! `$$_posthog_breakdown_other_$$` in SQL, so non-additive math (dau, medians) stays exact.

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use chrono_tz::Tz;
use serde_json::{Map, Number, Value, json};

use crate::date_range::{self, Interval, Range};
use crate::math::{self, Math, SeriesMath};
use crate::{Compiled, Context, Invalid, Table, filters, sql_text};

/// The breakdown value of everything beyond the top `breakdown_limit` values.
pub const BREAKDOWN_OTHER: &str = "$$_posthog_breakdown_other_$$";
/// Empty or missing breakdown values, shown as `none`.
const BREAKDOWN_NULL: &str = "$$_posthog_breakdown_null_$$";
const BREAKDOWN_NONE_LABEL: &str = "none";
const DEFAULT_BREAKDOWN_LIMIT: u64 = 25;
const MAX_BREAKDOWN_LIMIT: u64 = 1_000;
/// Every query carries this LIMIT (the engine's maximum), never the default 100.
const ROW_LIMIT: usize = 50_000;
/// Weekly/monthly active users compute one column per bucket.
const MAX_ACTIVE_USER_BUCKETS: usize = 1_000;
/// Displays that show one aggregate per series instead of a time series.
const TOTAL_VALUE_DISPLAYS: &[&str] = &[
    "BoldNumber",
    "ActionsPie",
    "ActionsBarValue",
    "ActionsTable",
    "WorldMap",
];
const CUMULATIVE_DISPLAY: &str = "ActionsLineGraphCumulative";

pub fn compile(node: &Value, ctx: &Context) -> Result<Compiled, Invalid> {
    let plan = Plan::parse(node, ctx)?;
    let queries = plan.queries();
    Ok(Compiled::new(queries, move |tables| plan.assemble(tables)))
}

/// One entry of `series`.
struct Series {
    math: SeriesMath,
    /// The event name and the series' own property filters (`true` when none).
    condition: String,
    /// `"All events"` for all events.
    label: String,
    /// The response's `action` object, without `days`.
    action: Map<String, Value>,
}

struct Breakdown {
    /// The value per event, never NULL (missing/empty values are [`BREAKDOWN_NULL`]).
    value: String,
    limit: u64,
    hide_other: bool,
}

/// The current period, or the previous one when comparing.
struct Period {
    range: Range,
    /// Lower bound of the events counted: the start of the first bucket unless `explicitDate`.
    filter_from: DateTime<Utc>,
    /// Known at compile time except for `date_from: all` (they start at the earliest event).
    buckets: Option<Vec<DateTime<Tz>>>,
    compare_label: Option<&'static str>,
}

struct Formula {
    expression: Expression,
    label: String,
}

struct Plan {
    ctx: Context,
    interval: Interval,
    series: Vec<Series>,
    periods: Vec<Period>,
    /// The node's `properties` (`true` when none).
    node_condition: String,
    breakdown: Option<Breakdown>,
    total_value: bool,
    cumulative: bool,
    formulas: Vec<Formula>,
    /// `date_from: all`: the first query looks up the earliest event.
    from_all: bool,
    /// The legacy `filter` dict echoed in every result.
    filter: Value,
}

impl Plan {
    fn parse(node: &Value, ctx: &Context) -> Result<Plan, Invalid> {
        let interval = Interval::from_field(node.get("interval"), Interval::Day, "interval")?;
        let date_range = node.get("dateRange");
        let range = date_range::resolve(date_range, interval, ctx, "dateRange")?;
        let explicit = date_range
            .and_then(|range| range.get("explicitDate"))
            .and_then(Value::as_bool)
            .unwrap_or(false);
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
        let series = parse_series(node.get("series"), ctx)?;
        let node_condition = filters::expression(node.get("properties"), ctx, "properties")?;

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
        let breakdown = parse_breakdown(object_field(node, "breakdownFilter")?, ctx)?;

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
            total_value,
            cumulative,
            formulas,
            from_all,
            filter,
        })
    }

    /// Every query, in the order [`Plan::assemble`] reads their tables.
    fn queries(&self) -> Vec<String> {
        let mut queries = Vec::new();
        if self.from_all {
            queries.push("SELECT min(timestamp) AS earliest FROM events LIMIT 1".to_string());
        }
        for period in &self.periods {
            for series in &self.series {
                queries.push(self.series_query(series, period));
            }
        }
        queries
    }

    /// The shape of a series query's rows.
    fn layout(&self, series: &Series) -> Layout {
        if self.total_value {
            Layout::Total
        } else if matches!(series.math.math, Math::ActiveUsers { .. }) {
            Layout::WideBuckets
        } else {
            Layout::BucketRows
        }
    }

    fn series_query(&self, series: &Series, period: &Period) -> String {
        let ctx = &self.ctx;
        let to = date_range::sql_datetime(period.range.to);
        let bucket = self.interval.bucket_sql("timestamp", ctx);
        // (value columns, lower time bound)
        let (values, lower_bound) = match (&series.math.math, self.layout(series)) {
            (Math::ActiveUsers { days }, Layout::WideBuckets) => {
                let buckets = period.buckets.as_deref().unwrap_or_default();
                let windows: Vec<(DateTime<Utc>, DateTime<Utc>)> = buckets
                    .iter()
                    .map(|start| {
                        let end = date_range::next_bucket(*start, self.interval);
                        let window_start = date_range::add_days(end, -days);
                        (window_start.with_timezone(&Utc), end.with_timezone(&Utc))
                    })
                    .collect();
                let columns = windows
                    .iter()
                    .enumerate()
                    .map(|(index, (start, end))| {
                        let condition = format!(
                            "timestamp > {} AND timestamp <= {}",
                            date_range::sql_datetime(*start),
                            date_range::sql_datetime(*end)
                        );
                        format!("{} AS value_{index}", Math::actors_where(&condition))
                    })
                    .collect::<Vec<_>>()
                    .join(", ");
                let earliest = windows
                    .first()
                    .map(|(start, _)| *start)
                    .unwrap_or(period.range.from);
                (
                    columns,
                    format!("timestamp > {}", date_range::sql_datetime(earliest)),
                )
            }
            (Math::ActiveUsers { days }, _) => {
                // One total: the window ending at the end of the range.
                let end = period.range.to.with_timezone(&ctx.timezone);
                let start = date_range::add_days(end, -days).with_timezone(&Utc);
                let condition = format!("timestamp > {}", date_range::sql_datetime(start));
                (
                    format!("{} AS value", Math::actors_where(&condition)),
                    condition,
                )
            }
            (math, _) => (
                format!("{} AS value", math.aggregate()),
                format!(
                    "timestamp >= {}",
                    date_range::sql_datetime(period.filter_from)
                ),
            ),
        };
        let conditions = [
            lower_bound.as_str(),
            &format!("timestamp <= {to}"),
            &series.condition,
            &self.node_condition,
        ]
        .into_iter()
        .filter(|condition| *condition != "true")
        .collect::<Vec<_>>()
        .join(" AND ");

        let layout = self.layout(series);
        let Some(breakdown) = &self.breakdown else {
            return match layout {
                Layout::BucketRows => format!(
                    "SELECT {bucket} AS bucket, {values} FROM events WHERE {conditions} GROUP BY bucket ORDER BY bucket LIMIT {ROW_LIMIT}"
                ),
                Layout::WideBuckets | Layout::Total => {
                    format!("SELECT {values} FROM events WHERE {conditions} LIMIT 1")
                }
            };
        };

        let value = &breakdown.value;
        let limit = breakdown.limit;
        let top_values = match layout {
            Layout::BucketRows => format!(
                "SELECT breakdown_value FROM (SELECT {value} AS breakdown_value, {bucket} AS bucket, {} AS value FROM events WHERE {conditions} GROUP BY breakdown_value, bucket) GROUP BY breakdown_value ORDER BY sum(value) DESC, breakdown_value ASC LIMIT {limit}",
                series.math.math.aggregate()
            ),
            Layout::WideBuckets | Layout::Total => format!(
                "SELECT {value} AS breakdown_value FROM events WHERE {conditions} GROUP BY breakdown_value ORDER BY {} DESC, breakdown_value ASC LIMIT {limit}",
                series.math.math.aggregate()
            ),
        };
        let other = sql_text::string(BREAKDOWN_OTHER);
        let (bucket_column, bucket_group) = match layout {
            Layout::BucketRows => (format!("{bucket} AS bucket, "), "bucket, "),
            Layout::WideBuckets | Layout::Total => (String::new(), ""),
        };
        format!(
            "SELECT * FROM (\
             SELECT {bucket_column}{value} AS breakdown_value, {values} FROM events WHERE {conditions} AND {value} IN ({top_values}) GROUP BY {bucket_group}breakdown_value \
             UNION ALL \
             SELECT {bucket_column}{other} AS breakdown_value, {values} FROM events WHERE {conditions} AND {value} NOT IN ({top_values}) GROUP BY {bucket_group}breakdown_value\
             ) LIMIT {ROW_LIMIT}"
        )
    }

    fn assemble(self, tables: Vec<Table>) -> Result<Value, Invalid> {
        let mut tables = tables.into_iter();
        let mut periods_buckets = Vec::new();
        if self.from_all {
            let earliest = tables
                .next()
                .and_then(|table| table.rows.into_iter().next())
                .and_then(|row| row.into_iter().next())
                .and_then(|cell| date_range::parse_engine_time(&cell, &self.ctx))
                .map(|moment| moment.with_timezone(&Utc));
            let to = self.periods[0].range.to;
            let range = Range {
                from: earliest.unwrap_or(to).min(to),
                to,
            };
            periods_buckets.push((range, range.buckets(self.interval, &self.ctx, "interval")?));
        } else {
            for period in &self.periods {
                periods_buckets.push((period.range, period.buckets.clone().unwrap_or_default()));
            }
        }

        let mut results: Vec<SeriesResult> = Vec::new();
        for (period_index, (_, buckets)) in periods_buckets.iter().enumerate() {
            let index_of: HashMap<DateTime<Utc>, usize> = buckets
                .iter()
                .enumerate()
                .map(|(index, start)| (start.with_timezone(&Utc), index))
                .collect();
            for (series_index, series) in self.series.iter().enumerate() {
                let table = tables.next().unwrap_or_default();
                let layout = self.layout(series);
                let mut rows = read_series_table(
                    &table,
                    layout,
                    self.breakdown.is_some(),
                    buckets.len(),
                    |cell| {
                        date_range::parse_engine_time(cell, &self.ctx)
                            .map(|moment| {
                                date_range::bucket_start(
                                    moment.with_timezone(&Utc),
                                    self.interval,
                                    &self.ctx,
                                )
                            })
                            .and_then(|start| index_of.get(&start.with_timezone(&Utc)).copied())
                    },
                );
                if self.breakdown.is_none() && rows.is_empty() {
                    rows.push(RawRow {
                        breakdown: None,
                        values: vec![
                            0.0;
                            if layout == Layout::Total {
                                1
                            } else {
                                buckets.len()
                            }
                        ],
                        integral: true,
                    });
                }
                sort_breakdown_rows(&mut rows);
                for row in rows {
                    let multiplier = series.math.multiplier;
                    let integral = row.integral && multiplier.is_none_or(|m| m.fract() == 0.0);
                    let mut values = row.values;
                    if let Some(multiplier) = multiplier {
                        values.iter_mut().for_each(|value| *value *= multiplier);
                    }
                    if self.cumulative && layout != Layout::Total {
                        let mut running = 0.0;
                        for value in values.iter_mut() {
                            running += *value;
                            *value = running;
                        }
                    }
                    results.push(SeriesResult {
                        series: series_index,
                        period: period_index,
                        breakdown: row.breakdown,
                        values,
                        integral,
                    });
                }
            }
        }
        let has_more = results
            .iter()
            .any(|result| result.breakdown.as_deref() == Some(BREAKDOWN_OTHER));
        if self
            .breakdown
            .as_ref()
            .is_some_and(|breakdown| breakdown.hide_other)
        {
            results.retain(|result| result.breakdown.as_deref() != Some(BREAKDOWN_OTHER));
        }

        let rendered = if self.formulas.is_empty() {
            results
                .iter()
                .filter_map(|result| self.render(result, &periods_buckets[result.period].1))
                .collect()
        } else {
            self.apply_formulas(&results, &periods_buckets)
        };
        let (current, _) = &periods_buckets[0];
        Ok(json!({
            "results": rendered,
            "hasMore": has_more,
            "resolved_date_range": {
                "date_from": date_range::iso(current.from, &self.ctx),
                "date_to": date_range::iso(current.to, &self.ctx),
            },
        }))
    }

    /// One result object; `None` for an empty `none` breakdown (PostHog drops those).
    fn render(&self, result: &SeriesResult, buckets: &[DateTime<Tz>]) -> Option<Value> {
        let series = &self.series[result.series];
        let mut object = self.base_object(result.period, buckets);
        let values = &result.values;
        if self.total_value {
            object.insert("data".into(), json!([]));
            object.insert("days".into(), json!([]));
            object.insert("count".into(), json!(0));
            object.insert(
                "aggregated_value".into(),
                number(values.first().copied().unwrap_or(0.0), result.integral),
            );
        } else {
            object.insert(
                "data".into(),
                Value::Array(
                    values
                        .iter()
                        .map(|value| number(*value, result.integral))
                        .collect(),
                ),
            );
            object.insert("count".into(), float(self.count_of(values)));
        }
        let mut action = series.action.clone();
        action.insert("days".into(), days_iso(buckets, &self.ctx));
        object.insert("action".into(), Value::Object(action));
        let mut label = series.label.clone();
        if let Some(raw) = &result.breakdown {
            let shown = breakdown_shown(raw);
            if shown == BREAKDOWN_NONE_LABEL && values.iter().all(|value| *value == 0.0) {
                return None;
            }
            label = if self.series.len() > 1 {
                format!("{label} - {shown}")
            } else {
                shown.clone()
            };
            object.insert("breakdown_value".into(), Value::String(shown));
        }
        object.insert("label".into(), Value::String(label));
        Some(Value::Object(object))
    }

    /// The fields every result of a period shares: labels, days, filter, compare fields.
    fn base_object(&self, period: usize, buckets: &[DateTime<Tz>]) -> Map<String, Value> {
        let mut object = Map::new();
        if !self.total_value {
            let compare_label = self.periods[period].compare_label;
            let labels: Vec<Value> = buckets
                .iter()
                .enumerate()
                .map(|(index, bucket)| match compare_label {
                    // Compared periods are aligned by position, so labels say which one.
                    Some(_) => Value::String(format!("{} {index}", self.interval.name())),
                    None => Value::String(date_range::label(bucket, self.interval)),
                })
                .collect();
            object.insert("labels".into(), Value::Array(labels));
            object.insert(
                "days".into(),
                Value::Array(
                    buckets
                        .iter()
                        .map(|bucket| Value::String(date_range::day(bucket, self.interval)))
                        .collect(),
                ),
            );
        }
        object.insert("filter".into(), self.filter.clone());
        if let Some(compare_label) = self.periods[period].compare_label {
            object.insert("compare".into(), Value::Bool(true));
            object.insert("compare_label".into(), Value::String(compare_label.into()));
        }
        object
    }

    fn count_of(&self, values: &[f64]) -> f64 {
        if self.cumulative {
            values.last().copied().unwrap_or(0.0)
        } else {
            values.iter().sum()
        }
    }

    /// Formula results replace the series: per formula, per period, per breakdown value.
    fn apply_formulas(
        &self,
        results: &[SeriesResult],
        periods_buckets: &[(Range, Vec<DateTime<Tz>>)],
    ) -> Vec<Value> {
        let mut rendered = Vec::new();
        for formula in &self.formulas {
            for (period, (_, buckets)) in periods_buckets.iter().enumerate() {
                let mut breakdowns: Vec<Option<&String>> = Vec::new();
                for result in results.iter().filter(|result| result.period == period) {
                    if !breakdowns.contains(&result.breakdown.as_ref()) {
                        breakdowns.push(result.breakdown.as_ref());
                    }
                }
                breakdowns.sort();
                let width = if self.total_value { 1 } else { buckets.len() };
                let mut group = Vec::new();
                for breakdown in breakdowns {
                    let inputs: Vec<Vec<f64>> = (0..self.series.len())
                        .map(|series| {
                            results
                                .iter()
                                .find(|result| {
                                    result.period == period
                                        && result.series == series
                                        && result.breakdown.as_ref() == breakdown
                                })
                                .map(|result| result.values.clone())
                                .unwrap_or_else(|| vec![0.0; width])
                        })
                        .collect();
                    let values: Vec<f64> = (0..width)
                        .map(|index| formula.expression.evaluate(&inputs, index))
                        .collect();
                    let mut object = self.base_object(period, buckets);
                    object.insert("label".into(), Value::String(formula.label.clone()));
                    object.insert("action".into(), Value::Null);
                    let count = if self.total_value {
                        object.insert("data".into(), json!([]));
                        object.insert("days".into(), json!([]));
                        object.insert("aggregated_value".into(), float(values.iter().sum()));
                        0.0
                    } else {
                        object.insert(
                            "data".into(),
                            Value::Array(values.iter().map(|value| float(*value)).collect()),
                        );
                        self.count_of(&values)
                    };
                    object.insert("count".into(), float(count));
                    if let Some(raw) = breakdown {
                        object.insert(
                            "breakdown_value".into(),
                            Value::String(breakdown_shown(raw)),
                        );
                    }
                    let rank = if self.total_value {
                        values.iter().sum()
                    } else {
                        count
                    };
                    group.push((rank, Value::Object(object)));
                }
                // Highest first; the sort is stable so equal counts keep the value order.
                group.sort_by(|a, b| b.0.total_cmp(&a.0));
                rendered.extend(group.into_iter().map(|(_, object)| object));
            }
        }
        rendered
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
    let filter_from = if explicit || from_all {
        range.from
    } else {
        date_range::bucket_start(range.from, interval, ctx).with_timezone(&Utc)
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

fn parse_series(value: Option<&Value>, ctx: &Context) -> Result<Vec<Series>, Invalid> {
    let items = match value {
        Some(Value::Array(items)) if !items.is_empty() => items,
        Some(Value::Array(_)) | None | Some(Value::Null) => {
            return Err(Invalid::new("series", "A trend needs at least one series."));
        }
        Some(_) => return Err(Invalid::new("series", "series must be a list.")),
    };
    items
        .iter()
        .enumerate()
        .map(|(index, item)| {
            let attr = format!("series[{index}]");
            if !item.is_object() {
                return Err(Invalid::new(attr, "A series must be an object."));
            }
            match item.get("kind").and_then(Value::as_str) {
                None | Some("EventsNode") => {}
                Some(kind @ ("ActionsNode" | "DataWarehouseNode")) => {
                    return Err(Invalid::new(
                        format!("{attr}.kind"),
                        format!("{kind} series are not supported: use EventsNode."),
                    ));
                }
                Some(kind) => {
                    return Err(Invalid::new(
                        format!("{attr}.kind"),
                        format!("Unknown series kind '{kind}'."),
                    ));
                }
            }
            let event = match item.get("event") {
                None | Some(Value::Null) => None,
                Some(Value::String(event)) => Some(event.clone()),
                Some(_) => {
                    return Err(Invalid::new(
                        format!("{attr}.event"),
                        "event must be a string or null.",
                    ));
                }
            };
            let math = math::parse(item, ctx, &attr)?;
            let mut conditions = Vec::new();
            if let Some(event) = &event {
                conditions.push(format!("event = {}", sql_text::string(event)));
            }
            for key in ["properties", "fixedProperties"] {
                let condition = filters::expression(item.get(key), ctx, &format!("{attr}.{key}"))?;
                if condition != "true" {
                    conditions.push(format!("({condition})"));
                }
            }
            let condition = if conditions.is_empty() {
                "true".to_string()
            } else {
                conditions.join(" AND ")
            };
            let label = event.clone().unwrap_or_else(|| "All events".to_string());
            let field = |key: &str| item.get(key).cloned().unwrap_or(Value::Null);
            let mut action = Map::new();
            action.insert(
                "id".into(),
                event.clone().map(Value::String).unwrap_or(Value::Null),
            );
            action.insert("type".into(), json!("events"));
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
                condition,
                label,
                action,
            })
        })
        .collect()
}

fn parse_breakdown(filter: Option<&Value>, ctx: &Context) -> Result<Option<Breakdown>, Invalid> {
    let Some(filter) = filter else {
        return Ok(None);
    };
    // The newer multi-breakdown list, when it holds a single breakdown, is the same thing.
    let (property, kind, attr) = match (filter.get("breakdown"), filter.get("breakdowns")) {
        (Some(property), _) if !property.is_null() => (
            property,
            filter.get("breakdown_type").and_then(Value::as_str),
            "breakdownFilter.breakdown",
        ),
        (_, Some(Value::Array(list))) if list.len() == 1 => (
            list[0].get("property").unwrap_or(&Value::Null),
            list[0].get("type").and_then(Value::as_str),
            "breakdownFilter.breakdowns[0].property",
        ),
        (_, Some(Value::Array(list))) if list.len() > 1 => {
            return Err(Invalid::new(
                "breakdownFilter.breakdowns",
                "Only one breakdown at a time is supported.",
            ));
        }
        _ => return Ok(None),
    };
    let Value::String(property) = property else {
        return Err(Invalid::new(attr, "The breakdown must be a property name."));
    };
    let value = match kind.unwrap_or("event") {
        "event" => sql_text::property(property, false),
        "person" => sql_text::property(property, true),
        "hogql" => {
            (ctx.check_expression)(property).map_err(|problem| Invalid::new(attr, problem))?;
            format!("toString(({property}))")
        }
        other => {
            return Err(Invalid::new(
                "breakdownFilter.breakdown_type",
                format!("breakdown_type {other} is not supported: use event, person or hogql."),
            ));
        }
    };
    let limit = match filter.get("breakdown_limit") {
        None | Some(Value::Null) => DEFAULT_BREAKDOWN_LIMIT,
        Some(value) => match value.as_u64() {
            Some(limit) if (1..=MAX_BREAKDOWN_LIMIT).contains(&limit) => limit,
            _ => {
                return Err(Invalid::new(
                    "breakdownFilter.breakdown_limit",
                    format!(
                        "breakdown_limit must be a whole number from 1 to {MAX_BREAKDOWN_LIMIT}."
                    ),
                ));
            }
        },
    };
    Ok(Some(Breakdown {
        value: format!(
            "ifNull(nullIf({value}, ''), {})",
            sql_text::string(BREAKDOWN_NULL)
        ),
        limit,
        hide_other: filter
            .get("breakdown_hide_other_aggregation")
            .and_then(Value::as_bool)
            .unwrap_or(false),
    }))
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

// ---------------------------------------------------------------------------------------------
// Reading the tables back.

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Layout {
    /// `[bucket, (breakdown_value), value]`, one row per bucket (and value).
    BucketRows,
    /// `[(breakdown_value), value_0, ..., value_n]`, one column per bucket.
    WideBuckets,
    /// `[(breakdown_value), value]`.
    Total,
}

/// A series' numbers for one breakdown value (or the only row without a breakdown).
#[derive(Debug, Clone, PartialEq)]
struct RawRow {
    breakdown: Option<String>,
    values: Vec<f64>,
    /// Every number the engine gave was an integer (counts stay integers in JSON).
    integral: bool,
}

#[derive(Debug, Clone)]
struct SeriesResult {
    series: usize,
    period: usize,
    breakdown: Option<String>,
    values: Vec<f64>,
    integral: bool,
}

fn read_series_table(
    table: &Table,
    layout: Layout,
    has_breakdown: bool,
    bucket_count: usize,
    bucket_index: impl Fn(&Value) -> Option<usize>,
) -> Vec<RawRow> {
    let width = if layout == Layout::Total {
        1
    } else {
        bucket_count
    };
    let mut rows: Vec<RawRow> = Vec::new();
    for cells in &table.rows {
        let mut cells = cells.iter();
        let bucket = match layout {
            Layout::BucketRows => match cells.next().and_then(&bucket_index) {
                Some(index) => Some(index),
                // Outside the buckets (cannot happen for events inside the range).
                None => continue,
            },
            Layout::WideBuckets | Layout::Total => None,
        };
        let breakdown = if has_breakdown {
            Some(match cells.next() {
                Some(Value::String(text)) => text.clone(),
                Some(Value::Null) | None => BREAKDOWN_NULL.to_string(),
                Some(other) => other.to_string(),
            })
        } else {
            None
        };
        let position = match rows.iter().position(|row| row.breakdown == breakdown) {
            Some(position) => position,
            None => {
                rows.push(RawRow {
                    breakdown,
                    values: vec![0.0; width],
                    integral: true,
                });
                rows.len() - 1
            }
        };
        let row = &mut rows[position];
        let numbers: Vec<&Value> = cells.collect();
        match bucket {
            Some(index) => {
                if let (Some(cell), Some(slot)) = (numbers.first(), row.values.get_mut(index)) {
                    *slot += cell_number(cell, &mut row.integral);
                }
            }
            None => {
                for (slot, cell) in row.values.iter_mut().zip(numbers) {
                    *slot += cell_number(cell, &mut row.integral);
                }
            }
        }
    }
    rows
}

fn cell_number(cell: &Value, integral: &mut bool) -> f64 {
    match cell {
        Value::Number(number) => {
            if number.as_i64().is_none() && number.as_u64().is_none() {
                *integral = false;
            }
            number.as_f64().unwrap_or(0.0)
        }
        Value::String(text) => {
            *integral = false;
            text.parse().unwrap_or(0.0)
        }
        _ => 0.0,
    }
}

/// PostHog's order: by total descending, then value; `none` after the values, "other" last.
fn sort_breakdown_rows(rows: &mut [RawRow]) {
    let class = |row: &RawRow| match row.breakdown.as_deref() {
        Some(BREAKDOWN_OTHER) => 2,
        Some(BREAKDOWN_NULL) => 1,
        _ => 0,
    };
    rows.sort_by(|a, b| {
        class(a)
            .cmp(&class(b))
            .then_with(|| {
                b.values
                    .iter()
                    .sum::<f64>()
                    .total_cmp(&a.values.iter().sum::<f64>())
            })
            .then_with(|| a.breakdown.cmp(&b.breakdown))
    });
}

fn breakdown_shown(raw: &str) -> String {
    if raw == BREAKDOWN_NULL {
        BREAKDOWN_NONE_LABEL.to_string()
    } else {
        raw.to_string()
    }
}

fn days_iso(buckets: &[DateTime<Tz>], ctx: &Context) -> Value {
    Value::Array(
        buckets
            .iter()
            .map(|bucket| Value::String(date_range::iso(bucket.with_timezone(&Utc), ctx)))
            .collect(),
    )
}

fn number(value: f64, integral: bool) -> Value {
    if integral && value.fract() == 0.0 && value.abs() < 9.0e15 {
        json!(value as i64)
    } else {
        float(value)
    }
}

fn float(value: f64) -> Value {
    Number::from_f64(value)
        .map(Value::Number)
        .unwrap_or_else(|| json!(0))
}

// ---------------------------------------------------------------------------------------------
// Formulas: numbers, series letters (A = the first series), + - * / and parentheses.

#[derive(Debug, Clone, PartialEq)]
enum Expression {
    Number(f64),
    Series(usize),
    Negate(Box<Expression>),
    Binary(Box<Expression>, char, Box<Expression>),
}

impl Expression {
    fn parse(text: &str, series_count: usize) -> Result<Expression, String> {
        let tokens = tokenize(text)?;
        let mut parser = FormulaParser {
            tokens: &tokens,
            position: 0,
            series_count,
        };
        let expression = parser.sum()?;
        if parser.position != tokens.len() {
            return Err(format!(
                "Unexpected '{}' in formula '{text}'.",
                tokens[parser.position]
            ));
        }
        Ok(expression)
    }

    /// The value at one bucket; dividing by zero gives 0 (as PostHog's formulas do).
    fn evaluate(&self, series: &[Vec<f64>], index: usize) -> f64 {
        match self {
            Expression::Number(value) => *value,
            Expression::Series(letter) => series
                .get(*letter)
                .and_then(|values| values.get(index))
                .copied()
                .unwrap_or(0.0),
            Expression::Negate(inner) => -inner.evaluate(series, index),
            Expression::Binary(left, operator, right) => {
                let (left, right) = (left.evaluate(series, index), right.evaluate(series, index));
                match operator {
                    '+' => left + right,
                    '-' => left - right,
                    '*' => left * right,
                    _ if right == 0.0 => 0.0,
                    _ => left / right,
                }
            }
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
enum Token {
    Number(f64),
    Letter(char),
    Symbol(char),
}

impl std::fmt::Display for Token {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Token::Number(value) => write!(f, "{value}"),
            Token::Letter(c) | Token::Symbol(c) => write!(f, "{c}"),
        }
    }
}

fn tokenize(text: &str) -> Result<Vec<Token>, String> {
    let mut tokens = Vec::new();
    let mut chars = text.chars().peekable();
    while let Some(&c) = chars.peek() {
        if c.is_whitespace() {
            chars.next();
        } else if c.is_ascii_digit() || c == '.' {
            let mut digits = String::new();
            while let Some(&d) = chars.peek() {
                if d.is_ascii_digit() || d == '.' {
                    digits.push(d);
                    chars.next();
                } else {
                    break;
                }
            }
            let value = digits
                .parse()
                .map_err(|_| format!("'{digits}' is not a number."))?;
            tokens.push(Token::Number(value));
        } else if c.is_ascii_alphabetic() {
            chars.next();
            if chars
                .peek()
                .is_some_and(|next| next.is_ascii_alphanumeric())
            {
                return Err("Series are single letters (A, B, ...) in formulas.".into());
            }
            tokens.push(Token::Letter(c.to_ascii_uppercase()));
        } else if "+-*/()".contains(c) {
            chars.next();
            tokens.push(Token::Symbol(c));
        } else {
            return Err(format!(
                "Unexpected '{c}' in formula: use series letters, numbers, + - * / and parentheses."
            ));
        }
    }
    Ok(tokens)
}

struct FormulaParser<'a> {
    tokens: &'a [Token],
    position: usize,
    series_count: usize,
}

impl FormulaParser<'_> {
    fn peek_symbol(&self) -> Option<char> {
        match self.tokens.get(self.position) {
            Some(Token::Symbol(c)) => Some(*c),
            _ => None,
        }
    }

    fn sum(&mut self) -> Result<Expression, String> {
        let mut left = self.product()?;
        while let Some(operator @ ('+' | '-')) = self.peek_symbol() {
            self.position += 1;
            left = Expression::Binary(Box::new(left), operator, Box::new(self.product()?));
        }
        Ok(left)
    }

    fn product(&mut self) -> Result<Expression, String> {
        let mut left = self.unary()?;
        while let Some(operator @ ('*' | '/')) = self.peek_symbol() {
            self.position += 1;
            left = Expression::Binary(Box::new(left), operator, Box::new(self.unary()?));
        }
        Ok(left)
    }

    fn unary(&mut self) -> Result<Expression, String> {
        match self.peek_symbol() {
            Some('-') => {
                self.position += 1;
                Ok(Expression::Negate(Box::new(self.unary()?)))
            }
            Some('+') => {
                self.position += 1;
                self.unary()
            }
            _ => self.atom(),
        }
    }

    fn atom(&mut self) -> Result<Expression, String> {
        let token = self.tokens.get(self.position).cloned();
        self.position += 1;
        match token {
            Some(Token::Number(value)) => Ok(Expression::Number(value)),
            Some(Token::Letter(letter)) => {
                let index = (letter as u8 - b'A') as usize;
                if index >= self.series_count {
                    Err(format!(
                        "Series {letter} does not exist: there are {} series.",
                        self.series_count
                    ))
                } else {
                    Ok(Expression::Series(index))
                }
            }
            Some(Token::Symbol('(')) => {
                let inner = self.sum()?;
                if self.peek_symbol() != Some(')') {
                    return Err("A parenthesis is not closed in the formula.".into());
                }
                self.position += 1;
                Ok(inner)
            }
            Some(other) => Err(format!("Unexpected '{other}' in the formula.")),
            None => Err("The formula ends too early.".into()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn context() -> Context {
        crate::testing::context(chrono_tz::America::New_York, "2024-06-01T12:00:00Z", 0)
    }

    fn node(extra: Value) -> Value {
        let mut node = json!({
            "kind": "TrendsQuery",
            "series": [{"kind": "EventsNode", "event": "$pageview"}],
            "dateRange": {"date_from": "2024-03-09", "date_to": "2024-03-11"},
        });
        if let (Value::Object(node), Value::Object(extra)) = (&mut node, extra) {
            node.extend(extra);
        }
        node
    }

    fn table(columns: &[&str], rows: Vec<Vec<Value>>) -> Table {
        Table {
            columns: columns.iter().map(|c| c.to_string()).collect(),
            types: Vec::new(),
            rows,
        }
    }

    fn error_attr(node: Value) -> String {
        match compile(&node, &context()) {
            Ok(_) => panic!("compiled {node}"),
            Err(invalid) => invalid.attr,
        }
    }

    #[test]
    fn invalid_nodes_name_the_field() {
        assert_eq!(error_attr(node(json!({"series": []}))), "series");
        assert_eq!(
            error_attr(node(json!({"series": [{"kind": "ActionsNode", "id": 3}]}))),
            "series[0].kind"
        );
        assert_eq!(
            error_attr(node(
                json!({"series": [{"event": "a"}, {"event": "b", "math": "sum"}]})
            )),
            "series[1].math_property"
        );
        assert_eq!(
            error_attr(node(json!({"series": [{"event": "a", "math": "wat"}]}))),
            "series[0].math"
        );
        assert_eq!(
            error_attr(node(json!({"interval": "fortnight"}))),
            "interval"
        );
        assert_eq!(
            error_attr(node(json!({"dateRange": {"date_from": "last tuesday"}}))),
            "dateRange.date_from"
        );
        assert_eq!(
            error_attr(node(json!({"trendsFilter": {"formula": "A + C"}}))),
            "trendsFilter.formula"
        );
        assert_eq!(
            error_attr(node(
                json!({"trendsFilter": {"formulaNodes": [{"formula": "A +"}]}})
            )),
            "trendsFilter.formulaNodes[0].formula"
        );
        assert_eq!(
            error_attr(node(
                json!({"breakdownFilter": {"breakdown": "$browser", "breakdown_limit": 0}})
            )),
            "breakdownFilter.breakdown_limit"
        );
        assert_eq!(
            error_attr(node(
                json!({"breakdownFilter": {"breakdown": "x", "breakdown_type": "cohort"}})
            )),
            "breakdownFilter.breakdown_type"
        );
        assert_eq!(
            error_attr(node(
                json!({"compareFilter": {"compare": true, "compare_to": "later"}})
            )),
            "compareFilter.compare_to"
        );
    }

    #[test]
    fn day_buckets_in_the_project_zone_are_zero_filled() {
        let compiled = compile(&node(json!({})), &context()).expect("compiles");
        assert_eq!(compiled.queries.len(), 1);
        let query = &compiled.queries[0];
        assert!(
            query.contains("toStartOfDay(toTimeZone(timestamp, 'America/New_York')) AS bucket"),
            "{query}"
        );
        assert!(
            query.contains("timestamp >= toDateTime('2024-03-09 05:00:00.000000Z')"),
            "{query}"
        );
        assert!(
            query.contains("timestamp <= toDateTime('2024-03-12 03:59:59.999999Z')"),
            "{query}"
        );
        assert!(query.contains("event = '$pageview'"), "{query}");
        assert!(query.ends_with("LIMIT 50000"), "{query}");
        let response = compiled
            .assemble(vec![table(
                &["bucket", "value"],
                vec![vec![json!("2024-03-11T04:00:00+00:00"), json!(3)]],
            )])
            .expect("assembles");
        let result = &response["results"][0];
        assert_eq!(result["data"], json!([0, 0, 3]));
        assert_eq!(
            result["days"],
            json!(["2024-03-09", "2024-03-10", "2024-03-11"])
        );
        assert_eq!(
            result["labels"],
            json!(["9-Mar-2024", "10-Mar-2024", "11-Mar-2024"])
        );
        assert_eq!(result["count"], json!(3.0));
        assert_eq!(result["label"], json!("$pageview"));
        assert_eq!(
            result["action"]["days"][2],
            json!("2024-03-11T00:00:00-04:00")
        );
        assert_eq!(response["hasMore"], json!(false));
        assert_eq!(
            response["resolved_date_range"],
            json!({"date_from": "2024-03-09T00:00:00-05:00", "date_to": "2024-03-11T23:59:59.999999-04:00"})
        );
    }

    #[test]
    fn breakdown_keeps_top_values_and_computes_other_in_sql() {
        let compiled = compile(
            &node(json!({"series": [{"event": "$pageview", "math": "dau"}], "breakdownFilter": {"breakdown": "$browser", "breakdown_limit": 2}})),
            &context(),
        )
        .expect("compiles");
        let query = &compiled.queries[0];
        assert!(
            query.contains("NOT IN (SELECT breakdown_value FROM"),
            "{query}"
        );
        assert!(
            query.contains("'$$_posthog_breakdown_other_$$' AS breakdown_value"),
            "{query}"
        );
        assert!(query.contains("LIMIT 2)"), "{query}");
        let day = |d: &str| json!(format!("2024-03-{d}T05:00:00+00:00"));
        let rows = vec![
            vec![day("09"), json!("Safari"), json!(1)],
            vec![day("09"), json!("Chrome"), json!(2)],
            vec![day("10"), json!("$$_posthog_breakdown_other_$$"), json!(4)],
            vec![day("10"), json!("$$_posthog_breakdown_null_$$"), json!(1)],
        ];
        let response = compiled
            .assemble(vec![table(&["bucket", "breakdown_value", "value"], rows)])
            .expect("assembles");
        let values: Vec<&Value> = response["results"]
            .as_array()
            .expect("results")
            .iter()
            .map(|result| &result["breakdown_value"])
            .collect();
        assert_eq!(
            values,
            [
                &json!("Chrome"),
                &json!("Safari"),
                &json!("none"),
                &json!("$$_posthog_breakdown_other_$$")
            ]
        );
        assert_eq!(response["results"][0]["label"], json!("Chrome"));
        assert_eq!(response["results"][3]["data"], json!([0, 4, 0]));
        assert_eq!(response["hasMore"], json!(true));
    }

    #[test]
    fn total_value_and_cumulative_displays() {
        let compiled = compile(
            &node(json!({"trendsFilter": {"display": "BoldNumber"}})),
            &context(),
        )
        .expect("compiles");
        assert!(!compiled.queries[0].contains("bucket"));
        let response = compiled
            .assemble(vec![table(&["value"], vec![vec![json!(7)]])])
            .expect("assembles");
        assert_eq!(response["results"][0]["aggregated_value"], json!(7));
        assert_eq!(response["results"][0]["data"], json!([]));

        let compiled = compile(
            &node(json!({"trendsFilter": {"display": "ActionsLineGraphCumulative"}, "series": [{"event": "a", "math_multiplier": 2}]})),
            &context(),
        )
        .expect("compiles");
        let day = |d: &str| json!(format!("2024-03-{d}T05:00:00+00:00"));
        let rows = vec![vec![day("09"), json!(1)], vec![day("10"), json!(2)]];
        let response = compiled
            .assemble(vec![table(&["bucket", "value"], rows)])
            .expect("assembles");
        assert_eq!(response["results"][0]["data"], json!([2, 6, 6]));
        assert_eq!(response["results"][0]["count"], json!(6.0));
    }

    #[test]
    fn formulas_combine_series_and_compare_adds_the_previous_period() {
        let compiled = compile(
            &node(json!({
                "series": [{"event": "a"}, {"event": "b", "math": "sum", "math_property": "price"}],
                "trendsFilter": {"formulaNodes": [{"formula": "(A + B) / A"}, {"formula": "B * 2", "custom_name": "double"}]},
                "compareFilter": {"compare": true},
            })),
            &context(),
        )
        .expect("compiles");
        assert_eq!(compiled.queries.len(), 4);
        // The previous period of 9-11 March is 6-8 March.
        assert!(
            compiled.queries[2].contains("toDateTime('2024-03-06 05:00:00.000000Z')"),
            "{}",
            compiled.queries[2]
        );
        let day = |d: &str| json!(format!("2024-03-{d}T05:00:00+00:00"));
        let tables = vec![
            table(
                &["bucket", "value"],
                vec![vec![day("09"), json!(2)], vec![day("10"), json!(4)]],
            ),
            table(&["bucket", "value"], vec![vec![day("09"), json!(3.5)]]),
            table(&["bucket", "value"], vec![]),
            table(&["bucket", "value"], vec![vec![day("07"), json!(1.0)]]),
        ];
        let response = compiled.assemble(tables).expect("assembles");
        let results = response["results"].as_array().expect("results");
        assert_eq!(results.len(), 4);
        assert_eq!(results[0]["label"], json!("Formula ((A + B) / A)"));
        assert_eq!(results[0]["compare_label"], json!("current"));
        assert_eq!(results[0]["data"], json!([2.75, 1.0, 0.0]));
        assert_eq!(results[1]["compare_label"], json!("previous"));
        assert_eq!(results[1]["data"], json!([0.0, 0.0, 0.0]));
        assert_eq!(results[1]["labels"], json!(["day 0", "day 1", "day 2"]));
        assert_eq!(
            results[1]["days"],
            json!(["2024-03-06", "2024-03-07", "2024-03-08"])
        );
        assert_eq!(results[3]["label"], json!("double"));
        assert_eq!(results[3]["data"], json!([0.0, 2.0, 0.0]));
    }

    #[test]
    fn weekly_active_counts_trailing_windows() {
        let compiled = compile(
            &node(json!({"series": [{"event": "a", "math": "weekly_active"}]})),
            &context(),
        )
        .expect("compiles");
        let query = &compiled.queries[0];
        // The window of 9 March ends at local midnight of the 10th and starts 7 days before.
        assert!(
            query.contains("timestamp > toDateTime('2024-03-03 05:00:00.000000Z') AND timestamp <= toDateTime('2024-03-10 05:00:00.000000Z'), person_id, NULL)) AS value_0"),
            "{query}"
        );
        let response = compiled
            .assemble(vec![table(
                &["value_0", "value_1", "value_2"],
                vec![vec![json!(1), json!(2), json!(2)]],
            )])
            .expect("assembles");
        assert_eq!(response["results"][0]["data"], json!([1, 2, 2]));
    }

    #[test]
    fn formula_arithmetic() {
        let series = vec![vec![6.0], vec![3.0], vec![0.0]];
        let value = |text: &str| {
            Expression::parse(text, 3)
                .expect("parses")
                .evaluate(&series, 0)
        };
        assert_eq!(value("A + B * 2"), 12.0);
        assert_eq!(value("(A + B) * 2"), 18.0);
        assert_eq!(value("-A / b"), -2.0);
        assert_eq!(value("A / C"), 0.0);
        assert_eq!(value("A - 1.5"), 4.5);
        assert!(Expression::parse("A + ", 3).is_err());
        assert!(Expression::parse("(A", 3).is_err());
        assert!(Expression::parse("AB", 3).is_err());
        assert!(Expression::parse("A; drop", 3).is_err());
        assert!(Expression::parse("D", 3).is_err());
    }
}
