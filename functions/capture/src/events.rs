//! Capture payload shapes (single event, `{"batch": [...]}`, bare array), validation of every
//! event before anything is staged, and PostHog's clock-skew correction.

use chrono::{DateTime, Duration, TimeZone, Utc};
use common::error::{ApiError, ApiResult};
use common::staging::StagedEvent;
use serde_json::{Map, Value};
use uuid::Uuid;

const MAX_NAME_CHARS: usize = 200;
const MAX_DISTINCT_ID_CHARS: usize = 200;

pub struct Request {
    pub token: Option<String>,
    sent_at: Option<Value>,
    events: Vec<Value>,
    /// How `attr` names an event: `""` for a single one, `batch__<i>__` in a batch.
    batched: bool,
}

fn string_of(value: Option<&Value>) -> Option<String> {
    value.and_then(Value::as_str).map(str::to_owned)
}

fn token_of(object: &Map<String, Value>) -> Option<String> {
    string_of(object.get("api_key"))
        .or_else(|| string_of(object.get("token")))
        .or_else(|| string_of(object.get("$token")))
        .or_else(|| {
            object
                .get("properties")
                .and_then(Value::as_object)
                .and_then(|p| string_of(p.get("token")).or_else(|| string_of(p.get("$token"))))
        })
}

impl Request {
    pub fn parse(document: Value) -> ApiResult<Self> {
        match document {
            Value::Array(events) => Ok(Self {
                token: events.first().and_then(Value::as_object).and_then(token_of),
                sent_at: None,
                events,
                batched: true,
            }),
            Value::Object(mut object) => match object.remove("batch") {
                Some(Value::Array(events)) => Ok(Self {
                    token: token_of(&object)
                        .or_else(|| events.first().and_then(Value::as_object).and_then(token_of)),
                    sent_at: object.remove("sent_at"),
                    events,
                    batched: true,
                }),
                Some(_) => Err(ApiError::validation(
                    "batch",
                    "`batch` must be a list of events.",
                )),
                None => Ok(Self {
                    token: token_of(&object),
                    sent_at: None,
                    events: vec![Value::Object(object)],
                    batched: false,
                }),
            },
            _ => Err(ApiError::bad_request(
                "invalid_payload",
                "Expected an event, a list of events or {\"batch\": [...]}.",
            )),
        }
    }

    /// Every event validated and normalized, or the first problem, naming its field.
    pub fn into_staged(self, now: DateTime<Utc>) -> ApiResult<Vec<StagedEvent>> {
        if self.events.is_empty() {
            return Err(ApiError::validation("batch", "The batch holds no events."));
        }
        let batch_sent_at = parse_time(self.sent_at.as_ref(), "sent_at")?;
        self.events
            .into_iter()
            .enumerate()
            .map(|(index, event)| {
                let attr = |field: &str| {
                    if self.batched {
                        format!("batch__{index}__{field}")
                    } else {
                        field.to_owned()
                    }
                };
                normalize(event, batch_sent_at, now, &attr)
            })
            .collect()
    }
}

/// One event on its own (bulk import): validated and normalized as capture would, without
/// clock-skew correction unless it carries `sent_at` or `offset`.
pub fn normalize_one(event: Value, now: DateTime<Utc>) -> ApiResult<StagedEvent> {
    normalize(event, None, now, &|field| field.to_owned())
}

/// Event names have at most [`MAX_NAME_CHARS`] characters.
pub fn name_fits(name: &str) -> bool {
    name.len() <= MAX_NAME_CHARS || name.chars().count() <= MAX_NAME_CHARS
}

/// Distinct ids have at most [`MAX_DISTINCT_ID_CHARS`] characters.
pub fn distinct_id_fits(distinct_id: &str) -> bool {
    distinct_id.len() <= MAX_DISTINCT_ID_CHARS
        || distinct_id.chars().count() <= MAX_DISTINCT_ID_CHARS
}

fn parse_time(value: Option<&Value>, attr: &str) -> ApiResult<Option<DateTime<Utc>>> {
    match value {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(text)) => DateTime::parse_from_rfc3339(text)
            .map(|t| Some(t.with_timezone(&Utc)))
            .map_err(|_| {
                ApiError::validation(attr, format!("`{text}` is not an ISO 8601 timestamp."))
            }),
        Some(Value::Number(n)) => n
            .as_i64()
            .and_then(|ms| Utc.timestamp_millis_opt(ms).single())
            .map(Some)
            .ok_or_else(|| {
                ApiError::validation(attr, "A numeric timestamp must be milliseconds since 1970.")
            }),
        Some(_) => Err(ApiError::validation(attr, "A timestamp must be a string.")),
    }
}

