//! `GET /:id/timeseries_results` and `POST /:id/recalculate_timeseries` (reference 2.7): daily
//! cumulative results from the stored `MetricResult` items, and a recalculation run by the job
//! queue (queued by name: this family links no query engine).

use std::collections::BTreeMap;

use axum::extract::rejection::QueryRejection;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use chrono::{DateTime, SecondsFormat, Utc};
use common::error::{ApiError, ApiResult};
use common::http::Json;
use common::models::{Project, Scope};
use common::{AppState, Authenticated};
use experiment_core::Experiment;
use experiment_core::results::{
    self, MetricResult, Recalculation, Requested, ResultStatus, TIMESERIES_JOB,
    TIMESERIES_JOB_ATTEMPTS, TimeseriesJob, Tz,
};
use serde::Deserialize;
use serde_json::{Map, Value, json};

const EXPERIMENT_READ: Scope = Scope::read("experiment");
const EXPERIMENT_WRITE: Scope = Scope::write("experiment");

#[derive(Debug, Deserialize)]
pub struct ResultsParams {
    metric_uuid: Option<String>,
    fingerprint: Option<String>,
}

/// PostHog reads `metric` and `fingerprint` from the body and ignores anything else.
#[derive(Debug, Deserialize)]
pub struct RecalculateBody {
    #[serde(default)]
    metric: Option<Map<String, Value>>,
    #[serde(default)]
    fingerprint: Option<String>,
}

fn iso(at: DateTime<Utc>) -> String {
    at.to_rfc3339_opts(SecondsFormat::Micros, true)
}

async fn experiment(state: &AppState, project: &Project, id: &str) -> ApiResult<Experiment> {
    let id = common::http::item_id(id)?;
    experiment_core::repository::get_live(state.store.as_ref(), project.id, id)
        .await?
        .ok_or_else(ApiError::not_found)
}

fn required(value: Option<String>, name: &str) -> ApiResult<String> {
    value
        .filter(|value| !value.is_empty())
        .ok_or_else(|| ApiError::bad_request("invalid_input", format!("{name} is required")))
}

/// `GET /experiments/:id/timeseries_results?metric_uuid&fingerprint`
pub async fn results(
    State(state): State<AppState>,
    auth: Authenticated,
    Path((project, id)): Path<(String, String)>,
    params: Result<Query<ResultsParams>, QueryRejection>,
) -> ApiResult<Response> {
    let store = state.store.as_ref();
    let project = auth.project(store, &project, EXPERIMENT_READ).await?;
    let experiment = experiment(&state, &project, &id).await?;
    let Query(params) = params
        .map_err(|rejection| ApiError::bad_request("invalid_input", rejection.body_text()))?;
    let metric_uuid = required(params.metric_uuid, "metric_uuid")?;
    let fingerprint = required(params.fingerprint, "fingerprint")?;
    let Some(start) = experiment.start_date else {
        return Err(ApiError::bad_request(
            "invalid_input",
            "Experiment has not been started yet",
        ));
    };
    let tz = results::project_tz(&project);
    let days = results::days(start, experiment.end_date, state.clock.now(), tz);
    let rows = results::list_results(
        store,
        project.id,
        experiment.id,
        &metric_uuid,
        Some(&fingerprint),
    )
    .await?;
    let recalculation =
        results::find_recalculation(store, project.id, experiment.id, &fingerprint).await?;
    let body = Timeseries::of(&days, &rows, tz).render(
        &experiment,
        &metric_uuid,
        recalculation
            .as_ref()
            .map(|(recalculation, _)| recalculation),
    );
    Ok(axum::Json(body).into_response())
}

/// The days of a timeseries and what their rows hold.
struct Timeseries<'a> {
    /// Every day, `null` unless a completed row holds its result.
    days: BTreeMap<String, Value>,
    errors: BTreeMap<String, String>,
    /// The rows that fall on one of the days.
    rows: Vec<&'a MetricResult>,
    total: usize,
}

