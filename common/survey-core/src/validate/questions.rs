//! PostHog's `validate_questions` (reference 1.2), in its order and with its messages, plus the
//! shapes its schema documents (question type, rating display and scale, branching). Every
//! error names `questions`. `question` and `description` (also in translations) go through the
//! HTML allow-list when they hold markup, as PostHog's nh3 step does (see `crate::html`).

use std::sync::LazyLock;

use common::error::ApiError;
use regex::Regex;
use serde_json::{Map, Value};
use url::Url;

use super::languages::Keys;
use crate::Question;
use crate::html;

const ATTR: &str = "questions";
const TYPES: &[&str] = &["open", "link", "rating", "single_choice", "multiple_choice"];
const TRANSLATED_TEXTS: &[&str] = &[
    "question",
    "description",
    "buttonText",
    "lowerBoundLabel",
    "upperBoundLabel",
];
const RULE_TYPES: &[&str] = &["min_length", "max_length", "email"];

static MAILTO: LazyLock<Result<Regex, regex::Error>> =
    LazyLock::new(|| Regex::new(r"^mailto:[a-zA-Z0-9._%+-]+@[a-zA-Z0-9.-]+\.[a-zA-Z]{2,}$"));

fn invalid(detail: impl Into<String>) -> ApiError {
    ApiError::validation(ATTR, detail)
}

/// Checks `value` and answers the questions to store (ids are filled later, on save).
pub fn questions(value: Value, keys: &Keys<'_>) -> Result<Vec<Question>, ApiError> {
    let Value::Array(raw) = value else {
        return Err(invalid("Questions must be a list of objects"));
    };
    let count = raw.len();
    let mut out = Vec::with_capacity(count);
    for (index, question) in raw.into_iter().enumerate() {
        let Value::Object(question) = question else {
            return Err(invalid("Questions must be a list of objects"));
        };
        let question = one(question, index, count, keys)?;
        out.push(parse(question, index)?);
    }
    Ok(out)
}

/// Python's truthiness, which PostHog's `if value:` checks use.
fn truthy(value: Option<&Value>) -> bool {
    match value {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => *b,
        Some(Value::Number(n)) => n.as_f64().is_some_and(|f| f != 0.0),
        Some(Value::String(s)) => !s.is_empty(),
        Some(Value::Array(a)) => !a.is_empty(),
        Some(Value::Object(o)) => !o.is_empty(),
    }
}

fn one(
    mut question: Map<String, Value>,
    index: usize,
    count: usize,
    keys: &Keys<'_>,
) -> Result<Map<String, Value>, ApiError> {
    let number = index + 1;
    // A missing id is generated on save, as PostHog's `ensure_question_ids` does.
    if question.get("id").is_some_and(|id| !truthy(Some(id))) {
        question.remove("id");
    }
    let text = question.get("question");
    if !truthy(text) {
        return Err(invalid("Question text is required"));
    }
    if !text.is_some_and(Value::is_string) {
        return Err(invalid("Question text must be a string"));
    }
    if truthy(question.get("description"))
        && !question.get("description").is_some_and(Value::is_string)
    {
        return Err(invalid("Question description must be a string"));
    }
    html::clean_fields(&mut question, html::QUESTION_FIELDS);
    for field in ["buttonText", "lowerBoundLabel", "upperBoundLabel"] {
        if truthy(question.get(field)) && !question.get(field).is_some_and(Value::is_string) {
            return Err(invalid(format!("Question {field} must be a string")));
        }
    }
    if truthy(question.get("choices")) {
        match question.get("choices") {
            Some(Value::Array(choices)) => self::choices(choices)?,
            _ => return Err(invalid("Question choices must be a list of strings")),
        }
    }
    if truthy(question.get("descriptionContentType"))
        && !matches!(
            question
                .get("descriptionContentType")
                .and_then(Value::as_str),
            Some("text" | "html")
        )
    {
        return Err(invalid(
            "Question descriptionContentType must be one of ['text', 'html']",
        ));
    }
    if let Some(translations) = question.remove("translations") {
        let choices = match question.get("choices") {
            Some(Value::Array(choices)) => Some(choices.len()),
            _ => None,
        };
        let cleaned = self::translations(translations, number, choices, keys)?;
        question.insert("translations".into(), cleaned);
    }
    if truthy(question.get("link")) {
        match question.get("link").and_then(Value::as_str) {
            Some(link) => self::link(link)?,
            None => return Err(invalid(format!("Question {number}: link must be a string"))),
        }
    }
    if let Some(rules) = question.get("validation")
        && !rules.is_null()
    {
        validation(rules)?;
    }
    shape(&question, number, count)?;
    Ok(question)
}

