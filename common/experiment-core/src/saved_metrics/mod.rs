//! Saved (shared) metrics (PostHog's `ExperimentSavedMetric`): an experiment metric kept by
//! name so experiments can link it (`saved_metrics_ids`) instead of copying it. Its `query` is
//! an `ExperimentMetric` checked by the same typed model as inline metrics, and it runs the same
//! way: an `ExperimentQuery` node takes it as its `metric`.

pub mod repository;

use chrono::{DateTime, Utc};
use common::error::ApiError;
use common::models::User;
use feature_flags::render::user_basic;
use insights::experiments::metric;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use uuid::Uuid;

use crate::service;
use crate::validate::{Present, errors_repr, invalid};

/// One saved metric of a project.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SavedMetric {
    pub id: i64,
    pub team_id: i64,
    pub name: String,
    #[serde(default)]
    pub description: Option<String>,
    /// The ExperimentMetric, with its `uuid` filled in.
    pub query: Value,
    #[serde(default)]
    pub tags: Vec<String>,
    #[serde(default)]
    pub created_by: Option<Uuid>,
    pub created_at: DateTime<Utc>,
    #[serde(default)]
    pub updated_at: Option<DateTime<Utc>>,
    #[serde(default)]
    pub version: u64,
}

/// The body of create, PATCH and PUT (DRF ignores unknown and read-only fields; so does this).
#[derive(Debug, Clone, Default, Deserialize)]
pub struct SavedMetricBody {
    #[serde(default, deserialize_with = "crate::validate::body::present")]
    pub name: Present<String>,
    #[serde(default, deserialize_with = "crate::validate::body::present")]
    pub description: Present<String>,
    #[serde(default, deserialize_with = "crate::validate::body::present")]
    pub query: Present<Value>,
    #[serde(default, deserialize_with = "crate::validate::body::present")]
    pub tags: Present<Vec<String>>,
}

const LEGACY_KINDS: &[&str] = &["ExperimentTrendsQuery", "ExperimentFunnelsQuery"];

/// PostHog's `ExperimentSavedMetricService.validate_query`, with the typed model of inline
/// metrics in place of pydantic. Raised from the service, so without a field.
pub fn validate_query(query: Option<&Value>) -> Result<(), ApiError> {
    let Some(query) = query.filter(|query| !crate::validate::is_empty(query)) else {
        return Err(invalid("Query is required to create a saved metric"));
    };
    let kind = query.get("kind").and_then(Value::as_str);
    if let Some(kind) = kind.filter(|kind| LEGACY_KINDS.contains(kind)) {
        return Err(invalid(format!(
            "Legacy metric kind '{kind}' is no longer supported for new saved metrics. Use 'ExperimentMetric' instead."
        )));
    }
    if kind != Some("ExperimentMetric") {
        return Err(invalid("Metric query kind must be 'ExperimentMetric'"));
    }
    match query.get("metric_type") {
        None => return Err(invalid("ExperimentMetric requires a metric_type")),
        Some(Value::String(kind))
            if ["mean", "funnel", "ratio", "retention"].contains(&kind.as_str()) => {}
        Some(_) => {
            return Err(invalid(
                "ExperimentMetric metric_type must be 'mean', 'funnel', 'ratio', or 'retention'",
            ));
        }
    }
    metric::parse(query).map_err(|errors| invalid(errors_repr(&errors)))?;
    Ok(())
}

/// The query as stored: checked, its `uuid` kept (`existing`) or filled in.
fn normalized_query(query: Option<&Value>, existing: Option<&str>) -> Result<Value, ApiError> {
    validate_query(query)?;
    let mut query = query.cloned().unwrap_or(Value::Null);
    let Some(object) = query.as_object_mut() else {
        return Err(invalid("Metric query kind must be 'ExperimentMetric'"));
    };
    let incoming = object
        .get("uuid")
        .and_then(Value::as_str)
        .filter(|uuid| !uuid.is_empty())
        .map(str::to_owned);
    if let (Some(existing), Some(incoming)) = (existing, &incoming)
        && existing != incoming
    {
        return Err(invalid("Saved metric UUID cannot be changed"));
    }
    let uuid = existing
        .map(str::to_owned)
        .or(incoming)
        .unwrap_or_else(|| Uuid::new_v4().to_string());
    object.insert("uuid".into(), Value::String(uuid));
    Ok(query)
}

