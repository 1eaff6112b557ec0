//! The body of POST, PATCH and PUT (PostHog's `ActionSerializer`): the fields a client may
//! write, the read-only ones PostHog's web app sends back (accepted, ignored), and the checks
//! that name the failing field with its path (`steps[0].url_matching`).

use chrono::{DateTime, Utc};
use common::error::ApiError;
use serde::Deserialize;
use serde::de::IgnoredAny;
use serde_json::Value;

use crate::model::{Action, Matching, Step};
use crate::selector;

/// PostHog's `name` and `event` are `CharField(max_length=400)`.
pub const MAX_NAME_CHARS: usize = 400;
/// Bounds that keep one action's item well under DynamoDB's 400 KB.
const MAX_STEPS: usize = 100;
const MAX_TEXT_CHARS: usize = 10_000;

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ActionBody {
    pub name: Option<String>,
    pub description: Option<String>,
    pub tags: Option<Vec<String>>,
    pub post_to_slack: Option<bool>,
    pub slack_message_format: Option<String>,
    pub steps: Option<Vec<StepBody>>,
    pub deleted: Option<bool>,
    #[serde(default, deserialize_with = "present")]
    pub pinned_at: Option<Option<DateTime<Utc>>>,

    // Read-only fields of PostHog's serializer: accepted and ignored.
    #[serde(rename = "id")]
    _id: Option<IgnoredAny>,
    #[serde(rename = "team_id")]
    _team_id: Option<IgnoredAny>,
    #[serde(rename = "created_at")]
    _created_at: Option<IgnoredAny>,
    #[serde(rename = "created_by")]
    _created_by: Option<IgnoredAny>,
    #[serde(rename = "is_calculating")]
    _is_calculating: Option<IgnoredAny>,
    #[serde(rename = "last_calculated_at")]
    _last_calculated_at: Option<IgnoredAny>,
    #[serde(rename = "is_action")]
    _is_action: Option<IgnoredAny>,
    #[serde(rename = "bytecode_error")]
    _bytecode_error: Option<IgnoredAny>,
    #[serde(rename = "creation_context")]
    _creation_context: Option<IgnoredAny>,
    #[serde(rename = "user_access_level")]
    _user_access_level: Option<IgnoredAny>,
    #[serde(rename = "_create_in_folder")]
    _create_in_folder: Option<IgnoredAny>,
}

/// A step as a client writes it: PostHog's `ActionStepJSON`, plus what its web app sends along.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StepBody {
    event: Option<String>,
    properties: Option<Vec<serde_json::Map<String, Value>>>,
    selector: Option<String>,
    tag_name: Option<String>,
    text: Option<String>,
    text_matching: Option<Matching>,
    href: Option<String>,
    href_matching: Option<Matching>,
    url: Option<String>,
    url_matching: Option<Matching>,
    #[serde(rename = "selector_regex")]
    _selector_regex: Option<IgnoredAny>,
    #[serde(rename = "id")]
    _id: Option<IgnoredAny>,
    #[serde(rename = "name")]
    _name: Option<IgnoredAny>,
    #[serde(rename = "isNew")]
    _is_new: Option<IgnoredAny>,
}

/// `null` and a value both count as present (`pinned_at: null` unpins).
fn present<'de, D, T>(deserializer: D) -> Result<Option<Option<T>>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Deserialize<'de>,
{
    Option::<T>::deserialize(deserializer).map(Some)
}

/// Reads a body, a shape error naming its field by path (`steps[0].url_matching`).
pub fn parse(value: Value) -> Result<ActionBody, ApiError> {
    serde_path_to_error::deserialize::<_, ActionBody>(value).map_err(|error| {
        let mut attr = error.path().to_string();
        let detail = error.inner().to_string();
        // An unknown field's path stops at the object holding it.
        if let Some(field) = detail
            .strip_prefix("unknown field `")
            .and_then(|rest| rest.split('`').next())
        {
            attr = match attr.as_str() {
                "." => field.to_string(),
                path if path.ends_with(&format!(".{field}")) || path == field => attr,
                path => format!("{path}.{field}"),
            };
        }
        if attr == "." {
            return ApiError::bad_request("invalid_input", detail);
        }
        ApiError::validation(attr, detail)
    })
}

impl ActionBody {
    /// `current` with this body's fields over it (a partial update), every field checked. A new
    /// action starts from [`Action::default_new`], and must be named.
    pub fn apply_to(&self, current: &Action, creating: bool) -> Result<Action, ApiError> {
        let mut next = current.clone();
        match &self.name {
            Some(name) => next.name = checked_name(name)?,
            None if creating => return Err(ApiError::required("name")),
            None => {}
        }
        if let Some(description) = &self.description {
            next.description = bounded("description", description)?.to_string();
        }
        if let Some(tags) = &self.tags {
            let mut unique: Vec<String> = Vec::new();
            for (index, tag) in tags.iter().enumerate() {
                let tag = bounded(&format!("tags[{index}]"), tag.trim())?;
                if !tag.is_empty() && !unique.iter().any(|t| t == tag) {
                    unique.push(tag.to_string());
                }
            }
            next.tags = unique;
        }
        if let Some(post) = self.post_to_slack {
            next.post_to_slack = post;
        }
        if let Some(format) = &self.slack_message_format {
            next.slack_message_format = bounded("slack_message_format", format)?.to_string();
        }
        if let Some(steps) = &self.steps {
            if steps.len() > MAX_STEPS {
                return Err(ApiError::validation(
                    "steps",
                    format!("An action has at most {MAX_STEPS} steps."),
                ));
            }
            next.steps = steps
                .iter()
                .enumerate()
                .map(|(index, step)| step.checked(&format!("steps[{index}]")))
                .collect::<Result<_, _>>()?;
        }
        if let Some(deleted) = self.deleted {
            next.deleted = deleted;
        }
        if let Some(pinned_at) = self.pinned_at {
            next.pinned_at = pinned_at;
        }
        Ok(next)
    }
}

