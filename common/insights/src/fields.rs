//! Unknown fields are refused, as PostHog's schema does (`extra="forbid"`): a misspelt
//! `dateRage` is a 400 naming it, not a silently different query. Fields PostHog knows but we do
//! not use (display settings, sampling...) are accepted and ignored.

use serde_json::Value;

use crate::Invalid;

/// Every node and insight query (`Node`, `DataNode`, `InsightsQueryBase`).
const BASE: &[&str] = &[
    "kind",
    "version",
    "modifiers",
    "tags",
    "response",
    "dataColorTheme",
    "dateRange",
    "filterTestAccounts",
    "properties",
    "aggregation_group_type_index",
    "samplingFactor",
];

const EVENTS_QUERY: &[&str] = &[
    "select",
    "where",
    "fixedProperties",
    "event",
    "events",
    "actionId",
    "personId",
    "before",
    "after",
    "orderBy",
    "limit",
    "offset",
    "source",
];
const TRENDS_QUERY: &[&str] = &[
    "series",
    "interval",
    "trendsFilter",
    "breakdownFilter",
    "compareFilter",
    "conversionGoal",
];
const FUNNELS_QUERY: &[&str] = &["series", "interval", "breakdownFilter", "funnelsFilter"];
const RETENTION_QUERY: &[&str] = &["retentionFilter", "breakdownFilter"];
const STICKINESS_QUERY: &[&str] = &[
    "series",
    "interval",
    "intervalCount",
    "stickinessFilter",
    "compareFilter",
];
const LIFECYCLE_QUERY: &[&str] = &[
    "series",
    "interval",
    "lifecycleFilter",
    "customAggregationTarget",
];
const EXPERIMENT_QUERY: &[&str] = &["experiment_id", "metric", "name"];
const PATHS_QUERY: &[&str] = &["pathsFilter", "funnelPathsFilter"];
const ACTORS_QUERY: &[&str] = &[
    "select",
    "search",
    "fixedProperties",
    "orderBy",
    "limit",
    "offset",
    "source",
];

/// `EntityNode` and its kinds (events, actions, data warehouse), with funnel exclusions' step range.
const ENTITY: &[&str] = &[
    "kind",
    "version",
    "response",
    "name",
    "custom_name",
    "event",
    "id",
    "limit",
    "orderBy",
    "math",
    "math_group_type_index",
    "math_hogql",
    "math_multiplier",
    "math_property",
    "math_property_revenue_currency",
    "math_property_type",
    "properties",
    "fixedProperties",
    "optionalInFunnel",
    "funnelFromStep",
    "funnelToStep",
    "table_name",
    "id_field",
    "timestamp_field",
    "distinct_id_field",
    "dw_source_type",
];
const DATE_RANGE: &[&str] = &["date_from", "date_to", "explicitDate"];

/// Checks the node's own fields, its series' and its `dateRange`'s.
pub fn check(node: &Value, kind: &str) -> Result<(), Invalid> {
    let own: &[&str] = match kind {
        "EventsQuery" => EVENTS_QUERY,
        "TrendsQuery" => TRENDS_QUERY,
        "FunnelsQuery" => FUNNELS_QUERY,
        "RetentionQuery" => RETENTION_QUERY,
        "StickinessQuery" => STICKINESS_QUERY,
        "LifecycleQuery" => LIFECYCLE_QUERY,
        "ExperimentQuery" => EXPERIMENT_QUERY,
        "PathsQuery" => PATHS_QUERY,
        "ActorsQuery" => ACTORS_QUERY,
        _ => &[],
    };
    known(node, "", |field| {
        BASE.contains(&field) || own.contains(&field)
    })?;
    if let Some(Value::Array(series)) = node.get("series") {
        for (index, item) in series.iter().enumerate() {
            known(item, &format!("series[{index}]."), |f| ENTITY.contains(&f))?;
        }
    }
    if let Some(date_range) = node.get("dateRange") {
        known(date_range, "dateRange.", |f| DATE_RANGE.contains(&f))?;
    }
    Ok(())
}

fn known(value: &Value, prefix: &str, allowed: impl Fn(&str) -> bool) -> Result<(), Invalid> {
    let Value::Object(fields) = value else {
        return Ok(()); // the compilers say what shape they wanted
    };
    match fields.keys().find(|field| !allowed(field)) {
        Some(unknown) => Err(Invalid::new(
            format!("{prefix}{unknown}"),
            format!("Unknown field: {unknown}."),
        )),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn misspelt_fields_are_named() {
        let node = json!({"kind": "TrendsQuery", "series": [], "dateRage": {}});
        assert_eq!(check(&node, "TrendsQuery").unwrap_err().attr, "dateRage");
        let node = json!({"kind": "TrendsQuery", "series": [{"kind": "EventsNode", "evnt": "a"}]});
        assert_eq!(
            check(&node, "TrendsQuery").unwrap_err().attr,
            "series[0].evnt"
        );
        let node = json!({"kind": "FunnelsQuery", "series": [], "dateRange": {"from": "-7d"}});
        assert_eq!(
            check(&node, "FunnelsQuery").unwrap_err().attr,
            "dateRange.from"
        );
        let node = json!({"kind": "EventsQuery", "select": ["event"], "series": []});
        assert_eq!(check(&node, "EventsQuery").unwrap_err().attr, "series");
    }

    #[test]
    fn known_fields_pass() {
        let node = json!({
            "kind": "TrendsQuery", "version": 5, "modifiers": {}, "filterTestAccounts": false,
            "series": [{"kind": "EventsNode", "event": "a", "math": "dau", "custom_name": "A"}],
            "dateRange": {"date_from": "-7d", "explicitDate": false},
            "trendsFilter": {"display": "ActionsLineGraph"}, "breakdownFilter": {},
        });
        assert!(check(&node, "TrendsQuery").is_ok());
    }
}
