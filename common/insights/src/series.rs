//! What insight nodes share about `series` entries and their settings objects: an `EventsNode`
//! (or an `ActionsNode`) read into what it names and the SQL condition of it and its filters,
//! and a settings object
//! (`stickinessFilter`, `lifecycleFilter`, ...) read into a typed struct whose errors name the
//! field (`stickinessFilter.computedAs`).

use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::{Context, Invalid, actions, filters, sql_text};

/// An `EventsNode` or `ActionsNode` of `series`: which events it counts.
#[derive(Debug, Clone)]
pub struct EventSeries {
    /// `None`: every event (or the events of `action`).
    pub event: Option<String>,
    /// The action an `ActionsNode` names: its id and name.
    pub action: Option<(i64, String)>,
    /// The event name (or the action's condition) and the entry's own `properties` /
    /// `fixedProperties` (`true` when none).
    pub condition: String,
}

impl EventSeries {
    /// Reads `series[index]`. Data-warehouse series are refused (a 400 naming
    /// `series[index].kind`); an action that is not the project's is a 400 naming
    /// `series[index].id`.
    pub fn read(item: &Value, index: usize, ctx: &Context) -> Result<EventSeries, Invalid> {
        let attr = format!("series[{index}]");
        if !item.is_object() {
            return Err(Invalid::new(attr, "A series must be an object."));
        }
        let mut conditions = Vec::new();
        let mut action = None;
        match item.get("kind").and_then(Value::as_str) {
            None | Some("EventsNode") => {}
            Some("ActionsNode") => {
                let named = actions::named(item, ctx, &attr)?;
                let condition = actions::condition(named, ctx, &attr)?;
                if condition != "true" {
                    conditions.push(condition);
                }
                action = Some((named.id, named.name.clone()));
            }
            Some(kind @ ("DataWarehouseNode" | "LifecycleDataWarehouseNode")) => {
                return Err(Invalid::new(
                    format!("{attr}.kind"),
                    format!("{kind} series are not supported: use EventsNode."),
                ));
            }
            Some(kind) => {
                return Err(Invalid::new(
                    format!("{attr}.kind"),
                    format!("Unknown series kind '{kind}'."),
                ));
            }
        }
        let event = match item.get("event") {
            _ if action.is_some() => None,
            None | Some(Value::Null) => None,
            Some(Value::String(event)) => Some(event.clone()),
            Some(_) => {
                return Err(Invalid::new(
                    format!("{attr}.event"),
                    "event must be a string or null.",
                ));
            }
        };
        if let Some(event) = &event {
            conditions.push(format!("event = {}", sql_text::string(event)));
        }
        for key in ["properties", "fixedProperties"] {
            let condition = filters::expression(item.get(key), ctx, &format!("{attr}.{key}"))?;
            if condition != "true" {
                conditions.push(format!("({condition})"));
            }
        }
        let condition = if conditions.is_empty() {
            "true".to_string()
        } else {
            conditions.join(" AND ")
        };
        Ok(EventSeries {
            event,
            action,
            condition,
        })
    }

    /// The result's label: the action's name, the event, or `All events`.
    pub fn label(&self) -> String {
        match (&self.action, &self.event) {
            (Some((_, name)), _) => name.clone(),
            (None, Some(event)) => event.clone(),
            (None, None) => "All events".to_string(),
        }
    }

    /// The result's `action.id`: the action's id, the event, or null.
    pub fn entity_id(&self) -> Value {
        match (&self.action, &self.event) {
            (Some((id, _)), _) => Value::from(*id),
            (None, Some(event)) => Value::String(event.clone()),
            (None, None) => Value::Null,
        }
    }

    /// The result's `action.type`: `actions` or `events`.
    pub fn entity_type(&self) -> &'static str {
        match self.action {
            Some(_) => "actions",
            None => "events",
        }
    }
}

/// The node's `series`, which must be a non-empty list (`needed` says why, in the 400).
pub fn entries<'a>(node: &'a Value, needed: &str) -> Result<&'a [Value], Invalid> {
    match node.get("series") {
        Some(Value::Array(items)) if !items.is_empty() => Ok(items),
        Some(Value::Array(_)) | None | Some(Value::Null) => Err(Invalid::new("series", needed)),
        Some(_) => Err(Invalid::new("series", "series must be a list.")),
    }
}

/// Reads the optional object `node[key]` as `T` (missing or null gives `T::default()`). Errors
/// name the field under `key` (`stickinessFilter.computedAs`), unknown fields included.
pub fn settings<T: DeserializeOwned + Default>(node: &Value, key: &str) -> Result<T, Invalid> {
    let value = match node.get(key) {
        None | Some(Value::Null) => return Ok(T::default()),
        Some(value @ Value::Object(_)) => value,
        Some(_) => return Err(Invalid::new(key, format!("{key} must be an object."))),
    };
    serde_path_to_error::deserialize(value).map_err(|error| {
        let mut attr = key.to_string();
        for segment in error.path().iter() {
            match segment {
                serde_path_to_error::Segment::Seq { index } => attr.push_str(&format!("[{index}]")),
                serde_path_to_error::Segment::Map { key } => {
                    attr.push('.');
                    attr.push_str(key);
                }
                _ => {}
            }
        }
        let message = error.inner().to_string();
        // An unknown field's path stops at the object holding it.
        if let Some(field) = message
            .strip_prefix("unknown field `")
            .and_then(|rest| rest.split('`').next())
            && !attr.ends_with(&format!(".{field}"))
        {
            attr.push('.');
            attr.push_str(field);
        }
        Invalid::new(attr, message)
    })
}