impl<'a> Timeseries<'a> {
    fn of(days: &[chrono::NaiveDate], rows: &'a [MetricResult], tz: Tz) -> Self {
        let mut map: BTreeMap<String, Value> = days
            .iter()
            .map(|day| (day.to_string(), Value::Null))
            .collect();
        let mut errors = BTreeMap::new();
        let mut matched = Vec::new();
        for row in rows {
            let day = results::day_of(row.query_to, tz).to_string();
            let Some(slot) = map.get_mut(&day) else {
                continue;
            };
            matched.push(row);
            match row.status {
                ResultStatus::Completed => *slot = row.result.clone().unwrap_or(Value::Null),
                ResultStatus::Failed => {
                    errors.insert(day, row.error_message.clone().unwrap_or_default());
                }
                ResultStatus::Pending => {}
            }
        }
        Self {
            days: map,
            errors,
            rows: matched,
            total: days.len(),
        }
    }

    fn count(&self, status: ResultStatus) -> usize {
        self.rows.iter().filter(|row| row.status == status).count()
    }

    /// No rows: pending; none completed but some failed: failed; every day: completed.
    fn status(&self) -> &'static str {
        let (completed, failed) = (
            self.count(ResultStatus::Completed),
            self.count(ResultStatus::Failed),
        );
        if self.rows.is_empty() {
            "pending"
        } else if completed == 0 && failed > 0 {
            "failed"
        } else if completed == self.total {
            "completed"
        } else {
            "partial"
        }
    }

    fn render(
        &self,
        experiment: &Experiment,
        metric_uuid: &str,
        recalculation: Option<&Recalculation>,
    ) -> Value {
        let computed_at = self
            .rows
            .iter()
            .filter(|row| row.status == ResultStatus::Completed)
            .filter_map(|row| row.completed_at)
            .max();
        let created_at = self
            .rows
            .iter()
            .map(|row| row.created_at)
            .min()
            .unwrap_or(experiment.created_at);
        let updated_at = self
            .rows
            .iter()
            .map(|row| row.updated_at)
            .max()
            .unwrap_or(experiment.updated_at.unwrap_or(experiment.created_at));
        let status = self.status();
        json!({
            "experiment_id": experiment.id,
            "metric_uuid": metric_uuid,
            "status": status,
            "timeseries": self.days,
            "errors": (!self.errors.is_empty()).then_some(&self.errors),
            "computed_at": computed_at.map(iso),
            "created_at": iso(created_at),
            "updated_at": iso(updated_at),
            "recalculation_status": recalculation.map(|r| r.status.name()),
            "recalculation_created_at": recalculation.map(|r| iso(r.created_at)),
            "formatted_results": self.formatted(experiment, metric_uuid, status),
        })
    }

    /// A plain-text summary (PostHog's is written for an LLM to read): the status, then one
    /// line per computed day with each variant's exposures and its chance to win or p-value.
    fn formatted(&self, experiment: &Experiment, metric_uuid: &str, status: &str) -> String {
        let completed = self.count(ResultStatus::Completed);
        let mut text = format!(
            "Experiment \"{}\" (id {}), metric {metric_uuid}: timeseries {status}, {completed} of {} days computed.",
            experiment.name, experiment.id, self.total
        );
        for (day, result) in &self.days {
            if let Some(line) = day_line(result) {
                text.push_str(&format!("\n{day}: {line}"));
            } else if let Some(error) = self.errors.get(day) {
                text.push_str(&format!("\n{day}: failed: {error}"));
            }
        }
        text
    }
}

/// `control n=10; test n=12 chance_to_win=0.81` for one day's result.
fn day_line(result: &Value) -> Option<String> {
    let baseline = result.get("baseline")?;
    let mut parts = vec![variant_part(baseline)];
    if let Some(Value::Array(variants)) = result.get("variant_results") {
        parts.extend(variants.iter().map(variant_part));
    }
    Some(parts.join("; "))
}

