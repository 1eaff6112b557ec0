//! Write-side validation of a flag, with PostHog's messages (FeatureFlagSerializer.validate_key
//! and validate_filters). Errors in `filters` name `filters`, as DRF's field validators do.

use std::collections::{BTreeMap, HashMap, HashSet};

use cohort_core::Cohort;
use common::error::ApiError;
use serde_json::Value;

use crate::FeatureFlag;
use crate::model::{FlagFilters, Operator, PropertyKind};

pub const MAX_KEY_CHARS: usize = 400;

/// A key PostHog accepts: 1–400 of letters, digits, `-` and `_`.
pub fn key(key: &str) -> Result<(), ApiError> {
    if key.is_empty() {
        return Err(ApiError::field(
            "key",
            "blank",
            "This field may not be blank.",
        ));
    }
    if key.chars().count() > MAX_KEY_CHARS {
        return Err(ApiError::field(
            "key",
            "max_length",
            format!("Ensure this field has no more than {MAX_KEY_CHARS} characters."),
        ));
    }
    if !key
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    {
        return Err(ApiError::field(
            "key",
            "invalid_key",
            "Only letters, numbers, hyphens (-) & underscores (_) are allowed.",
        ));
    }
    Ok(())
}

/// What `filters` are checked against.
pub struct Context<'a> {
    /// The project's live flags (flag dependencies must name one of them).
    pub flags: &'a [FeatureFlag],
    /// The flag being written: its id (None while it is created) and its key after the write.
    pub id: Option<i64>,
    pub key: &'a str,
    /// A new flag must have at least one condition set.
    pub creating: bool,
    /// The project's live cohorts (cohort conditions must name one that flags can evaluate);
    /// only read when `filters` have a cohort condition (see [`names_cohorts`]).
    pub cohorts: &'a [Cohort],
}

/// Whether `filters` have a cohort condition (the caller then loads the project's cohorts).
pub fn names_cohorts(filters: &FlagFilters) -> bool {
    !crate::cohort_conditions::named_by(filters).is_empty()
}

fn invalid(detail: impl Into<String>) -> ApiError {
    ApiError::validation("filters", detail)
}

fn invalid_code(code: &str, detail: impl Into<String>) -> ApiError {
    ApiError::field("filters", code, detail)
}

fn operator_name(operator: Operator) -> String {
    serde_json::to_value(operator)
        .ok()
        .and_then(|value| value.as_str().map(str::to_owned))
        .unwrap_or_default()
}

fn kind_name(kind: PropertyKind) -> String {
    serde_json::to_value(kind)
        .ok()
        .and_then(|value| value.as_str().map(str::to_owned))
        .unwrap_or_default()
}

fn percentage(value: f64, path: &str) -> Result<(), ApiError> {
    if !value.is_finite() {
        return Err(invalid(format!("{path} must be finite, got {value}")));
    }
    if !(0.0..=100.0).contains(&value) {
        return Err(invalid(format!(
            "{path} must be between 0 and 100, got {value}"
        )));
    }
    Ok(())
}

/// Checks `filters` and normalizes payloads to JSON text (PostHog stores them as strings).
pub fn filters(filters: &mut FlagFilters, context: &Context<'_>) -> Result<(), ApiError> {
    if context.creating && filters.groups.is_empty() {
        return Err(invalid(
            "Feature flags must have at least one condition set (group).",
        ));
    }
    let variant_keys = variants(filters)?;
    if let Some(holdout) = &filters.holdout {
        percentage(holdout.exclusion_percentage, "holdout.exclusion_percentage")?;
    }
    let flag_level = filters.aggregation_group_type_index;
    for (name, groups) in [
        ("groups", &filters.groups),
        ("super_groups", &filters.super_groups),
    ] {
        for (index, group) in groups.iter().enumerate() {
            if let Some(rollout) = group.rollout_percentage {
                percentage(rollout, &format!("{name}[{index}].rollout_percentage"))?;
            }
            if let Some(variant) = &group.variant
                && !variant_keys.contains(variant.as_str())
            {
                return Err(invalid(
                    "Filters are not valid (variant override does not exist)",
                ));
            }
            let aggregation = group.aggregation_group_type_index.or(flag_level);
            for (position, property) in group.properties.iter().enumerate() {
                let path = format!("{name}[{index}].properties[{position}]");
                property_shape(property, aggregation, &path)?;
            }
        }
    }
    crate::cohort_conditions::validate::check(filters, context.cohorts)?;
    dependencies(filters, context)?;
    payloads(filters, &variant_keys)?;
    Ok(())
}

