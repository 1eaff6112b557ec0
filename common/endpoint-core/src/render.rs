//! Endpoints as PostHog's API shows them (reference 2.2, 2.6): the endpoint with its current
//! version's settings, a version dict, and the materialization status.

use chrono::{DateTime, Utc};
use serde_json::{Value, json};

use crate::model::{Endpoint, Materialization, Version};

pub use common::dates::iso;
use common::dates::iso_or_null as iso_opt;

/// The path `run` answers on: `/api/{prefix}/{team_id}/endpoints/{name}/run`.
pub fn endpoint_path(prefix: &str, team_id: i64, name: &str) -> String {
    format!("/api/{prefix}/{team_id}/endpoints/{name}/run")
}

/// An endpoint with its current version. `creator` is the UserBasic JSON (or null),
/// `base_url` the site's origin (`http://host`, no trailing slash), `prefix` the route family
/// it was asked through (`projects` or `environments`), `materialization` the
/// [`materialization_status`] of the current version.
#[allow(clippy::too_many_arguments)]
pub fn endpoint(
    e: &Endpoint,
    current: &Version,
    versions_count: usize,
    creator: Value,
    base_url: &str,
    prefix: &str,
    materialization: Value,
    last_executed_at: Option<DateTime<Utc>>,
) -> Value {
    let base_url = base_url.trim_end_matches('/');
    let path = endpoint_path(prefix, e.team_id, &e.name);
    json!({
        "id": e.id.to_string(),
        "name": e.name,
        "description": current.description,
        "query": current.query,
        "is_active": e.is_active,
        "cache_age_seconds": current.cache_age_seconds,
        "url": format!("{base_url}{path}"),
        "endpoint_path": path,
        "ui_url": format!("{base_url}/project/{}/endpoints/{}", e.team_id, e.name),
        "created_at": iso(e.created_at),
        "updated_at": iso(e.updated_at),
        "created_by": creator,
        "is_materialized": current.is_materialized,
        "current_version": e.current_version,
        "current_version_id": current.id.to_string(),
        "versions_count": versions_count,
        "derived_from_insight": e.derived_from_insight,
        "materialization": materialization,
        "columns": current.columns,
        "last_executed_at": iso_opt(last_executed_at),
    })
}

/// One version (`versions/` and `versions/:n/`).
pub fn version(v: &Version, creator: Value) -> Value {
    json!({
        "id": v.id.to_string(),
        "version": v.version,
        "query": v.query,
        "description": v.description,
        "is_active": v.is_active,
        "cache_age_seconds": v.cache_age_seconds,
        "is_materialized": v.is_materialized,
        "sync_frequency": v.sync_frequency,
        "columns": v.columns,
        "created_at": iso(v.created_at),
        "created_by": creator,
    })
}

