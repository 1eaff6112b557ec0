//! What a request says about the client that sent it: its network address (for per-address
//! limits) and whether it came over HTTPS (for the `Secure` flag of cookies).

use std::net::{IpAddr, SocketAddr};

use axum::extract::{ConnectInfo, FromRequestParts};
use axum::http::request::Parts;
use std::convert::Infallible;

/// The address the entry point saw the request come from: API Gateway's `sourceIp` in Lambda,
/// the peer of the connection in `analytics serve`. An entry point sets it as an extension;
/// without one (tests), the peer's address if known.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClientAddress(pub Option<IpAddr>);

impl<S: Send + Sync> FromRequestParts<S> for ClientAddress {
    type Rejection = Infallible;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Infallible> {
        if let Some(address) = parts.extensions.get::<ClientAddress>() {
            return Ok(*address);
        }
        Ok(ClientAddress(
            parts
                .extensions
                .get::<ConnectInfo<SocketAddr>>()
                .map(|ConnectInfo(peer)| peer.ip()),
        ))
    }
}

impl ClientAddress {
    /// The key its limits are counted under.
    pub fn key(&self) -> String {
        self.0
            .map_or_else(|| "unknown".to_owned(), |address| address.to_string())
    }
}

/// Whether the client reached us over HTTPS: the request's own scheme, or what the proxy in
/// front of us says (API Gateway and load balancers set `X-Forwarded-Proto`).
pub fn over_https(parts: &Parts) -> bool {
    parts.uri.scheme_str() == Some("https")
        || parts
            .headers
            .get("x-forwarded-proto")
            .and_then(|value| value.to_str().ok())
            .is_some_and(|proto| proto.trim().eq_ignore_ascii_case("https"))
}
