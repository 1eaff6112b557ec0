//! Languages (reference 1.4): `base_language` and the keys of every `translations` object are
//! BCP-47-ish codes; aliases and the base language itself are refused as translation keys.
//! Keys a survey already had are passed through unchanged, so tightening the rule never
//! locks an old survey out of being edited.
//!
//! Translated thank-you texts go through the same HTML allow-list as the appearance's own
//! (see `crate::html`).

use std::collections::BTreeSet;
use std::sync::LazyLock;

use common::error::ApiError;
use regex::Regex;
use serde_json::{Map, Value};

use super::fields::{MAX_LANGUAGE_CHARS, text};
use crate::Survey;
use crate::html;

static CODE: LazyLock<Result<Regex, regex::Error>> =
    LazyLock::new(|| Regex::new(r"^[a-z]{2,3}(-[a-z0-9]{2,8}){0,3}$"));

/// Aliases people type for "the untranslated text"; never a language.
const RESERVED: &[&str] = &["default", "original", "base"];

/// Survey-level fields a translation may carry.
pub const SURVEY_FIELDS: &[&str] = &[
    "name",
    "description",
    "thankYouMessageHeader",
    "thankYouMessageDescription",
    "thankYouMessageCloseButtonText",
];

/// The form PostHog compares: lowercase, `_` as `-`.
pub fn normalize(code: &str) -> String {
    code.trim().to_lowercase().replace('_', "-")
}

pub fn is_code(code: &str) -> bool {
    let normalized = normalize(code);
    matches!(&*CODE, Ok(re) if re.is_match(&normalized))
}

/// A valid translation key: a code, not an alias.
pub fn is_translation_key(code: &str) -> bool {
    is_code(code) && !RESERVED.contains(&normalize(code).as_str())
}

pub fn base_language(value: String) -> Result<String, ApiError> {
    let value = text("base_language", value, MAX_LANGUAGE_CHARS)?;
    if !is_translation_key(&value) {
        return Err(ApiError::validation(
            "base_language",
            format!(
                "'{value}' is not a valid language code. Use a code such as 'en', 'es' or 'pt-BR'."
            ),
        ));
    }
    Ok(value)
}

/// Every translation key a stored survey has (survey and questions): these stay accepted.
pub fn known_keys(survey: &Survey) -> BTreeSet<String> {
    let mut keys = BTreeSet::new();
    let mut add = |translations: Option<&Value>| {
        if let Some(Value::Object(map)) = translations {
            keys.extend(map.keys().cloned());
        }
    };
    add(survey.translations.as_ref());
    for question in &survey.questions {
        add(question.translations.as_ref());
    }
    keys
}

/// What a translation key is checked against.
pub struct Keys<'a> {
    pub base_language: &'a str,
    pub known: &'a BTreeSet<String>,
}

impl Keys<'_> {
    /// `prefix` names the question in a question's message ("Question 2: ").
    pub fn check(&self, attr: &str, prefix: &str, key: &str) -> Result<(), ApiError> {
        if self.known.contains(key) {
            return Ok(());
        }
        if !is_code(key) || RESERVED.contains(&normalize(key).as_str()) {
            return Err(ApiError::validation(
                attr,
                format!(
                    "{prefix}'{key}' is not a valid language code. Use a code such as 'es' or 'pt-BR'."
                ),
            ));
        }
        if normalize(key) == normalize(self.base_language) {
            return Err(ApiError::validation(
                attr,
                format!(
                    "{prefix}'{key}' is the survey's base_language: its text belongs in the survey's own fields, not in translations."
                ),
            ));
        }
        Ok(())
    }
}

/// PostHog's `validate_translations`: an object of objects; only the survey-level fields are
/// kept, each a string; languages left empty are dropped.
pub fn survey_translations(value: Value, keys: &Keys<'_>) -> Result<Option<Value>, ApiError> {
    let attr = "translations";
    let Value::Object(languages) = value else {
        if value.is_null() {
            return Ok(None);
        }
        return Err(ApiError::validation(attr, "Translations must be an object"));
    };
    let mut cleaned = Map::new();
    for (code, translation) in languages {
        let Value::Object(fields) = translation else {
            return Err(ApiError::validation(
                attr,
                format!("Translation for '{code}' must be an object"),
            ));
        };
        let mut kept = Map::new();
        for field in SURVEY_FIELDS {
            if let Some(value) = fields.get(*field) {
                if !value.is_string() {
                    return Err(ApiError::validation(
                        attr,
                        format!("Translation for '{code}': '{field}' must be a string"),
                    ));
                }
                kept.insert((*field).to_owned(), value.clone());
            }
        }
        keys.check(attr, "", &code)?;
        html::clean_fields(&mut kept, html::APPEARANCE_FIELDS);
        if !kept.is_empty() {
            cleaned.insert(code, Value::Object(kept));
        }
    }
    Ok(Some(Value::Object(cleaned)))
}