/// The multivariate variants' keys, each non-blank and unique, their percentages summing to 100
/// (also what an experiment's new flag must pass).
pub fn variants(filters: &FlagFilters) -> Result<HashSet<String>, ApiError> {
    let mut keys = HashSet::new();
    let Some(multivariate) = &filters.multivariate else {
        return Ok(keys);
    };
    let mut sum = 0.0;
    for (index, variant) in multivariate.variants.iter().enumerate() {
        if variant.key.trim().is_empty() {
            return Err(invalid(format!(
                "multivariate.variants[{index}].key may not be blank."
            )));
        }
        if !keys.insert(variant.key.clone()) {
            return Err(invalid(format!(
                "Invalid variant definitions: variant key \"{}\" appears more than once.",
                variant.key
            )));
        }
        percentage(
            variant.rollout_percentage,
            &format!("multivariate.variants[{index}].rollout_percentage"),
        )?;
        sum += variant.rollout_percentage;
    }
    // Exact, as PostHog compares: the web app splits 100 in integers.
    if !multivariate.variants.is_empty() && sum != 100.0 {
        return Err(invalid(
            "Invalid variant definitions: Variant rollout percentages must sum to 100.",
        ));
    }
    Ok(keys)
}

fn property_shape(
    property: &crate::PropertyFilter,
    aggregation: Option<i64>,
    path: &str,
) -> Result<(), ApiError> {
    let operator = property.operator;
    let name = operator_name(operator);
    match (aggregation, property.kind) {
        (None, PropertyKind::Person | PropertyKind::Cohort | PropertyKind::Flag) => {}
        (None, PropertyKind::Group) => {
            return Err(invalid(
                "Filters are not valid (person-aggregated conditions can only use person, cohort, and flag properties)",
            ));
        }
        (Some(_), kind) if kind != PropertyKind::Group => {
            return Err(invalid(
                "Filters are not valid (group-aggregated conditions can only use group properties)",
            ));
        }
        (Some(index), _) if property.group_type_index != Some(index) => {
            return Err(invalid(
                "Filters are not valid (group properties must match the condition set's group type)",
            ));
        }
        (Some(_), _) => {}
    }
    if property.kind == PropertyKind::Flag && operator != Operator::FlagEvaluatesTo {
        return Err(invalid(
            "Flag properties must use the 'flag_evaluates_to' operator",
        ));
    }
    if property.kind == PropertyKind::Cohort {
        // What it names is checked against the project's cohorts (`cohort_conditions::validate`).
        return Ok(());
    }
    if matches!(operator, Operator::In | Operator::NotIn) {
        return Err(invalid_code(
            "invalid_operator",
            format!(
                "The '{name}' operator is only valid for cohort properties, not '{}' properties.",
                kind_name(property.kind)
            ),
        ));
    }
    if operator == Operator::FlagEvaluatesTo && property.kind != PropertyKind::Flag {
        return Err(invalid_code(
            "invalid_operator",
            format!(
                "The '{name}' operator is only valid for flag properties, not '{}' properties.",
                kind_name(property.kind)
            ),
        ));
    }
    let text = property.value.as_str();
    match operator {
        Operator::Regex
        | Operator::NotRegex
        | Operator::Icontains
        | Operator::NotIcontains
        | Operator::Gt
        | Operator::Gte
        | Operator::Lt
        | Operator::Lte => {
            let Some(text) = text else {
                return Err(invalid_code(
                    "invalid_value",
                    format!(
                        "Invalid value for operator {name}: {}",
                        value_text(&property.value)
                    ),
                ));
            };
            if matches!(operator, Operator::Regex | Operator::NotRegex)
                && regex::Regex::new(text).is_err()
            {
                return Err(invalid(format!("{path}.value: invalid regex pattern")));
            }
        }
        Operator::IsDateExact | Operator::IsDateBefore | Operator::IsDateAfter
            if !text.is_some_and(is_date_value) =>
        {
            return Err(invalid_code(
                "invalid_date",
                format!("Invalid date value: {}", value_text(&property.value)),
            ));
        }
        Operator::SemverEq
        | Operator::SemverNeq
        | Operator::SemverGt
        | Operator::SemverGte
        | Operator::SemverLt
        | Operator::SemverLte
        | Operator::SemverTilde
        | Operator::SemverCaret
        | Operator::SemverWildcard => {
            let Some(text) = text else {
                return Err(invalid_code(
                    "invalid_value",
                    format!("Invalid value for operator {name}: expected a semver string"),
                ));
            };
            let version = if operator == Operator::SemverWildcard {
                text.trim_end_matches(['.', '*'])
            } else {
                text
            };
            if !is_semver(version) {
                return Err(invalid_code(
                    "invalid_value",
                    format!("Invalid semver value for operator {name}: {text}"),
                ));
            }
        }
        _ => {}
    }
    Ok(())
}

