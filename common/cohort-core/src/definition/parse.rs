//! Reading `filters` from a request: the shape through serde (with the field path), then the
//! rules serde cannot say (a group at the top, a window on every behavioural filter, ...).

use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::{Behavior, BehavioralFilter, Filters, Group, Node};

/// Most filters one definition may hold, nested ones included.
pub const MAX_FILTERS: usize = 200;

/// A definition that is not valid: the field (`filters.properties.values[0].key`) and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{detail}")]
pub struct DefinitionError {
    pub attr: String,
    pub detail: String,
}

impl DefinitionError {
    pub fn new(attr: impl Into<String>, detail: impl Into<String>) -> Self {
        Self {
            attr: attr.into(),
            detail: detail.into(),
        }
    }
}

/// The outer shape, its nodes kept raw so each is read with its own path.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFilters {
    properties: Value,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawGroup {
    #[serde(rename = "type")]
    _kind: String,
    values: Vec<Value>,
}

impl Filters {
    /// `filters` as a request gives it (`attr` is the field's name, usually `filters`).
    pub fn parse(value: &Value, attr: &str) -> Result<Self, DefinitionError> {
        let raw: RawFilters = typed(value, attr)?;
        let top = format!("{attr}.properties");
        let properties = node(&raw.properties, &top)?;
        let filters = Filters { properties };
        match &filters.properties {
            Node::And(group) | Node::Or(group) => check_group(group, &top)?,
            _ => {
                return Err(DefinitionError::new(
                    format!("{top}.type"),
                    "A cohort's properties must be an AND or OR group.",
                ));
            }
        }
        let mut count = 0;
        filters.properties.visit(&mut |_| count += 1);
        if count > MAX_FILTERS {
            return Err(DefinitionError::new(
                top,
                format!("A cohort may hold at most {MAX_FILTERS} filters and groups."),
            ));
        }
        Ok(filters)
    }
}

/// One node: its `type` picks the struct it is read as.
fn node(value: &Value, attr: &str) -> Result<Node, DefinitionError> {
    let kind = match value.get("type") {
        Some(Value::String(kind)) => kind.as_str(),
        _ => {
            return Err(DefinitionError::new(
                format!("{attr}.type"),
                "Each cohort filter and group needs a type: AND, OR, person, behavioral or cohort.",
            ));
        }
    };
    let without_type = || {
        let mut object = value.as_object().cloned().unwrap_or_default();
        object.remove("type");
        Value::Object(object)
    };
    Ok(match kind {
        "AND" | "OR" => {
            let raw: RawGroup = typed(value, attr)?;
            if raw.values.len() > MAX_FILTERS {
                return Err(DefinitionError::new(
                    format!("{attr}.values"),
                    format!("A cohort may hold at most {MAX_FILTERS} filters and groups."),
                ));
            }
            let values = raw
                .values
                .iter()
                .enumerate()
                .map(|(index, value)| node(value, &format!("{attr}.values[{index}]")))
                .collect::<Result<Vec<_>, _>>()?;
            let group = Group { values };
            if kind == "AND" {
                Node::And(group)
            } else {
                Node::Or(group)
            }
        }
        "person" => Node::Person(typed(&without_type(), attr)?),
        "behavioral" => Node::Behavioral(typed(&without_type(), attr)?),
        "cohort" => Node::Cohort(typed(&without_type(), attr)?),
        other => {
            return Err(DefinitionError::new(
                format!("{attr}.type"),
                format!(
                    "Cohort filters of type '{other}' are not supported (AND, OR, person, behavioral, cohort)."
                ),
            ));
        }
    })
}

/// `value` read as `T`, an error naming the field under `attr`.
fn typed<T: DeserializeOwned>(value: &Value, attr: &str) -> Result<T, DefinitionError> {
    serde_path_to_error::deserialize(value).map_err(|error| {
        let path = error.path().to_string();
        let attr = if path == "." || path.is_empty() {
            attr.to_owned()
        } else {
            format!("{attr}.{path}")
        };
        DefinitionError::new(attr, error.into_inner().to_string())
    })
}

fn check_group(group: &Group, attr: &str) -> Result<(), DefinitionError> {
    if group.values.is_empty() {
        return Err(DefinitionError::new(
            format!("{attr}.values"),
            "A cohort group needs at least one filter.",
        ));
    }
    for (index, node) in group.values.iter().enumerate() {
        let attr = format!("{attr}.values[{index}]");
        match node {
            Node::And(inner) | Node::Or(inner) => check_group(inner, &attr)?,
            Node::Person(filter) => {
                if filter.key.is_empty() {
                    return Err(DefinitionError::new(
                        format!("{attr}.key"),
                        "A person filter needs a property key.",
                    ));
                }
            }
            Node::Behavioral(filter) => check_behavioral(filter, &attr)?,
            Node::Cohort(filter) => {
                if filter.key != "id" {
                    return Err(DefinitionError::new(
                        format!("{attr}.key"),
                        "A cohort filter's key must be \"id\".",
                    ));
                }
            }
        }
    }
    Ok(())
}

fn check_behavioral(filter: &BehavioralFilter, attr: &str) -> Result<(), DefinitionError> {
    if filter.event_type != "events" {
        return Err(DefinitionError::new(
            format!("{attr}.event_type"),
            "Only event_type \"events\" is supported (actions are not kept by this service).",
        ));
    }
    if filter.key.is_empty() {
        return Err(DefinitionError::new(
            format!("{attr}.key"),
            "A behavioral filter needs an event name.",
        ));
    }
    match (
        &filter.explicit_datetime,
        filter.time_value,
        filter.time_interval,
    ) {
        (Some(_), _, _) => {}
        (None, Some(value), Some(_)) if value > 0 => {}
        (None, Some(_), Some(_)) => {
            return Err(DefinitionError::new(
                format!("{attr}.time_value"),
                "time_value must be a positive number.",
            ));
        }
        _ => {
            return Err(DefinitionError::new(
                format!("{attr}.time_value"),
                "A behavioral filter needs a window: time_value and time_interval, or explicit_datetime.",
            ));
        }
    }
    if filter.value == Behavior::PerformedEventMultiple {
        match (filter.operator, filter.operator_value) {
            (Some(_), Some(count)) if count >= 0 => {}
            _ => {
                return Err(DefinitionError::new(
                    format!("{attr}.operator_value"),
                    "performed_event_multiple needs an operator and a non-negative operator_value.",
                ));
            }
        }
    }
    Ok(())
}
