//! What an SDK sends to `/flags` and `/decide`: the query (`v`, `config`, `token`...) and the
//! body, in any of capture's encodings. Errors use the words of PostHog's flags service.

use axum::http::{HeaderMap, StatusCode, Uri};
use common::error::{ApiError, ErrorType};
use common::sdk_body::{self, BodyError};
use serde::{Deserialize, Deserializer};
use serde_json::{Map, Value};

/// The query string. Unknown parameters (`ip`, `_`, `ver`, `compression`...) are ignored here;
/// `compression` is read by the body decoder.
#[derive(Debug, Default)]
pub struct Query {
    /// `v`: the response shape asked for (absent: chosen per route).
    pub version: Option<i32>,
    /// `config=true`: add the remote-config keys older SDKs read.
    pub config: Option<bool>,
    pub token: Option<String>,
}

impl Query {
    pub fn parse(uri: &Uri) -> Self {
        let mut query = Query::default();
        // A query string that does not decode has no parameters we read.
        let pairs = axum::extract::Query::<Vec<(String, String)>>::try_from_uri(uri)
            .map(|pairs| pairs.0)
            .unwrap_or_default();
        for (key, value) in pairs {
            match key.as_str() {
                // PostHog reads a `v` that is not a number as 1.
                "v" | "version" if !value.is_empty() => {
                    query.version = Some(value.trim().parse().unwrap_or(1));
                }
                "config" => query.config = parse_bool(&value),
                "token" | "api_key" if !value.is_empty() => query.token = Some(value),
                _ => {}
            }
        }
        query
    }
}

fn parse_bool(value: &str) -> Option<bool> {
    match value.trim().to_ascii_lowercase().as_str() {
        "true" | "1" | "yes" => Some(true),
        "false" | "0" | "no" => Some(false),
        _ => None,
    }
}

/// The body. SDKs add fields over time: unknown ones are ignored on this public path.
#[derive(Debug, Default, Deserialize)]
pub struct Body {
    #[serde(default, alias = "$token", alias = "api_key")]
    pub token: Option<String>,
    /// A string, or a number read as its text (PostHog's SDKs send both).
    #[serde(default, alias = "$distinct_id", deserialize_with = "string_or_number")]
    pub distinct_id: Option<String>,
    /// Group type name -> group key.
    #[serde(default, alias = "$groups")]
    pub groups: Option<Map<String, Value>>,
    #[serde(default, alias = "$properties")]
    pub person_properties: Option<Map<String, Value>>,
    /// Group type name -> that group's properties.
    #[serde(default, alias = "$group_properties")]
    pub group_properties: Option<Map<String, Value>>,
    #[serde(default, alias = "$anon_distinct_id")]
    pub anon_distinct_id: Option<String>,
    #[serde(default, alias = "$device_id")]
    pub device_id: Option<String>,
    /// Only these flags (posthog-js `flag_keys`, posthog-python `flag_keys_to_evaluate`).
    #[serde(default, alias = "flag_keys_to_evaluate")]
    pub flag_keys: Option<Vec<String>>,
    /// Clients that only want the config: no flag is evaluated.
    #[serde(default)]
    pub disable_flags: Option<bool>,
}

fn string_or_number<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<String>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum StringOrNumber {
        String(String),
        Number(serde_json::Number),
    }
    Ok(
        Option::<StringOrNumber>::deserialize(deserializer)?.map(|value| match value {
            StringOrNumber::String(text) => text,
            StringOrNumber::Number(number) => number.to_string(),
        }),
    )
}

/// PostHog's 400 for a body it cannot read.
fn decoding_error(what: impl std::fmt::Display) -> ApiError {
    ApiError::parse_error(format!(
        "Failed to decode request: {what}. Please check your request format and try again."
    ))
}

impl Body {
    /// Decodes the body however the SDK encoded it.
    pub fn decode(
        headers: &HeaderMap,
        query: Option<&str>,
        body: &[u8],
        limit: usize,
    ) -> Result<Self, ApiError> {
        let json =
            sdk_body::json_text(headers, query, body, limit).map_err(|error| match error {
                BodyError::TooLarge(limit) => ApiError::payload_too_large(limit),
                BodyError::Gzip(cause) => {
                    decoding_error(format!("gzip decompression failed: {cause}"))
                }
                BodyError::Base64 => decoding_error("Base64 decoding error"),
                BodyError::MissingData | BodyError::Json(_) => {
                    decoding_error("invalid JSON structure")
                }
                BodyError::Empty => decoding_error("invalid JSON"),
            })?;
        common::http::parse_json::<Body>(&json).map_err(|error| {
            // Syntax errors in PostHog's words; a field of the wrong type keeps its name.
            if error.body.code == "parse_error" || error.body.attr.is_none() {
                decoding_error("invalid JSON")
            } else {
                error
            }
        })
    }

    /// The distinct id, required (PostHog's 400 when absent); PostHog keeps its first 200
    /// characters.
    pub fn distinct_id(&self) -> Result<String, ApiError> {
        match &self.distinct_id {
            Some(id) => Ok(id.chars().take(200).collect()),
            None => Err(ApiError::new(
                StatusCode::BAD_REQUEST,
                ErrorType::ValidationError,
                "required",
                "The distinct_id field is missing from the request. Please include a valid identifier.",
            )
            .with_attr("distinct_id")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_query_reads_version_config_and_token() {
        let uri: Uri = "/flags/?v=4&config=true&token=phc_a%2Bb&_=123"
            .parse()
            .unwrap();
        let query = Query::parse(&uri);
        assert_eq!(query.version, Some(4));
        assert_eq!(query.config, Some(true));
        assert_eq!(query.token.as_deref(), Some("phc_a+b"));
        // PostHog reads a version that is not a number as 1.
        let uri: Uri = "/flags?v=abc".parse().unwrap();
        assert_eq!(Query::parse(&uri).version, Some(1));
        assert_eq!(Query::parse(&"/flags".parse().unwrap()).version, None);
    }

    #[test]
    fn bodies_name_the_sdks_fields_and_ignore_others() {
        let body = Body::decode(
            &HeaderMap::new(),
            None,
            br#"{"api_key":"phc_x","distinct_id":12,"flag_keys_to_evaluate":["a"],"new_field":1}"#,
            1 << 20,
        )
        .unwrap();
        assert_eq!(body.token.as_deref(), Some("phc_x"));
        assert_eq!(body.distinct_id().unwrap(), "12");
        assert_eq!(body.flag_keys, Some(vec!["a".to_owned()]));
        let error = Body::decode(&HeaderMap::new(), None, b"{nope", 1 << 20).unwrap_err();
        assert_eq!(error.status, 400);
        assert!(
            error
                .body
                .detail
                .starts_with("Failed to decode request: invalid JSON")
        );
        let error =
            Body::decode(&HeaderMap::new(), None, br#"{"groups": 3}"#, 1 << 20).unwrap_err();
        assert_eq!(error.body.attr.as_deref(), Some("groups"));
    }
}