fn normalize(
    event: Value,
    batch_sent_at: Option<DateTime<Utc>>,
    now: DateTime<Utc>,
    attr: &dyn Fn(&str) -> String,
) -> ApiResult<StagedEvent> {
    let Value::Object(mut event) = event else {
        return Err(ApiError::validation(
            attr("event"),
            "Each event must be an object.",
        ));
    };
    let name = match event.get("event") {
        Some(Value::String(name)) if !name.trim().is_empty() => name.clone(),
        Some(Value::String(_)) | None | Some(Value::Null) => {
            return Err(ApiError::field(
                attr("event"),
                "required",
                "Every event needs an `event` name.",
            ));
        }
        Some(_) => {
            return Err(ApiError::validation(
                attr("event"),
                "`event` must be a string.",
            ));
        }
    };
    if !name_fits(&name) {
        return Err(ApiError::validation(
            attr("event"),
            format!("Event names have at most {MAX_NAME_CHARS} characters."),
        ));
    }
    let mut properties = match event.remove("properties") {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(properties)) => properties,
        Some(_) => {
            return Err(ApiError::validation(
                attr("properties"),
                "`properties` must be an object.",
            ));
        }
    };
    // Top-level person updates belong with the properties, where PostHog keeps them.
    for key in ["$set", "$set_once", "$unset"] {
        if let Some(value) = event.remove(key)
            && !properties.contains_key(key)
        {
            properties.insert(key.to_owned(), value);
        }
    }
    for key in ["$set", "$set_once"] {
        if properties
            .get(key)
            .is_some_and(|v| !v.is_object() && !v.is_null())
        {
            return Err(ApiError::validation(
                attr(&format!("properties__{key}")),
                format!("`{key}` must be an object."),
            ));
        }
    }

    let distinct_id = [
        event.get("distinct_id"),
        event.get("$distinct_id"),
        properties.get("distinct_id"),
        properties.get("$distinct_id"),
    ]
    .into_iter()
    .flatten()
    .find(|v| !v.is_null())
    .cloned();
    let distinct_id = match distinct_id {
        Some(Value::String(id)) if !id.trim().is_empty() => id,
        Some(Value::Number(n)) => n.to_string(),
        Some(Value::String(_)) | None => {
            return Err(ApiError::field(
                attr("distinct_id"),
                "required",
                "Every event needs a `distinct_id`.",
            ));
        }
        Some(_) => {
            return Err(ApiError::validation(
                attr("distinct_id"),
                "`distinct_id` must be a string.",
            ));
        }
    };
    if !distinct_id_fits(&distinct_id) {
        return Err(ApiError::validation(
            attr("distinct_id"),
            format!("`distinct_id` has at most {MAX_DISTINCT_ID_CHARS} characters."),
        ));
    }

    let uuid = match event.get("uuid") {
        None | Some(Value::Null) => Uuid::now_v7(),
        Some(Value::String(text)) => Uuid::parse_str(text)
            .map_err(|_| ApiError::validation(attr("uuid"), format!("`{text}` is not a UUID.")))?,
        Some(_) => {
            return Err(ApiError::validation(
                attr("uuid"),
                "`uuid` must be a string.",
            ));
        }
    };
    let timestamp = parse_time(event.get("timestamp"), &attr("timestamp"))?;
    let sent_at = match parse_time(event.get("sent_at"), &attr("sent_at"))? {
        Some(at) => Some(at),
        None => batch_sent_at,
    };
    let ignore_sent_at = properties.get("$ignore_sent_at").and_then(Value::as_bool) == Some(true);
    let offset = match event.get("offset") {
        None | Some(Value::Null) => None,
        Some(value) => Some(value.as_i64().ok_or_else(|| {
            ApiError::validation(
                attr("offset"),
                "`offset` must be an integer of milliseconds.",
            )
        })?),
    };
    // PostHog's clock-skew correction: trust the client's clock only relative to itself.
    let timestamp = match (timestamp, sent_at.filter(|_| !ignore_sent_at), offset) {
        (Some(at), Some(sent), _) => now + (at - sent),
        (_, _, Some(offset)) => now - Duration::milliseconds(offset),
        (Some(at), None, None) => at,
        (None, _, None) => now,
    };
    // posthog-js sends autocapture's elements as the `$elements_chain` property when the remote
    // config says `elementsChainAsString`; PostHog moves it to the column, as here.
    let elements_chain = match event.get("elements_chain") {
        Some(Value::String(chain)) => Some(chain.clone()),
        _ => match properties.remove("$elements_chain") {
            Some(Value::String(chain)) => Some(chain),
            Some(other) => {
                properties.insert("$elements_chain".to_owned(), other);
                None
            }
            None => None,
        },
    };
    Ok(StagedEvent {
        uuid,
        event: name,
        distinct_id,
        properties,
        timestamp,
        created_at: now,
        elements_chain,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn staged(document: Value) -> ApiResult<Vec<StagedEvent>> {
        Request::parse(document)?.into_staged(now())
    }

    fn now() -> DateTime<Utc> {
        "2026-11-22T12:00:00Z".parse().unwrap()
    }

    #[test]
    fn shapes_and_tokens() {
        let single = Request::parse(
            json!({"event": "e", "distinct_id": "d", "properties": {"token": "phc_a"}}),
        )
        .unwrap();
        assert_eq!(single.token.as_deref(), Some("phc_a"));
        let batch = Request::parse(
            json!({"api_key": "phc_b", "batch": [{"event": "e", "distinct_id": "d"}]}),
        )
        .unwrap();
        assert_eq!(batch.token.as_deref(), Some("phc_b"));
        let array =
            Request::parse(json!([{"event": "e", "distinct_id": 7, "token": "phc_c"}])).unwrap();
        assert_eq!(array.token.as_deref(), Some("phc_c"));
        assert_eq!(array.into_staged(now()).unwrap()[0].distinct_id, "7");
        assert!(Request::parse(json!("text")).is_err());
        assert!(Request::parse(json!({"batch": {}})).is_err());
    }

    #[test]
    fn clock_skew_is_corrected_like_posthog() {
        // The client's clock is an hour fast: sent_at and timestamp shift together.
        let events = staged(json!({"batch": [{"event": "e", "distinct_id": "d",
            "timestamp": "2026-11-22T12:59:50Z"}], "sent_at": "2026-11-22T13:00:00Z"}))
        .unwrap();
        assert_eq!(events[0].timestamp, now() - Duration::seconds(10));
        let events = staged(json!({"event": "e", "distinct_id": "d", "offset": 1500})).unwrap();
        assert_eq!(events[0].timestamp, now() - Duration::milliseconds(1500));
        let events = staged(
            json!({"event": "e", "distinct_id": "d", "timestamp": "2026-01-01T00:00:00+02:00"}),
        )
        .unwrap();
        assert_eq!(
            events[0].timestamp,
            "2025-12-31T22:00:00Z".parse::<DateTime<Utc>>().unwrap()
        );
        let events = staged(json!({"event": "e", "distinct_id": "d"})).unwrap();
        assert_eq!((events[0].timestamp, events[0].created_at), (now(), now()));
    }

    #[test]
    fn uuids_are_kept_and_person_updates_collected() {
        let uuid = "0192f0a1-7c3e-7b2a-9d41-3f5e6a7b8c9d";
        let events = staged(
            json!({"event": "$identify", "distinct_id": "d", "uuid": uuid,
            "$set": {"email": "a@b.co"}, "properties": {"$set_once": {"first": 1}}}),
        )
        .unwrap();
        assert_eq!(events[0].uuid.to_string(), uuid);
        assert_eq!(events[0].properties["$set"]["email"], "a@b.co");
        assert_eq!(events[0].properties["$set_once"]["first"], 1);
    }

    #[test]
    fn the_elements_chain_property_moves_to_its_column() {
        let chain = r#"a.btn:href="/buy"nth-child="1"nth-of-type="1"text="Buy""#;
        let events = staged(json!({"event": "$autocapture", "distinct_id": "d",
            "properties": {"$elements_chain": chain, "$event_type": "click"}}))
        .unwrap();
        assert_eq!(events[0].elements_chain.as_deref(), Some(chain));
        assert!(!events[0].properties.contains_key("$elements_chain"));
        // The top-level field wins; a property that is not a string stays a property.
        let events = staged(json!({"event": "$autocapture", "distinct_id": "d",
            "elements_chain": "div:", "properties": {"$elements_chain": 3}}))
        .unwrap();
        assert_eq!(events[0].elements_chain.as_deref(), Some("div:"));
        assert_eq!(events[0].properties["$elements_chain"], 3);
    }

    #[test]
    fn each_bad_field_is_named() {
        let cases = [
            (json!({"distinct_id": "d"}), "event"),
            (json!({"event": 5, "distinct_id": "d"}), "event"),
            (json!({"event": "e"}), "distinct_id"),
            (json!({"event": "e", "distinct_id": ""}), "distinct_id"),
            (
                json!({"event": "e", "distinct_id": {"a": 1}}),
                "distinct_id",
            ),
            (
                json!({"event": "e", "distinct_id": "d", "properties": []}),
                "properties",
            ),
            (
                json!({"event": "e", "distinct_id": "d", "uuid": "nope"}),
                "uuid",
            ),
            (
                json!({"event": "e", "distinct_id": "d", "timestamp": "yesterday"}),
                "timestamp",
            ),
            (
                json!({"event": "e", "distinct_id": "d", "offset": "1s"}),
                "offset",
            ),
            (
                json!({"event": "e", "distinct_id": "d", "$set": 3}),
                "properties__$set",
            ),
            (
                json!({"event": "x".repeat(201), "distinct_id": "d"}),
                "event",
            ),
        ];
        for (document, attr) in cases {
            let error = staged(document.clone()).unwrap_err();
            assert_eq!(error.status, 400, "{document}");
            assert_eq!(error.body.attr.as_deref(), Some(attr), "{document}");
        }
        let error = staged(json!({"batch": [{"event": "ok", "distinct_id": "d"}, {"event": "e"}]}))
            .unwrap_err();
        assert_eq!(error.body.attr.as_deref(), Some("batch__1__distinct_id"));
        assert!(staged(json!({"batch": []})).is_err());
    }
}
