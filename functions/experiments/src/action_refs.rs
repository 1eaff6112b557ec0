//! Metrics that name an action (`ActionsNode`) must name a live action of the project, checked
//! when an experiment is saved: results would otherwise fail only when someone asks for them.

use common::error::{ApiError, ApiResult};
use common::store::Store;
use experiment_core::validate::ExperimentBody;
use serde_json::Value;

/// Every `{"kind": "ActionsNode", "id": ...}` in the body's metrics, with its field path.
fn action_ids(body: &ExperimentBody) -> Vec<(String, Option<i64>)> {
    let mut found = Vec::new();
    for (field, metrics) in [
        ("metrics", &body.metrics),
        ("metrics_secondary", &body.metrics_secondary),
    ] {
        for (index, metric) in metrics.iter().flatten().flatten().enumerate() {
            walk(metric, format!("{field}[{index}]"), &mut found);
        }
    }
    found
}

fn walk(value: &Value, path: String, found: &mut Vec<(String, Option<i64>)>) {
    match value {
        Value::Object(object) => {
            if object.get("kind").and_then(Value::as_str) == Some("ActionsNode") {
                found.push((
                    format!("{path}.id"),
                    object.get("id").and_then(Value::as_i64),
                ));
            }
            for (key, child) in object {
                walk(child, format!("{path}.{key}"), found);
            }
        }
        Value::Array(items) => {
            for (index, child) in items.iter().enumerate() {
                walk(child, format!("{path}[{index}]"), found);
            }
        }
        _ => {}
    }
}

/// A 400 naming the first metric whose action is missing or not the project's.
pub async fn check(store: &dyn Store, team_id: i64, body: &ExperimentBody) -> ApiResult<()> {
    for (attr, id) in action_ids(body) {
        let exists = match id {
            Some(id) => action_core::repository::get_live(store, team_id, id)
                .await?
                .is_some(),
            None => false,
        };
        if !exists {
            return Err(ApiError::validation(
                attr,
                "This metric's ActionsNode names no action of this project.",
            ));
        }
    }
    Ok(())
}
