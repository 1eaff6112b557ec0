//! The survey `bench surveys` measures, created through the API as a user would
//! (`POST /api/projects/:id/surveys/`), or found again by its name for `--reuse`.

use anyhow::{Context, bail};
use chrono::{DateTime, SecondsFormat, Utc};
use serde::Deserialize;
use serde_json::{Value, json};
use uuid::Uuid;

use super::data::QUESTION_ID;
pub(super) use crate::client::Client;

/// Survey names are unique in a project, so the name finds the bench's survey again.
pub(super) const SURVEY_NAME: &str = "Bench survey";

/// The survey as the bench needs it: its id (the events carry it) and its start.
#[derive(Debug, Clone, Deserialize)]
pub(super) struct BenchSurvey {
    pub(super) id: Uuid,
    pub(super) name: String,
    pub(super) start_date: Option<DateTime<Utc>>,
}

/// Creates the running popover survey with one rating question, started at `start`.
pub(super) async fn create(
    client: &mut Client,
    project: i64,
    start: DateTime<Utc>,
) -> anyhow::Result<(Uuid, DateTime<Utc>)> {
    let path = format!("/api/projects/{project}/surveys/");
    let start_text = start.to_rfc3339_opts(SecondsFormat::Micros, true);
    let body = json!({
        "name": SURVEY_NAME,
        "type": "popover",
        "questions": [{"id": QUESTION_ID, "type": "rating", "question": "How?", "scale": 10}],
        "start_date": start_text,
    });
    let answer = client.send(hyper::Method::POST, &path, &body).await?;
    if !answer.status.is_success() {
        bail!("creating the survey: {} {}", answer.status, answer.text);
    }
    let created: BenchSurvey = serde_json::from_value(answer.body).context("the created survey")?;
    let started = created
        .start_date
        .with_context(|| format!("the survey was created without a start: {}", answer.text))?;
    println!(
        "survey {} created through POST {path} (started {start_text})",
        created.id
    );
    Ok((created.id, started))
}

#[derive(Debug, Deserialize)]
struct Page {
    results: Vec<BenchSurvey>,
}

/// The survey an earlier run created (for `--reuse`): its id and start.
pub(super) async fn find(
    client: &mut Client,
    project: i64,
) -> anyhow::Result<(Uuid, DateTime<Utc>)> {
    let path = format!("/api/projects/{project}/surveys/?search=Bench%20survey&limit=100");
    let answer = client.send(hyper::Method::GET, &path, &Value::Null).await?;
    if !answer.status.is_success() {
        bail!("listing the surveys: {} {}", answer.status, answer.text);
    }
    let page: Page = serde_json::from_value(answer.body).context("the surveys list")?;
    let found = page
        .results
        .into_iter()
        .find(|survey| survey.name == SURVEY_NAME)
        .context("the data dir has no bench survey to reuse")?;
    let start = found
        .start_date
        .context("the reused survey has no start date")?;
    println!("reusing survey {} (started {start})", found.id);
    Ok((found.id, start))
}
