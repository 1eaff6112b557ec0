//! TrendsQuery and StickinessQuery v4 → v5: `resultCustomizations` must be homogeneous.
//!
//! Entries are keyed either by series value (`assignmentBy: "value"`) or by rank
//! (`"position"`); a map holding both matches neither side of the schema union, so the whole
//! query is rejected. Switching the picker used to leave the old kind's entries behind.

use serde_json::{Map, Value};

use super::{insight_filter_key, kind_of, truthy};
use crate::nodes::{Migration, Node};

/// Keeps only the entries whose `assignmentBy` matches `resultCustomizationBy` (both default to
/// `"value"`). A map left empty stays, as an empty map.
pub struct TrendsResultCustomizationsHomogeneous;

impl Migration for TrendsResultCustomizationsHomogeneous {
    fn targets(&self) -> &'static [(&'static str, u32)] {
        &[("TrendsQuery", 4), ("StickinessQuery", 4)]
    }

    fn transform(&self, mut node: Node) -> Node {
        let Some(filter_key) = insight_filter_key(kind_of(&node)) else {
            return node;
        };
        let Some(Value::Object(filter)) = node.get_mut(filter_key) else {
            return node;
        };
        let target = or_value(filter.get("resultCustomizationBy"));
        let Some(Value::Object(customizations)) = filter.get("resultCustomizations") else {
            return node;
        };
        let kept: Map<String, Value> = customizations
            .iter()
            .filter(|(_, entry)| or_value(entry.get("assignmentBy")) == target)
            .map(|(key, entry)| (key.clone(), entry.clone()))
            .collect();
        if kept.len() != customizations.len() {
            filter.insert("resultCustomizations".to_owned(), Value::Object(kept));
        }
        node
    }
}

/// The value, or `"value"` when it is missing or falsy (Python's `x or "value"`).
fn or_value(value: Option<&Value>) -> Value {
    match value {
        Some(value) if truthy(Some(value)) => value.clone(),
        _ => Value::String("value".to_owned()),
    }
}
