//! DataVisualizationNode v1 → v2: pie options moved under `chartSettings.pie`.

use serde_json::{Map, Value};

use super::kind_of;
use crate::nodes::{Migration, Node};

/// `chartSettings.showPieTotal` → `chartSettings.pie.showTotal`.
pub struct DataVisualizationPieShowTotal;

impl Migration for DataVisualizationPieShowTotal {
    fn targets(&self) -> &'static [(&'static str, u32)] {
        &[("DataVisualizationNode", 1)]
    }

    fn transform(&self, mut node: Node) -> Node {
        if kind_of(&node) != Some("DataVisualizationNode") {
            return node;
        }
        let Some(Value::Object(settings)) = node.get_mut("chartSettings") else {
            return node;
        };
        if !settings.contains_key("showPieTotal") {
            return node;
        }
        // A `pie` that is neither missing, null nor an object has nowhere to take the flag; keep
        // the node as it is rather than lose either value.
        if !matches!(
            settings.get("pie"),
            None | Some(Value::Null | Value::Object(_))
        ) {
            return node;
        }
        let show_total = settings.remove("showPieTotal").unwrap_or(Value::Null);
        let pie = settings
            .entry("pie")
            .or_insert_with(|| Value::Object(Map::new()));
        if pie.is_null() {
            *pie = Value::Object(Map::new());
        }
        if let Value::Object(pie) = pie {
            // Respect an already-migrated value; only backfill when `showTotal` is unset.
            pie.entry("showTotal").or_insert(show_total);
        }
        node
    }
}
