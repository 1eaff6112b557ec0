//! The Lambda entry every family's `main.rs` calls: build state once, then serve the router.

use std::convert::Infallible;

use axum::http::{HeaderValue, Uri};
use lambda_http::request::RequestContext;
use lambda_http::{Request, RequestExt};
use tower::ServiceExt;

use crate::client::ClientAddress;
use crate::config::Config;
use crate::http::{REQUEST_ID, finish};
use crate::routes::Routes;
use crate::state::AppState;

/// Runs a route family (its route table, both prefixes of its project routes) under `lambda_http`.
pub async fn run(routes: fn() -> Routes) -> Result<(), lambda_http::Error> {
    crate::telemetry::init_json();
    let config = Config::from_env()?;
    let state = AppState::from_config(config).await?;
    let app = finish(routes(), state);
    lambda_http::run(tower::service_fn(move |request: Request| {
        let app = app.clone();
        async move {
            let request = client_address(gateway_request_id(strip_stage(request)));
            app.oneshot(request).await
        }
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

/// API Gateway's own id for the request becomes its `x-request-id` (replacing any the caller
/// sent), so our log lines, the response and API Gateway's access log name the request alike.
/// Without one, `common::http` keeps the caller's or makes one.
pub fn gateway_request_id(mut request: Request) -> Request {
    let id = match request.request_context_ref() {
        Some(RequestContext::ApiGatewayV2(context)) => context.request_id.as_deref(),
        _ => None,
    };
    let Some(value) = id
        .filter(|id| !id.is_empty())
        .and_then(|id| HeaderValue::from_str(id).ok())
    else {
        return request;
    };
    request.headers_mut().insert(REQUEST_ID, value);
    request
}

/// API Gateway's `sourceIp` (the client as the gateway saw it, not a header the client could
/// write) becomes the request's [`ClientAddress`].
pub fn client_address(mut request: Request) -> Request {
    let source = match request.request_context_ref() {
        Some(RequestContext::ApiGatewayV2(context)) => context.http.source_ip.clone(),
        _ => None,
    };
    let address = source.and_then(|ip| ip.parse().ok());
    request.extensions_mut().insert(ClientAddress(address));
    request
}

/// The `Infallible` error of an axum router, for callers that need a concrete type.
pub type RouterError = Infallible;

#[cfg(test)]
mod tests {
    use super::*;

    const EVENT: &str = include_str!("../../../events/users/get-me.json");

    fn header(request: &Request) -> Option<&str> {
        request
            .headers()
            .get(REQUEST_ID)
            .and_then(|value| value.to_str().ok())
    }

    #[test]
    fn api_gateway_request_id_names_the_request() {
        let request = lambda_http::request::from_str(EVENT).expect("sample event");
        assert_eq!(header(&request), None);
        let request = gateway_request_id(request);
        assert_eq!(
            header(&request),
            Some("c6af9ac6-7b61-11e6-9a41-93e8deadbeef")
        );

        // API Gateway's id wins over one the caller made up.
        let mut event: serde_json::Value = serde_json::from_str(EVENT).expect("json");
        event["headers"]["x-request-id"] = "from-the-client".into();
        let request = lambda_http::request::from_str(&event.to_string()).expect("sample event");
        assert_eq!(header(&request), Some("from-the-client"));
        let request = gateway_request_id(request);
        assert_eq!(
            header(&request),
            Some("c6af9ac6-7b61-11e6-9a41-93e8deadbeef")
        );

        // Without one, the caller's stays (and `common::http` makes one when there is none).
        event["requestContext"]
            .as_object_mut()
            .expect("context")
            .remove("requestId");
        let request = lambda_http::request::from_str(&event.to_string()).expect("sample event");
        assert_eq!(
            header(&gateway_request_id(request)),
            Some("from-the-client")
        );
    }

    #[test]
    fn the_gateway_source_ip_is_the_client_address() {
        let request = lambda_http::request::from_str(EVENT).expect("sample event");
        let request = client_address(request);
        assert_eq!(
            request.extensions().get::<ClientAddress>(),
            Some(&ClientAddress(Some("203.0.113.7".parse().unwrap())))
        );
    }
}