/// A value as Python's `str()` would print it in PostHog's messages.
pub(crate) fn value_text(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        Value::Null => "None".into(),
        other => other.to_string(),
    }
}

/// PostHog's `determine_parsed_date_for_property_matching`: a relative date (`-7d`, `1h`, ...)
/// or an ISO date / date-time.
fn is_date_value(text: &str) -> bool {
    let text = text.trim();
    let relative = text.strip_prefix('-').unwrap_or(text);
    if let Some(unit) = relative.chars().last()
        && matches!(unit, 'h' | 'd' | 'w' | 'm' | 'y')
    {
        let digits = &relative[..relative.len() - 1];
        if !digits.is_empty() && digits.chars().all(|c| c.is_ascii_digit()) {
            return true;
        }
    }
    chrono::DateTime::parse_from_rfc3339(text).is_ok()
        || chrono::NaiveDate::parse_from_str(text, "%Y-%m-%d").is_ok()
        || chrono::NaiveDateTime::parse_from_str(text, "%Y-%m-%d %H:%M:%S").is_ok()
        || chrono::NaiveDateTime::parse_from_str(text, "%Y-%m-%dT%H:%M:%S").is_ok()
        || chrono::NaiveDateTime::parse_from_str(text, "%Y-%m-%dT%H:%M:%S%.f").is_ok()
}

/// `1`, `1.2`, `1.2.3`, optionally with a leading `v` and a `-pre`/`+build` suffix.
fn is_semver(text: &str) -> bool {
    let text = text.trim();
    let text = text.strip_prefix(['v', 'V']).unwrap_or(text);
    let core = text.split(['-', '+']).next().unwrap_or("");
    let parts: Vec<&str> = core.split('.').collect();
    (1..=3).contains(&parts.len())
        && parts
            .iter()
            .all(|part| !part.is_empty() && part.chars().all(|c| c.is_ascii_digit()))
}

/// `type: flag` conditions name another live, active flag of the project by id, and the
/// dependencies form no cycle.
fn dependencies(filters: &FlagFilters, context: &Context<'_>) -> Result<(), ApiError> {
    let by_id: HashMap<i64, &FeatureFlag> = context.flags.iter().map(|f| (f.id, f)).collect();
    let own = dependency_ids(filters)?;
    if own.is_empty() {
        return Ok(());
    }
    let mut graph: BTreeMap<i64, Vec<i64>> = BTreeMap::new();
    for flag in context.flags {
        if Some(flag.id) != context.id {
            // Stored flags passed this check when written; references that no longer parse
            // are no edges.
            graph.insert(flag.id, dependency_ids(&flag.filters).unwrap_or_default());
        }
    }
    for id in &own {
        if Some(*id) == context.id {
            return Err(invalid(format!(
                "Feature flag '{}' cannot depend on itself",
                context.key
            )));
        }
        let Some(flag) = by_id.get(id) else {
            return Err(invalid(format!(
                "Flag dependency references non-existent flag with ID {id}"
            )));
        };
        if !flag.active {
            return Err(invalid(format!(
                "Cannot create dependency on disabled flag '{}' (ID: {id}). Flag dependencies must reference active flags only.",
                flag.key
            )));
        }
    }
    // A cycle through this flag: walk from each dependency back to it.
    let Some(this) = context.id else {
        return Ok(()); // a new flag has no id that others could name
    };
    let key_of = |id: i64| -> String {
        if id == this {
            context.key.to_owned()
        } else {
            by_id.get(&id).map(|f| f.key.clone()).unwrap_or_default()
        }
    };
    for start in &own {
        let mut path = vec![this];
        if let Some(cycle) = find_cycle(*start, this, &graph, &mut path) {
            let names: Vec<String> = cycle.into_iter().map(key_of).collect();
            return Err(invalid(format!(
                "Circular dependency detected: {}",
                names.join(" → ")
            )));
        }
    }
    Ok(())
}

