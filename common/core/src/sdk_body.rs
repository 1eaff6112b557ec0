//! The body encodings PostHog's SDKs use (capture, `/flags`): JSON, gzip (`Content-Encoding:
//! gzip`, `?compression=gzip-js`, or only its magic bytes), and the form-encoded `data=` field
//! holding JSON, base64 JSON or base64 gzip.

use std::borrow::Cow;
use std::io::Read;

use axum::http::{HeaderMap, header};
use base64::Engine;
use base64::engine::general_purpose::{GeneralPurpose, GeneralPurposeConfig};
use base64::engine::{DecodePaddingMode, general_purpose};
use flate2::read::GzDecoder;
use serde_json::Value;

use crate::error::{ApiError, ApiResult};

/// Accepts padded and unpadded input: SDKs differ.
const BASE64: GeneralPurpose = GeneralPurpose::new(
    &base64::alphabet::STANDARD,
    GeneralPurposeConfig::new().with_decode_padding_mode(DecodePaddingMode::Indifferent),
);
const GZIP_MAGIC: [u8; 2] = [0x1f, 0x8b];

/// Why a body could not be read; each route answers it in its own words.
#[derive(Debug, thiserror::Error)]
pub enum BodyError {
    #[error("Invalid gzip body: {0}")]
    Gzip(#[source] std::io::Error),
    /// Inflated beyond the limit (bytes).
    #[error("the body inflates beyond {0} bytes")]
    TooLarge(usize),
    #[error("The `data` field is neither JSON nor base64.")]
    Base64,
    #[error("A form body needs a `data` field.")]
    MissingData,
    #[error("The request has no body.")]
    Empty,
    #[error("JSON parse error - {0}")]
    Json(#[source] serde_json::Error),
}

/// Capture's answers.
impl From<BodyError> for ApiError {
    fn from(error: BodyError) -> Self {
        match error {
            BodyError::TooLarge(limit) => ApiError::payload_too_large(limit),
            BodyError::MissingData => ApiError::field("data", "required", error.to_string()),
            other => ApiError::parse_error(other.to_string()),
        }
    }
}

fn pairs(text: &[u8]) -> Vec<(String, String)> {
    form_urlencoded::parse(text).into_owned().collect()
}

fn field<'a>(pairs: &'a [(String, String)], name: &str) -> Option<&'a str> {
    pairs
        .iter()
        .find(|(key, _)| key == name)
        .map(|(_, value)| value.as_str())
}

/// Inflates gzip, refusing output beyond `limit` bytes (a small body can expand enormously).
fn gunzip(bytes: &[u8], limit: usize) -> Result<Vec<u8>, BodyError> {
    let mut out = Vec::new();
    GzDecoder::new(bytes)
        .take(limit as u64 + 1)
        .read_to_end(&mut out)
        .map_err(BodyError::Gzip)?;
    if out.len() > limit {
        return Err(BodyError::TooLarge(limit));
    }
    Ok(out)
}

fn base64_bytes(text: &str) -> Result<Vec<u8>, BodyError> {
    let cleaned: String = text.chars().filter(|c| !c.is_whitespace()).collect();
    BASE64
        .decode(cleaned.as_bytes())
        .or_else(|_| general_purpose::URL_SAFE_NO_PAD.decode(cleaned.trim_end_matches('=')))
        .map_err(|_| BodyError::Base64)
}

/// The `data=` field of a form or query string.
fn from_data_field(
    data: &str,
    compression: Option<&str>,
    limit: usize,
) -> Result<Vec<u8>, BodyError> {
    let trimmed = data.trim_start();
    if trimmed.starts_with('{') || trimmed.starts_with('[') {
        return Ok(data.as_bytes().to_vec());
    }
    let bytes = base64_bytes(data)?;
    if compression == Some("gzip-js") || bytes.starts_with(&GZIP_MAGIC) {
        gunzip(&bytes, limit)
    } else {
        Ok(bytes)
    }
}

/// The JSON text a request carries, however it was encoded (borrowed when it came as plain JSON).
pub fn json_text<'a>(
    headers: &HeaderMap,
    query: Option<&str>,
    body: &'a [u8],
    limit: usize,
) -> Result<Cow<'a, [u8]>, BodyError> {
    let query = pairs(query.unwrap_or("").as_bytes());
    let content_type = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_ascii_lowercase();
    let gzip_header = headers
        .get(header::CONTENT_ENCODING)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.eq_ignore_ascii_case("gzip"));
    let compression = field(&query, "compression");

    let mut raw = Cow::Borrowed(body);
    // posthog-js gzips bodies as `text/plain` without a `compression` marker: the magic bytes
    // tell, and no JSON or form body starts with them.
    if gzip_header || raw.starts_with(&GZIP_MAGIC) {
        raw = Cow::Owned(gunzip(&raw, limit)?);
    }
    let looks_like_json = raw
        .iter()
        .find(|b| !b.is_ascii_whitespace())
        .is_some_and(|b| *b == b'{' || *b == b'[');
    // `curl -d` labels JSON as a form: trust the body over the label.
    if content_type.starts_with("application/x-www-form-urlencoded") && !looks_like_json {
        let form = pairs(&raw);
        let Some(data) = field(&form, "data") else {
            return Err(BodyError::MissingData);
        };
        let compression = field(&form, "compression").or(compression);
        Ok(Cow::Owned(from_data_field(data, compression, limit)?))
    } else if raw.iter().all(u8::is_ascii_whitespace) {
        match field(&query, "data") {
            Some(data) => Ok(Cow::Owned(from_data_field(data, compression, limit)?)),
            None => Err(BodyError::Empty),
        }
    } else {
        Ok(raw)
    }
}

