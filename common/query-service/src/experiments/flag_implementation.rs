//! Whether the events an experiment would measure carry no `$feature/<flag>` property yet, i.e.
//! the flag still needs implementing in the product (PostHog's warning): the logic of
//! `GET /api/projects/:id/experiments/requires_flag_implementation`. It reads the event lake, so
//! it is here and its route is served by the query function (the experiments one links no
//! engine).
//!
//! PostHog's legacy insight-filter parameters: `events` (a JSON list of `{id: <event name>}`),
//! `actions` (not kept by this service: a 400), `limit` (property sets sampled per event,
//! default 20); the window is forced to the last 7 days.

use chrono::Duration;
use common::models::Project;
use common::{ApiError, ApiResult, AppState};
use engine::Bindings;
use serde::Deserialize;
use serde_json::{Map, Value};

use crate::runner;
use crate::{Caller, SqlNode, api_error};

const DEFAULT_LIMIT: u64 = 20;
const MAX_LIMIT: u64 = 1_000;
const MAX_EVENTS: usize = 50;
const FEATURE_PREFIX: &str = "$feature/";

/// The route's query parameters.
#[derive(Debug, Default, Deserialize)]
pub struct Params {
    #[serde(default)]
    events: Option<String>,
    #[serde(default)]
    actions: Option<String>,
    #[serde(default)]
    limit: Option<String>,
}

/// One entity of the legacy filter (its other fields, `type`, `order`, `name`, ... are not read).
#[derive(Debug, Deserialize)]
struct Entity {
    #[serde(default)]
    id: Option<Value>,
}

/// Whether no sampled event of the last 7 days (of the events `params` name, or of all events)
/// carries a `$feature/...` property (PostHog's `result`).
pub async fn requires_flag_implementation(
    state: &AppState,
    project: &Project,
    caller: &Caller,
    params: &Params,
) -> ApiResult<bool> {
    if !entities(params.actions.as_deref(), "actions")?.is_empty() {
        return Err(ApiError::field(
            "actions",
            "invalid_input",
            "Actions are not supported by this service; use events.",
        ));
    }
    let limit = match params.limit.as_deref().map(str::trim) {
        None | Some("") => DEFAULT_LIMIT,
        Some(text) => text
            .parse::<u64>()
            .ok()
            .filter(|limit| (1..=MAX_LIMIT).contains(limit))
            .ok_or_else(|| {
                ApiError::field(
                    "limit",
                    "invalid_input",
                    format!("limit must be a whole number from 1 to {MAX_LIMIT}."),
                )
            })?,
    };
    let events = entities(params.events.as_deref(), "events")?;
    if events.len() > MAX_EVENTS {
        return Err(ApiError::field(
            "events",
            "invalid_input",
            format!("At most {MAX_EVENTS} events may be given."),
        ));
    }
    let from = state.clock.now() - Duration::days(7);
    let since = from.format("%Y-%m-%d %H:%M:%S%.6fZ").to_string();
    for (index, entity) in events.iter().enumerate() {
        let event = match &entity.id {
            None | Some(Value::Null) => None,
            Some(Value::String(name)) => Some(name.clone()),
            Some(_) => {
                return Err(ApiError::field(
                    format!("events[{index}].id"),
                    "invalid_input",
                    "An event's id must be its name (a string).",
                ));
            }
        };
        let mut values = Map::new();
        values.insert("since".into(), Value::String(since.clone()));
        // No id is PostHog's "all events".
        let event_condition = match event {
            Some(name) => {
                values.insert("event".into(), Value::String(name));
                "event = {event} AND "
            }
            None => "",
        };
        let node = SqlNode {
            name: Some("requires_flag_implementation".into()),
            ..SqlNode::sql(
                format!(
                    "SELECT properties FROM events WHERE {event_condition}timestamp >= toDateTime({{since}}) LIMIT {limit}"
                ),
                Bindings {
                    values,
                    ..Default::default()
                },
            )
        };
        let query_id = uuid::Uuid::now_v7().simple().to_string();
        let response = runner::run_logged(state, project, &query_id, &node, caller)
            .await
            .map_err(|error| api_error(&error))?;
        let rows = response["results"].as_array().cloned().unwrap_or_default();
        if rows
            .iter()
            .filter_map(|row| row.get(0))
            .any(has_feature_property)
        {
            return Ok(false);
        }
    }
    Ok(true)
}

/// A legacy `events` / `actions` parameter: a JSON list of entities (absent is none).
fn entities(raw: Option<&str>, attr: &str) -> ApiResult<Vec<Entity>> {
    let Some(text) = raw.map(str::trim).filter(|text| !text.is_empty()) else {
        return Ok(Vec::new());
    };
    let mut deserializer = serde_json::Deserializer::from_str(text);
    serde_path_to_error::deserialize(&mut deserializer).map_err(|error| {
        let path = error.path().to_string();
        let attr = match path.as_str() {
            "." | "" => attr.to_owned(),
            path => format!("{attr}{path}"),
        };
        ApiError::field(
            attr,
            "invalid_input",
            format!(
                "Must be a JSON list of {{\"id\": <event name>}}: {}",
                error.inner()
            ),
        )
    })
}

/// Whether an event's properties (JSON text or an object) have a `$feature/...` key.
fn has_feature_property(cell: &Value) -> bool {
    let parsed;
    let properties = match cell {
        Value::String(text) => {
            parsed = serde_json::from_str::<Value>(text).unwrap_or(Value::Null);
            &parsed
        }
        other => other,
    };
    properties
        .as_object()
        .is_some_and(|object| object.keys().any(|key| key.starts_with(FEATURE_PREFIX)))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn feature_properties_are_found_in_text_or_objects() {
        assert!(has_feature_property(&json!("{\"$feature/x\": \"test\"}")));
        assert!(has_feature_property(&json!({"a": 1, "$feature/y": true})));
        assert!(!has_feature_property(&json!({"$feature_flag": "x"})));
        assert!(!has_feature_property(&json!("not json")));
    }

    #[test]
    fn entities_are_a_json_list() {
        let parsed = entities(
            Some(r#"[{"id": "$pageview", "type": "events", "order": 0}]"#),
            "events",
        )
        .expect("parses");
        assert_eq!(parsed.len(), 1);
        assert!(entities(None, "events").expect("none").is_empty());
        let error = entities(Some("{\"id\": 1}"), "events").expect_err("not a list");
        assert_eq!(error.body.attr.as_deref(), Some("events"));
    }
}
