//! TrendsQuery and StickinessQuery v1 → v2: `hiddenLegendIndexes` (series hidden from the legend
//! by position) became a `hidden` flag on `resultCustomizations`.

use serde_json::{Map, Value, json};

use super::{has_breakdown, has_compare, insight_filter_key, kind_of, python_str, truthy};
use crate::nodes::{Migration, Node};

/// `<insight>Filter.hiddenLegendIndexes` → `resultCustomizations[..].hidden`.
///
/// Customizations are either all by position or all by value. By position (or with none yet),
/// each index becomes the entry `"<index>"`. When the existing ones are by value, an index only
/// names a series when there is no breakdown and no comparison, so it becomes
/// `{"series":<index>}`; otherwise the indexes cannot be mapped and are dropped.
pub struct StickinessHiddenLegendIndexes;

impl Migration for StickinessHiddenLegendIndexes {
    fn targets(&self) -> &'static [(&'static str, u32)] {
        &[("TrendsQuery", 1), ("StickinessQuery", 1)]
    }

    fn transform(&self, mut node: Node) -> Node {
        let Some(filter_key) = insight_filter_key(kind_of(&node)) else {
            return node;
        };
        let breakdown_or_compare = has_breakdown(&node) || has_compare(&node);
        let Some(Value::Object(filter)) = node.get_mut(filter_key) else {
            return node;
        };
        // Nothing to do without indexes; a non-list is not something we can convert.
        let hidden_indexes = match filter.get("hiddenLegendIndexes") {
            Some(Value::Array(items)) if !items.is_empty() => items.clone(),
            _ => return node,
        };
        let mut customizations = match filter.get("resultCustomizations") {
            None | Some(Value::Null) => Map::new(),
            Some(Value::Object(map)) => map.clone(),
            Some(_) => return node,
        };

        let has_value_assignment = customizations
            .values()
            .any(|entry| entry.get("assignmentBy").and_then(Value::as_str) == Some("value"));
        let by = filter.get("resultCustomizationBy");
        let by_value = !truthy(by) || by.and_then(Value::as_str) == Some("value");

        if by_value && has_value_assignment {
            if breakdown_or_compare {
                filter.remove("hiddenLegendIndexes");
                return node;
            }
            for index in &hidden_indexes {
                let key = format!("{{\"series\":{}}}", python_str(index));
                hide(&mut customizations, key, "value");
            }
            filter.insert("resultCustomizationBy".to_owned(), "value".into());
        } else {
            for index in &hidden_indexes {
                hide(&mut customizations, python_str(index), "position");
            }
            filter.insert("resultCustomizationBy".to_owned(), "position".into());
        }
        filter.insert(
            "resultCustomizations".to_owned(),
            Value::Object(customizations),
        );
        filter.remove("hiddenLegendIndexes");
        node
    }
}

/// Sets `hidden` on the entry at `key`, creating it (or replacing a non-object) if needed.
fn hide(customizations: &mut Map<String, Value>, key: String, assignment_by: &str) {
    let entry = customizations
        .entry(key)
        .or_insert_with(|| json!({ "assignmentBy": assignment_by }));
    if !entry.is_object() {
        *entry = json!({ "assignmentBy": assignment_by });
    }
    if let Value::Object(entry) = entry {
        entry.insert("hidden".to_owned(), Value::Bool(true));
    }
}