/// PostHog's `_validate_and_sanitize_choices`.
fn choices(choices: &[Value]) -> Result<(), ApiError> {
    for choice in choices {
        let Some(choice) = choice.as_str() else {
            return Err(invalid("Question choices must be strings"));
        };
        if choice.trim().is_empty() {
            return Err(invalid("Question choices cannot be empty"));
        }
    }
    Ok(())
}

/// PostHog's `_validate_and_sanitize_link`: `https` with a host, or a `mailto:` address.
fn link(link: &str) -> Result<(), ApiError> {
    let scheme = link
        .split_once(':')
        .map(|(scheme, _)| scheme.to_ascii_lowercase())
        .filter(|scheme| {
            scheme
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
        });
    match scheme.as_deref() {
        Some("mailto") => {
            if !matches!(&*MAILTO, Ok(re) if re.is_match(link)) {
                return Err(invalid(
                    "Invalid mailto link. Please enter a valid mailto link (e.g., mailto:example@domain.com).",
                ));
            }
        }
        Some("https") => {
            let has_host = Url::parse(link)
                .ok()
                .and_then(|url| url.host_str().map(|host| !host.is_empty()))
                .unwrap_or(false);
            if !has_host {
                return Err(invalid(
                    "Invalid HTTPS URL. Please enter a valid HTTPS link.",
                ));
            }
        }
        _ => {
            return Err(invalid(
                "Link must be a URL with one of these schemes: [https, mailto]",
            ));
        }
    }
    Ok(())
}

/// PostHog's `_validate_question_translations` plus the language-key rules; answers the
/// cleaned translations (known fields only, empty languages dropped).
fn translations(
    value: Value,
    number: usize,
    choices: Option<usize>,
    keys: &Keys<'_>,
) -> Result<Value, ApiError> {
    let Value::Object(languages) = value else {
        return Err(invalid(format!(
            "Question {number}: translations must be an object"
        )));
    };
    let mut cleaned = Map::new();
    for (code, translation) in languages {
        let Value::Object(fields) = translation else {
            return Err(invalid(format!(
                "Question {number}: Translation for '{code}' must be an object"
            )));
        };
        let mut kept = Map::new();
        for field in TRANSLATED_TEXTS {
            if let Some(value) = fields.get(*field) {
                if !value.is_string() {
                    return Err(invalid(format!(
                        "Question {number}: Translation '{code}' field '{field}' must be a string"
                    )));
                }
                kept.insert((*field).to_owned(), value.clone());
            }
        }
        if let Some(value) = fields.get("link") {
            let Some(text) = value.as_str() else {
                return Err(invalid(format!(
                    "Question {number}: Translation '{code}' field 'link' must be a string"
                )));
            };
            link(text)?;
            kept.insert("link".into(), value.clone());
        }
        if let Some(value) = fields.get("choices") {
            let Value::Array(translated) = value else {
                return Err(invalid(format!(
                    "Question {number}: Translation '{code}' field 'choices' must be a list of strings"
                )));
            };
            self::choices(translated)?;
            // Translated choices of a question without choices mean nothing: dropped.
            if let Some(expected) = choices {
                if translated.len() != expected {
                    return Err(invalid(format!(
                        "Question {number}: Translation '{code}' has {} choices but question has {expected} choices. Array lengths must match to avoid partial translations.",
                        translated.len()
                    )));
                }
                kept.insert("choices".into(), value.clone());
            }
        }
        keys.check(ATTR, &format!("Question {number}: "), &code)?;
        html::clean_fields(&mut kept, html::QUESTION_FIELDS);
        if !kept.is_empty() {
            cleaned.insert(code, Value::Object(kept));
        }
    }
    Ok(Value::Object(cleaned))
}