/// Tags as PostHog's tagged items keep them: trimmed, lower-case, each once, sorted.
fn tags(given: &[String]) -> Vec<String> {
    let mut tags: Vec<String> = given
        .iter()
        .map(|tag| tag.trim().to_lowercase())
        .filter(|tag| !tag.is_empty())
        .collect();
    tags.sort();
    tags.dedup();
    tags
}

impl service::Described for SavedMetric {
    fn name_and_description(&mut self) -> (&mut String, &mut Option<String>) {
        (&mut self.name, &mut self.description)
    }
}

/// The name, description and tags `body` sets on `next`.
fn texts(body: &SavedMetricBody, next: &mut SavedMetric) -> Result<(), ApiError> {
    service::describe(next, &body.name, &body.description, 400)?;
    if let Some(given) = &body.tags {
        next.tags = tags(given.as_deref().unwrap_or_default());
    }
    Ok(())
}

/// The saved metric `body` creates (its id is set when it is stored), or PostHog's 400.
pub fn create(
    body: &SavedMetricBody,
    user: &User,
    team_id: i64,
    at: DateTime<Utc>,
) -> Result<SavedMetric, ApiError> {
    if !matches!(body.name, Some(Some(_))) {
        return Err(ApiError::required("name"));
    }
    if body.query.is_none() {
        return Err(ApiError::required("query"));
    }
    let mut saved = SavedMetric {
        id: 0,
        team_id,
        name: String::new(),
        description: None,
        query: Value::Null,
        tags: Vec::new(),
        created_by: Some(user.uuid),
        created_at: at,
        updated_at: Some(at),
        version: 1,
    };
    texts(body, &mut saved)?;
    saved.query = normalized_query(body.query.clone().flatten().as_ref(), None)?;
    Ok(saved)
}

/// The saved metric after `body`.
pub fn update(body: &SavedMetricBody, current: &SavedMetric) -> Result<SavedMetric, ApiError> {
    let mut next = current.clone();
    texts(body, &mut next)?;
    if let Some(query) = &body.query {
        let existing = current.query.get("uuid").and_then(Value::as_str);
        next.query = normalized_query(query.as_ref(), existing)?;
    }
    Ok(next)
}

/// PostHog's refusal of a second saved metric of one name (case-insensitive).
pub fn name_taken(name: &str, others: &[SavedMetric], except: Option<i64>) -> Result<(), ApiError> {
    let lower = name.to_lowercase();
    if others
        .iter()
        .any(|other| Some(other.id) != except && other.name.to_lowercase() == lower)
    {
        return Err(ApiError::field(
            "name",
            "invalid",
            "A shared metric with this name already exists.",
        ));
    }
    Ok(())
}

/// PostHog's ExperimentSavedMetricSerializer.
pub fn render(saved: &SavedMetric, creator: Option<&User>) -> Value {
    json!({
        "id": saved.id,
        "name": saved.name,
        "description": saved.description,
        "query": saved.query,
        "created_by": creator.map(user_basic),
        "created_at": saved.created_at,
        "updated_at": saved.updated_at.unwrap_or(saved.created_at),
        "tags": saved.tags,
        "user_access_level": "editor",
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queries_are_checked_and_keep_their_uuid() {
        let detail = |query: Value| validate_query(Some(&query)).unwrap_err().body.detail;
        assert_eq!(
            detail(json!({})),
            "Query is required to create a saved metric"
        );
        assert_eq!(
            detail(json!({"kind": "ExperimentTrendsQuery"})),
            "Legacy metric kind 'ExperimentTrendsQuery' is no longer supported for new saved metrics. Use 'ExperimentMetric' instead."
        );
        assert_eq!(
            detail(json!({"kind": "ExperimentMetric"})),
            "ExperimentMetric requires a metric_type"
        );
        let metric = json!({"kind": "ExperimentMetric", "metric_type": "mean",
            "source": {"kind": "EventsNode", "event": "purchase"}});
        let stored = normalized_query(Some(&metric), None).unwrap();
        let uuid = stored["uuid"].as_str().unwrap().to_owned();
        let mut changed = stored.clone();
        changed["uuid"] = json!("other");
        assert_eq!(
            normalized_query(Some(&changed), Some(&uuid))
                .unwrap_err()
                .body
                .detail,
            "Saved metric UUID cannot be changed"
        );
        assert_eq!(
            normalized_query(Some(&metric), Some(&uuid)).unwrap()["uuid"],
            json!(uuid)
        );
    }

    #[test]
    fn tags_are_normalised() {
        let given = vec![" B".to_owned(), "a".to_owned(), "b".to_owned()];
        assert_eq!(tags(&given), ["a", "b"]);
    }
}