fn find_cycle(
    at: i64,
    target: i64,
    graph: &BTreeMap<i64, Vec<i64>>,
    path: &mut Vec<i64>,
) -> Option<Vec<i64>> {
    if at == target {
        let mut cycle = path.clone();
        cycle.push(target);
        return Some(cycle);
    }
    if path.contains(&at) {
        return None; // a cycle elsewhere; not this flag's to answer for
    }
    path.push(at);
    for next in graph.get(&at).map(Vec::as_slice).unwrap_or_default() {
        if let Some(cycle) = find_cycle(*next, target, graph, path) {
            return Some(cycle);
        }
    }
    path.pop();
    None
}

fn dependency_ids(filters: &FlagFilters) -> Result<Vec<i64>, ApiError> {
    let mut ids = Vec::new();
    for group in filters.groups.iter().chain(&filters.super_groups) {
        for property in &group.properties {
            if property.kind != PropertyKind::Flag {
                continue;
            }
            let id = property.key.trim().parse::<i64>().map_err(|_| {
                invalid(format!(
                    "Flag dependencies must reference flag IDs (integers), not flag keys. Invalid reference: '{}'",
                    property.key
                ))
            })?;
            if !ids.contains(&id) {
                ids.push(id);
            }
        }
    }
    Ok(ids)
}

