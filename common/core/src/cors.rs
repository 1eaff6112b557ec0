//! CORS for browser SDKs: posthog-js runs in a page of the customer's site and posts cross-origin.
//!
//! Everything outside `/api/` (capture, and flags once they exist) answers any origin with
//! credentials, as PostHog's capture does: the request's origin and requested headers are mirrored.
//! `/api/` (but `/api/surveys`, posthog-js's survey list, read with the project token) answers only the origins an operator lists in `ANALYTICS_CORS_ORIGINS`: a personal API
//! key must not be usable from any page on the web that gets hold of it.
//!
//! The layer answers every `OPTIONS` itself, before method routing, so a preflight never meets the
//! 405 fallback; and it decorates every other response, errors included, so the page can read them.

use std::sync::Arc;
use std::time::Duration;

use axum::http::request::Parts;
use axum::http::{HeaderName, HeaderValue, Method};
use tower_http::cors::{AllowHeaders, AllowOrigin, CorsLayer};

/// How long a browser may reuse a preflight answer (Chromium caps it at two hours).
const PREFLIGHT_MAX_AGE: Duration = Duration::from_secs(3600);

/// The CORS layer for every route family; `api_origins` are the exact origins allowed on `/api/`.
pub fn layer(api_origins: &[String]) -> CorsLayer {
    let api_origins: Arc<[String]> = api_origins.into();
    CorsLayer::new()
        .allow_origin(AllowOrigin::predicate(move |origin, parts| {
            origin_allowed(&api_origins, origin, parts)
        }))
        .allow_credentials(true)
        .allow_headers(AllowHeaders::mirror_request())
        // PostHog's API (django-cors-headers) allows these; capture itself needs GET and POST.
        .allow_methods([
            Method::GET,
            Method::POST,
            Method::PUT,
            Method::PATCH,
            Method::DELETE,
            Method::OPTIONS,
        ])
        // A page may read the request id, to quote it when something failed.
        .expose_headers([HeaderName::from_static("x-request-id")])
        .max_age(PREFLIGHT_MAX_AGE)
}

fn origin_allowed(api_origins: &[String], origin: &HeaderValue, parts: &Parts) -> bool {
    let path = parts.uri.path();
    if !is_api_path(path) || is_public_sdk_path(path) {
        return true;
    }
    api_origins
        .iter()
        .any(|allowed| allowed.as_bytes() == origin.as_bytes())
}

/// `/api/surveys`: what posthog-js fetches from a customer's page with the project token (no
/// personal key), so any origin may read it, as capture.
fn is_public_sdk_path(path: &str) -> bool {
    path.trim_end_matches('/') == "/api/surveys"
}

/// `/api` and everything under it; the path may or may not have been trimmed of its slash yet.
fn is_api_path(path: &str) -> bool {
    path == "/api" || path.starts_with("/api/")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parts(path: &str) -> Parts {
        axum::http::Request::options(path)
            .body(())
            .expect("request")
            .into_parts()
            .0
    }

    #[test]
    fn capture_paths_allow_any_origin_and_api_paths_only_listed_ones() {
        let listed = vec!["https://app.example.com".to_owned()];
        let page = HeaderValue::from_static("https://shop.example.org");
        let app = HeaderValue::from_static("https://app.example.com");
        for path in ["/e", "/e/", "/i/v0/e", "/batch", "/flags", "/apiary"] {
            assert!(origin_allowed(&listed, &page, &parts(path)), "{path}");
        }
        for path in ["/api", "/api/", "/api/projects/1/query"] {
            assert!(!origin_allowed(&listed, &page, &parts(path)), "{path}");
            assert!(origin_allowed(&listed, &app, &parts(path)), "{path}");
            assert!(!origin_allowed(&[], &app, &parts(path)), "{path}");
        }
    }
}
