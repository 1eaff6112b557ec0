//! TrendsQuery and StickinessQuery v3 → v4, LifecycleQuery, CalendarHeatmapQuery and FunnelsQuery
//! v1 → v2: entity nodes (series items, funnel exclusions) get the `kind` they may lack.
//!
//! These unions used to be undiscriminated, so stored queries hold series items such as
//! `{"event": "$pageview"}` or `{}`. Now that the unions are discriminated on `kind`, the tag is
//! backfilled the way the old coercion picked the member: event-shaped (and empty) items were
//! EventsNode, id-only items ActionsNode, `table_name` items the kind's data warehouse node and
//! `nodes` items GroupNode where the union has it.

use serde_json::Value;

use super::kind_of;
use crate::nodes::{Migration, Node};

/// Stamps a missing `kind` on `series` items and on `funnelsFilter.exclusions` items.
pub struct EntityNodeKind;

impl Migration for EntityNodeKind {
    fn targets(&self) -> &'static [(&'static str, u32)] {
        &[
            ("TrendsQuery", 3),
            ("StickinessQuery", 3),
            ("LifecycleQuery", 1),
            ("CalendarHeatmapQuery", 1),
            ("FunnelsQuery", 1),
        ]
    }

    fn transform(&self, mut node: Node) -> Node {
        let (data_warehouse_kind, allow_group) = match kind_of(&node) {
            Some("TrendsQuery") => ("DataWarehouseNode", true),
            Some("StickinessQuery" | "CalendarHeatmapQuery") => ("DataWarehouseNode", false),
            Some("LifecycleQuery") => ("LifecycleDataWarehouseNode", false),
            Some("FunnelsQuery") => ("FunnelsDataWarehouseNode", true),
            _ => return node,
        };
        let is_funnel = kind_of(&node) == Some("FunnelsQuery");

        if let Some(Value::Array(series)) = node.get_mut("series") {
            for item in series {
                stamp_kind(item, Some(data_warehouse_kind), allow_group);
            }
        }
        if is_funnel
            && let Some(Value::Object(funnels_filter)) = node.get_mut("funnelsFilter")
            && let Some(Value::Array(exclusions)) = funnels_filter.get_mut("exclusions")
        {
            // Exclusions have neither a data warehouse nor a group member.
            for item in exclusions {
                stamp_kind(item, None, false);
            }
        }
        node
    }
}

/// Gives an object without a `kind` key the kind the old coercion would have picked. Anything
/// else (tagged items, placeholders such as `"{SIGNED_UP}"`, nulls) is left alone.
fn stamp_kind(item: &mut Value, data_warehouse_kind: Option<&'static str>, allow_group: bool) {
    let Value::Object(item) = item else {
        return;
    };
    if item.contains_key("kind") {
        return;
    }
    let kind = match data_warehouse_kind {
        Some(kind) if item.contains_key("table_name") => kind,
        _ if allow_group && item.contains_key("nodes") => "GroupNode",
        _ if item.contains_key("id") && !item.contains_key("event") => "ActionsNode",
        _ => "EventsNode",
    };
    item.insert("kind".to_owned(), kind.into());
}
