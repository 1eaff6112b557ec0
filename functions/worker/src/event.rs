//! The worker's input, typed: an EventBridge schedule's input naming a job, or an SQS batch whose
//! messages are S3 notifications of staged capture batches or queued job runs.

use std::collections::BTreeSet;

use aws_lambda_events::event::s3::S3Event;
use aws_lambda_events::event::sqs::SqsEvent;
use common::jobs::{Envelope, ScheduledJob};
use object_store::path::Path;
use serde::Deserialize;
use serde::de::IgnoredAny;

#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub enum WorkerEvent {
    /// A schedule's constant input (`{"job": "compact"}`); tried first, it refuses any other field.
    Scheduled(ScheduledJob),
    /// A batch from the commit queue or the job queue.
    Sqs(SqsEvent),
}

/// What one SQS message asks for.
#[derive(Debug, PartialEq)]
pub enum Message {
    /// A queued job run.
    Job(Envelope),
    /// New staged batches of these projects (an S3 notification).
    Staged(BTreeSet<i64>),
    /// S3's test event when the notification is configured: nothing to do.
    S3Test,
}

/// Which shape a body has, looked at before parsing it whole so a bad message gets the error of
/// the shape it meant rather than "matches no variant".
#[derive(Deserialize)]
struct Probe {
    job: Option<IgnoredAny>,
    #[serde(rename = "Records")]
    records: Option<IgnoredAny>,
    #[serde(rename = "Event")]
    event: Option<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum MessageError {
    #[error("the message has no body")]
    Empty,
    #[error("the body is not a job, an S3 notification or S3's test event")]
    Unknown,
    #[error("{shape} at {path}: {source}")]
    Shape {
        shape: &'static str,
        path: String,
        #[source]
        source: serde_json::Error,
    },
}

fn parse_as<T: serde::de::DeserializeOwned>(
    body: &str,
    shape: &'static str,
) -> Result<T, MessageError> {
    let mut deserializer = serde_json::Deserializer::from_str(body);
    serde_path_to_error::deserialize(&mut deserializer).map_err(|error| MessageError::Shape {
        shape,
        path: error.path().to_string(),
        source: error.into_inner(),
    })
}

pub fn parse_message(body: Option<&str>) -> Result<Message, MessageError> {
    let body = body.ok_or(MessageError::Empty)?;
    let probe: Probe = parse_as(body, "message")?;
    match probe {
        Probe { job: Some(_), .. } => parse_as(body, "job").map(Message::Job),
        Probe {
            records: Some(_), ..
        } => {
            let notification: S3Event = parse_as(body, "S3 notification")?;
            Ok(Message::Staged(staged_teams(&notification)))
        }
        Probe {
            event: Some(event), ..
        } if event == "s3:TestEvent" => Ok(Message::S3Test),
        _ => Err(MessageError::Unknown),
    }
}

/// Projects named by the staging objects of a notification (other keys are not ours to commit).
fn staged_teams(notification: &S3Event) -> BTreeSet<i64> {
    notification
        .records
        .iter()
        .filter_map(|record| record.s3.object.key.as_deref())
        .filter_map(|key| {
            // S3 form-encodes keys in notifications (`team_id%3D1`, `+` for spaces).
            let key: String = form_urlencoded::parse(format!("k={key}").as_bytes())
                .next()
                .map(|(_, value)| value.into_owned())?;
            common::staging::team_of(&Path::from(key))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn notification(keys: &[&str]) -> String {
        let records: Vec<_> = keys
            .iter()
            .map(|key| {
                json!({"eventVersion": "2.1", "eventSource": "aws:s3", "awsRegion": "us-east-1",
                    "eventTime": "2026-11-22T04:30:00.000Z", "eventName": "ObjectCreated:Put",
                    "userIdentity": {"principalId": "AWS:X"}, "requestParameters": {"sourceIPAddress": "10.0.0.1"},
                    "responseElements": {}, "s3": {"s3SchemaVersion": "1.0", "configurationId": "staged",
                    "bucket": {"name": "b", "ownerIdentity": {"principalId": "X"}, "arn": "arn:aws:s3:::b"},
                    "object": {"key": key, "size": 10, "eTag": "e", "sequencer": "0A"}}})
            })
            .collect();
        json!({ "Records": records }).to_string()
    }

    #[test]
    fn notifications_name_the_projects_of_staged_objects_only() {
        let body = notification(&[
            "staging/team_id%3D7/0192.ndjson.gz",
            "lake/team_id%3D9/x.parquet",
            "staging/team_id=3/a.ndjson.gz",
        ]);
        assert_eq!(
            parse_message(Some(&body)).unwrap(),
            Message::Staged([3, 7].into())
        );
    }

    #[test]
    fn every_kind_of_body_is_told_apart_and_bad_ones_say_why() {
        let job = r#"{"job": "query", "run_id": "0192f0a1-7c3e-7b2a-9d41-3f5e6a7b8c9d", "team_id": 1, "payload": {"query_id": "q"}}"#;
        assert!(
            matches!(parse_message(Some(job)), Ok(Message::Job(envelope)) if envelope.job == "query")
        );
        let test_event = r#"{"Service": "Amazon S3", "Event": "s3:TestEvent", "Time": "2026-11-22T04:30:00Z", "Bucket": "b", "RequestId": "r", "HostId": "h"}"#;
        assert_eq!(parse_message(Some(test_event)).unwrap(), Message::S3Test);
        assert!(matches!(parse_message(None), Err(MessageError::Empty)));
        assert!(matches!(
            parse_message(Some("not json")),
            Err(MessageError::Shape { .. })
        ));
        assert!(matches!(
            parse_message(Some("{}")),
            Err(MessageError::Unknown)
        ));
        let error = parse_message(Some(r#"{"job": "query", "run_id": "nope"}"#)).unwrap_err();
        assert!(error.to_string().contains("run_id"), "{error}");
        let error = parse_message(Some(r#"{"Records": [{"s3": {}}]}"#)).unwrap_err();
        assert!(
            error
                .to_string()
                .starts_with("S3 notification at Records[0]"),
            "{error}"
        );
    }

    #[test]
    fn schedules_and_batches_are_told_apart() {
        let scheduled: WorkerEvent = serde_json::from_str(r#"{"job": "compact"}"#).unwrap();
        assert!(matches!(scheduled, WorkerEvent::Scheduled(job) if job.job == "compact"));
        let batch: WorkerEvent = serde_json::from_value(json!({"Records": [
            {"messageId": "m1", "body": "{}", "eventSource": "aws:sqs"}
        ]}))
        .unwrap();
        assert!(matches!(batch, WorkerEvent::Sqs(event) if event.records.len() == 1));
    }
}
