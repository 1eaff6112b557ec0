//! Daily timeseries of an experiment's metric: `recalculate_timeseries` (400s, 201, 200 with the
//! active one), the `experiment_timeseries` job run in-process to completion with per-day
//! cumulative counts, and a changed fingerprint that never serves old rows.

use std::time::Duration;

use api_tests::{World, error_shape};
use axum::http::{Method, StatusCode};
use chrono::{DateTime, NaiveTime, Utc};
use common::store::{Condition, Item};
use experiment_core::Experiment;
use experiment_core::results::{self, RecalculationStatus, Requested};
use serde_json::{Value, json};

const FLAG_KEY: &str = "timeseries-exp";

async fn put_experiment(world: &World, id: i64, flag_id: i64, extra: Value) {
    let project = world.bootstrap.project.id;
    let mut body = json!({
        "id": id, "team_id": project, "name": format!("Experiment {id}"),
        "feature_flag_id": flag_id, "created_at": "2026-10-01T00:00:00Z",
        "exposure_criteria": {"filterTestAccounts": false},
        "stats_config": {"method": "bayesian"},
    });
    if let (Value::Object(body), Value::Object(extra)) = (&mut body, extra) {
        body.extend(extra);
    }
    let experiment: Experiment = serde_json::from_value(body).unwrap();
    let item = Item::of(
        format!("TEAM#{project}"),
        experiment_core::repository::experiment_sk(id),
        &experiment,
    )
    .unwrap();
    world
        .backend
        .state
        .store
        .put(item, Condition::None)
        .await
        .unwrap();
}

fn exposure(distinct_id: &str, variant: &str, at: DateTime<Utc>) -> Value {
    json!({"event": "$feature_flag_called", "distinct_id": distinct_id,
           "timestamp": at.to_rfc3339(),
           "properties": {"$feature_flag": FLAG_KEY, "$feature_flag_response": variant}})
}

fn metric() -> Value {
    json!({"kind": "ExperimentMetric", "uuid": "m-views", "metric_type": "mean",
           "source": {"kind": "EventsNode", "event": "$pageview"}})
}

