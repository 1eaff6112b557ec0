//! Shaping the lifecycle table into PostHog's response: one result per status, in PostHog's
//! order, each with a (negative for dormant) value per interval.

use serde_json::{Value, json};

use super::{Plan, STATUSES};
use crate::Table;
use crate::date_range;
use crate::retention::integer_cell;

impl Plan {
    pub(super) fn assemble(self, tables: Vec<Table>) -> Value {
        let table = tables.into_iter().next().unwrap_or_default();
        let mut values = vec![vec![0.0_f64; self.buckets.len()]; STATUSES.len()];
        for row in &table.rows {
            let status = row
                .get(1)
                .and_then(Value::as_str)
                .and_then(|status| STATUSES.iter().position(|known| *known == status));
            let period = row.first().and_then(integer_cell);
            let persons = row.get(2).and_then(integer_cell);
            if let (Some(status), Some(period), Some(persons)) = (status, period, persons)
                && let Some(slot) = usize::try_from(period)
                    .ok()
                    .and_then(|period| period.checked_sub(1))
                    .and_then(|slot| values[status].get_mut(slot))
            {
                let sign = if STATUSES[status] == "dormant" {
                    -1.0
                } else {
                    1.0
                };
                *slot += sign * persons as f64;
            }
        }
        let name = self.first.label();
        let (id, kind) = (self.first.entity_id(), self.first.entity_type());
        let days: Vec<String> = self
            .buckets
            .iter()
            .map(|bucket| date_range::day(bucket, self.interval))
            .collect();
        let labels: Vec<String> = self
            .buckets
            .iter()
            .map(|bucket| date_range::label(bucket, self.interval))
            .collect();
        let results: Vec<Value> = STATUSES
            .iter()
            .zip(values)
            .map(|(status, data)| {
                json!({
                    "action": {"id": id, "name": name, "type": kind, "order": 0, "math": "total"},
                    "data": data,
                    "count": data.iter().sum::<f64>(),
                    "labels": labels,
                    "days": days,
                    "label": format!("{name} - {status}"),
                    "status": status,
                })
            })
            .collect();
        json!({ "results": results })
    }
}