/// Open questions' `validation` rules.
fn validation(rules: &Value) -> Result<(), ApiError> {
    let Value::Array(rules) = rules else {
        return Err(invalid(
            "Question validation must be a list of validation rules",
        ));
    };
    for rule in rules {
        let Value::Object(rule) = rule else {
            return Err(invalid("Each validation rule must be an object"));
        };
        let kind = rule.get("type").and_then(Value::as_str);
        let Some(kind) = kind.filter(|kind| RULE_TYPES.contains(kind)) else {
            return Err(invalid(format!(
                "Validation rule type must be one of: {}",
                RULE_TYPES.join(", ")
            )));
        };
        if kind != "email"
            && let Some(value) = rule.get("value").filter(|v| !v.is_null())
            && value.as_i64().is_none_or(|v| v <= 0)
        {
            return Err(invalid(format!(
                "Validation rule value for {kind} must be a positive integer"
            )));
        }
    }
    let bound = |kind: &str| {
        rules
            .iter()
            .find(|rule| rule.get("type").and_then(Value::as_str) == Some(kind))
            .and_then(|rule| rule.get("value"))
            .and_then(Value::as_i64)
    };
    if let (Some(min), Some(max)) = (bound("min_length"), bound("max_length"))
        && min > max
    {
        return Err(invalid(
            "Minimum length cannot be greater than maximum length",
        ));
    }
    Ok(())
}

/// What the schema documents and posthog-js relies on: a known type, a rating's display and
/// scale, and branching that names a question that exists.
fn shape(question: &Map<String, Value>, number: usize, count: usize) -> Result<(), ApiError> {
    let kind = question.get("type").and_then(Value::as_str);
    if !kind.is_some_and(|kind| TYPES.contains(&kind)) {
        return Err(invalid(format!(
            "Question {number}: type must be one of: {}",
            TYPES.join(", ")
        )));
    }
    if kind == Some("rating") {
        if let Some(display) = question.get("display").filter(|v| !v.is_null())
            && !matches!(display.as_str(), Some("number" | "emoji"))
        {
            return Err(invalid(format!(
                "Question {number}: display must be one of: number, emoji"
            )));
        }
        if let Some(scale) = question.get("scale").filter(|v| !v.is_null())
            && scale.as_i64().is_none_or(|s| s < 1)
        {
            return Err(invalid(format!(
                "Question {number}: scale must be a positive integer"
            )));
        }
    }
    match question.get("branching") {
        None | Some(Value::Null) => Ok(()),
        Some(branching) => self::branching(branching, number, count),
    }
}

fn branching(branching: &Value, number: usize, count: usize) -> Result<(), ApiError> {
    let target = |value: &Value| value.as_u64().is_some_and(|i| (i as usize) < count);
    let out_of_range = || {
        invalid(format!(
            "Question {number}: branching must point to a question index between 0 and {}",
            count.saturating_sub(1)
        ))
    };
    match branching.get("type").and_then(Value::as_str) {
        Some("next_question" | "end") => Ok(()),
        Some("specific_question") => match branching.get("index") {
            Some(index) if target(index) => Ok(()),
            _ => Err(out_of_range()),
        },
        Some("response_based") => {
            let Some(Value::Object(values)) = branching.get("responseValues") else {
                return Err(invalid(format!(
                    "Question {number}: response_based branching needs a responseValues object"
                )));
            };
            if values
                .values()
                .all(|value| value.as_str() == Some("end") || target(value))
            {
                Ok(())
            } else {
                Err(out_of_range())
            }
        }
        _ => Err(invalid(format!(
            "Question {number}: branching type must be one of: next_question, end, specific_question, response_based"
        ))),
    }
}

/// The checked question as the model stores it; a field of the wrong type is named.
fn parse(question: Map<String, Value>, index: usize) -> Result<Question, ApiError> {
    serde_path_to_error::deserialize(Value::Object(question)).map_err(|error| {
        let path = error.path().to_string();
        let detail = error.into_inner().to_string();
        // An unknown key is its own path; the message already names it.
        if path == "." || detail.starts_with("unknown field") {
            invalid(format!("Question {}: {detail}", index + 1))
        } else {
            invalid(format!("Question {}: {path}: {detail}", index + 1))
        }
    })
}
