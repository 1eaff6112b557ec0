//! Request bodies of the endpoint routes and PostHog's rules for them (reference 2.1, 2.3).
//! Checking the query itself (its kind, its SQL) needs the query pipeline and is the caller's.

use common::ApiError;
use serde::{Deserialize, Deserializer};
use serde_json::Value;

use crate::model::SyncFrequency;

pub const NAME_MAX_CHARS: usize = 128;
pub const CACHE_AGE_MIN: u32 = 300;
pub const CACHE_AGE_MAX: u32 = 86_400;

const NAME_RULE: &str = "Endpoint name must start with a letter, contain only alphanumeric characters, hyphens, or underscores, and be between 1 and 128 characters long.";

/// `POST endpoints/`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CreateBody {
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub query: Option<Value>,
    #[serde(default)]
    pub description: Option<String>,
    #[serde(default)]
    pub cache_age_seconds: Option<u32>,
    #[serde(default)]
    pub is_active: Option<bool>,
    #[serde(default)]
    pub is_materialized: Option<bool>,
    #[serde(default)]
    pub sync_frequency: Option<SyncFrequency>,
    #[serde(default)]
    pub derived_from_insight: Option<String>,
}

/// `PUT/PATCH endpoints/:name/`: every field optional. `Option<Option<_>>` fields tell an absent
/// key (`None`: leave it) from `null` (`Some(None)`: clear it).
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UpdateBody {
    #[serde(default)]
    pub query: Option<Value>,
    #[serde(default)]
    pub description: Option<String>,
    #[serde(default, deserialize_with = "present")]
    pub cache_age_seconds: Option<Option<u32>>,
    #[serde(default)]
    pub is_active: Option<bool>,
    #[serde(default)]
    pub is_materialized: Option<bool>,
    #[serde(default)]
    pub sync_frequency: Option<SyncFrequency>,
    #[serde(default, deserialize_with = "present")]
    pub derived_from_insight: Option<Option<String>>,
}

/// Keeps `null` apart from absence: with `#[serde(default)]`, an absent key stays `None`.
fn present<'de, D, T>(deserializer: D) -> Result<Option<Option<T>>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    Option::<T>::deserialize(deserializer).map(Some)
}

/// `^[a-zA-Z][a-zA-Z0-9_-]{0,127}$`, checked by hand.
pub fn check_name(name: &str) -> Result<(), ApiError> {
    let mut chars = name.chars();
    let starts_with_letter = chars.next().is_some_and(|c| c.is_ascii_alphabetic());
    let rest_ok = chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    // All ASCII once the checks above pass, so bytes count characters.
    if starts_with_letter && rest_ok && name.len() <= NAME_MAX_CHARS {
        Ok(())
    } else {
        Err(ApiError::field("name", "invalid_input", NAME_RULE))
    }
}

/// null, or 300 to 86400 seconds.
pub fn check_cache_age(seconds: Option<u32>) -> Result<(), ApiError> {
    match seconds {
        Some(s) if !(CACHE_AGE_MIN..=CACHE_AGE_MAX).contains(&s) => Err(ApiError::field(
            "cache_age_seconds",
            "invalid_input",
            "Cache age must be between 300 and 86400 seconds.",
        )),
        _ => Ok(()),
    }
}

/// The create body's own rules; returns the name and the query, both required.
pub fn check_create(body: &CreateBody) -> Result<(&str, &Value), ApiError> {
    let Some(name) = body.name.as_deref() else {
        return Err(ApiError::required("name"));
    };
    check_name(name)?;
    let Some(query) = body.query.as_ref() else {
        return Err(ApiError::field("query", "required", "Must specify query"));
    };
    check_cache_age(body.cache_age_seconds)?;
    check_insight(body.derived_from_insight.as_deref())?;
    Ok((name, query))
}