impl Action {
    /// An unnamed, unsaved action: the repository stamps its id, project and times.
    pub fn default_new(created_by: Option<uuid::Uuid>, at: DateTime<Utc>) -> Self {
        Self {
            id: 0,
            team_id: 0,
            name: String::new(),
            description: String::new(),
            tags: Vec::new(),
            post_to_slack: false,
            slack_message_format: String::new(),
            steps: Vec::new(),
            deleted: false,
            pinned_at: None,
            last_calculated_at: Some(at),
            created_by,
            created_at: at,
            updated_at: None,
            version: 0,
        }
    }
}

fn checked_name(name: &str) -> Result<String, ApiError> {
    if name.trim().is_empty() {
        return Err(ApiError::field(
            "name",
            "blank",
            "This field may not be blank.",
        ));
    }
    if name.chars().count() > MAX_NAME_CHARS {
        return Err(ApiError::field(
            "name",
            "max_length",
            format!("Ensure this field has no more than {MAX_NAME_CHARS} characters."),
        ));
    }
    Ok(name.to_string())
}

fn bounded<'a>(attr: &str, text: &'a str) -> Result<&'a str, ApiError> {
    if text.chars().count() > MAX_TEXT_CHARS {
        return Err(ApiError::field(
            attr,
            "max_length",
            format!("Ensure this field has no more than {MAX_TEXT_CHARS} characters."),
        ));
    }
    Ok(text)
}

impl StepBody {
    fn checked(&self, attr: &str) -> Result<Step, ApiError> {
        let field = |name: &str| format!("{attr}.{name}");
        if let Some(event) = &self.event
            && event.chars().count() > MAX_NAME_CHARS
        {
            return Err(ApiError::field(
                field("event"),
                "max_length",
                format!("Ensure this field has no more than {MAX_NAME_CHARS} characters."),
            ));
        }
        for (name, value) in [
            ("selector", &self.selector),
            ("tag_name", &self.tag_name),
            ("text", &self.text),
            ("href", &self.href),
            ("url", &self.url),
        ] {
            if let Some(value) = value {
                bounded(&field(name), value)?;
            }
        }
        for (name, value, matching) in [
            ("text", &self.text, self.text_matching),
            ("href", &self.href, self.href_matching),
            ("url", &self.url, self.url_matching),
        ] {
            if let (Some(pattern), Some(Matching::Regex)) = (value, matching)
                && let Err(error) = regex::Regex::new(pattern)
            {
                return Err(ApiError::validation(
                    field(name),
                    format!("Not a valid regular expression: {error}"),
                ));
            }
        }
        if let Some(text) = self.selector.as_deref().filter(|s| !s.trim().is_empty())
            && selector::compile(text).is_none()
        {
            return Err(ApiError::validation(
                field("selector"),
                "The selector names no element.",
            ));
        }
        if let Some(tag) = &self.tag_name
            && (tag.contains([';', '"']) || regex::Regex::new(&selector::tag_pattern(tag)).is_err())
        {
            return Err(ApiError::validation(
                field("tag_name"),
                "Not a tag name: it cannot hold `;`, `\"` or unbalanced regex syntax.",
            ));
        }
        let properties = match &self.properties {
            None => None,
            Some(filters) => {
                for (index, filter) in filters.iter().enumerate() {
                    if !filter.is_empty()
                        && !filter.contains_key("key")
                        && !filter.contains_key("values")
                    {
                        return Err(ApiError::validation(
                            format!("{attr}.properties[{index}]"),
                            "A property filter needs a `key` (or `values` for a group).",
                        ));
                    }
                }
                Some(filters.iter().cloned().map(Value::Object).collect())
            }
        };
        Ok(Step {
            event: self.event.clone(),
            properties,
            selector: self.selector.clone().filter(|s| !s.trim().is_empty()),
            tag_name: self.tag_name.clone(),
            text: self.text.clone(),
            text_matching: self.text_matching,
            href: self.href.clone(),
            href_matching: self.href_matching,
            url: self.url.clone(),
            url_matching: self.url_matching,
        })
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn attr(value: Value) -> Option<String> {
        let now = DateTime::<Utc>::UNIX_EPOCH;
        let result =
            parse(value).and_then(|body| body.apply_to(&Action::default_new(None, now), true));
        result.err().and_then(|error| error.body.attr)
    }

    #[test]
    fn errors_name_the_field_by_path() {
        assert_eq!(
            attr(json!({"name": "a", "steps": [{"url": "x", "url_matching": "fuzzy"}]})),
            Some("steps[0].url_matching".into())
        );
        assert_eq!(
            attr(json!({"name": "a", "steps": [{}, {"url": "(", "url_matching": "regex"}]})),
            Some("steps[1].url".into())
        );
        assert_eq!(
            attr(json!({"name": "a", "steps": [{"colour": 1}]})),
            Some("steps[0].colour".into())
        );
        assert_eq!(attr(json!({"steps": []})), Some("name".into()));
        assert_eq!(attr(json!({"name": " "})), Some("name".into()));
        assert_eq!(
            attr(json!({"name": "a", "steps": "x"})),
            Some("steps".into())
        );
        assert_eq!(
            attr(json!({"name": "a", "steps": [{"properties": [{"value": 1}]}]})),
            Some("steps[0].properties[0]".into())
        );
        assert_eq!(
            attr(
                json!({"name": "a", "steps": [{"event": "$autocapture", "selector": "a.b", "isNew": "x"}]})
            ),
            None
        );
    }
}
