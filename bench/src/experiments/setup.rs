//! The flag and the experiment `bench experiments` measures, created through the API as a user
//! would: `POST /api/projects/:id/feature_flags/`, then `POST /api/projects/:id/experiments/`
//! naming the flag's key (the existing flag is reused).

use anyhow::{Context, bail};
use chrono::{DateTime, SecondsFormat, Utc};
use serde::Deserialize;
use serde_json::{Value, json};

use super::data::VARIANTS;
pub(super) use crate::client::Client;

#[derive(Debug, Deserialize)]
struct Created {
    id: i64,
}

/// Creates the 50/50 `control`/`test` flag and the running experiment on it, started at
/// `start`; returns the experiment's id.
pub(super) async fn create(
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
    if !answer.status.is_success() {
        bail!("creating the experiment: {} {}", answer.status, answer.text);
    }
    if answer.body["start_date"].is_null() {
        bail!("the experiment was created as a draft: {}", answer.text);
    }
    let created: Created = serde_json::from_value(answer.body).context("the created experiment")?;
    println!(
        "experiment {} created through POST {path} (flag {flag_key} id {}, started {start_text})",
        created.id, flag.id
    );
    Ok(created.id)
}

#[derive(Debug, Deserialize)]
struct Listed {
    id: i64,
    feature_flag_key: Option<String>,
    start_date: Option<DateTime<Utc>>,
}

#[derive(Debug, Deserialize)]
struct Page {
    results: Vec<Listed>,
}

/// The experiment an earlier run created on `flag_key` (for `--reuse`): its id and start.
pub(super) async fn find(
    client: &mut Client,
    project: i64,
    flag_key: &str,
) -> anyhow::Result<(i64, DateTime<Utc>)> {
    let path = format!("/api/projects/{project}/experiments/?limit=1000");
    let answer = client.send(hyper::Method::GET, &path, &Value::Null).await?;
    if !answer.status.is_success() {
        bail!("listing the experiments: {} {}", answer.status, answer.text);
    }
    let page: Page = serde_json::from_value(answer.body).context("the experiments list")?;
    let found = page
        .results
        .into_iter()
        .find(|e| e.feature_flag_key.as_deref() == Some(flag_key))
        .context("the data dir has no bench experiment to reuse")?;
    let start = found
        .start_date
        .context("the reused experiment has no start date")?;
    println!("reusing experiment {} (started {start})", found.id);
    Ok((found.id, start))
}
