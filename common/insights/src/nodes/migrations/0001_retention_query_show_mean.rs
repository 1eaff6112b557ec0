//! RetentionQuery v1 → v2: the boolean `retentionFilter.showMean` became
//! `meanRetentionCalculation` (`"simple"` / `"none"`, with `"weighted"` added later).

use serde_json::Value;

use super::{kind_of, truthy};
use crate::nodes::{Migration, Node};

/// `retentionFilter.showMean` → `retentionFilter.meanRetentionCalculation`.
pub struct RetentionQueryShowMean;

impl Migration for RetentionQueryShowMean {
    fn targets(&self) -> &'static [(&'static str, u32)] {
        &[("RetentionQuery", 1)]
    }

    fn transform(&self, mut node: Node) -> Node {
        if kind_of(&node) != Some("RetentionQuery") {
            return node;
        }
        let Some(Value::Object(filter)) = node.get_mut("retentionFilter") else {
            return node;
        };
        if let Some(show_mean) = filter.remove("showMean") {
            // A value written by a newer client wins over the legacy flag.
            if !filter.contains_key("meanRetentionCalculation") {
                let calculation = if truthy(Some(&show_mean)) {
                    "simple"
                } else {
                    "none"
                };
                filter.insert("meanRetentionCalculation".to_owned(), calculation.into());
            }
        }
        node
    }
}