fn payloads(filters: &mut FlagFilters, variant_keys: &HashSet<String>) -> Result<(), ApiError> {
    let multivariate = filters.multivariate.is_some();
    for (key, value) in filters.payloads.iter_mut() {
        if multivariate {
            if !variant_keys.contains(key) {
                return Err(invalid(
                    "Payload keys must match a variant key for multivariate flags",
                ));
            }
        } else if key != "true" {
            return Err(invalid("Payload keys must be 'true' for boolean flags"));
        }
        match value {
            // Text is the stored form already; it must hold JSON.
            Value::String(text) => {
                if serde_json::from_str::<Value>(text).is_err() {
                    return Err(invalid("Payload value is not valid JSON"));
                }
            }
            other => *other = Value::String(other.to_string()),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn flag(id: i64, key: &str, filters: Value, active: bool) -> FeatureFlag {
        serde_json::from_value(json!({
            "id": id, "team_id": 1, "key": key, "filters": filters, "active": active,
            "version": 1, "created_at": "2024-01-01T00:00:00Z"
        }))
        .unwrap()
    }

    fn check(
        filters: Value,
        flags: &[FeatureFlag],
        id: Option<i64>,
    ) -> Result<FlagFilters, String> {
        let mut parsed: FlagFilters = serde_json::from_value(filters).unwrap();
        let context = Context {
            flags,
            id,
            key: "this",
            creating: id.is_none(),
            cohorts: &[],
        };
        super::filters(&mut parsed, &context)
            .map(|()| parsed)
            .map_err(|error| error.body.detail)
    }

    #[test]
    fn keys() {
        assert!(key("beta-feature_2").is_ok());
        for (bad, code) in [
            ("", "blank"),
            ("a b", "invalid_key"),
            ("a.b", "invalid_key"),
        ] {
            assert_eq!(key(bad).unwrap_err().body.code, code, "{bad}");
        }
        assert_eq!(key(&"k".repeat(401)).unwrap_err().body.code, "max_length");
        assert!(key(&"k".repeat(400)).is_ok());
    }

    #[test]
    fn variants_rollouts_and_payloads() {
        let group = json!({"properties": [], "rollout_percentage": 50});
        assert!(
            check(json!({"groups": []}), &[], None)
                .unwrap_err()
                .contains("at least one")
        );
        assert!(
            check(json!({"groups": [{"rollout_percentage": 101}]}), &[], None)
                .unwrap_err()
                .contains("between 0 and 100")
        );
        let variants = |a: f64, b: f64| {
            json!({"variants": [
            {"key": "control", "rollout_percentage": a}, {"key": "test", "rollout_percentage": b}]})
        };
        assert!(
            check(
                json!({"groups": [group], "multivariate": variants(50.0, 40.0)}),
                &[],
                None
            )
            .unwrap_err()
            .contains("must sum to 100")
        );
        assert!(
            check(
                json!({"groups": [group], "multivariate": {"variants": [
            {"key": "a", "rollout_percentage": 50}, {"key": "a", "rollout_percentage": 50}]}}),
                &[],
                None
            )
            .unwrap_err()
            .contains("more than once")
        );
        assert!(
            check(
                json!({"groups": [{"variant": "nope"}], "multivariate": variants(50.0, 50.0)}),
                &[],
                None
            )
            .unwrap_err()
            .contains("variant override does not exist")
        );
        assert!(
            check(
                json!({"groups": [group], "payloads": {"control": "1"}}),
                &[],
                None
            )
            .unwrap_err()
            .contains("must be 'true'")
        );
        assert!(
            check(
                json!({"groups": [group], "payloads": {"true": "{nope"}}),
                &[],
                None
            )
            .unwrap_err()
            .contains("not valid JSON")
        );
        assert!(
            check(
                json!({"groups": [group], "holdout": {"id": 1, "exclusion_percentage": 120}}),
                &[],
                None
            )
            .unwrap_err()
            .contains("exclusion_percentage")
        );
        let ok = check(
            json!({"groups": [group], "multivariate": variants(50.0, 50.0), "payloads": {"test": {"a": 1}}}),
            &[],
            None,
        )
        .unwrap();
        assert_eq!(ok.payloads["test"], json!("{\"a\":1}"));
    }

    #[test]
    fn properties() {
        let with = |property: Value| json!({"groups": [{"properties": [property]}]});
        let cases = [
            (
                json!({"key": "1", "type": "cohort", "value": 1, "operator": "in"}),
                "Cohort with id 1 does not exist",
            ),
            (
                json!({"key": "email", "type": "person", "value": 5, "operator": "icontains"}),
                "Invalid value for operator icontains: 5",
            ),
            (
                json!({"key": "email", "type": "person", "value": "(", "operator": "regex"}),
                "invalid regex pattern",
            ),
            (
                json!({"key": "d", "type": "person", "value": "soon", "operator": "is_date_before"}),
                "Invalid date value: soon",
            ),
            (
                json!({"key": "v", "type": "person", "value": "x.y", "operator": "semver_gt"}),
                "Invalid semver value",
            ),
            (
                json!({"key": "e", "type": "person", "value": [1], "operator": "in"}),
                "only valid for cohort",
            ),
            (
                json!({"key": "g", "type": "group", "group_type_index": 0, "value": "x"}),
                "person-aggregated",
            ),
        ];
        for (property, message) in cases {
            let detail = check(with(property.clone()), &[], None).unwrap_err();
            assert!(detail.contains(message), "{property}: {detail}");
        }
        assert!(
            check(
                with(json!({"key": "d", "value": "-7d", "operator": "is_date_after"})),
                &[],
                None
            )
            .is_ok()
        );
        assert!(
            check(
                with(json!({"key": "v", "value": "1.2.*", "operator": "semver_wildcard"})),
                &[],
                None
            )
            .is_ok()
        );
        assert!(
            check(
                json!({"aggregation_group_type_index": 0, "groups": [{"properties": [
                {"key": "name", "type": "group", "group_type_index": 0, "value": "x"}]}]}),
                &[],
                None
            )
            .is_ok()
        );
    }

    #[test]
    fn dependencies_exist_are_active_and_acyclic() {
        let on = |id: i64| {
            json!({"groups": [{"properties": [
            {"key": id.to_string(), "type": "flag", "value": true, "operator": "flag_evaluates_to"}]}]})
        };
        let flags = vec![
            flag(1, "a", json!({"groups": [{}]}), true),
            flag(2, "b", on(3), true),
            flag(3, "this", json!({"groups": [{}]}), true),
            flag(4, "off", json!({"groups": [{}]}), false),
        ];
        assert!(check(on(1), &flags, None).is_ok());
        assert!(
            check(on(9), &flags, None)
                .unwrap_err()
                .contains("non-existent flag with ID 9")
        );
        assert!(
            check(on(4), &flags, None)
                .unwrap_err()
                .contains("disabled flag 'off'")
        );
        assert!(
            check(on(3), &flags, Some(3))
                .unwrap_err()
                .contains("cannot depend on itself")
        );
        assert_eq!(
            check(on(2), &flags, Some(3)).unwrap_err(),
            "Circular dependency detected: this → b → this"
        );
        let by_key = json!({"groups": [{"properties": [
            {"key": "a", "type": "flag", "value": true, "operator": "flag_evaluates_to"}]}]});
        assert!(
            check(by_key, &flags, None)
                .unwrap_err()
                .contains("must reference flag IDs")
        );
        let wrong_operator =
            json!({"groups": [{"properties": [{"key": "1", "type": "flag", "value": true}]}]});
        assert!(
            check(wrong_operator, &flags, None)
                .unwrap_err()
                .contains("flag_evaluates_to")
        );
    }
}
