//! The Lambda entry every family's `main.rs` calls: build state once, then serve the router.

use std::convert::Infallible;

use axum::Router;
use axum::http::Uri;
use lambda_http::request::RequestContext;
use lambda_http::{Request, RequestExt};
use tower::ServiceExt;

use crate::config::Config;
use crate::http::finish;
use crate::state::AppState;

/// Runs a route family under `lambda_http`.
pub async fn run(routes: fn() -> Router<AppState>) -> Result<(), lambda_http::Error> {
    crate::telemetry::init_json();
    let config = Config::from_env()?;
    let state = AppState::from_config(config).await?;
    let app = finish(routes(), state);
    lambda_http::run(tower::service_fn(move |request: Request| {
        let app = app.clone();
        async move { app.oneshot(strip_stage(request)).await }
    }))
    .await
}

/// API Gateway puts a named stage in front of the path (`/prod/api/...`); routes never include it.
pub fn strip_stage(mut request: Request) -> Request {
    let stage = match request.request_context_ref() {
        Some(RequestContext::ApiGatewayV2(context)) => context.stage.clone(),
        _ => None,
    };
    let Some(stage) = stage.filter(|stage| stage != "$default" && !stage.is_empty()) else {
        return request;
    };
    let prefix = format!("/{stage}");
    let path = request.uri().path();
    let rest = match path.strip_prefix(&prefix) {
        Some(rest) if rest.is_empty() || rest.starts_with('/') => rest,
        _ => return request,
    };
    let rest = if rest.is_empty() { "/" } else { rest };
    let path_and_query = match request.uri().query() {
        Some(query) => format!("{rest}?{query}"),
        None => rest.to_owned(),
    };
    let mut parts = request.uri().clone().into_parts();
    if let Ok(value) = path_and_query.parse() {
        parts.path_and_query = Some(value);
        if let Ok(uri) = Uri::from_parts(parts) {
            *request.uri_mut() = uri;
        }
    }
    request
}

/// The `Infallible` error of an axum router, for callers that need a concrete type.
pub type RouterError = Infallible;
