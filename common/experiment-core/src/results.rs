//! Stored per-day metric results and their recalculations (reference 2.1 `ExperimentMetricResult`
//! and `ExperimentTimeseriesRecalculation`, 2.7, experiment_stats.md 1.8), in the project's
//! partition (`TEAM#<id>`):
//!
//! - `EXPRESULT#<experiment 019>#<metric uuid>#<query_to>`: one day's cumulative result. The key
//!   is PostHog's unique (experiment, metric_uuid, query_to), so a re-run of a day replaces it;
//!   `query_to` is written at a fixed width so key order is day order.
//! - `EXPRECALC#<experiment 019>#<fingerprint>`: the latest recalculation of a fingerprint. One
//!   item per (experiment, fingerprint) makes "one active recalculation" a Store condition: a new
//!   one is written only over no item (`NotExists`) or over a finished one at the version read
//!   (`VersionEquals`), so of two concurrent requests one creates and the other finds it.

use chrono::{DateTime, Days, NaiveDate, SecondsFormat, TimeZone, Utc};
pub use chrono_tz::Tz;
use common::models::Project;
use common::store::{self, Condition, Item, Store, StoreError};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use uuid::Uuid;

use common::repository::team_pk;

/// The job that runs a recalculation (it lives in `query-service`; families queue it by name
/// through `common::jobs::Jobs::enqueue_named`, so they link no query engine).
pub const TIMESERIES_JOB: &str = "experiment_timeseries";
/// Attempts of a timeseries run: a retry resumes after the last stored day.
pub const TIMESERIES_JOB_ATTEMPTS: u32 = 3;

/// The payload of a [`TIMESERIES_JOB`] run (the project is the run's `team_id`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TimeseriesJob {
    pub experiment_id: i64,
    pub fingerprint: String,
    pub recalculation_id: Uuid,
}

const RESULT_PREFIX: &str = "EXPRESULT#";
const RECALC_PREFIX: &str = "EXPRECALC#";

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ResultStatus {
    Pending,
    Completed,
    Failed,
}

/// One day's cumulative result of a metric: the experiment query run over
/// [`query_from`, `query_to`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MetricResult {
    pub experiment_id: i64,
    pub metric_uuid: String,
    pub fingerprint: String,
    pub query_from: DateTime<Utc>,
    /// The start of the next day in the project's time zone (the run's `as_of`).
    pub query_to: DateTime<Utc>,
    pub status: ResultStatus,
    /// The experiment query's response without `step_sessions` (completed rows only).
    #[serde(default)]
    pub result: Option<Value>,
    #[serde(default)]
    pub query_id: Option<String>,
    #[serde(default)]
    pub completed_at: Option<DateTime<Utc>>,
    #[serde(default)]
    pub error_message: Option<String>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RecalculationStatus {
    Pending,
    InProgress,
    Completed,
    Failed,
}

impl RecalculationStatus {
    /// Pending or in progress: a new request gets this one instead of another.
    pub fn is_active(self) -> bool {
        matches!(self, Self::Pending | Self::InProgress)
    }

    pub fn name(self) -> &'static str {
        match self {
            Self::Pending => "pending",
            Self::InProgress => "in_progress",
            Self::Completed => "completed",
            Self::Failed => "failed",
        }
    }
}

/// A run of the daily timeseries of one metric (at one fingerprint) of an experiment.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Recalculation {
    pub id: Uuid,
    pub team_id: i64,
    pub experiment_id: i64,
    /// The full metric JSON as posted (with its `uuid`).
    pub metric: Value,
    pub fingerprint: String,
    pub status: RecalculationStatus,
    /// The last day (project time zone) whose result is stored; a resumed run starts after it.
    #[serde(default)]
    pub last_successful_date: Option<NaiveDate>,
    #[serde(default)]
    pub error_message: Option<String>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

impl Recalculation {
    /// The metric's `uuid` (empty when the metric has none).
    pub fn metric_uuid(&self) -> &str {
        self.metric
            .get("uuid")
            .and_then(Value::as_str)
            .unwrap_or_default()
    }
}

fn result_prefix(experiment_id: i64, metric_uuid: &str) -> String {
    format!("{RESULT_PREFIX}{experiment_id:019}#{metric_uuid}#")
}

