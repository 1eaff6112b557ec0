//! `ExperimentQuery` in the service: the experiment a node names is read from the Store (with
//! its flag and project) into the [`ExperimentSpec`] the compiler needs, one day's cumulative
//! run for the timeseries ([`run_as_of`]), and the job that runs a recalculation day by day
//! ([`timeseries`]).

pub mod flag_implementation;
pub mod timeseries;

use std::sync::Arc;

use chrono::{DateTime, DurationRound, TimeDelta, Utc};
use common::AppState;
use common::models::Project;
use engine::QueryError;
use experiment_core::spec::spec_of;
use insights::experiments::ExperimentSpec;
use insights::nodes::Structured;
use serde::Deserialize;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::runner;
use crate::{Caller, SqlNode};

/// The node kind this module serves.
pub const KIND: &str = "ExperimentQuery";

/// The part of an `ExperimentQuery` node the service reads (the compiler reads the rest).
#[derive(Debug, Deserialize)]
struct NodeRef {
    #[serde(default)]
    experiment_id: Option<i64>,
}

fn invalid(detail: impl Into<String>) -> QueryError {
    QueryError::Invalid {
        attr: "experiment_id".into(),
        detail: detail.into(),
    }
}

/// The experiment of an `ExperimentQuery` node: the node's own when the caller built it, else
/// read from the Store. `None` for every other kind.
pub async fn spec_for(
    state: &AppState,
    project: &Project,
    node: &SqlNode,
) -> Result<Option<Arc<ExperimentSpec>>, QueryError> {
    let Some(structured) = &node.structured else {
        return Ok(None);
    };
    if structured.kind() != KIND {
        return Ok(None);
    }
    if let Some(spec) = &node.experiment {
        return Ok(Some(spec.clone()));
    }
    let id = NodeRef::deserialize(structured.as_value())
        .map_err(|_| invalid("experiment_id must be an integer."))?
        .experiment_id
        .ok_or_else(|| invalid("experiment_id is required."))?;
    load_spec(state, project, id)
        .await
        .map(|spec| Some(Arc::new(spec)))
}

/// The spec of experiment `id` as of now: it must exist, not be deleted, and have started.
pub async fn load_spec(
    state: &AppState,
    project: &Project,
    id: i64,
) -> Result<ExperimentSpec, QueryError> {
    let store = state.store.as_ref();
    let experiment = experiment_core::repository::get_live(store, project.id, id)
        .await
        .map_err(QueryError::internal)?
        .ok_or_else(|| invalid(format!("Experiment {id} does not exist.")))?;
    if experiment.start_date.is_none() {
        return Err(invalid("Experiment has not been started yet."));
    }
    let flag = feature_flags::repository::get(store, project.id, experiment.feature_flag_id)
        .await
        .map_err(QueryError::internal)?
        .ok_or_else(|| invalid("The experiment's feature flag does not exist."))?
        .flag;
    Ok(spec_of(&experiment, &flag, project))
}

/// What of a spec goes into the cache key: all of it (it is small, and any field may change
/// the answer without changing the SQL).
pub fn digest(spec: &ExperimentSpec) -> String {
    let text = serde_json::to_string(spec).unwrap_or_default();
    hex::encode(Sha256::digest(text.as_bytes()))
}

/// `at` rounded up to a whole minute (itself when it is one).
pub fn minute_ceiling(at: DateTime<Utc>) -> DateTime<Utc> {
    let minute = TimeDelta::minutes(1);
    match at.duration_trunc(minute) {
        Ok(floor) if floor == at => at,
        Ok(floor) => floor + minute,
        Err(_) => at,
    }
}

/// Runs one `ExperimentQuery` of `metric` for `spec` (its `as_of` the cutoff) through the
/// service's runner: the project's slot bound, the configured limits, a query log record, the
/// cache. Answers the response as `/query/` would.
pub async fn run_as_of(
    state: &AppState,
    project: &Project,
    metric: &Value,
    spec: ExperimentSpec,
    query_id: &str,
) -> Result<Value, QueryError> {
    let structured = json!({"kind": KIND, "experiment_id": spec.id, "metric": metric});
    let structured = Structured::try_from(structured).map_err(|error| QueryError::Invalid {
        attr: error.attr.unwrap_or_default(),
        detail: error.detail,
    })?;
    let node = SqlNode {
        experiment: Some(Arc::new(spec)),
        ..SqlNode::structured(structured, None)
    };
    runner::run_logged_in_slot(state, project, query_id, &node, &Caller::default()).await
}

/// The fields every query response carries that are about the request, not the result.
const RESPONSE_ENVELOPE: &[&str] = &[
    "query",
    "hogql",
    "clickhouse",
    "timings",
    "modifiers",
    "error",
    "explain",
    "metadata",
    "is_cached",
    "cache_key",
    "last_refresh",
    "next_allowed_client_refresh",
    "cache_target_age",
    "timezone",
    "query_status",
];

/// A response as a day's stored result: PostHog's `ExperimentQueryResponse` without the
/// request's envelope and without `step_sessions` (per-step sample sessions, large and only
/// for the live view).
pub fn stored_result(response: &Value) -> Value {
    let mut result = response.clone();
    if let Value::Object(fields) = &mut result {
        for field in RESPONSE_ENVELOPE {
            fields.remove(*field);
        }
    }
    strip_step_sessions(&mut result);
    result
}

fn strip_step_sessions(value: &mut Value) {
    match value {
        Value::Object(fields) => {
            fields.remove("step_sessions");
            fields.values_mut().for_each(strip_step_sessions);
        }
        Value::Array(items) => items.iter_mut().for_each(strip_step_sessions),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn minutes_round_up_and_results_lose_the_envelope() {
        let at = |text: &str| {
            DateTime::parse_from_rfc3339(text)
                .map(|at| at.with_timezone(&Utc))
                .expect("time")
        };
        assert_eq!(
            minute_ceiling(at("2026-03-01T10:00:00.001Z")),
            at("2026-03-01T10:01:00Z")
        );
        assert_eq!(
            minute_ceiling(at("2026-03-01T10:00:00Z")),
            at("2026-03-01T10:00:00Z")
        );
        let response = json!({
            "hogql": "select", "is_cached": false, "kind": "ExperimentQuery",
            "baseline": {"key": "control", "step_sessions": [[1]]},
            "variant_results": [{"key": "test", "step_sessions": [], "chance_to_win": 0.5}],
        });
        assert_eq!(
            stored_result(&response),
            json!({
                "kind": "ExperimentQuery",
                "baseline": {"key": "control"},
                "variant_results": [{"key": "test", "chance_to_win": 0.5}],
            })
        );
    }
}
