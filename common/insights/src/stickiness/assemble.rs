//! Shaping the series tables into PostHog's response: one value per number of intervals
//! (zero-filled), cumulative values, labels and the compare fields.

use serde_json::{Map, Value, json};

use super::Plan;
use crate::Table;
use crate::retention::integer_cell;

impl Plan {
    pub(super) fn assemble(self, tables: Vec<Table>) -> Value {
        let mut tables = tables.into_iter();
        let mut results = Vec::new();
        for (order, series) in self.series.iter().enumerate() {
            for period in &self.periods {
                let table = tables.next().unwrap_or_default();
                let mut data = vec![0_i64; period.intervals];
                for row in &table.rows {
                    let cell = |index: usize| row.get(index).and_then(integer_cell);
                    if let (Some(intervals), Some(actors)) = (cell(0), cell(1))
                        && let Some(slot) = usize::try_from(intervals)
                            .ok()
                            .and_then(|intervals| intervals.checked_sub(1))
                            .and_then(|slot| data.get_mut(slot))
                    {
                        *slot += actors;
                    }
                }
                // The count is of actors, whichever way the values are shown.
                let count: i64 = data.iter().sum();
                if self.cumulative {
                    let mut at_least = 0;
                    for value in data.iter_mut().rev() {
                        at_least += *value;
                        *value = at_least;
                    }
                }
                let label = series.events.label();
                let mut result = Map::new();
                result.insert("count".into(), json!(count));
                result.insert("data".into(), json!(data));
                result.insert("days".into(), json!((1..=data.len()).collect::<Vec<_>>()));
                result.insert("label".into(), json!(label));
                result.insert("labels".into(), json!(self.labels(data.len())));
                result.insert(
                    "action".into(),
                    json!({"order": order, "type": series.events.entity_type(), "name": label, "id": series.events.entity_id()}),
                );
                if let Some(compare_label) = period.compare_label {
                    result.insert("compare".into(), json!(true));
                    result.insert("compare_label".into(), json!(compare_label));
                }
                results.push(Value::Object(result));
            }
        }
        json!({ "results": results })
    }

    /// `1 day`, `2 days`, ... (`1 day or more`, ... when cumulative).
    fn labels(&self, intervals: usize) -> Vec<String> {
        let unit = self.interval.name();
        (1..=intervals)
            .map(|count| {
                let plural = if count == 1 { "" } else { "s" };
                let suffix = if self.cumulative { " or more" } else { "" };
                format!("{count} {unit}{plural}{suffix}")
            })
            .collect()
    }
}
