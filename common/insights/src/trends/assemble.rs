//! Shaping the series tables into PostHog's response: zero-filled buckets, breakdown order,
//! multipliers, cumulative values, formulas, labels (a multiple breakdown's values joined by
//! `::`, a cohort's name) and the compare fields.

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use chrono_tz::Tz;
use serde_json::{Map, Number, Value, json};

use super::sql::Layout;
use super::{BREAKDOWN_NONE_LABEL, Bucket, Plan};
use crate::breakdown::{By, CohortChoice, NULL, OTHER};
use crate::date_range::{self, Range};
use crate::{Context, Invalid, Table};

impl Plan {
    pub(super) fn assemble(self, tables: Vec<Table>) -> Result<Value, Invalid> {
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
            // One table per series, or per cohort and series (as `Plan::queries` lists them).
            let cohorts = self.cohort_conditions.len().max(1);
            let queries = (0..cohorts).flat_map(|_| self.series.iter().enumerate());
            for (series_index, series) in queries {
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
                let mut rows: Vec<(Option<Bucket>, RawRow)> = rows
                    .into_iter()
                    .map(|row| (self.bucket_of(row.breakdown.as_deref()), row))
                    .collect();
                if self.cohort_conditions.is_empty() {
                    sort_breakdown_rows(&mut rows);
                }
                for (breakdown, row) in rows {
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
                        breakdown,
                        values,
                        integral,
                    });
                }
            }
        }
        if self.cohorts_conjoined() {
            // PostHog's one query per series: its cohorts by total, then by id as text.
            let cohorts = self.breakdown.as_ref().and_then(|b| b.cohorts());
            let id_text = |result: &SeriesResult| match (&result.breakdown, cohorts) {
                (Some(Bucket::Cohort(index)), Some(cohorts)) => {
                    cohorts.get(*index).map(|c| c.id().to_string())
                }
                _ => None,
            };
            results.sort_by(|a, b| {
                (a.period, a.series)
                    .cmp(&(b.period, b.series))
                    .then_with(|| {
                        b.values
                            .iter()
                            .sum::<f64>()
                            .total_cmp(&a.values.iter().sum::<f64>())
                    })
                    .then_with(|| id_text(a).cmp(&id_text(b)))
            });
        }
        let is_other = |result: &SeriesResult| matches!(&result.breakdown, Some(Bucket::Values(values)) if values.iter().any(|v| v == OTHER));
        let has_more = results.iter().any(is_other);
        if self
            .breakdown
            .as_ref()
            .is_some_and(|breakdown| breakdown.hide_other)
        {
            results.retain(|result| !is_other(result));
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
        if let Some(bucket) = &result.breakdown {
            let (value, shown) = self.shown(bucket);
            if value == BREAKDOWN_NONE_LABEL && values.iter().all(|value| *value == 0.0) {
                return None;
            }
            label = if self.series.len() > 1 {
                format!("{label} - {shown}")
            } else {
                shown
            };
            object.insert("breakdown_value".into(), value);
        }
        object.insert("label".into(), Value::String(label));
        Some(Value::Object(object))
    }

    /// A breakdown cell (the key of a combination, or a cohort's index) as what it is for.
    fn bucket_of(&self, cell: Option<&str>) -> Option<Bucket> {
        let cell = cell?;
        match &self.breakdown.as_ref()?.by {
            By::Properties(properties) => Some(Bucket::Values(properties.decode(cell))),
            By::Cohorts(_) => cell.parse().ok().map(Bucket::Cohort),
        }
    }

    /// A result's `breakdown_value` and the text its label shows: a single breakdown's value
    /// (`none` for a missing one), a multiple breakdown's list (joined by `::`), a cohort's id
    /// (`all`) and name.
    fn shown(&self, bucket: &Bucket) -> (Value, String) {
        match (bucket, self.breakdown.as_ref().map(|b| &b.by)) {
            (Bucket::Values(values), Some(By::Properties(properties))) if properties.listed => {
                (json!(values), values.join("::"))
            }
            (Bucket::Values(values), _) => {
                let one = values.first().map_or(BREAKDOWN_NONE_LABEL, |value| {
                    if value == NULL {
                        BREAKDOWN_NONE_LABEL
                    } else {
                        value
                    }
                });
                (json!(one), one.to_string())
            }
            (Bucket::Cohort(index), Some(By::Cohorts(cohorts))) => match cohorts.get(*index) {
                Some(CohortChoice::All) | None => (json!("all"), CohortChoice::All.name().into()),
                Some(cohort) => (json!(cohort.id()), cohort.name().to_string()),
            },
            (Bucket::Cohort(index), _) => (json!(index), index.to_string()),
        }
    }

    /// Two or more cohorts and no `all`: PostHog answers them in one query per series.
    fn cohorts_conjoined(&self) -> bool {
        self.breakdown
            .as_ref()
            .and_then(|b| b.cohorts())
            .is_some_and(|cohorts| cohorts.len() > 1 && !cohorts.contains(&CohortChoice::All))
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
                let mut breakdowns: Vec<Option<&Bucket>> = Vec::new();
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
                    if let Some(bucket) = breakdown {
                        object.insert("breakdown_value".into(), self.shown(bucket).0);
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
    breakdown: Option<Bucket>,
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
                Some(Value::Null) | None => NULL.to_string(),
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

/// PostHog's order: by total descending, then value; a missing value (any, with several
/// breakdowns) after the others, "other" last.
fn sort_breakdown_rows(rows: &mut [(Option<Bucket>, RawRow)]) {
    let class = |bucket: &Option<Bucket>| match bucket {
        Some(Bucket::Values(values)) if values.iter().any(|value| value == OTHER) => 2,
        Some(Bucket::Values(values)) if values.iter().any(|value| value == NULL) => 1,
        _ => 0,
    };
    rows.sort_by(|(a_bucket, a), (b_bucket, b)| {
        class(a_bucket)
            .cmp(&class(b_bucket))
            .then_with(|| {
                b.values
                    .iter()
                    .sum::<f64>()
                    .total_cmp(&a.values.iter().sum::<f64>())
            })
            .then_with(|| a_bucket.cmp(b_bucket))
    });
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