/// Fixed width (microseconds, `Z`), so sort-key order is time order.
fn result_sk(experiment_id: i64, metric_uuid: &str, query_to: DateTime<Utc>) -> String {
    format!(
        "{}{}",
        result_prefix(experiment_id, metric_uuid),
        query_to.to_rfc3339_opts(SecondsFormat::Micros, true)
    )
}

pub fn recalculation_sk(experiment_id: i64, fingerprint: &str) -> String {
    format!("{RECALC_PREFIX}{experiment_id:019}#{fingerprint}")
}

/// Writes one day's result over whatever that day held (`created_at` of an earlier row kept).
pub async fn upsert_result(
    store: &dyn Store,
    team_id: i64,
    mut result: MetricResult,
) -> Result<MetricResult, StoreError> {
    let pk = team_pk(team_id);
    let sk = result_sk(result.experiment_id, &result.metric_uuid, result.query_to);
    if let Some(existing) = store.get(&pk, &sk).await? {
        let existing: MetricResult = existing.parse()?;
        result.created_at = existing.created_at;
    }
    store
        .put(Item::of(pk, sk, &result)?, Condition::None)
        .await?;
    Ok(result)
}

/// Every stored day of a metric of an experiment, in day order; with `fingerprint`, only the
/// rows computed for it (a changed metric never serves old results).
pub async fn list_results(
    store: &dyn Store,
    team_id: i64,
    experiment_id: i64,
    metric_uuid: &str,
    fingerprint: Option<&str>,
) -> Result<Vec<MetricResult>, StoreError> {
    let mut results: Vec<MetricResult> = store::list_prefix(
        store,
        &team_pk(team_id),
        &result_prefix(experiment_id, metric_uuid),
    )
    .await?;
    results
        .retain(|result| fingerprint.is_none_or(|fingerprint| result.fingerprint == fingerprint));
    Ok(results)
}

/// Deletes the rows of (metric, fingerprint) before a recalculation starts over.
pub async fn delete_results(
    store: &dyn Store,
    team_id: i64,
    experiment_id: i64,
    metric_uuid: &str,
    fingerprint: &str,
) -> Result<usize, StoreError> {
    let pk = team_pk(team_id);
    let rows = list_results(
        store,
        team_id,
        experiment_id,
        metric_uuid,
        Some(fingerprint),
    )
    .await?;
    for row in &rows {
        store
            .delete(
                &pk,
                &result_sk(experiment_id, metric_uuid, row.query_to),
                Condition::None,
            )
            .await?;
    }
    Ok(rows.len())
}

/// The latest recalculation of (experiment, fingerprint), with its Store item version.
pub async fn find_recalculation(
    store: &dyn Store,
    team_id: i64,
    experiment_id: i64,
    fingerprint: &str,
) -> Result<Option<(Recalculation, u64)>, StoreError> {
    let item = store
        .get(
            &team_pk(team_id),
            &recalculation_sk(experiment_id, fingerprint),
        )
        .await?;
    item.map(|item| Ok((item.parse()?, item.version)))
        .transpose()
}

/// What asking for a recalculation came to.
#[derive(Debug, Clone, PartialEq)]
pub enum Requested {
    /// A new `pending` recalculation (the caller deletes old rows and queues it).
    Created(Recalculation),
    /// One was already pending or in progress for this fingerprint.
    Existing(Recalculation),
}

