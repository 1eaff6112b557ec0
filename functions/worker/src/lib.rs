//! The `worker` function: S3 notifications of new staging objects arrive through SQS and name the
//! projects to commit; a scheduled event (or anything else) commits every project with work.

use std::collections::BTreeSet;

use common::AppState;
use object_store::path::Path;
use serde_json::{Value, json};

/// An SQS record's body as JSON (`Null` when it is not JSON).
fn message_body(record: &Value) -> Value {
    record["body"]
        .as_str()
        .and_then(|body| serde_json::from_str::<Value>(body).ok())
        .unwrap_or(Value::Null)
}

/// Projects named by the staging objects in an SQS batch of S3 notifications (or direct S3 events).
pub fn teams_in(event: &Value) -> BTreeSet<i64> {
    let mut teams = BTreeSet::new();
    for record in event["Records"].as_array().into_iter().flatten() {
        let notifications = if record["eventSource"] == "aws:sqs" {
            message_body(record)
        } else {
            json!({ "Records": [record] })
        };
        for notification in notifications["Records"].as_array().into_iter().flatten() {
            let Some(key) = notification["s3"]["object"]["key"].as_str() else {
                continue;
            };
            // S3 form-encodes keys in notifications (`team_id%3D1`, `+` for spaces).
            let key: String = form_urlencoded::parse(format!("k={key}").as_bytes())
                .next()
                .map(|(_, value)| value.into_owned())
                .unwrap_or_default();
            if let Some(team) = common::staging::team_of(&Path::from(key)) {
                teams.insert(team);
            }
        }
    }
    teams
}

/// Async queries named by SQS messages (`{"job": "query", "team_id", "query_id"}`).
pub fn query_jobs_in(event: &Value) -> Vec<(i64, String)> {
    let mut jobs = Vec::new();
    for record in event["Records"].as_array().into_iter().flatten() {
        let body = message_body(record);
        if body["job"] == "query"
            && let (Some(team), Some(id)) = (body["team_id"].as_i64(), body["query_id"].as_str())
        {
            jobs.push((team, id.to_owned()));
        }
    }
    jobs
}

/// Runs the async queries the event names; commits what it names, or everything waiting. An
/// error fails the invocation so SQS retries it (commits are idempotent) and, after repeated
/// failures, parks it in the DLQ.
pub async fn handle(
    state: &AppState,
    event: Value,
) -> Result<Value, engine::committer::CommitError> {
    let queries = query_jobs_in(&event);
    for (team, id) in &queries {
        query::jobs::run_job(state, *team, id).await;
    }
    let teams = teams_in(&event);
    if !queries.is_empty() && teams.is_empty() {
        return Ok(json!({ "queries": queries.len() }));
    }
    let reports = if teams.is_empty() {
        engine::commit_all(state).await?
    } else {
        let mut reports = Vec::new();
        for team in teams {
            reports.push(engine::commit_team(state, team).await?);
        }
        reports
    };
    let summary: Vec<Value> = reports
        .iter()
        .map(|r| json!({"team_id": r.team_id, "batches": r.batches, "events": r.events, "recovered": r.recovered, "rejected": r.rejected, "version": r.version}))
        .collect();
    tracing::info!(commits = ?summary, "worker run");
    Ok(json!({ "commits": summary }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sqs_batches_of_s3_notifications_name_their_projects() {
        let notification = json!({"Records": [
            {"eventSource": "aws:s3", "s3": {"object": {"key": "staging/team_id%3D7/0192.ndjson.gz"}}},
            {"eventSource": "aws:s3", "s3": {"object": {"key": "lake/team_id%3D9/x.parquet"}}}
        ]});
        let event = json!({"Records": [
            {"eventSource": "aws:sqs", "body": notification.to_string()},
            {"eventSource": "aws:sqs", "body": "{\"Event\": \"s3:TestEvent\"}"},
            {"eventSource": "aws:sqs", "body": "not json"}
        ]});
        assert_eq!(teams_in(&event).into_iter().collect::<Vec<_>>(), vec![7]);
        let direct = json!({"Records": [{"eventSource": "aws:s3", "s3": {"object": {"key": "staging/team_id=3/a.ndjson.gz"}}}]});
        assert_eq!(teams_in(&direct).into_iter().collect::<Vec<_>>(), vec![3]);
        assert!(
            teams_in(&json!({"source": "aws.events", "detail-type": "Scheduled Event"})).is_empty()
        );
    }

    #[test]
    fn the_sample_events_name_what_they_should() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../events/worker");
        let read = |name: &str| -> Value {
            serde_json::from_str(&std::fs::read_to_string(root.join(name)).unwrap()).unwrap()
        };
        let teams: Vec<i64> = teams_in(&read("sqs-staging-notification.json"))
            .into_iter()
            .collect();
        assert_eq!(teams, vec![1]);
        assert!(teams_in(&read("scheduled-sweep.json")).is_empty());
    }
}
