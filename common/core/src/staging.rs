//! Staged capture batches: what capture writes durably before it answers, and what the
//! committer reads into the events lake, one normalized event per line. On S3, one object per
//! accepted request and project: `staging/team_id=<id>/<uuidv7>.ndjson.gz`. Embedded, a record
//! appended to the project's staging [`log`] (a file per request is what bounded capture there).

pub mod log;

use std::borrow::Cow;
use std::io::{Read, Write};

use chrono::{DateTime, Utc};
use flate2::Compression;
use flate2::read::GzDecoder;
use flate2::write::GzEncoder;
use object_store::path::Path;
use object_store::{ObjectStore, PutMode, PutOptions, PutPayload};
use serde::de::IgnoredAny;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::{Map, Value};
use uuid::Uuid;

pub const STAGING_ROOT: &str = "staging";

/// An event as capture accepted it: validated, with its uuid and corrected timestamp.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StagedEvent {
    pub uuid: Uuid,
    pub event: String,
    pub distinct_id: String,
    /// `$set`, `$set_once` and `$unset` live here, as PostHog keeps them.
    pub properties: Map<String, Value>,
    pub timestamp: DateTime<Utc>,
    pub created_at: DateTime<Utc>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub elements_chain: Option<String>,
}

/// A staged line read in place: the committer's common case needs no map of properties.
#[derive(Debug, Deserialize)]
pub struct StagedLine<'a> {
    pub uuid: Uuid,
    #[serde(borrow)]
    pub event: Cow<'a, str>,
    #[serde(borrow)]
    pub distinct_id: Cow<'a, str>,
    /// A JSON object, as staged.
    #[serde(borrow)]
    pub properties: &'a RawValue,
    pub timestamp: DateTime<Utc>,
    pub created_at: DateTime<Utc>,
    #[serde(default)]
    pub elements_chain: Option<String>,
}

/// What rows need from an event's properties besides their text: the session, and whether they
/// update the person (then the whole event is read as a [`StagedEvent`]).
#[derive(Debug, Deserialize)]
pub struct PropertiesProbe<'a> {
    #[serde(rename = "$session_id", borrow, default)]
    session_id: Option<&'a RawValue>,
    #[serde(rename = "$set", default)]
    set: Option<IgnoredAny>,
    #[serde(rename = "$set_once", default)]
    set_once: Option<IgnoredAny>,
    #[serde(rename = "$unset", default)]
    unset: Option<IgnoredAny>,
}

impl<'a> PropertiesProbe<'a> {
    /// Reads a JSON object's text (anything else is an error).
    pub fn read(properties: &'a str) -> serde_json::Result<Self> {
        if !properties.trim_start().starts_with('{') {
            return Err(serde::de::Error::custom("properties must be an object"));
        }
        serde_json::from_str(properties)
    }

    /// `$session_id`, when it is a string.
    pub fn session_id(&self) -> Option<Cow<'a, str>> {
        self.session_id.and_then(json_text)
    }

    /// Whether the properties hold person updates (`$set`, `$set_once`, `$unset`).
    pub fn updates_person(&self) -> bool {
        self.set.is_some() || self.set_once.is_some() || self.unset.is_some()
    }
}

/// A JSON string's text (borrowed unless it has escapes); `None` for any other value.
pub fn json_text(raw: &RawValue) -> Option<Cow<'_, str>> {
    let json = raw.get();
    let inner = json.strip_prefix('"')?.strip_suffix('"')?;
    if inner.contains('\\') {
        serde_json::from_str::<String>(json).ok().map(Cow::Owned)
    } else {
        Some(Cow::Borrowed(inner))
    }
}