/// A new `pending` recalculation of `metric` at `fingerprint`, unless one is active.
pub async fn request_recalculation(
    store: &dyn Store,
    team_id: i64,
    experiment_id: i64,
    metric: &Value,
    fingerprint: &str,
    now: DateTime<Utc>,
) -> Result<Requested, StoreError> {
    let pk = team_pk(team_id);
    let sk = recalculation_sk(experiment_id, fingerprint);
    for attempt in 0..common::store::UPDATE_ATTEMPTS {
        if attempt > 0 {
            tokio::time::sleep(common::store::conflict_backoff(attempt)).await;
        }
        let (condition, version) = match store.get(&pk, &sk).await? {
            Some(item) => {
                let current: Recalculation = item.parse()?;
                if current.status.is_active() {
                    return Ok(Requested::Existing(current));
                }
                (Condition::VersionEquals(item.version), item.version + 1)
            }
            None => (Condition::NotExists, 1),
        };
        let created = Recalculation {
            id: Uuid::now_v7(),
            team_id,
            experiment_id,
            metric: metric.clone(),
            fingerprint: fingerprint.to_owned(),
            status: RecalculationStatus::Pending,
            last_successful_date: None,
            error_message: None,
            created_at: now,
            updated_at: now,
        };
        let mut item = Item::of(pk.clone(), sk.clone(), &created)?;
        item.version = version;
        match store.put(item, condition).await {
            Ok(()) => return Ok(Requested::Created(created)),
            // Someone wrote first: look again (theirs is probably the active one now).
            Err(StoreError::ConditionFailed) => continue,
            Err(other) => return Err(other),
        }
    }
    Err(StoreError::ConditionFailed)
}

/// Changes the recalculation `id` of (experiment, fingerprint) under optimistic locking;
/// `None` when it is gone or was replaced by a newer one (its job then has nothing to do).
pub async fn update_recalculation(
    store: &dyn Store,
    team_id: i64,
    experiment_id: i64,
    fingerprint: &str,
    id: Uuid,
    now: DateTime<Utc>,
    change: impl Fn(&mut Recalculation),
) -> Result<Option<Recalculation>, StoreError> {
    let pk = team_pk(team_id);
    let sk = recalculation_sk(experiment_id, fingerprint);
    for attempt in 0..common::store::UPDATE_ATTEMPTS {
        if attempt > 0 {
            tokio::time::sleep(common::store::conflict_backoff(attempt)).await;
        }
        let Some(item) = store.get(&pk, &sk).await? else {
            return Ok(None);
        };
        let mut recalculation: Recalculation = item.parse()?;
        if recalculation.id != id {
            return Ok(None);
        }
        change(&mut recalculation);
        recalculation.updated_at = now;
        let mut next = item.clone();
        next.set_data(&recalculation)?;
        next.version = item.version + 1;
        match store
            .put(next, Condition::VersionEquals(item.version))
            .await
        {
            Ok(()) => return Ok(Some(recalculation)),
            Err(StoreError::ConditionFailed) => continue,
            Err(other) => return Err(other),
        }
    }
    Err(StoreError::ConditionFailed)
}

/// The project's time zone (UTC when its name is not one).
pub fn project_tz(project: &Project) -> Tz {
    project.timezone.parse().unwrap_or(chrono_tz::UTC)
}

/// The day (in `tz`) a row computed up to `query_to` (exclusive) stands for.
pub fn day_of(query_to: DateTime<Utc>, tz: Tz) -> NaiveDate {
    (query_to - chrono::Duration::microseconds(1))
        .with_timezone(&tz)
        .date_naive()
}

/// The start of the day after `day` in `tz`, in UTC: the cutoff of `day`'s cumulative run. A
/// midnight that does not exist (a DST gap) is the first instant after it.
pub fn end_of_day(day: NaiveDate, tz: Tz) -> DateTime<Utc> {
    let next = day.checked_add_days(Days::new(1)).unwrap_or(day);
    let midnight = next.and_hms_opt(0, 0, 0).unwrap_or_default();
    match tz.from_local_datetime(&midnight) {
        chrono::LocalResult::Single(at) | chrono::LocalResult::Ambiguous(at, _) => {
            at.with_timezone(&Utc)
        }
        chrono::LocalResult::None => {
            let later = midnight + chrono::Duration::hours(1);
            tz.from_local_datetime(&later)
                .earliest()
                .map_or_else(|| later.and_utc(), |at| at.with_timezone(&Utc))
        }
    }
}

/// Every day from the start's day to the end's day (or today), inclusive, in `tz`.
pub fn days(
    start: DateTime<Utc>,
    end: Option<DateTime<Utc>>,
    now: DateTime<Utc>,
    tz: Tz,
) -> Vec<NaiveDate> {
    let first = start.with_timezone(&tz).date_naive();
    let last = end.unwrap_or(now).with_timezone(&tz).date_naive();
    first.iter_days().take_while(|day| *day <= last).collect()
}