/// The JSON document a request carries, however it was encoded.
pub fn document(
    headers: &HeaderMap,
    query: Option<&str>,
    body: &[u8],
    limit: usize,
) -> ApiResult<Value> {
    let json = json_text(headers, query, body, limit)?;
    serde_json::from_slice(&json).map_err(|e| BodyError::Json(e).into())
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;
    use flate2::Compression;
    use flate2::write::GzEncoder;
    use std::io::Write;

    fn gz(bytes: &[u8]) -> Vec<u8> {
        let mut encoder = GzEncoder::new(Vec::new(), Compression::default());
        encoder.write_all(bytes).unwrap();
        encoder.finish().unwrap()
    }

    fn headers(pairs: &[(header::HeaderName, &'static str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.insert(name.clone(), HeaderValue::from_static(value));
        }
        map
    }

    const EVENT: &str = r#"{"event":"e","distinct_id":"d","api_key":"phc_x"}"#;

    #[test]
    fn every_encoding_yields_the_same_document() {
        let expected: Value = serde_json::from_str(EVENT).unwrap();
        let json = headers(&[(header::CONTENT_TYPE, "application/json")]);
        assert_eq!(
            document(&json, None, EVENT.as_bytes(), 1 << 20).unwrap(),
            expected
        );

        let gzip = headers(&[(header::CONTENT_ENCODING, "gzip")]);
        assert_eq!(
            document(&gzip, None, &gz(EVENT.as_bytes()), 1 << 20).unwrap(),
            expected
        );
        assert_eq!(
            document(
                &HeaderMap::new(),
                Some("compression=gzip-js"),
                &gz(EVENT.as_bytes()),
                1 << 20
            )
            .unwrap(),
            expected
        );

        // As posthog-js sends it: gzip labelled text/plain, no marker anywhere.
        let text = headers(&[(header::CONTENT_TYPE, "text/plain")]);
        assert_eq!(
            document(&text, None, &gz(EVENT.as_bytes()), 1 << 20).unwrap(),
            expected
        );

        let form = headers(&[(header::CONTENT_TYPE, "application/x-www-form-urlencoded")]);
        let encoded: String = form_urlencoded::Serializer::new(String::new())
            .append_pair("data", &BASE64.encode(EVENT))
            .finish();
        assert_eq!(
            document(&form, None, encoded.as_bytes(), 1 << 20).unwrap(),
            expected
        );
        let gz_form: String = form_urlencoded::Serializer::new(String::new())
            .append_pair("data", &BASE64.encode(gz(EVENT.as_bytes())))
            .append_pair("compression", "gzip-js")
            .finish();
        assert_eq!(
            document(&form, None, gz_form.as_bytes(), 1 << 20).unwrap(),
            expected
        );
        let plain_form: String = form_urlencoded::Serializer::new(String::new())
            .append_pair("data", EVENT)
            .finish();
        assert_eq!(
            document(&form, None, plain_form.as_bytes(), 1 << 20).unwrap(),
            expected
        );
        let query = format!("data={}", BASE64.encode(EVENT));
        assert_eq!(
            document(&HeaderMap::new(), Some(&query), b"", 1 << 20).unwrap(),
            expected
        );
    }

    #[test]
    fn bad_encodings_are_clear_errors() {
        let gzip = headers(&[(header::CONTENT_ENCODING, "gzip")]);
        assert_eq!(
            document(&gzip, None, b"not gzip at all", 1 << 20)
                .unwrap_err()
                .status,
            400
        );
        // A bomb: 1 MB of zeros in a few KB, against a 64 KB limit.
        let bomb = gz(&vec![b' '; 1 << 20]);
        assert_eq!(
            document(&gzip, None, &bomb, 64 << 10).unwrap_err().status,
            413
        );
        assert_eq!(
            document(&HeaderMap::new(), None, b"{nope", 1 << 20)
                .unwrap_err()
                .body
                .code,
            "parse_error"
        );
        let form = headers(&[(header::CONTENT_TYPE, "application/x-www-form-urlencoded")]);
        assert_eq!(
            document(&form, None, b"other=1", 1 << 20)
                .unwrap_err()
                .body
                .attr
                .as_deref(),
            Some("data")
        );
        assert_eq!(
            document(&form, None, b"data=%%%", 1 << 20)
                .unwrap_err()
                .status,
            400
        );
        assert_eq!(
            document(&HeaderMap::new(), None, b"", 1 << 20)
                .unwrap_err()
                .status,
            400
        );
    }
}