#[tokio::test]
async fn timeseries_recalculate_run_and_read() {
    for world in World::all().await {
        let name = world.name();
        let project = world.bootstrap.project.id;
        let key = world.admin_key().to_owned();
        let base = format!("/api/projects/{project}/experiments");
        let flag = world
            .create_flag(json!({
                "key": FLAG_KEY,
                "filters": {"groups": [{"properties": [], "rollout_percentage": 100}],
                            "multivariate": {"variants": [
                                {"key": "control", "rollout_percentage": 50},
                                {"key": "test", "rollout_percentage": 50}]}},
            }))
            .await["id"]
            .as_i64()
            .unwrap();
        // Started three days ago at midnight UTC (the project's zone): four days to today.
        let today = Utc::now().date_naive();
        let day = |n: u64| {
            (today - chrono::Days::new(3) + chrono::Days::new(n))
                .and_time(NaiveTime::MIN)
                .and_utc()
        };
        put_experiment(&world, 1, flag, json!({"start_date": day(0)})).await;
        put_experiment(&world, 2, flag, json!({})).await;
        let hour = chrono::Duration::hours(1);
        world
            .capture(vec![
                exposure("c1", "control", day(0) + hour),
                exposure("t1", "test", day(0) + hour),
                exposure("c2", "control", day(1) + hour),
                exposure("t2", "test", day(1) + hour),
                exposure("c3", "control", day(2) + hour),
            ])
            .await;
        lake::commit_all(&world.backend.state).await.unwrap();

        let post = |path: String, body: Value| {
            let key = key.clone();
            let world = &world;
            async move {
                world
                    .send(Method::POST, &path, Some(&key), Some(&body.to_string()))
                    .await
            }
        };
        let recalc = format!("{base}/1/recalculate_timeseries");
        for (body, detail) in [
            (json!({"fingerprint": "fp-1"}), "metric is required"),
            (json!({"metric": metric()}), "fingerprint is required"),
        ] {
            let (status, answer) = post(recalc.clone(), body).await;
            assert_eq!(status, StatusCode::BAD_REQUEST, "{name} {answer}");
            error_shape(&answer);
            assert_eq!(answer["detail"], json!(detail), "{name}");
        }
        let (status, answer) = post(
            format!("{base}/2/recalculate_timeseries"),
            json!({"metric": metric(), "fingerprint": "fp-1"}),
        )
        .await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{name} {answer}");
        assert_eq!(
            answer["detail"],
            json!("Cannot recalculate timeseries for experiment that hasn't started"),
            "{name}"
        );
        let (status, _) = post(
            format!("{base}/77/recalculate_timeseries"),
            json!({"metric": metric(), "fingerprint": "fp-1"}),
        )
        .await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{name}");

        // A pending one (queued elsewhere) is answered with 200, not duplicated.
        let store = world.backend.state.store.clone();
        let pending = results::request_recalculation(
            store.as_ref(),
            project,
            1,
            &metric(),
            "fp-pending",
            Utc::now(),
        )
        .await
        .unwrap();
        let Requested::Created(pending) = pending else {
            panic!("{name}: a new recalculation");
        };
        let (status, answer) = post(
            recalc.clone(),
            json!({"metric": metric(), "fingerprint": "fp-pending"}),
        )
        .await;
        assert_eq!(status, StatusCode::OK, "{name} {answer}");
        assert_eq!(answer["id"], json!(pending.id.to_string()), "{name}");
        assert_eq!(answer["status"], json!("pending"), "{name}");

        let (status, created) = post(
            recalc.clone(),
            json!({"metric": metric(), "fingerprint": "fp-1"}),
        )
        .await;
        assert_eq!(status, StatusCode::CREATED, "{name} {created}");
        let mut keys: Vec<&str> = created
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        keys.sort();
        assert_eq!(
            keys,
            [
                "created_at",
                "experiment_id",
                "fingerprint",
                "id",
                "metric_uuid",
                "status"
            ],
            "{name}"
        );
        assert_eq!(created["metric_uuid"], json!("m-views"), "{name}");
        assert_eq!(created["experiment_id"], json!(1), "{name}");

        // The job runs in this process: wait for the recalculation to end (Store state).
        let mut status_now = RecalculationStatus::Pending;
        for _ in 0..600 {
            let found = results::find_recalculation(store.as_ref(), project, 1, "fp-1")
                .await
                .unwrap();
            status_now = found.map(|(r, _)| r.status).unwrap();
            if !status_now.is_active() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        assert_eq!(status_now, RecalculationStatus::Completed, "{name}");

        let read = |fingerprint: &str| {
            format!("{base}/1/timeseries_results?metric_uuid=m-views&fingerprint={fingerprint}")
        };
        let (status, series) = world.get(&read("fp-1"), Some(&key)).await;
        assert_eq!(status, StatusCode::OK, "{name} {series}");
        assert_eq!(series["status"], json!("completed"), "{name} {series}");
        assert_eq!(series["recalculation_status"], json!("completed"), "{name}");
        assert!(series["computed_at"].is_string(), "{name}");
        assert!(series["recalculation_created_at"].is_string(), "{name}");
        assert_eq!(series["errors"], Value::Null, "{name}");
        assert!(
            series["formatted_results"]
                .as_str()
                .is_some_and(|t| t.contains("4 of 4 days"))
        );
        let timeseries = series["timeseries"].as_object().unwrap();
        assert_eq!(timeseries.len(), 4, "{name} {series}");
        // Cumulative exposures per day: (control, test).
        let expected = [(1, 1), (2, 2), (3, 2), (3, 2)];
        for (n, (control, test)) in expected.iter().enumerate() {
            let date = day(n as u64).date_naive().to_string();
            let result = &timeseries[&date];
            assert_eq!(
                result["baseline"]["number_of_samples"],
                json!(control),
                "{name} {date} {result}"
            );
            assert_eq!(
                result["variant_results"][0]["number_of_samples"],
                json!(test),
                "{name} {date} {result}"
            );
            assert!(
                result.get("hogql").is_none(),
                "{name}: stored without the envelope"
            );
        }
        let stored = results::list_results(store.as_ref(), project, 1, "m-views", Some("fp-1"))
            .await
            .unwrap();
        assert_eq!(stored.len(), 4, "{name}");
        assert_eq!(
            stored[0].query_to,
            day(1),
            "{name}: a day ends at the next midnight"
        );

        // A finished recalculation does not block a new one (201 again).
        let (status, again) = post(
            recalc.clone(),
            json!({"metric": metric(), "fingerprint": "fp-1"}),
        )
        .await;
        assert_eq!(status, StatusCode::CREATED, "{name} {again}");
        assert_ne!(again["id"], created["id"], "{name}");

        // Another fingerprint (the metric changed): nothing of the old rows is served.
        let (status, other) = world.get(&read("fp-2"), Some(&key)).await;
        assert_eq!(status, StatusCode::OK, "{name} {other}");
        assert_eq!(other["status"], json!("pending"), "{name} {other}");
        assert_eq!(other["recalculation_status"], Value::Null, "{name}");
        assert!(
            other["timeseries"]
                .as_object()
                .unwrap()
                .values()
                .all(Value::is_null),
            "{name} {other}"
        );

        // A metric the compiler refuses: the first day is stored as failed, the recalculation
        // fails, and the series says so.
        let bad = json!({"kind": "ExperimentMetric", "uuid": "m-bad", "metric_type": "mean",
                         "source": {"kind": "EventsNode", "event": "$pageview", "math": "nonsense"}});
        let (status, answer) = post(
            recalc.clone(),
            json!({"metric": bad, "fingerprint": "fp-bad"}),
        )
        .await;
        assert_eq!(status, StatusCode::CREATED, "{name} {answer}");
        let mut ended = RecalculationStatus::Pending;
        for _ in 0..600 {
            let found = results::find_recalculation(store.as_ref(), project, 1, "fp-bad")
                .await
                .unwrap();
            ended = found.map(|(r, _)| r.status).unwrap();
            if !ended.is_active() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        assert_eq!(ended, RecalculationStatus::Failed, "{name}");
        let (status, failed) = world
            .get(
                &format!("{base}/1/timeseries_results?metric_uuid=m-bad&fingerprint=fp-bad"),
                Some(&key),
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{name} {failed}");
        assert_eq!(failed["status"], json!("failed"), "{name} {failed}");
        assert_eq!(failed["recalculation_status"], json!("failed"), "{name}");
        let first_day = day(0).date_naive().to_string();
        assert!(failed["errors"][&first_day].is_string(), "{name} {failed}");
        assert_eq!(failed["timeseries"][&first_day], Value::Null, "{name}");

        for (uri, detail) in [
            (
                format!("{base}/1/timeseries_results?fingerprint=fp-1"),
                "metric_uuid is required",
            ),
            (
                format!("{base}/1/timeseries_results?metric_uuid=m-views"),
                "fingerprint is required",
            ),
            (
                format!("{base}/2/timeseries_results?metric_uuid=m-views&fingerprint=fp-1"),
                "Experiment has not been started yet",
            ),
        ] {
            let (status, answer) = world.get(&uri, Some(&key)).await;
            assert_eq!(status, StatusCode::BAD_REQUEST, "{name} {uri} {answer}");
            assert_eq!(answer["detail"], json!(detail), "{name}");
        }
        // Scopes: reading needs experiment:read, recalculating experiment:write.
        let reader = world.key(&["experiment:read"], None).await;
        let (status, _) = world.get(&read("fp-1"), Some(&reader)).await;
        assert_eq!(status, StatusCode::OK, "{name}");
        let (status, _) = world
            .send(
                Method::POST,
                &recalc,
                Some(&reader),
                Some(&json!({"metric": metric(), "fingerprint": "fp-3"}).to_string()),
            )
            .await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{name}");
    }
}
