//! The steps view's response: per step (and breakdown combination or cohort) the actors and
//! conversion times, as PostHog's step objects; and reading the engine's cells, which every
//! view shares.

use serde_json::{Value, json};

use super::{Breakdown, OTHER, Order, Step};
use crate::Table;
use crate::breakdown::By;

pub(super) fn number(value: Option<&Value>) -> Option<f64> {
    match value? {
        Value::Number(number) => number.as_f64(),
        Value::String(text) => text.parse().ok(),
        _ => None,
    }
}

pub(super) fn count(value: Option<&Value>) -> u64 {
    number(value).map_or(0, |value| value.max(0.0) as u64)
}

pub(super) fn seconds(value: Option<&Value>) -> Value {
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
            let kind = if step.action.is_some() && order != Order::Unordered {
                "actions"
            } else {
                "events"
            };
            let (action_id, name, custom_name) = if order == Order::Unordered {
                let plural = if index == 0 { "" } else { "s" };
                (
                    Value::Null,
                    json!(format!("Completed {} step{plural}", index + 1)),
                    Value::Null,
                )
            } else if let Some((id, action)) = &step.action {
                (json!(id), json!(action), json!(step.custom_name))
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
                "type": kind,
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

pub(super) fn assemble(
    table: &Table,
    steps: &[Step],
    order: Order,
    breakdown: Option<&Breakdown>,
) -> Value {
    let Some(breakdown) = breakdown else {
        return match table.rows.first() {
            // No actor entered the funnel: PostHog answers an empty list.
            Some(row) if count(row.first()) > 0 => {
                Value::Array(step_array(row, 0, steps, order, None))
            }
            _ => json!([]),
        };
    };
    let entered = table.rows.iter().filter(|row| count(row.get(2)) > 0);
    match &breakdown.by.by {
        By::Properties(properties) => {
            let other_bucket = breakdown.by.limit + 1;
            let results: Vec<Value> = entered
                .map(|row| {
                    let value = if count(row.first()) == other_bucket {
                        properties.shown(vec![OTHER.to_owned()])
                    } else {
                        let key = row.get(1).and_then(Value::as_str).unwrap_or_default();
                        properties.shown(properties.decode(key))
                    };
                    Value::Array(step_array(row, 2, steps, order, Some((&value, &value))))
                })
                .collect();
            Value::Array(results)
        }
        By::Cohorts(cohorts) => {
            // PostHog orders them by conversions, from the last step back; ties keep the
            // breakdown's order.
            let mut rows: Vec<&Vec<Value>> = entered.collect();
            let counts = |row: &Vec<Value>| -> Vec<u64> {
                (0..steps.len())
                    .rev()
                    .map(|step| count(row.get(2 + step)))
                    .collect()
            };
            rows.sort_by(|a, b| {
                counts(b)
                    .cmp(&counts(a))
                    .then_with(|| count(a.first()).cmp(&count(b.first())))
            });
            let results: Vec<Value> = rows
                .into_iter()
                .filter_map(|row| {
                    let cohort = cohorts.get(usize::try_from(count(row.first())).ok()?)?;
                    let (shown, value) = (json!(cohort.name()), json!(cohort.id()));
                    Some(Value::Array(step_array(
                        row,
                        2,
                        steps,
                        order,
                        Some((&shown, &value)),
                    )))
                })
                .collect();
            Value::Array(results)
        }
    }
}