#[cfg(test)]
mod tests {
    use common::testing::TestState;
    use serde_json::json;

    use super::*;

    fn at(text: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(text)
            .map(|at| at.with_timezone(&Utc))
            .expect("time")
    }

    #[test]
    fn days_and_cutoffs_are_in_the_project_time_zone() {
        let tz: Tz = "America/New_York".parse().expect("tz");
        let day = NaiveDate::from_ymd_opt(2026, 3, 7).expect("day");
        // The next midnight is EST (UTC-5); the DST change is on 2026-03-08 at 02:00.
        assert_eq!(end_of_day(day, tz), at("2026-03-08T05:00:00Z"));
        assert_eq!(
            end_of_day(day.succ_opt().expect("day"), tz),
            at("2026-03-09T04:00:00Z")
        );
        assert_eq!(day_of(at("2026-03-08T05:00:00Z"), tz), day);
        let listed = days(
            at("2026-03-07T23:00:00Z"),
            None,
            at("2026-03-09T03:59:00Z"),
            tz,
        );
        assert_eq!(listed.len(), 2, "{listed:?}");
        assert_eq!(listed[0], day);
    }

    #[tokio::test]
    async fn one_active_recalculation_per_fingerprint_and_rows_by_fingerprint() {
        for backend in TestState::all().await {
            let store = backend.state.store.as_ref();
            let now = at("2026-03-01T00:00:00Z");
            let metric = json!({"uuid": "m1", "metric_type": "mean"});
            let first = request_recalculation(store, 1, 5, &metric, "fp", now)
                .await
                .expect("request");
            let Requested::Created(first) = first else {
                panic!("expected a new recalculation");
            };
            assert_eq!(first.metric_uuid(), "m1");
            let again = request_recalculation(store, 1, 5, &metric, "fp", now)
                .await
                .expect("request");
            assert_eq!(again, Requested::Existing(first.clone()));
            // Another fingerprint is another recalculation.
            let other = request_recalculation(store, 1, 5, &metric, "fp2", now)
                .await
                .expect("request");
            assert!(matches!(other, Requested::Created(_)));
            let done = update_recalculation(store, 1, 5, "fp", first.id, now, |r| {
                r.status = RecalculationStatus::Completed;
            })
            .await
            .expect("update");
            assert_eq!(done.map(|r| r.status), Some(RecalculationStatus::Completed));
            let Requested::Created(second) = request_recalculation(store, 1, 5, &metric, "fp", now)
                .await
                .expect("request")
            else {
                panic!("a finished recalculation does not block a new one");
            };
            // The old job's updates no longer land.
            let stale = update_recalculation(store, 1, 5, "fp", first.id, now, |_| {})
                .await
                .expect("update");
            assert!(stale.is_none());
            assert_ne!(second.id, first.id);

            for (day, fingerprint) in [
                ("2026-03-02", "fp"),
                ("2026-03-03", "fp"),
                ("2026-03-04", "old"),
            ] {
                let query_to = at(&format!("{day}T00:00:00Z"));
                let row = MetricResult {
                    experiment_id: 5,
                    metric_uuid: "m1".into(),
                    fingerprint: fingerprint.into(),
                    query_from: now,
                    query_to,
                    status: ResultStatus::Completed,
                    result: Some(json!({"day": day})),
                    query_id: None,
                    completed_at: Some(now),
                    error_message: None,
                    created_at: query_to,
                    updated_at: query_to,
                };
                upsert_result(store, 1, row).await.expect("upsert");
            }
            let rows = list_results(store, 1, 5, "m1", Some("fp"))
                .await
                .expect("list");
            assert_eq!(rows.len(), 2);
            assert!(rows[0].query_to < rows[1].query_to);
            assert_eq!(
                list_results(store, 1, 5, "m1", None)
                    .await
                    .expect("list")
                    .len(),
                3
            );
            assert_eq!(
                delete_results(store, 1, 5, "m1", "fp")
                    .await
                    .expect("delete"),
                2
            );
            let left = list_results(store, 1, 5, "m1", None).await.expect("list");
            assert_eq!(left.len(), 1);
            assert_eq!(left[0].fingerprint, "old");
        }
    }
}
