//! `limit`/`offset` lists answered as `{"count","next","previous","results"}` with absolute links.

use axum::extract::FromRequestParts;
use axum::http::{header, request::Parts};
use serde::Serialize;
use serde_json::{Value, json};

use crate::error::ApiError;
use crate::query_params::QueryParams;

pub const DEFAULT_LIMIT: usize = 100;
pub const MAX_LIMIT: usize = 1000;

#[derive(Debug, Clone)]
pub struct Pagination {
    pub limit: usize,
    pub offset: usize,
    /// scheme://host/path
    base: String,
    /// Query pairs other than limit/offset, kept in the links.
    other_pairs: Vec<(String, String)>,
}

impl<S: Send + Sync> FromRequestParts<S> for Pagination {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, ApiError> {
        let params = QueryParams::parse(parts.uri.query());
        let limit = params
            .integer("limit", 1..=MAX_LIMIT)?
            .unwrap_or(DEFAULT_LIMIT);
        let offset = params.integer("offset", 0..=usize::MAX)?.unwrap_or(0);
        Ok(Self {
            limit,
            offset,
            base: absolute_path(parts),
            other_pairs: params.without(&["limit", "offset"]),
        })
    }
}

/// `scheme://host/path` of the request (behind API Gateway the scheme comes from
/// `x-forwarded-proto`): the base of a page's absolute links.
pub fn absolute_path(parts: &Parts) -> String {
    let host = parts
        .headers
        .get(header::HOST)
        .and_then(|value| value.to_str().ok())
        .or_else(|| parts.uri.authority().map(|a| a.as_str()))
        .unwrap_or("localhost");
    let scheme = parts
        .headers
        .get("x-forwarded-proto")
        .and_then(|value| value.to_str().ok())
        .unwrap_or("http");
    format!("{scheme}://{host}{}", parts.uri.path())
}

impl Pagination {
    fn link(&self, offset: usize) -> String {
        let mut query = form_urlencoded::Serializer::new(String::new());
        query.extend_pairs(&self.other_pairs);
        query.append_pair("limit", &self.limit.to_string());
        if offset > 0 {
            query.append_pair("offset", &offset.to_string());
        }
        format!("{}?{}", self.base, query.finish())
    }

    /// The page of `all` this request asked for, with its links.
    pub fn page<T: Serialize>(&self, all: &[T]) -> Value {
        self.page_of(all.len(), self.window(all))
    }

    /// The items of `all` on the requested page, to render only those.
    pub fn window<'a, T>(&self, all: &'a [T]) -> &'a [T] {
        let start = self.offset.min(all.len());
        let end = start.saturating_add(self.limit).min(all.len());
        &all[start..end]
    }

    /// The page answer for `results` (the rendered [`window`](Self::window) of `count` items).
    pub fn page_of<T: Serialize>(&self, count: usize, results: &[T]) -> Value {
        let next = (self.offset + self.limit < count).then(|| self.link(self.offset + self.limit));
        let previous = (self.offset > 0).then(|| self.link(self.offset.saturating_sub(self.limit)));
        json!({ "count": count, "next": next, "previous": previous, "results": results })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::Request;

    async fn pagination(uri: &str) -> Result<Pagination, ApiError> {
        let (mut parts, ()) = Request::builder()
            .uri(uri)
            .header("host", "example.com")
            .body(())
            .unwrap()
            .into_parts();
        Pagination::from_request_parts(&mut parts, &()).await
    }

    #[tokio::test]
    async fn pages_carry_absolute_links() {
        let all: Vec<u32> = (0..25).collect();
        let page = pagination("/api/things?limit=10&offset=10&search=x")
            .await
            .unwrap()
            .page(&all);
        assert_eq!(page["count"], 25);
        assert_eq!(page["results"], json!((10..20).collect::<Vec<u32>>()));
        assert_eq!(
            page["next"],
            "http://example.com/api/things?search=x&limit=10&offset=20"
        );
        assert_eq!(
            page["previous"],
            "http://example.com/api/things?search=x&limit=10"
        );
        let last = pagination("/api/things?limit=10&offset=20")
            .await
            .unwrap()
            .page(&all);
        assert_eq!(last["next"], Value::Null);
    }

    #[tokio::test]
    async fn bad_numbers_are_400s() {
        for uri in [
            "/x?limit=abc",
            "/x?limit=0",
            "/x?offset=-1",
            "/x?limit=100000",
        ] {
            let error = pagination(uri).await.unwrap_err();
            assert_eq!(error.status, 400, "{uri}");
        }
    }
}
