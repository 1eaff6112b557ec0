//! Shaping the edges table into PostHog's `results`: only edges reachable from a first step
//! (PostHog's `validate_results`), conversion times in milliseconds.

use std::collections::{HashMap, HashSet};

use serde_json::{Value, json};

use crate::Table;
use crate::retention::integer_cell;

/// One edge as the query gives it.
struct Edge {
    source: String,
    target: String,
    value: i64,
    /// Seconds.
    average_conversion_time: f64,
}

pub(super) fn edges(tables: Vec<Table>) -> Value {
    let table = tables.into_iter().next().unwrap_or_default();
    let edges: Vec<Edge> = table
        .rows
        .iter()
        .filter_map(|row| {
            Some(Edge {
                source: row.first()?.as_str()?.to_string(),
                target: row.get(1)?.as_str()?.to_string(),
                value: row.get(2).and_then(integer_cell)?,
                average_conversion_time: row.get(3).and_then(Value::as_f64).unwrap_or(0.0),
            })
        })
        .collect();
    let reachable = reachable_sources(&edges);
    let results: Vec<Value> = edges
        .iter()
        .filter(|edge| reachable.contains(edge.source.as_str()))
        .map(|edge| {
            json!({
                "source": edge.source,
                "target": edge.target,
                "value": edge.value,
                "average_conversion_time": edge.average_conversion_time * 1000.0,
            })
        })
        .collect();
    json!({ "results": results })
}

/// The nodes reached from the first steps (`1_...`) through the kept edges: an edge cut off by
/// the edge limit or the weights leaves what only it led to unreachable.
fn reachable_sources(edges: &[Edge]) -> HashSet<&str> {
    let mut next: HashMap<&str, Vec<&str>> = HashMap::new();
    for edge in edges {
        next.entry(edge.source.as_str())
            .or_default()
            .push(edge.target.as_str());
    }
    let mut stack: Vec<&str> = edges
        .iter()
        .map(|edge| edge.source.as_str())
        .filter(|source| source.starts_with("1_"))
        .collect();
    let mut seen = HashSet::new();
    while let Some(node) = stack.pop() {
        if seen.insert(node) {
            stack.extend(next.get(node).into_iter().flatten().copied());
        }
    }
    seen
}
