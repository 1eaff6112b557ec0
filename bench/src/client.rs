//! The keep-alive client the benches send their setup and timed API requests with (the
//! personal API key of the bench's user on every request).

use std::net::SocketAddr;

use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper::client::conn::http1::SendRequest;
use serde_json::Value;

use crate::load::connect;

/// One keep-alive connection with the bench's key.
pub(crate) struct Client {
    sender: SendRequest<Full<Bytes>>,
    address: SocketAddr,
    key: String,
}

/// An answer: status, body as JSON (`Null` when it is not) and as text.
pub(crate) struct Answer {
    pub(crate) status: hyper::StatusCode,
    pub(crate) body: Value,
    pub(crate) text: String,
}

impl Client {
    pub(crate) async fn new(address: SocketAddr, key: &str) -> anyhow::Result<Self> {
        Ok(Self {
            sender: connect(address).await?,
            address,
            key: key.to_owned(),
        })
    }

    /// Sends `body` (none when `Null`) and reads the whole answer.
    pub(crate) async fn send(
        &mut self,
        method: hyper::Method,
        path: &str,
        body: &Value,
    ) -> anyhow::Result<Answer> {
        if self.sender.ready().await.is_err() {
            self.sender = connect(self.address).await?;
        }
        let bytes = match body {
            Value::Null => Bytes::new(),
            body => Bytes::from(body.to_string()),
        };
        let request = hyper::Request::builder()
            .method(method)
            .uri(path)
            .header("host", self.address.to_string())
            .header("authorization", format!("Bearer {}", self.key))
            .header("content-type", "application/json")
            .body(Full::new(bytes))?;
        let response = self.sender.send_request(request).await?;
        let status = response.status();
        let bytes = response.into_body().collect().await?.to_bytes();
        Ok(Answer {
            status,
            body: serde_json::from_slice(&bytes).unwrap_or(Value::Null),
            text: String::from_utf8_lossy(&bytes).into_owned(),
        })
    }
}
