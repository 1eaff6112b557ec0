//! A request's query string as PostHog's views read `request.GET`: the pairs in order, one
//! parameter by name (an empty value counts as absent, as DRF's filters treat it), and typed
//! reads (flags, integers, comma lists, JSON) that answer a 400 in the error shape naming the
//! parameter. Take it as an extractor (`params: QueryParams`) or parse a raw query with
//! [`QueryParams::parse`].

use std::convert::Infallible;
use std::ops::RangeInclusive;

use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use serde::de::DeserializeOwned;

use crate::error::{ApiError, ApiResult};

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct QueryParams {
    pairs: Vec<(String, String)>,
}

impl<S: Send + Sync> FromRequestParts<S> for QueryParams {
    type Rejection = Infallible;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, Infallible> {
        Ok(Self::parse(parts.uri.query()))
    }
}

impl QueryParams {
    /// The pairs of `query` (the part after `?`, percent- and `+`-decoded).
    pub fn parse(query: Option<&str>) -> Self {
        Self {
            pairs: form_urlencoded::parse(query.unwrap_or("").as_bytes())
                .into_owned()
                .collect(),
        }
    }

    /// Every pair, in the order sent.
    pub fn pairs(&self) -> &[(String, String)] {
        &self.pairs
    }

    /// The pairs but those named: the rest of the query, to carry into a page's links.
    pub fn without(&self, names: &[&str]) -> Vec<(String, String)> {
        self.pairs
            .iter()
            .filter(|(key, _)| !names.contains(&key.as_str()))
            .cloned()
            .collect()
    }

    /// Whether the parameter is there at all, even empty (PostHog's `name in request.GET`).
    pub fn has(&self, name: &str) -> bool {
        self.raw(name).is_some()
    }

    /// The parameter's first value; `None` when it is absent or empty.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.raw(name).filter(|value| !value.is_empty())
    }

    /// The parameter's first value as sent, empty or not (for the few reads where PostHog tells
    /// `name=` from no `name` at all).
    pub fn raw(&self, name: &str) -> Option<&str> {
        self.pairs
            .iter()
            .find(|(key, _)| key == name)
            .map(|(_, value)| value.as_str())
    }

    /// Every non-empty value of a repeated parameter (`event_name=a&event_name=b`), in order.
    pub fn all<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a str> + 'a {
        self.pairs
            .iter()
            .filter(move |(key, value)| key == name && !value.is_empty())
            .map(|(_, value)| value.as_str())
    }

    /// A boolean: `true`/`1` or `false`/`0` (any case); anything else is a 400.
    pub fn flag(&self, name: &str) -> ApiResult<Option<bool>> {
        let Some(raw) = self.get(name) else {
            return Ok(None);
        };
        match raw.trim().to_ascii_lowercase().as_str() {
            "true" | "1" => Ok(Some(true)),
            "false" | "0" => Ok(Some(false)),
            _ => Err(ApiError::validation(
                name,
                format!("`{name}` must be true or false."),
            )),
        }
    }

    /// A whole number within `range`; anything else is a 400 that says the range.
    pub fn integer(&self, name: &str, range: RangeInclusive<usize>) -> ApiResult<Option<usize>> {
        let Some(raw) = self.get(name) else {
            return Ok(None);
        };
        match raw.trim().parse::<usize>() {
            Ok(number) if range.contains(&number) => Ok(Some(number)),
            _ => {
                let (low, high) = (*range.start(), *range.end());
                let wanted = match (low, high) {
                    (0, usize::MAX) => "a non-negative integer".to_owned(),
                    (low, usize::MAX) => format!("an integer of at least {low}"),
                    (low, high) => format!("an integer from {low} to {high}"),
                };
                Err(ApiError::validation(
                    name,
                    format!("`{name}` must be {wanted}."),
                ))
            }
        }
    }

    /// A comma-separated list (`uuid=a,b`), each item trimmed, empty items dropped.
    pub fn list(&self, name: &str) -> Option<Vec<&str>> {
        self.get(name).map(|raw| {
            raw.split(',')
                .map(str::trim)
                .filter(|item| !item.is_empty())
                .collect()
        })
    }

    /// A JSON value (`properties=[...]`, as PostHog's frontend sends lists); one that does not
    /// parse into `T` is a 400 saying what was `expected` and where it broke.
    pub fn json<T: DeserializeOwned>(&self, name: &str, expected: &str) -> ApiResult<Option<T>> {
        self.get(name)
            .map(|raw| {
                serde_json::from_str::<T>(raw).map_err(|error| {
                    ApiError::validation(name, format!("`{name}` must be {expected}: {error}."))
                })
            })
            .transpose()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_values_count_as_absent_but_present() {
        let params = QueryParams::parse(Some("a=&b=x+y&b=z&c=%2Fp"));
        assert_eq!(params.get("a"), None);
        assert_eq!(params.raw("a"), Some(""));
        assert!(params.has("a"));
        assert!(!params.has("d"));
        assert_eq!(params.get("b"), Some("x y"));
        assert_eq!(params.all("b").collect::<Vec<_>>(), ["x y", "z"]);
        assert_eq!(params.get("c"), Some("/p"));
        assert_eq!(
            params.without(&["b"]),
            [
                ("a".to_owned(), String::new()),
                ("c".to_owned(), "/p".to_owned())
            ]
        );
        assert_eq!(QueryParams::parse(None).pairs(), &[]);
    }

    #[test]
    fn flags_take_true_false_one_zero() {
        let params = QueryParams::parse(Some("a=true&b=0&c=False&d=yes&e="));
        assert_eq!(params.flag("a").unwrap(), Some(true));
        assert_eq!(params.flag("b").unwrap(), Some(false));
        assert_eq!(params.flag("c").unwrap(), Some(false));
        assert_eq!(params.flag("e").unwrap(), None);
        assert_eq!(params.flag("missing").unwrap(), None);
        let error = params.flag("d").unwrap_err();
        assert_eq!(error.status, 400);
        assert_eq!(error.body.attr.as_deref(), Some("d"));
        assert_eq!(error.body.detail, "`d` must be true or false.");
    }

    #[test]
    fn integers_lists_and_json() {
        let params = QueryParams::parse(Some(
            "limit=20&big=5000&neg=-1&ids=a,%20b,,c&names=[\"x\"]&bad=[x",
        ));
        assert_eq!(params.integer("limit", 1..=1000).unwrap(), Some(20));
        assert_eq!(params.integer("missing", 1..=1000).unwrap(), None);
        let error = params.integer("big", 1..=1000).unwrap_err();
        assert_eq!(
            error.body.detail,
            "`big` must be an integer from 1 to 1000."
        );
        let error = params.integer("neg", 0..=usize::MAX).unwrap_err();
        assert_eq!(error.body.detail, "`neg` must be a non-negative integer.");
        assert_eq!(params.list("ids"), Some(vec!["a", "b", "c"]));
        assert_eq!(
            params.json::<Vec<String>>("names", "a list").unwrap(),
            Some(vec!["x".to_owned()])
        );
        let error = params.json::<Vec<String>>("bad", "a list").unwrap_err();
        assert_eq!(error.body.attr.as_deref(), Some("bad"));
        assert!(error.body.detail.starts_with("`bad` must be a list: "));
    }
}
