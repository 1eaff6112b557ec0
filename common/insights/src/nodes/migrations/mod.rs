//! The schema migrations, in PostHog's order (its files sorted by name), one file each under
//! PostHog's file name. Append new ones to [`ALL`]; never edit one that has shipped, since stored
//! nodes already carry the versions it stamped.

use serde_json::Value;

use super::upgrade::{Migration, Node};

#[path = "0003_data_visualization_pie_show_total.rs"]
mod data_visualization_pie_show_total;
#[path = "0004_entity_node_kind.rs"]
mod entity_node_kind;
#[path = "0001_retention_query_show_mean.rs"]
mod retention_query_show_mean;
#[path = "0002_stickiness_hidden_legend_indexes.rs"]
mod stickiness_hidden_legend_indexes;
#[path = "0003_trends_result_customizations_compare.rs"]
mod trends_result_customizations_compare;
#[path = "0005_trends_result_customizations_homogeneous.rs"]
mod trends_result_customizations_homogeneous;

pub use data_visualization_pie_show_total::DataVisualizationPieShowTotal;
pub use entity_node_kind::EntityNodeKind;
pub use retention_query_show_mean::RetentionQueryShowMean;
pub use stickiness_hidden_legend_indexes::StickinessHiddenLegendIndexes;
pub use trends_result_customizations_compare::TrendsResultCustomizationsCompare;
pub use trends_result_customizations_homogeneous::TrendsResultCustomizationsHomogeneous;

/// Every migration, in order.
pub static ALL: &[&dyn Migration] = &[
    &RetentionQueryShowMean,
    &StickinessHiddenLegendIndexes,
    &DataVisualizationPieShowTotal,
    &TrendsResultCustomizationsCompare,
    &EntityNodeKind,
    &TrendsResultCustomizationsHomogeneous,
];

// Helpers shared by the migrations. They mirror Python's semantics, since the migrations are
// ports of Python code that leans on truthiness and `str()`.

/// The node's `kind`, if it is a string.
fn kind_of(node: &Node) -> Option<&str> {
    node.get("kind").and_then(Value::as_str)
}

/// Where Trends and Stickiness keep their display options.
fn insight_filter_key(kind: Option<&str>) -> Option<&'static str> {
    match kind? {
        "TrendsQuery" => Some("trendsFilter"),
        "StickinessQuery" => Some("stickinessFilter"),
        _ => None,
    }
}

/// Python truthiness; a missing value is falsy.
fn truthy(value: Option<&Value>) -> bool {
    match value {
        None | Some(Value::Null) => false,
        Some(Value::Bool(flag)) => *flag,
        Some(Value::Number(number)) => number.as_f64().is_some_and(|float| float != 0.0),
        Some(Value::String(text)) => !text.is_empty(),
        Some(Value::Array(items)) => !items.is_empty(),
        Some(Value::Object(map)) => !map.is_empty(),
    }
}

/// Python's `str()` of a JSON scalar (containers fall back to their JSON text).
fn python_str(value: &Value) -> String {
    match value {
        Value::Null => "None".to_owned(),
        Value::Bool(true) => "True".to_owned(),
        Value::Bool(false) => "False".to_owned(),
        Value::String(text) => text.clone(),
        other => other.to_string(),
    }
}

/// `compareFilter.compare is True`: `compare_to` alone never turns comparison on.
fn has_compare(node: &Node) -> bool {
    match node.get("compareFilter") {
        Some(Value::Object(filter)) => filter.get("compare") == Some(&Value::Bool(true)),
        _ => false,
    }
}

/// A single breakdown (`breakdown_type` and `breakdown`) or a non-empty `breakdowns` list.
fn has_breakdown(node: &Node) -> bool {
    let Some(Value::Object(filter)) = node.get("breakdownFilter") else {
        return false;
    };
    if truthy(filter.get("breakdown_type")) && truthy(filter.get("breakdown")) {
        return true;
    }
    matches!(filter.get("breakdowns"), Some(Value::Array(items)) if !items.is_empty())
}