/// The update body's rules; `endpoint_active_after` is whether the endpoint is active once the
/// body is applied (its `is_active`, else the stored value).
pub fn check_update(body: &UpdateBody, endpoint_active_after: bool) -> Result<(), ApiError> {
    if !endpoint_active_after {
        if body.is_materialized == Some(true) {
            return Err(ApiError::field(
                "is_materialized",
                "invalid_input",
                "Cannot enable materialization on inactive endpoint.",
            ));
        }
        if body.sync_frequency.is_some() {
            return Err(ApiError::field(
                "sync_frequency",
                "invalid_input",
                "Cannot set sync_frequency on inactive endpoint.",
            ));
        }
    }
    if body.is_materialized == Some(false) && body.sync_frequency.is_some() {
        return Err(ApiError::field(
            "sync_frequency",
            "invalid_input",
            "Cannot set sync_frequency when disabling materialization.",
        ));
    }
    check_insight(body.derived_from_insight.clone().flatten().as_deref())?;
    check_cache_age(body.cache_age_seconds.flatten())
}

/// The insight an endpoint was made from is named by its short id (PostHog's column holds 12).
fn check_insight(short_id: Option<&str>) -> Result<(), ApiError> {
    match short_id {
        Some(id) if id.chars().count() > 12 => Err(ApiError::field(
            "derived_from_insight",
            "max_length",
            "Ensure this field has no more than 12 characters.",
        )),
        _ => Ok(()),
    }
}