fn variant_part(variant: &Value) -> String {
    let key = variant.get("key").and_then(Value::as_str).unwrap_or("?");
    let mut part = format!("{key} n={}", number(variant, "number_of_samples"));
    if variant.get("sum").is_some() {
        part.push_str(&format!(" sum={}", number(variant, "sum")));
    }
    for field in ["chance_to_win", "p_value"] {
        if let Some(value) = variant.get(field).filter(|value| !value.is_null()) {
            part.push_str(&format!(" {field}={value}"));
        }
    }
    if let Some(significant) = variant.get("significant").and_then(Value::as_bool) {
        part.push_str(&format!(" significant={significant}"));
    }
    part
}

fn number(value: &Value, field: &str) -> String {
    value
        .get(field)
        .map_or_else(|| "?".to_owned(), |number| number.to_string())
}

/// `POST /experiments/:id/recalculate_timeseries` with `{metric, fingerprint}`: 200 with the
/// pending or running recalculation of this fingerprint, else 201 with a new one (its old rows
/// deleted, its run queued).
pub async fn recalculate(
    State(state): State<AppState>,
    auth: Authenticated,
    Path((project, id)): Path<(String, String)>,
    Json(body): Json<RecalculateBody>,
) -> ApiResult<Response> {
    let store = state.store.as_ref();
    let project = auth.project(store, &project, EXPERIMENT_WRITE).await?;
    let experiment = experiment(&state, &project, &id).await?;
    let Some(metric) = body.metric.filter(|metric| !metric.is_empty()) else {
        return Err(ApiError::bad_request("invalid_input", "metric is required"));
    };
    let fingerprint = required(body.fingerprint, "fingerprint")?;
    if experiment.start_date.is_none() {
        return Err(ApiError::bad_request(
            "invalid_input",
            "Cannot recalculate timeseries for experiment that hasn't started",
        ));
    }
    let metric = Value::Object(metric);
    let now = state.clock.now();
    let requested = results::request_recalculation(
        store,
        project.id,
        experiment.id,
        &metric,
        &fingerprint,
        now,
    )
    .await?;
    let created = match requested {
        Requested::Existing(existing) => {
            return Ok((StatusCode::OK, axum::Json(render(&existing))).into_response());
        }
        Requested::Created(created) => created,
    };
    results::delete_results(
        store,
        project.id,
        experiment.id,
        created.metric_uuid(),
        &fingerprint,
    )
    .await?;
    let payload = serde_json::to_value(TimeseriesJob {
        experiment_id: experiment.id,
        fingerprint: fingerprint.clone(),
        recalculation_id: created.id,
    })
    .map_err(ApiError::internal)?;
    let queued = state
        .jobs
        .enqueue_named(
            &state,
            TIMESERIES_JOB,
            TIMESERIES_JOB_ATTEMPTS,
            Some(project.id),
            payload,
        )
        .await;
    if let Err(error) = queued {
        // Nothing will run it: it fails now rather than block new requests forever.
        let message = error.to_string();
        let failed = results::update_recalculation(
            store,
            project.id,
            experiment.id,
            &fingerprint,
            created.id,
            state.clock.now(),
            |recalculation| {
                recalculation.status = results::RecalculationStatus::Failed;
                recalculation.error_message = Some(message.clone());
            },
        )
        .await;
        if let Err(store) = failed {
            tracing::warn!(error = %store, "cannot mark an unqueued recalculation failed");
        }
        return Err(ApiError::internal(error));
    }
    Ok((StatusCode::CREATED, axum::Json(render(&created))).into_response())
}

fn render(recalculation: &Recalculation) -> Value {
    json!({
        "id": recalculation.id,
        "experiment_id": recalculation.experiment_id,
        "metric_uuid": recalculation.metric_uuid(),
        "fingerprint": recalculation.fingerprint,
        "status": recalculation.status.name(),
        "created_at": iso(recalculation.created_at),
    })
}