#[derive(Debug, thiserror::Error)]
pub enum StagingError {
    #[error("staging object store: {0}")]
    Store(#[from] object_store::Error),
    #[error("staging object {path}: {cause}")]
    Corrupt { path: String, cause: String },
    #[error(transparent)]
    Log(#[from] log::LogError),
}

/// Where a project's staged batches live.
pub fn team_prefix(team_id: i64) -> Path {
    Path::from(format!("{STAGING_ROOT}/team_id={team_id}"))
}

/// The project a staging object belongs to, from its path.
pub fn team_of(path: &Path) -> Option<i64> {
    let mut parts = path.parts();
    if parts.next()?.as_ref() != STAGING_ROOT {
        return None;
    }
    parts
        .next()?
        .as_ref()
        .strip_prefix("team_id=")?
        .parse()
        .ok()
}

pub fn encode(events: &[StagedEvent]) -> Vec<u8> {
    let mut encoder = GzEncoder::new(Vec::new(), Compression::fast());
    for event in events {
        // Serializing owned JSON-safe values into a Vec cannot fail.
        let line = serde_json::to_vec(event).unwrap_or_default();
        let _ = encoder.write_all(&line);
        let _ = encoder.write_all(b"\n");
    }
    encoder.finish().unwrap_or_default()
}

pub fn decode(path: &Path, bytes: &[u8]) -> Result<Vec<StagedEvent>, StagingError> {
    let text = inflate(path, bytes)?;
    lines(&text)
        .map(|line| serde_json::from_str(line).map_err(|e| StagingError::corrupt(path, e)))
        .collect()
}

impl StagingError {
    /// The staged object at `path` cannot be read, because of `cause`.
    pub fn corrupt(path: &Path, cause: impl std::fmt::Display) -> Self {
        Self::Corrupt {
            path: path.to_string(),
            cause: cause.to_string(),
        }
    }
}

/// A staged object's text: one event per line (see [`lines`]).
pub fn inflate(path: &Path, bytes: &[u8]) -> Result<String, StagingError> {
    let mut text = String::new();
    GzDecoder::new(bytes)
        .read_to_string(&mut text)
        .map_err(|e| StagingError::corrupt(path, e))?;
    Ok(text)
}

/// The event lines of an inflated staged object.
pub fn lines(text: &str) -> impl Iterator<Item = &str> {
    text.lines().filter(|line| !line.trim().is_empty())
}

/// Writes one request's accepted events durably: appended to the staging log where the state has
/// one (embedded), else one object.
pub async fn stage(
    state: &crate::AppState,
    team_id: i64,
    events: &[StagedEvent],
) -> Result<(), StagingError> {
    match &state.staging_log {
        Some(staging_log) => staging_log.append(team_id, log::record(events)?).await?,
        None => {
            stage_object(state.objects.as_ref(), team_id, events).await?;
        }
    }
    Ok(())
}

/// Writes one batch durably as an object under a fresh name; returns where.
pub async fn stage_object(
    objects: &dyn ObjectStore,
    team_id: i64,
    events: &[StagedEvent],
) -> Result<Path, StagingError> {
    let path = Path::from(format!(
        "{}/{}.ndjson.gz",
        team_prefix(team_id),
        Uuid::now_v7()
    ));
    let options = PutOptions {
        mode: PutMode::Create,
        ..Default::default()
    };
    objects
        .put_opts(&path, PutPayload::from(encode(events)), options)
        .await?;
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batches_round_trip_and_name_their_project() {
        let event = StagedEvent {
            uuid: Uuid::now_v7(),
            event: "$pageview".into(),
            distinct_id: "d1".into(),
            properties: serde_json::json!({"$set": {"a": 1}})
                .as_object()
                .unwrap()
                .clone(),
            timestamp: DateTime::UNIX_EPOCH,
            created_at: DateTime::UNIX_EPOCH,
            elements_chain: None,
        };
        let path = Path::from("staging/team_id=42/x.ndjson.gz");
        assert_eq!(team_of(&path), Some(42));
        assert_eq!(team_of(&Path::from("lake/team_id=42/x")), None);
        let bytes = encode(std::slice::from_ref(&event));
        assert_eq!(decode(&path, &bytes).unwrap(), vec![event]);
        assert!(decode(&path, b"not gzip").is_err());
    }
}