/// `materialization_status/` and the endpoint's `materialization`. `can_materialize` is whether
/// the version's query could be materialized, or why not.
pub fn materialization_status(
    v: &Version,
    m: Option<&Materialization>,
    can_materialize: Result<(), String>,
) -> Value {
    if v.is_materialized {
        // PostHog says "Unknown" while its saved query has no status yet.
        let status = m.map_or("Unknown", |m| m.status.as_str());
        let sync_frequency = v
            .sync_frequency
            .or(m.map(|m| m.sync_frequency))
            .unwrap_or_default();
        json!({
            "status": status,
            "can_materialize": true,
            "last_materialized_at": iso_opt(m.and_then(|m| m.last_materialized_at)),
            "error": m.map_or("", |m| m.error.as_str()),
            "sync_frequency": sync_frequency,
        })
    } else {
        match can_materialize {
            Ok(()) => json!({"can_materialize": true, "reason": null}),
            Err(reason) => json!({"can_materialize": false, "reason": reason}),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Column, MaterializationStatus, SyncFrequency};
    use chrono::TimeZone;
    use uuid::Uuid;

    fn at(micros: u32) -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2025, 3, 4, 5, 6, 7).unwrap()
            + chrono::Duration::microseconds(i64::from(micros))
    }

    fn fixture() -> (Endpoint, Version) {
        let id = Uuid::new_v4();
        let endpoint = Endpoint {
            id,
            team_id: 7,
            name: "daily-users".into(),
            is_active: true,
            current_version: 2,
            derived_from_insight: Some("abc123".into()),
            created_by: None,
            created_at: at(0),
            updated_at: at(120),
        };
        let version = Version {
            id: Uuid::new_v4(),
            endpoint_id: id,
            version: 2,
            query: json!({"kind": "HogQLQuery", "query": "select 1"}),
            description: "Users per day".into(),
            cache_age_seconds: Some(600),
            is_active: true,
            is_materialized: false,
            sync_frequency: None,
            columns: vec![Column {
                name: "count()".into(),
                kind: "integer".into(),
            }],
            created_at: at(0),
            created_by: None,
            updated_at: at(0),
        };
        (endpoint, version)
    }

    #[test]
    fn an_endpoint_shows_its_current_version_and_its_addresses() {
        let (e, v) = fixture();
        let creator = json!({"id": 1, "first_name": "Ada"});
        let status = materialization_status(&v, None, Ok(()));
        let body = endpoint(
            &e,
            &v,
            2,
            creator.clone(),
            "http://localhost:8000/",
            "environments",
            status.clone(),
            Some(at(5)),
        );
        assert_eq!(body["id"], e.id.to_string());
        assert_eq!(body["name"], "daily-users");
        assert_eq!(body["description"], "Users per day");
        assert_eq!(body["query"], v.query);
        assert_eq!(body["cache_age_seconds"], 600);
        assert_eq!(
            body["endpoint_path"],
            "/api/environments/7/endpoints/daily-users/run"
        );
        assert_eq!(
            body["url"],
            "http://localhost:8000/api/environments/7/endpoints/daily-users/run"
        );
        assert_eq!(
            body["ui_url"],
            "http://localhost:8000/project/7/endpoints/daily-users"
        );
        assert_eq!(body["created_at"], "2025-03-04T05:06:07Z");
        assert_eq!(body["updated_at"], "2025-03-04T05:06:07.000120Z");
        assert_eq!(body["last_executed_at"], "2025-03-04T05:06:07.000005Z");
        assert_eq!(body["created_by"], creator);
        assert_eq!(body["is_materialized"], false);
        assert_eq!(body["current_version"], 2);
        assert_eq!(body["current_version_id"], v.id.to_string());
        assert_eq!(body["versions_count"], 2);
        assert_eq!(body["derived_from_insight"], "abc123");
        assert_eq!(body["materialization"], status);
        assert_eq!(
            body["columns"],
            json!([{"name": "count()", "type": "integer"}])
        );
        let keys: Vec<&str> = body
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(keys.len(), 20, "{keys:?}");
    }

    #[test]
    fn a_version_dict() {
        let (_, mut v) = fixture();
        v.is_materialized = true;
        v.sync_frequency = Some(SyncFrequency::SixHours);
        let body = version(&v, Value::Null);
        assert_eq!(
            body,
            json!({
                "id": v.id.to_string(),
                "version": 2,
                "query": {"kind": "HogQLQuery", "query": "select 1"},
                "description": "Users per day",
                "is_active": true,
                "cache_age_seconds": 600,
                "is_materialized": true,
                "sync_frequency": "6hour",
                "columns": [{"name": "count()", "type": "integer"}],
                "created_at": "2025-03-04T05:06:07Z",
                "created_by": null,
            })
        );
    }

    #[test]
    fn materialization_status_shapes() {
        let (e, mut v) = fixture();
        assert_eq!(
            materialization_status(&v, None, Err("Query type not supported".into())),
            json!({"can_materialize": false, "reason": "Query type not supported"})
        );
        assert_eq!(
            materialization_status(&v, None, Ok(())),
            json!({"can_materialize": true, "reason": null})
        );
        v.is_materialized = true;
        assert_eq!(
            materialization_status(&v, None, Ok(())),
            json!({"status": "Unknown", "can_materialize": true, "last_materialized_at": null,
                   "error": "", "sync_frequency": "24hour"})
        );
        v.sync_frequency = Some(SyncFrequency::OneHour);
        let m = Materialization {
            endpoint_id: e.id,
            endpoint_name: e.name.clone(),
            version: 2,
            status: MaterializationStatus::Failed,
            sync_frequency: SyncFrequency::OneHour,
            last_materialized_at: Some(at(0)),
            next_run_at: at(0),
            error: "boom".into(),
            object: None,
            variable: None,
            rows: 0,
            updated_at: at(0),
        };
        assert_eq!(
            materialization_status(&v, Some(&m), Ok(())),
            json!({"status": "Failed", "can_materialize": true,
                   "last_materialized_at": "2025-03-04T05:06:07Z", "error": "boom",
                   "sync_frequency": "1hour"})
        );
    }
}
