//! Shaping the actors table into PostHog's `ActorsQueryResponse` fields: `columns`, `results`
//! (the person column as the person object), `types`, `hasMore`, `limit`, `offset`.

use serde_json::{Map, Value, json};

use super::Column;
use super::parse::Request;
use crate::Table;

impl Request {
    pub(super) fn assemble(&self, tables: Vec<Table>) -> Value {
        let table = tables.into_iter().next().unwrap_or_default();
        let width = self.columns.len();
        let has_more = table.rows.len() as u64 > self.limit;
        let results: Vec<Value> = table
            .rows
            .iter()
            .take(self.limit as usize)
            .map(|row| {
                let properties = person_properties(row.get(width));
                let cells: Vec<Value> = self
                    .columns
                    .iter()
                    .enumerate()
                    .map(|(index, column)| {
                        let cell = row.get(index).cloned().unwrap_or(Value::Null);
                        match column {
                            Column::Person => json!({
                                "id": cell,
                                "distinct_ids": distinct_ids(row.get(width + 3)),
                                "properties": properties,
                                "created_at": row.get(width + 1).cloned().unwrap_or(Value::Null),
                                "is_identified": flag(row.get(width + 2)),
                            }),
                            // The raw JSON value, as PostHog's property access gives it.
                            Column::Property(key) => {
                                properties.get(key).cloned().unwrap_or(Value::Null)
                            }
                            _ => cell,
                        }
                    })
                    .collect();
                Value::Array(cells)
            })
            .collect();
        // The person column's type is its id's, as in PostHog's query.
        let types: Vec<Value> = (0..width)
            .map(|index| {
                json!(
                    table
                        .types
                        .get(index)
                        .map_or("String", |(_, kind)| kind.as_str())
                )
            })
            .collect();
        json!({
            "columns": self.names,
            "results": results,
            "types": types,
            "hasMore": has_more,
            "limit": self.limit,
            "offset": self.offset,
        })
    }
}

/// The `persons` row's properties (JSON text) as an object.
fn person_properties(cell: Option<&Value>) -> Map<String, Value> {
    match cell {
        Some(Value::String(text)) => serde_json::from_str(text).unwrap_or_default(),
        Some(Value::Object(object)) => object.clone(),
        _ => Map::new(),
    }
}

/// A boolean cell (the engine may give booleans as 0/1).
fn flag(cell: Option<&Value>) -> Value {
    match cell {
        Some(Value::Number(number)) => Value::Bool(number.as_f64() != Some(0.0)),
        Some(other) => other.clone(),
        None => Value::Null,
    }
}

/// Identified ids first, then anonymous (uuid-shaped) ones, each group in order.
fn distinct_ids(cell: Option<&Value>) -> Vec<String> {
    let mut ids: Vec<String> = match cell {
        Some(Value::Array(items)) => items
            .iter()
            .filter_map(|item| item.as_str().map(str::to_string))
            .collect(),
        _ => Vec::new(),
    };
    ids.sort_by_key(|id| (uuid::Uuid::parse_str(id).is_ok(), id.clone()));
    ids
}
