//! The query API around the engine: isolation between projects, async runs with status, cancel
//! and log, limits (time, memory, concurrency), upgrade, draft_sql, check_auth_for_async.

use std::sync::Arc;
use std::time::Duration;

use api_tests::{World, error_shape, respond};
use axum::body::Body;
use axum::http::{Method, Request, StatusCode};
use serde_json::{Value, json};

async fn post(world: &World, path: &str, key: &str, body: Value) -> (StatusCode, Value) {
    world
        .send(Method::POST, path, Some(key), Some(&body.to_string()))
        .await
}

fn hogql(text: &str) -> Value {
    json!({"query": {"kind": "HogQLQuery", "query": text}, "refresh": "force_blocking"})
}

async fn capture(world: &World, token: &str, distinct_id: &str, marker: &str, count: usize) {
    let batch: Vec<Value> = (0..count)
        .map(|i| json!({"event": marker, "distinct_id": distinct_id, "properties": {"secret": marker, "i": i, "$set": {"owner": marker}}}))
        .collect();
    let (status, body) = world
        .send(
            Method::POST,
            "/batch/",
            None,
            Some(&json!({"api_key": token, "batch": batch}).to_string()),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
}

/// A slow query: a cross join of two 20,000-row generated sets.
const SLOW: &str = "select count() from (select arrayJoin(range(2000)) as a) x, (select arrayJoin(range(200000)) as b) y where (a * b) % 7 = 3";

/// Slower still (minutes), to hold a slot for sure.
const VERY_SLOW: &str = "select count() from (select arrayJoin(range(20000)) as a) x, (select arrayJoin(range(20000)) as b) y where (a * b) % 7 = 3";

#[tokio::test]
async fn a_project_never_sees_another_projects_data() {
    for world in World::all().await {
        let name = world.name();
        let store = world.backend.state.store.clone();
        let mine = world.bootstrap.project.clone();
        let other = common::provisioning::create_project(
            store.as_ref(),
            world.bootstrap.organization.id,
            "Other",
            "UTC",
        )
        .await
        .unwrap();
        capture(&world, &mine.api_token, "me", "mine", 3).await;
        capture(&world, &other.api_token, "them", "theirs", 5).await;
        lake::commit_all(&world.backend.state).await.unwrap();
        // The other project's log has a record too.
        let (status, _) = post(
            &world,
            &format!("/api/projects/{}/query/", other.id),
            world.admin_key(),
            hogql("select 'theirs-log-marker'"),
        )
        .await;
        assert_eq!(status, StatusCode::OK);

        let key = world.key(&["query:read"], Some(vec![mine.id])).await;
        let path = format!("/api/projects/{}/query/", mine.id);
        let (status, body) = post(
            &world,
            &path,
            &key,
            hogql("select count(), uniq(event) from events"),
        )
        .await;
        assert_eq!(status, StatusCode::OK, "{name} {body}");
        assert_eq!(body["results"], json!([[3, 1]]), "{name}");

        for (text, allowed_rows) in [
            (
                "select count() from events where event = 'theirs'",
                Some(json!([[0]])),
            ),
            (
                "select event from events union all select event from events where properties.secret = 'theirs'",
                None,
            ),
            (
                "select * from (select * from events) e where e.event = 'theirs'",
                Some(json!([])),
            ),
            (
                "select count() from persons where properties.owner = 'theirs'",
                Some(json!([[0]])),
            ),
            (
                "select count() from query_log where query like '%theirs-log-marker%'",
                Some(json!([[0]])),
            ),
            (
                "/* events of team 2 */ select count() from events -- where team_id = 2",
                Some(json!([[3]])),
            ),
            (
                "select count() from events where team_id = 2 or 1 = 1",
                Some(json!([[3]])),
            ),
            (
                "SELECT COUNT() FROM events WHERE event = 'theirs'",
                Some(json!([[0]])),
            ),
        ] {
            let (status, body) = post(&world, &path, &key, hogql(text)).await;
            assert_eq!(status, StatusCode::OK, "{name} {text}: {body}");
            if let Some(rows) = allowed_rows {
                assert_eq!(body["results"], rows, "{name} {text}");
            }
            assert!(
                !body["results"].to_string().contains("theirs"),
                "{name} {text}: {body}"
            );
        }
        for text in [
            "select * from datafusion.public.events",
            "select * from lake.events",
            "select * from `team_id=2`.events",
            "select * from __events_raw",
            "select * from EVENTS",
            "select * from system.tables",
            "select * from information_schema.columns",
            "select * from read_parquet('objects/lake/team_id=2/events')",
            "select * from 'objects/lake/team_id=2/events'",
            "select * from events_2",
            "with __events_raw as (select 1) select * from __events_raw",
            "select hogql_prop(properties, 'secret') from events",
            "insert into events select * from events",
            "copy events to '/tmp/x'",
            "set datafusion.catalog.information_schema = true",
            "create table x as select 1",
        ] {
            let (status, body) = post(&world, &path, &key, hogql(text)).await;
            assert_eq!(status, StatusCode::BAD_REQUEST, "{name} {text}: {body}");
            error_shape(&body);
        }
        // The key cannot even ask in the other project's name.
        let (status, body) = post(
            &world,
            &format!("/api/projects/{}/query/", other.id),
            &key,
            hogql("select 1"),
        )
        .await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{name} {body}");
        let (status, _) = post(
            &world,
            &path,
            &world.key(&["insight:read"], None).await,
            hogql("select 1"),
        )
        .await;
        assert_eq!(
            status,
            StatusCode::FORBIDDEN,
            "{name}: query:read is required"
        );
    }
}

async fn status_of(world: &World, team: i64, id: &str) -> (StatusCode, Value) {
    world
        .get(
            &format!("/api/projects/{team}/query/{id}/"),
            Some(world.admin_key()),
        )
        .await
}

async fn wait_until_done(world: &World, team: i64, id: &str) -> (StatusCode, Value) {
    for _ in 0..300 {
        let (status, body) = status_of(world, team, id).await;
        if status != StatusCode::ACCEPTED {
            return (status, body);
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("query {id} never finished");
}

#[tokio::test]
async fn async_queries_report_status_results_and_log() {
    for world in World::all().await {
        let name = world.name();
        let team = world.bootstrap.project.id;
        let path = format!("/api/projects/{team}/query/");
        let (status, body) = post(&world, &path, world.admin_key(), json!({
            "query": {"kind": "SqlDialectQuery", "query": "select {x} + 1 as y", "values": {"x": 41}},
            "async": true, "client_query_id": "my-async-1", "name": "answer"
        })).await;
        assert_eq!(status, StatusCode::ACCEPTED, "{name} {body}");
        assert_eq!(body["query_status"]["id"], "my-async-1");
        assert_eq!(body["query_status"]["complete"], false);
        assert_eq!(body["query_status"]["query_async"], true);

        let (status, body) = wait_until_done(&world, team, "my-async-1").await;
        assert_eq!(status, StatusCode::OK, "{name} {body}");
        let query_status = &body["query_status"];
        assert_eq!(query_status["complete"], true);
        assert_eq!(query_status["error"], false);
        assert_eq!(
            query_status["results"]["results"],
            json!([[42]]),
            "{name} {body}"
        );
        for field in ["start_time", "pickup_time", "end_time", "expiration_time"] {
            assert!(query_status[field].is_string(), "{name} {field}: {body}");
        }
        assert!(
            query_status["query_progress"]["time_elapsed"].is_number(),
            "{body}"
        );

        let (status, body) = world
            .get(
                &format!("/api/projects/{team}/query/my-async-1/log/"),
                Some(world.admin_key()),
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{name} {body}");
        let columns: Vec<&str> = body["columns"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c.as_str().unwrap())
            .collect();
        let row = &body["results"][0];
        let field = |name: &str| row[columns.iter().position(|c| *c == name).unwrap()].clone();
        assert_eq!(field("query_id"), "my-async-1");
        assert_eq!(field("status"), "QueryFinish");
        assert_eq!(field("name"), "answer");
        assert_eq!(field("result_rows"), 1);
        assert_eq!(field("is_personal_api_key_request"), 1);
        assert!(
            field("api_key_mask").as_str().unwrap().starts_with("phx_"),
            "{body}"
        );
        assert_eq!(field("engine"), "local", "no cluster is configured");

        // Errors: a failing async query reports its message; unknown ids are 404.
        let (status, _) = post(&world, &path, world.admin_key(), json!({
            "query": {"kind": "HogQLQuery", "query": "select toInt('x') / 0 from events where dateDiff('fortnight', timestamp, timestamp) > 0"},
            "refresh": "force_async", "client_query_id": "my-async-2"
        })).await;
        assert_eq!(status, StatusCode::ACCEPTED);
        let (status, body) = status_of(&world, team, "nope").await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{body}");
        assert_eq!(
            body["detail"],
            format!("Query nope not found for team {team}")
        );
        let (status, body) = world
            .send(
                Method::DELETE,
                &format!("/api/projects/{team}/query/nope/"),
                Some(world.admin_key()),
                None,
            )
            .await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{body}");

        // The query_log table holds every execution of this project.
        let (status, body) = post(&world, &path, world.admin_key(), hogql("select count() from query_log where query_id = 'my-async-1' and status = 'QueryFinish'")).await;
        assert_eq!(status, StatusCode::OK, "{body}");
        assert_eq!(body["results"], json!([[1]]), "{name}");
    }
}

/// `query_progress` as PostHog shapes it: five integers.
fn progress_of(name: &str, body: &Value) -> (u64, u64, u64, u64, u64) {
    let progress = &body["query_status"]["query_progress"];
    let mut keys: Vec<&str> = progress
        .as_object()
        .unwrap_or_else(|| panic!("{name}: no progress in {body}"))
        .keys()
        .map(String::as_str)
        .collect();
    keys.sort_unstable();
    assert_eq!(
        keys,
        [
            "active_cpu_time",
            "bytes_read",
            "estimated_rows_total",
            "rows_read",
            "time_elapsed"
        ],
        "{name}"
    );
    let field = |key: &str| {
        progress[key]
            .as_u64()
            .unwrap_or_else(|| panic!("{name}: {key} is not an integer in {body}"))
    };
    (
        field("rows_read"),
        field("bytes_read"),
        field("estimated_rows_total"),
        field("time_elapsed"),
        field("active_cpu_time"),
    )
}

/// An async query's `query_progress` comes from its plan's metrics: written into the status
/// about once a second while it runs (so any instance's poll sees it), and in full when it ends.
#[tokio::test]
async fn async_query_progress_counts_what_the_scan_read() {
    for world in World::all().await {
        let name = world.name();
        let team = world.bootstrap.project.id;
        let path = format!("/api/projects/{team}/query/");
        let token = world.bootstrap.project.api_token.clone();
        capture(&world, &token, "reader", "progress", 40).await;
        capture(&world, &token, "reader", "other", 10).await;
        lake::commit_all(&world.backend.state).await.unwrap();

        // A finished query: every row of the table read, bytes from storage, CPU spent.
        let (status, body) = post(&world, &path, world.admin_key(), json!({
            "query": {"kind": "HogQLQuery", "query": "select event, count() from events group by event order by event"},
            "refresh": "force_async", "client_query_id": "progress-1"
        })).await;
        assert_eq!(status, StatusCode::ACCEPTED, "{name} {body}");
        assert_eq!(
            body["query_status"]["query_progress"],
            Value::Null,
            "{name}: nothing read yet"
        );
        let (status, body) = wait_until_done(&world, team, "progress-1").await;
        assert_eq!(status, StatusCode::OK, "{name} {body}");
        assert_eq!(
            body["query_status"]["results"]["results"],
            json!([["other", 10], ["progress", 40]]),
            "{name}"
        );
        let (rows, bytes, estimated, elapsed, cpu) = progress_of(&name, &body);
        assert_eq!(rows, 50, "{name}: each event read once {body}");
        assert!(bytes > 0, "{name}: bytes scanned {body}");
        assert!(estimated >= rows, "{name} {body}");
        assert!(cpu > 0, "{name}: compute time {body}");
        let started = chrono::DateTime::parse_from_rfc3339(
            body["query_status"]["pickup_time"].as_str().unwrap(),
        )
        .unwrap();
        let ended = chrono::DateTime::parse_from_rfc3339(
            body["query_status"]["end_time"].as_str().unwrap(),
        )
        .unwrap();
        assert!(
            elapsed <= (ended - started).num_seconds().max(0) as u64,
            "{name}: whole seconds of the run {body}"
        );

        // A long query (minutes) whose events are all read first (a sum the files' statistics
        // cannot answer): its progress shows while it runs, then it is cancelled and the ended
        // status keeps what it read.
        let long = "select count() from (select sum(length(event)) as n from events) e, (select arrayJoin(range(2000)) as a) x, (select arrayJoin(range(2000000)) as b) y where (a * b + e.n) % 7 = 3";
        let (status, body) = post(
            &world,
            &path,
            world.admin_key(),
            json!({
                "query": {"kind": "HogQLQuery", "query": long},
                "refresh": "force_async", "client_query_id": "progress-2"
            }),
        )
        .await;
        assert_eq!(status, StatusCode::ACCEPTED, "{name} {body}");
        // Progress is written from the first second on (zeros while it is still planning) until
        // the events have been read.
        let mut running = None;
        for _ in 0..300 {
            tokio::time::sleep(Duration::from_millis(100)).await;
            let (status, body) = status_of(&world, team, "progress-2").await;
            assert_eq!(status, StatusCode::ACCEPTED, "{name}: still running {body}");
            if body["query_status"]["query_progress"]["rows_read"].as_u64() > Some(0) {
                running = Some(body);
                break;
            }
        }
        let running = running.unwrap_or_else(|| panic!("{name}: no progress while running"));
        let (rows, bytes, estimated, elapsed, _) = progress_of(&name, &running);
        assert_eq!(running["query_status"]["complete"], false, "{name}");
        assert!(elapsed >= 1, "{name}: written after a second {running}");
        assert_eq!(rows, 50, "{name}: the events were read {running}");
        assert!(bytes > 0, "{name} {running}");
        assert!(estimated >= rows, "{name} {running}");
        let (status, _) = world
            .send(
                Method::DELETE,
                &format!("{path}progress-2/"),
                Some(world.admin_key()),
                None,
            )
            .await;
        assert_eq!(status, StatusCode::NO_CONTENT, "{name}");
        let (status, body) = wait_until_done(&world, team, "progress-2").await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{name} {body}");
        let (rows_after, bytes_after, estimated_after, elapsed_after, cpu_after) =
            progress_of(&name, &body);
        assert_eq!(rows_after, 50, "{name}: the events were read {body}");
        assert!(bytes_after >= bytes && bytes_after > 0, "{name} {body}");
        assert!(estimated_after >= rows_after, "{name} {body}");
        assert!(elapsed_after >= elapsed, "{name} {body}");
        assert!(cpu_after > 0, "{name} {body}");
    }
}

#[tokio::test]
async fn cancel_stops_a_running_query() {
    for world in World::all().await {
        let name = world.name();
        let team = world.bootstrap.project.id;
        let path = format!("/api/projects/{team}/query/");
        let (status, body) = post(&world, &path, world.admin_key(), json!({
            "query": {"kind": "HogQLQuery", "query": SLOW}, "refresh": "force_async", "client_query_id": "slow-1"
        })).await;
        assert_eq!(status, StatusCode::ACCEPTED, "{name} {body}");
        tokio::time::sleep(Duration::from_millis(500)).await;
        let (status, _) = status_of(&world, team, "slow-1").await;
        assert_eq!(status, StatusCode::ACCEPTED, "{name}: still running");
        let (status, body) = world
            .send(
                Method::DELETE,
                &format!("{path}slow-1/"),
                Some(world.admin_key()),
                None,
            )
            .await;
        assert_eq!(status, StatusCode::NO_CONTENT, "{name} {body}");
        let cancelled_at = std::time::Instant::now();
        let (status, body) = wait_until_done(&world, team, "slow-1").await;
        assert!(
            cancelled_at.elapsed() < Duration::from_secs(5),
            "{name}: the query stopped"
        );
        assert_eq!(status, StatusCode::BAD_REQUEST, "{name} {body}");
        assert_eq!(body["query_status"]["error_message"], "Query was cancelled");
        // The log says it was interrupted, not finished.
        let (_, body) = world
            .get(&format!("{path}slow-1/log/"), Some(world.admin_key()))
            .await;
        let text = body["results"].to_string();
        assert!(text.contains("QUERY_WAS_CANCELLED"), "{name} {body}");
    }
}

#[tokio::test]
async fn time_memory_and_concurrency_limits_are_clean_errors() {
    for world in World::all().await {
        let name = world.name();
        let team = world.bootstrap.project.id;
        let app_with = |timeout: Duration, memory: usize| {
            let mut state = world.backend.state.clone();
            let mut config = (*state.config).clone();
            config.query.timeout = timeout;
            config.query.memory_bytes = memory;
            config.query.concurrency = 1;
            state.config = Arc::new(config);
            local::app(state)
        };
        let app = app_with(Duration::from_millis(700), 64 * 1024 * 1024);
        let roomy = app_with(Duration::from_secs(60), 4 * 1024 * 1024);
        let request = |text: &str| {
            Request::post(format!("/api/projects/{team}/query/"))
                .header("authorization", format!("Bearer {}", world.admin_key()))
                .header("content-type", "application/json")
                .body(Body::from(hogql(text).to_string()))
                .unwrap()
        };
        let (status, body) = respond(app.clone(), request(SLOW)).await;
        assert_eq!(status, StatusCode::GATEWAY_TIMEOUT, "{name} {body}");
        assert!(
            body["detail"]
                .as_str()
                .unwrap()
                .contains("max execution time"),
            "{body}"
        );
        let (status, body) = respond(roomy, request("select a, count() c from (select arrayJoin(range(2000000)) as a) group by a order by c desc, a limit 3")).await;
        assert_eq!(status, StatusCode::GATEWAY_TIMEOUT, "{name} {body}");
        assert!(
            body["detail"].as_str().unwrap().contains("memory"),
            "{body}"
        );
        // One slot per project: a second query while one runs is throttled.
        let patient = app_with(Duration::from_secs(60), 64 * 1024 * 1024);
        let slow = tokio::spawn(respond(patient.clone(), request(VERY_SLOW)));
        tokio::time::sleep(Duration::from_millis(1000)).await;
        let (status, body) = respond(patient.clone(), request("select 1")).await;
        assert_eq!(status, StatusCode::TOO_MANY_REQUESTS, "{name} {body}");
        error_shape(&body);
        slow.abort();
        // Aborted work stops at its next batch boundary; then the process serves again.
        let mut status = StatusCode::GATEWAY_TIMEOUT;
        for _ in 0..60 {
            status = respond(app.clone(), request("select 1")).await.0;
            if status == StatusCode::OK {
                break;
            }
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
        assert_eq!(status, StatusCode::OK, "{name}: the process survived");
    }
}

#[tokio::test]
async fn upgrade_check_auth_and_draft_sql() {
    let world = World::on(common::testing::TestState::embedded().await).await;
    let team = world.bootstrap.project.id;
    let (status, body) = post(&world, &format!("/api/projects/{team}/query/upgrade/"), world.admin_key(), json!({
        "query": {"kind": "InsightVizNode", "source": {"kind": "RetentionQuery", "retentionFilter": {"showMean": true, "period": "Day"}}}
    })).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(
        body["query"]["source"]["retentionFilter"],
        json!({"meanRetentionCalculation": "simple", "period": "Day"})
    );
    assert_eq!(body["query"]["source"]["version"], 2);
    let (status, body) = post(
        &world,
        &format!("/api/projects/{team}/query/upgrade/"),
        world.admin_key(),
        json!({"nope": 1}),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert_eq!(error_shape(&body).1.as_deref(), Some("query"));

    let (status, body) = post(
        &world,
        &format!("/api/projects/{team}/query/check_auth_for_async/"),
        world.admin_key(),
        json!({}),
    )
    .await;
    assert_eq!((status, body), (StatusCode::OK, json!({"user": "ok"})));

    let (status, body) = world
        .get(
            &format!("/api/projects/{team}/query/draft_sql/"),
            Some(world.admin_key()),
        )
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(
        error_shape(&body),
        ("required".into(), Some("prompt".into()))
    );
    let (status, body) = world
        .get(
            &format!("/api/projects/{team}/query/draft_sql/?prompt=count%20pageviews"),
            Some(world.admin_key()),
        )
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert_eq!(error_shape(&body).0, "llm_not_configured");

    // With a provider (a local OpenAI-compatible stand-in), the draft is checked and returned.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let seen = Arc::new(std::sync::Mutex::new(String::new()));
    let seen_by_server = seen.clone();
    let provider = axum::Router::new().route(
        "/v1/chat/completions",
        axum::routing::post(move |body: String| {
            let seen = seen_by_server.clone();
            async move {
                *seen.lock().unwrap() = body;
                axum::Json(json!({"choices": [{"message": {"content": "```sql\nSELECT count() FROM events WHERE event = '$pageview'\n```"}}]}))
            }
        }),
    );
    tokio::spawn(async move { axum::serve(listener, provider).await.unwrap() });
    let mut state = world.backend.state.clone();
    let mut config = (*state.config).clone();
    config.query.llm_url = Some(format!("http://{address}/v1"));
    state.config = Arc::new(config);
    let app = local::app(state);
    let (status, body) = respond(
        app,
        Request::get(format!(
            "/api/projects/{team}/query/draft_sql/?prompt=how%20many%20pageviews"
        ))
        .header("authorization", format!("Bearer {}", world.admin_key()))
        .body(Body::empty())
        .unwrap(),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(
        body["sql"],
        "SELECT count() FROM events WHERE event = '$pageview'"
    );
    let prompt = seen.lock().unwrap().clone();
    assert!(
        prompt.contains("how many pageviews") && prompt.contains("events("),
        "{prompt}"
    );
}

#[tokio::test]
async fn the_engine_modifier_is_checked_and_the_cluster_needs_one() {
    for world in World::all().await {
        let name = world.name();
        let team = world.bootstrap.project.id;
        let path = format!("/api/projects/{team}/query/");
        let node = |engine: Value| {
            json!({"query": {"kind": "HogQLQuery", "query": "select 1", "modifiers": {"engine": engine}},
                   "refresh": "force_blocking"})
        };
        for bad in [json!("ballista"), json!(1)] {
            let (status, body) = post(&world, &path, world.admin_key(), node(bad.clone())).await;
            assert_eq!(status, StatusCode::BAD_REQUEST, "{name} {bad}: {body}");
            assert_eq!(body["attr"], "query.modifiers.engine", "{name}: {body}");
        }
        let (status, body) = post(&world, &path, world.admin_key(), node(json!("local"))).await;
        assert_eq!(
            (status, &body["results"]),
            (StatusCode::OK, &json!([[1]])),
            "{name}: {body}"
        );
        // Asking for a cluster where none is configured: a 503 that says so.
        let (status, body) = post(&world, &path, world.admin_key(), node(json!("cluster"))).await;
        assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{name}: {body}");
        assert_eq!(body["code"], "cluster_unavailable", "{name}: {body}");
        error_shape(&body);
        let trends = json!({"query": {"kind": "TrendsQuery", "series": [{"kind": "EventsNode", "event": "x"}],
                                      "modifiers": {"engine": "everywhere"}}});
        let (status, body) = post(&world, &path, world.admin_key(), trends).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{name}: {body}");
        assert_eq!(body["attr"], "query.modifiers.engine", "{name}: {body}");
    }
}

#[tokio::test]
async fn request_validation() {
    let world = World::on(common::testing::TestState::embedded().await).await;
    let team = world.bootstrap.project.id;
    let path = format!("/api/projects/{team}/query/");
    for (body, attr) in [
        (json!({}), Some("query")),
        (json!({"query": "select 1"}), Some("query")),
        (
            json!({"query": {"kind": "HogQLQuery"}}),
            Some("query.query"),
        ),
        (
            json!({"query": {"kind": "HogQLQuery", "query": 1}}),
            Some("query.query"),
        ),
        (
            json!({"query": {"kind": "NopeQuery", "query": "select 1"}}),
            Some("query.kind"),
        ),
        (
            json!({"query": {"kind": "HogQLQuery", "query": "select 1"}, "refresh": "sometimes"}),
            Some("refresh"),
        ),
        (
            json!({"query": {"kind": "HogQLQuery", "query": "select 1"}, "bogus": 1}),
            None,
        ),
        (
            json!({"query": {"kind": "HogQLQuery", "query": "select 1", "version": "x"}}),
            Some("query.version"),
        ),
        (
            json!({"query": {"kind": "HogQLQuery", "query": "select 1"}, "name": "x".repeat(129)}),
            Some("name"),
        ),
    ] {
        let (status, reply) = post(&world, &path, world.admin_key(), body.clone()).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{body}: {reply}");
        let (_, got) = error_shape(&reply);
        if attr.is_some() {
            assert_eq!(got.as_deref(), attr, "{body}: {reply}");
        }
    }
    // The kind in the path must match the body's.
    let (status, body) = post(
        &world,
        &format!("{path}HogQLQuery/"),
        world.admin_key(),
        hogql("select 1"),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let (status, body) = post(
        &world,
        &format!("{path}TrendsQuery/"),
        world.admin_key(),
        hogql("select 1"),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert!(
        body["detail"]
            .as_str()
            .unwrap()
            .contains("Query kind mismatch")
    );
    // Variables bind as literals, never as text.
    let (status, body) = post(&world, &path, world.admin_key(), json!({
        "query": {"kind": "HogQLQuery", "query": "select {variables.who}",
                  "variables": {"v1": {"variableId": "v1", "code_name": "who", "value": "x'); drop table events; --"}}},
    })).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["results"], json!([["x'); drop table events; --"]]));
    let (status, body) = post(
        &world,
        &path,
        world.admin_key(),
        json!({
            "query": {"kind": "HogQLQuery", "query": "select {variables.who}",
                      "variables": {"v1": {"variableId": "v1", "code_name": "who", "value": "a"}}},
            "variables_override": {"v1": {"variableId": "v1", "code_name": "who", "value": "b"}},
        }),
    )
    .await;
    assert_eq!(body["results"], json!([["b"]]), "{status} {body}");
    // A LIMIT above the maximum is capped.
    let (status, body) = post(
        &world,
        &path,
        world.admin_key(),
        hogql("select 1 limit 1000000"),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert!(
        body["clickhouse"].as_str().unwrap().contains("LIMIT 50000"),
        "{body}"
    );
}

#[tokio::test]
async fn filters_placeholder_applies_the_nodes_filters_and_overrides() {
    for world in World::all().await {
        let name = world.name();
        let project = &world.bootstrap.project;
        let batch: Vec<Value> = [
            ("a", "Chrome", "2026-11-01T10:00:00Z"),
            ("b", "Safari", "2026-11-02T10:00:00Z"),
            ("c", "Chrome", "2026-11-03T10:00:00Z"),
        ]
        .iter()
        .map(|(id, browser, at)| {
            json!({"event": "seen", "distinct_id": id, "timestamp": at,
                   "properties": {"$browser": browser}})
        })
        .collect();
        let (status, body) = world
            .send(
                Method::POST,
                "/batch/",
                None,
                Some(&json!({"api_key": project.api_token, "batch": batch}).to_string()),
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{body}");
        lake::commit_all(&world.backend.state).await.unwrap();
        let path = format!("/api/projects/{}/query/", project.id);
        let run = |filters: Value, overrides: Value| {
            json!({
                "query": {"kind": "HogQLQuery",
                          "query": "select count() from events where {filters}",
                          "filters": filters},
                "filters_override": overrides,
                "refresh": "force_blocking",
            })
        };
        let chrome = json!({"properties": [{"key": "$browser", "value": "Chrome", "operator": "exact", "type": "event"}]});
        for (filters, overrides, expected) in [
            (Value::Null, Value::Null, 3),
            (chrome.clone(), Value::Null, 2),
            (
                chrome.clone(),
                json!({"dateRange": {"date_from": "2026-11-02", "date_to": "2026-11-03"}}),
                1,
            ),
            (
                chrome,
                json!({"properties": [], "dateRange": {"date_to": "2026-11-02"}}),
                2,
            ),
        ] {
            let (status, body) = post(
                &world,
                &path,
                world.admin_key(),
                run(filters.clone(), overrides.clone()),
            )
            .await;
            assert_eq!(
                status,
                StatusCode::OK,
                "{name} {filters} {overrides}: {body}"
            );
            assert_eq!(
                body["results"],
                json!([[expected]]),
                "{name} {filters} {overrides}"
            );
        }
        let (status, body) = post(
            &world,
            &path,
            world.admin_key(),
            run(json!({"dateRange": {"date_from": "someday"}}), Value::Null),
        )
        .await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{name} {body}");
        assert_eq!(body["attr"], "query.filters.dateRange.date_from", "{name}");
        let (status, body) = post(
            &world,
            &path,
            world.admin_key(),
            run(Value::Null, json!({"bogus": true})),
        )
        .await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{name} {body}");
        assert_eq!(body["attr"], "filters_override.bogus", "{name}");
    }
}