/// Whether two queries are the same snapshot, as PostHog compares them (JSON with sorted keys):
/// key order never matters, `1` and `1.0` differ.
pub fn same_query(a: &Value, b: &Value) -> bool {
    // serde_json's object equality is a map's (with or without `preserve_order`).
    a == b
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn attr_detail(error: ApiError) -> (Option<String>, String, String) {
        (error.body.attr, error.body.code, error.body.detail)
    }

    #[test]
    fn names_follow_posthogs_pattern() {
        for ok in ["a", "Daily_users-2", &format!("a{}", "b".repeat(127))] {
            assert!(check_name(ok).is_ok(), "{ok}");
        }
        for bad in [
            "",
            "1abc",
            "_a",
            "-a",
            "a b",
            "a.b",
            "é",
            "aé",
            &format!("a{}", "b".repeat(128)),
        ] {
            let (attr, code, detail) = attr_detail(check_name(bad).unwrap_err());
            assert_eq!(attr.as_deref(), Some("name"), "{bad}");
            assert_eq!(code, "invalid_input");
            assert_eq!(detail, NAME_RULE);
        }
    }

    #[test]
    fn cache_age_is_null_or_within_bounds() {
        for ok in [None, Some(300), Some(86_400), Some(3600)] {
            assert!(check_cache_age(ok).is_ok());
        }
        for bad in [0, 299, 86_401] {
            let (attr, _, detail) = attr_detail(check_cache_age(Some(bad)).unwrap_err());
            assert_eq!(attr.as_deref(), Some("cache_age_seconds"));
            assert_eq!(detail, "Cache age must be between 300 and 86400 seconds.");
        }
    }

    #[test]
    fn create_needs_a_name_then_a_query() {
        let body: CreateBody = serde_json::from_value(json!({})).unwrap();
        let (attr, code, detail) = attr_detail(check_create(&body).unwrap_err());
        assert_eq!((attr.as_deref(), code.as_str()), (Some("name"), "required"));
        assert_eq!(detail, "This field is required.");

        let body: CreateBody = serde_json::from_value(json!({"name": "x"})).unwrap();
        let (attr, code, detail) = attr_detail(check_create(&body).unwrap_err());
        assert_eq!(
            (attr.as_deref(), code.as_str()),
            (Some("query"), "required")
        );
        assert_eq!(detail, "Must specify query");

        let body: CreateBody =
            serde_json::from_value(json!({"name": "x", "query": {"kind": "HogQLQuery"},
            "cache_age_seconds": 10}))
            .unwrap();
        let (attr, _, _) = attr_detail(check_create(&body).unwrap_err());
        assert_eq!(attr.as_deref(), Some("cache_age_seconds"));

        let body: CreateBody = serde_json::from_value(json!({"name": "x",
            "query": {"kind": "HogQLQuery", "query": "select 1"}, "sync_frequency": "1hour"}))
        .unwrap();
        let (name, query) = check_create(&body).unwrap();
        assert_eq!((name, query["kind"].as_str()), ("x", Some("HogQLQuery")));
        assert_eq!(body.sync_frequency, Some(SyncFrequency::OneHour));

        assert!(serde_json::from_value::<CreateBody>(json!({"name": "x", "nope": 1})).is_err());
        assert!(
            serde_json::from_value::<CreateBody>(json!({"name": "x", "sync_frequency": "2min"}))
                .is_err()
        );
    }

    #[test]
    fn update_tells_absent_from_null() {
        let body: UpdateBody = serde_json::from_value(json!({})).unwrap();
        assert_eq!(body, UpdateBody::default());
        let body: UpdateBody = serde_json::from_value(
            json!({"cache_age_seconds": null, "derived_from_insight": null}),
        )
        .unwrap();
        assert_eq!(body.cache_age_seconds, Some(None));
        assert_eq!(body.derived_from_insight, Some(None));
        let body: UpdateBody = serde_json::from_value(
            json!({"cache_age_seconds": 600, "derived_from_insight": "abc"}),
        )
        .unwrap();
        assert_eq!(body.cache_age_seconds, Some(Some(600)));
        assert_eq!(body.derived_from_insight, Some(Some("abc".into())));
        assert!(serde_json::from_value::<UpdateBody>(json!({"name": "renamed"})).is_err());
    }

    #[test]
    fn update_rules_for_materialization_and_cache_age() {
        let parse = |v: Value| serde_json::from_value::<UpdateBody>(v).unwrap();
        let cases = [
            (
                json!({"is_materialized": true}),
                false,
                "is_materialized",
                "Cannot enable materialization on inactive endpoint.",
            ),
            (
                json!({"sync_frequency": "1hour"}),
                false,
                "sync_frequency",
                "Cannot set sync_frequency on inactive endpoint.",
            ),
            (
                json!({"is_materialized": false, "sync_frequency": "1hour"}),
                true,
                "sync_frequency",
                "Cannot set sync_frequency when disabling materialization.",
            ),
            (
                json!({"cache_age_seconds": 1}),
                true,
                "cache_age_seconds",
                "Cache age must be between 300 and 86400 seconds.",
            ),
        ];
        for (body, active, attr, detail) in cases {
            let error = check_update(&parse(body.clone()), active).unwrap_err();
            assert_eq!(error.body.attr.as_deref(), Some(attr), "{body}");
            assert_eq!(error.body.detail, detail, "{body}");
        }
        for (body, active) in [
            (
                json!({"is_materialized": true, "sync_frequency": "5min"}),
                true,
            ),
            (json!({"is_materialized": false}), false),
            (
                json!({"cache_age_seconds": null, "is_active": false}),
                false,
            ),
        ] {
            assert!(check_update(&parse(body.clone()), active).is_ok(), "{body}");
        }
    }

    #[test]
    fn queries_compare_as_json_values_whatever_the_key_order() {
        let a: Value = serde_json::from_str(
            r#"{"kind":"HogQLQuery","query":"select 1","values":{"a":1,"b":[1,2]}}"#,
        )
        .unwrap();
        let b: Value = serde_json::from_str(
            r#"{"values":{"b":[1,2],"a":1},"query":"select 1","kind":"HogQLQuery"}"#,
        )
        .unwrap();
        assert!(same_query(&a, &b));
        let reordered_list: Value = serde_json::from_str(
            r#"{"kind":"HogQLQuery","query":"select 1","values":{"a":1,"b":[2,1]}}"#,
        )
        .unwrap();
        assert!(!same_query(&a, &reordered_list));
        assert!(!same_query(&json!({"limit": 1}), &json!({"limit": 1.0})));
        assert!(!same_query(&json!({"a": null}), &json!({})));
    }
}
