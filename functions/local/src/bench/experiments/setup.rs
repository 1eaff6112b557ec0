//! The flag and the experiment `bench experiments` measures: the flag through
//! `POST /api/projects/:id/feature_flags/`, the experiment through
//! `POST /api/projects/:id/experiments/` when that route answers, else written straight into the
//! Store as `experiment_core`'s repository keeps it (`TEAM#<id>` / `EXPERIMENT#<019 id>`).

use std::net::SocketAddr;

use anyhow::{Context, bail};
use chrono::{DateTime, SecondsFormat, Utc};
use common::AppState;
use common::store::{Condition, Item};
use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper::client::conn::http1::SendRequest;
use serde::Deserialize;
use serde_json::{Value, json};

use super::data::VARIANTS;
use crate::bench::load::connect;

/// One keep-alive connection for the setup requests.
pub(super) struct Client {
    sender: SendRequest<Full<Bytes>>,
    address: SocketAddr,
    key: String,
}

/// An answer: status and body (JSON, or `Null` when it is not).
pub(super) struct Answer {
    pub(super) status: hyper::StatusCode,
    pub(super) body: Value,
    pub(super) text: String,
}

impl Client {
    pub(super) async fn new(address: SocketAddr, key: &str) -> anyhow::Result<Self> {
        Ok(Self {
            sender: connect(address).await?,
            address,
            key: key.to_owned(),
        })
    }

    pub(super) async fn send(
        &mut self,
        method: hyper::Method,
        path: &str,
        body: &Value,
    ) -> anyhow::Result<Answer> {
        if self.sender.ready().await.is_err() {
            self.sender = connect(self.address).await?;
        }
        let request = hyper::Request::builder()
            .method(method)
            .uri(path)
            .header("host", self.address.to_string())
            .header("authorization", format!("Bearer {}", self.key))
            .header("content-type", "application/json")
            .body(Full::new(Bytes::from(body.to_string())))?;
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

#[derive(Debug, Deserialize)]
struct Created {
    id: i64,
}

/// Creates the 50/50 `control`/`test` flag and the running experiment on it, started at
/// `start`; returns the experiment's id.
pub(super) async fn create(
    state: &AppState,
    client: &mut Client,
    project: i64,
    flag_key: &str,
    start: DateTime<Utc>,
) -> anyhow::Result<i64> {
    let variants: Vec<Value> = VARIANTS
        .iter()
        .map(|key| json!({"key": key, "rollout_percentage": 50}))
        .collect();
    let flag = client
        .send(
            hyper::Method::POST,
            &format!("/api/projects/{project}/feature_flags/"),
            &json!({
                "key": flag_key,
                "name": "Feature Flag for Experiment bench",
                "active": true,
                "filters": {
                    "groups": [{"properties": [], "rollout_percentage": 100}],
                    "multivariate": {"variants": variants},
                },
            }),
        )
        .await?;
    if !flag.status.is_success() {
        bail!("creating the flag: {} {}", flag.status, flag.text);
    }
    let flag: Created = serde_json::from_value(flag.body).context("the created flag")?;

    let start_text = start.to_rfc3339_opts(SecondsFormat::Micros, true);
    // Test-account filters off: every generated person counts on both sides.
    let body = json!({
        "name": "bench experiment",
        "feature_flag_key": flag_key,
        "start_date": start_text,
        "parameters": {"feature_flag_variants": variants},
        "exposure_criteria": {"filterTestAccounts": false},
        "stats_config": {"method": "bayesian"},
        "metrics": [],
        "allow_unknown_events": true,
    });
    let path = format!("/api/projects/{project}/experiments/");
    let answer = client.send(hyper::Method::POST, &path, &body).await?;
    if answer.status.is_success() {
        let created: Created =
            serde_json::from_value(answer.body.clone()).context("the created experiment")?;
        if answer.body["start_date"].is_null() {
            let patch = client
                .send(
                    hyper::Method::PATCH,
                    &format!("{path}{}/", created.id),
                    &json!({"start_date": start_text}),
                )
                .await?;
            if !patch.status.is_success() {
                bail!("setting the start date: {} {}", patch.status, patch.text);
            }
        }
        println!(
            "experiment {} created through POST {path} (flag {flag_key})",
            created.id
        );
        return Ok(created.id);
    }
    println!(
        "POST {path} answered {} ({}): writing the experiment into the Store directly",
        answer.status,
        answer.text.chars().take(200).collect::<String>()
    );
    write_directly(state, project, flag.id, &body, start).await
}

/// The experiment as `experiment_core::Experiment` serializes it, with the project's experiment
/// counter, for builds where the create route is not there yet.
async fn write_directly(
    state: &AppState,
    project: i64,
    flag_id: i64,
    body: &Value,
    start: DateTime<Utc>,
) -> anyhow::Result<i64> {
    let store = state.store.as_ref();
    let pk = format!("TEAM#{project}");
    let counter = "COUNTER#EXPERIMENT";
    if store.get(&pk, counter).await?.is_some() {
        bail!("project {project} already has experiments: use a fresh --data-dir");
    }
    let id = 1;
    let now = Utc::now();
    let experiment = json!({
        "id": id,
        "team_id": project,
        "name": body["name"],
        "feature_flag_id": flag_id,
        "start_date": start,
        "type": "product",
        "filters": {},
        "parameters": body["parameters"],
        "exposure_criteria": body["exposure_criteria"],
        "stats_config": body["stats_config"],
        "metrics": [],
        "metrics_secondary": [],
        "created_at": now,
        "updated_at": now,
        "version": 1,
    });
    store
        .put(
            Item::of(pk.clone(), counter, &json!({"value": id}))?,
            Condition::NotExists,
        )
        .await?;
    store
        .put(
            Item::of(pk, format!("EXPERIMENT#{id:019}"), &experiment)?,
            Condition::NotExists,
        )
        .await?;
    println!("experiment {id} written into the Store (flag id {flag_id})");
    Ok(id)
}
