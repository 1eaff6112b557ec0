//! Endpoints on both backends and under both prefixes (`/api/projects/` and
//! `/api/environments/`): CRUD by name with PostHog's messages, versions (a new one only on a
//! real query change, `?version=N`, concurrent changes), runs (variables, versions, refresh,
//! pages, the response's keys, the query log), last execution times and scopes.

use api_tests::{World, error_shape};
use axum::http::{Method, StatusCode};
use serde_json::{Value, json};

const PREFIXES: [&str; 2] = ["projects", "environments"];

fn sql(text: &str) -> Value {
    json!({"kind": "HogQLQuery", "query": text})
}

/// Counting one event by name, the name a variable (default `signup`).
fn by_event() -> Value {
    json!({"kind": "HogQLQuery",
        "query": "select count() as n from events where event = {variables.event}",
        "variables": {"v-1": {"code_name": "event", "value": "signup"}}})
}

async fn seed(world: &World) {
    let mut events = Vec::new();
    for (i, (event, who)) in [
        ("signup", "a"),
        ("signup", "b"),
        ("signup", "c"),
        ("pageview", "a"),
        ("pageview", "b"),
    ]
    .iter()
    .enumerate()
    {
        events.push(json!({"event": event, "distinct_id": who,
            "timestamp": format!("2026-11-0{}T10:00:00Z", i + 1), "properties": {"$browser": "Chrome"}}));
    }
    world.capture(events).await;
    lake::commit_all(&world.backend.state).await.unwrap();
}

async fn run(world: &World, uri: &str, body: Value) -> (StatusCode, Value) {
    world
        .send_json(Method::POST, &format!("{uri}run/"), body)
        .await
}

/// Deletes endpoints of the bootstrap project (both prefixes name the same project).
async fn delete(world: &World, uri: &str, names: &[&str]) {
    for name in names {
        let (status, body) = world
            .send_json(Method::DELETE, &format!("{uri}{name}/"), json!({}))
            .await;
        assert_eq!(status, StatusCode::NO_CONTENT, "{name} {body}");
    }
}

fn expect_error(
    status: StatusCode,
    body: &Value,
    code: StatusCode,
    attr: Option<&str>,
    detail: &str,
) {
    assert_eq!(status, code, "{body}");
    let (_, got_attr) = error_shape(body);
    assert_eq!(got_attr.as_deref(), attr, "{body}");
    assert!(
        body["detail"].as_str().unwrap_or_default().contains(detail),
        "expected {detail:?} in {body}"
    );
}

#[tokio::test]
async fn create_validates_and_names_are_unique_per_project() {
    for world in World::all().await {
        for prefix in PREFIXES {
            let uri = world.endpoints_uri(prefix);
            let name = format!("count-{prefix}");
            let created = world
                .create_endpoint(
                    prefix,
                    json!({"name": name, "query": sql("select count() as n, 'x' as label from events"),
                        "description": "all events"}),
                )
                .await;
            assert_eq!(created["name"], name.as_str());
            assert_eq!(created["current_version"], 1);
            assert_eq!(created["versions_count"], 1);
            assert_eq!(created["is_active"], true);
            assert_eq!(created["is_materialized"], false);
            assert_eq!(created["description"], "all events");
            let path = format!(
                "/api/{prefix}/{}/endpoints/{name}/run",
                world.bootstrap.project.id
            );
            assert_eq!(created["endpoint_path"], path.as_str());
            assert_eq!(created["url"], format!("http://testserver{path}").as_str());
            assert_eq!(
                created["columns"],
                json!([{"name": "n", "type": "UInt64"}, {"name": "label", "type": "String"}])
            );
            assert_eq!(created["materialization"]["can_materialize"], true);
            assert_eq!(
                created["created_by"]["email"],
                world.bootstrap.user.email.as_str()
            );

            let cases = [
                (
                    json!({"name": name, "query": sql("select 1")}),
                    Some("name"),
                    "An endpoint with this name already exists for this team.",
                ),
                (
                    json!({"name": "1abc", "query": sql("select 1")}),
                    Some("name"),
                    "Endpoint name must start with a letter",
                ),
                (
                    json!({"name": "has space", "query": sql("select 1")}),
                    Some("name"),
                    "Endpoint name must start with a letter",
                ),
                (
                    json!({"name": "a".repeat(129), "query": sql("select 1")}),
                    Some("name"),
                    "between 1 and 128 characters",
                ),
                (
                    json!({"query": sql("select 1")}),
                    Some("name"),
                    "This field is required.",
                ),
                (
                    json!({"name": "noquery"}),
                    Some("query"),
                    "Must specify query",
                ),
                (
                    json!({"name": "bad", "query": sql("select from where")}),
                    Some("query"),
                    "Invalid HogQL query",
                ),
                (
                    json!({"name": "bad", "query": sql("select nope from events")}),
                    Some("query"),
                    "Invalid HogQL query",
                ),
                (
                    json!({"name": "bad", "query": sql("select {variables.missing}")}),
                    Some("query"),
                    "missing",
                ),
                (
                    json!({"name": "bad", "query": sql("select 1"), "cache_age_seconds": 5}),
                    Some("cache_age_seconds"),
                    "Cache age must be between 300 and 86400 seconds.",
                ),
                (
                    json!({"name": "bad", "query": sql("select 1"), "is_active": false, "is_materialized": true}),
                    Some("is_materialized"),
                    "Cannot enable materialization on inactive endpoint.",
                ),
                (
                    json!({"name": "bad", "query": sql("select 1"), "sync_frequency": "1hour"}),
                    Some("sync_frequency"),
                    "Cannot set sync_frequency when disabling materialization.",
                ),
                (
                    json!({"name": "bad", "query": {"kind": "TrendsQuery", "series": [{"kind": "EventsNode", "event": "signup"}]}, "is_materialized": true}),
                    Some("is_materialized"),
                    "Only SQL queries can be materialized",
                ),
                (
                    json!({"name": "bad", "query": sql("select 1"), "surprise": 1}),
                    Some("surprise"),
                    "surprise",
                ),
                (
                    json!({"name": "bad", "query": sql("select 1"), "derived_from_insight": "abcdefghijklm"}),
                    Some("derived_from_insight"),
                    "no more than 12 characters",
                ),
            ];
            for (body, attr, detail) in cases {
                let (status, answer) = world.send_json(Method::POST, &uri, body.clone()).await;
                expect_error(status, &answer, StatusCode::BAD_REQUEST, attr, detail);
            }
            // Nothing half-made: the refused names do not exist.
            let (status, _) = world
                .get(&format!("{uri}bad/"), Some(world.admin_key()))
                .await;
            assert_eq!(status, StatusCode::NOT_FOUND);

            // An old node is upgraded before it is stored.
            let upgraded = world
                .create_endpoint(
                    prefix,
                    json!({"name": format!("old-{prefix}"),
                    "query": {"kind": "HogQLQuery", "query": "select 1 as one", "version": 1}}),
                )
                .await;
            assert_eq!(upgraded["query"]["kind"], "HogQLQuery");
        }
        // Names are unique per project, not across them: the other prefix made its own.
        let (status, list) = world
            .get(&world.endpoints_uri("projects"), Some(world.admin_key()))
            .await;
        assert_eq!(status, StatusCode::OK);
        let names: Vec<&str> = list["results"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["name"].as_str().unwrap())
            .collect();
        assert_eq!(
            names,
            [
                "count-environments",
                "count-projects",
                "old-environments",
                "old-projects"
            ]
        );
        assert!(list.get("count").is_none(), "{list}");
    }
}

#[tokio::test]
async fn list_filters_retrieve_and_delete() {
    for world in World::all().await {
        for prefix in PREFIXES {
            let uri = world.endpoints_uri(prefix);
            world
                .create_endpoint(prefix, json!({"name": "on", "query": sql("select 1")}))
                .await;
            world
                .create_endpoint(
                    prefix,
                    json!({"name": "off", "query": sql("select 2"), "is_active": false}),
                )
                .await;
            let (_, active) = world
                .get(&format!("{uri}?is_active=true"), Some(world.admin_key()))
                .await;
            assert_eq!(active["results"].as_array().unwrap().len(), 1, "{active}");
            assert_eq!(active["results"][0]["name"], "on");
            let (_, inactive) = world
                .get(&format!("{uri}?is_active=false"), Some(world.admin_key()))
                .await;
            assert_eq!(inactive["results"][0]["name"], "off");
            let mine = format!("{uri}?created_by={}", world.bootstrap.user.uuid);
            let (_, mine) = world.get(&mine, Some(world.admin_key())).await;
            assert_eq!(mine["results"].as_array().unwrap().len(), 2);
            let (_, theirs) = world
                .get(
                    &format!("{uri}?created_by={}", world.member.uuid),
                    Some(world.admin_key()),
                )
                .await;
            assert_eq!(theirs["results"], json!([]));
            let (status, bad) = world
                .get(&format!("{uri}?is_active=maybe"), Some(world.admin_key()))
                .await;
            expect_error(
                status,
                &bad,
                StatusCode::BAD_REQUEST,
                Some("is_active"),
                "true or false",
            );

            let (status, one) = world
                .get(&format!("{uri}on/"), Some(world.admin_key()))
                .await;
            assert_eq!(status, StatusCode::OK);
            assert_eq!(one["query"]["query"], "select 1");

            // An inactive endpoint does not run.
            let (status, body) = run(&world, &format!("{uri}off/"), json!({})).await;
            expect_error(status, &body, StatusCode::NOT_FOUND, None, "not found");

            let (status, _) = world
                .send_json(Method::DELETE, &format!("{uri}on/"), json!({}))
                .await;
            assert_eq!(status, StatusCode::NO_CONTENT);
            let (status, gone) = world
                .get(&format!("{uri}on/"), Some(world.admin_key()))
                .await;
            expect_error(status, &gone, StatusCode::NOT_FOUND, None, "not found");
            let (status, _) = world
                .send_json(Method::DELETE, &format!("{uri}on/"), json!({}))
                .await;
            assert_eq!(status, StatusCode::NOT_FOUND);
            // The name is free again, with a fresh history.
            let again = world
                .create_endpoint(prefix, json!({"name": "on", "query": sql("select 3")}))
                .await;
            assert_eq!(again["versions_count"], 1);
            for name in ["on", "off"] {
                world
                    .send_json(Method::DELETE, &format!("{uri}{name}/"), json!({}))
                    .await;
            }
        }
    }
}

#[tokio::test]
async fn versions_are_made_only_by_real_query_changes() {
    for world in World::all().await {
        seed(&world).await;
        for prefix in PREFIXES {
            let uri = world.endpoints_uri(prefix);
            let item = format!("{uri}signups/");
            world
                .create_endpoint(
                    prefix,
                    json!({"name": "signups", "query": by_event(), "description": "v1"}),
                )
                .await;
            // The same query (keys in another order) and a description: still one version.
            let same = json!({"variables": {"v-1": {"value": "signup", "code_name": "event"}},
                "query": "select count() as n from events where event = {variables.event}", "kind": "HogQLQuery"});
            let (status, patched) = world
                .send_json(
                    Method::PATCH,
                    &item,
                    json!({"query": same, "description": "first"}),
                )
                .await;
            assert_eq!(status, StatusCode::OK, "{patched}");
            assert_eq!(patched["current_version"], 1);
            assert_eq!(patched["versions_count"], 1);
            assert_eq!(patched["description"], "first");

            // A real change: version 2, which keeps the description.
            let changed = json!({"kind": "HogQLQuery",
                "query": "select count() * 10 as n from events where event = {variables.event}",
                "variables": {"v-1": {"code_name": "event", "value": "signup"}}});
            let (status, patched) = world
                .send_json(Method::PATCH, &item, json!({"query": changed}))
                .await;
            assert_eq!(status, StatusCode::OK, "{patched}");
            assert_eq!(patched["current_version"], 2);
            assert_eq!(patched["versions_count"], 2);
            assert_eq!(patched["description"], "first");

            let (_, versions) = world
                .get(&format!("{item}versions/"), Some(world.admin_key()))
                .await;
            let numbers: Vec<i64> = versions
                .as_array()
                .unwrap()
                .iter()
                .map(|v| v["version"].as_i64().unwrap())
                .collect();
            assert_eq!(numbers, [2, 1]);
            let (status, first) = world
                .get(&format!("{item}versions/1/"), Some(world.admin_key()))
                .await;
            assert_eq!(status, StatusCode::OK);
            assert!(
                first["query"]["query"]
                    .as_str()
                    .unwrap()
                    .starts_with("select count() as n")
            );
            let (status, missing) = world
                .get(&format!("{item}versions/9/"), Some(world.admin_key()))
                .await;
            expect_error(
                status,
                &missing,
                StatusCode::NOT_FOUND,
                None,
                "Version 9 not found",
            );

            // Runs: current (×10), then the old version by body and by query string.
            let (status, current) = run(&world, &item, json!({})).await;
            assert_eq!(status, StatusCode::OK, "{current}");
            assert_eq!(current["results"], json!([[30]]));
            assert_eq!(current["endpoint_version"], 2);
            let (_, old) = run(&world, &item, json!({"version": 1})).await;
            assert_eq!(old["results"], json!([[3]]));
            assert_eq!(old["endpoint_version"], 1);
            let (status, old) = world
                .get(&format!("{item}run/?version=1"), Some(world.admin_key()))
                .await;
            assert_eq!(status, StatusCode::OK, "{old}");
            assert_eq!(old["results"], json!([[3]]));

            // ?version=N targets that version: deactivate v1, which then does not run.
            let (status, v1) = world
                .send_json(
                    Method::PATCH,
                    &format!("{item}?version=1"),
                    json!({"is_active": false}),
                )
                .await;
            assert_eq!(status, StatusCode::OK, "{v1}");
            assert_eq!(v1["version"], 1);
            assert_eq!(v1["is_active"], false);
            let (status, body) = run(&world, &item, json!({"version": 1})).await;
            expect_error(
                status,
                &body,
                StatusCode::BAD_REQUEST,
                Some("version"),
                "Version 1 is inactive and cannot be executed.",
            );
            let (status, body) = world
                .send_json(
                    Method::PATCH,
                    &format!("{item}?version=1"),
                    json!({"query": sql("select 1")}),
                )
                .await;
            expect_error(
                status,
                &body,
                StatusCode::BAD_REQUEST,
                Some("query"),
                "Cannot change query",
            );
            let (status, body) = world
                .send_json(
                    Method::PATCH,
                    &format!("{item}?version=7"),
                    json!({"is_active": true}),
                )
                .await;
            expect_error(
                status,
                &body,
                StatusCode::NOT_FOUND,
                None,
                "Version 7 not found",
            );
            let (status, body) = run(&world, &item, json!({"version": 5})).await;
            expect_error(
                status,
                &body,
                StatusCode::NOT_FOUND,
                None,
                "Version 5 not found for endpoint 'signups'",
            );
            let (status, body) = run(&world, &item, json!({"version": "two"})).await;
            expect_error(
                status,
                &body,
                StatusCode::BAD_REQUEST,
                Some("version"),
                "Invalid version parameter: \"two\"",
            );
            let (status, body) = world
                .get(&format!("{item}run/?version=x"), Some(world.admin_key()))
                .await;
            expect_error(
                status,
                &body,
                StatusCode::BAD_REQUEST,
                Some("version"),
                "Invalid version parameter: x",
            );

            // A broken query is refused on PATCH, and nothing changes.
            let (status, body) = world
                .send_json(Method::PATCH, &item, json!({"query": sql("select nope(")}))
                .await;
            expect_error(
                status,
                &body,
                StatusCode::BAD_REQUEST,
                Some("query"),
                "Invalid HogQL query",
            );
            let (status, body) = world
                .send_json(Method::PATCH, &item, json!({"cache_age_seconds": 90000}))
                .await;
            expect_error(
                status,
                &body,
                StatusCode::BAD_REQUEST,
                Some("cache_age_seconds"),
                "Cache age",
            );
            let (status, body) = world
                .send_json(
                    Method::PATCH,
                    &item,
                    json!({"is_materialized": false, "sync_frequency": "1hour"}),
                )
                .await;
            expect_error(
                status,
                &body,
                StatusCode::BAD_REQUEST,
                Some("sync_frequency"),
                "Cannot set sync_frequency when disabling materialization.",
            );
            let (_, still) = world.get(&item, Some(world.admin_key())).await;
            assert_eq!(still["current_version"], 2);

            // Two concurrent query changes make two versions, none lost.
            let (a, b) = tokio::join!(
                world.send_json(
                    Method::PATCH,
                    &item,
                    json!({"query": sql("select 100 as n")})
                ),
                world.send_json(
                    Method::PATCH,
                    &item,
                    json!({"query": sql("select 200 as n")})
                ),
            );
            assert_eq!(
                (a.0, b.0),
                (StatusCode::OK, StatusCode::OK),
                "{} {}",
                a.1,
                b.1
            );
            let (_, after) = world.get(&item, Some(world.admin_key())).await;
            assert_eq!(after["versions_count"], 4, "{after}");
            assert_eq!(after["current_version"], 4);
            let (_, versions) = world
                .get(&format!("{item}versions/"), Some(world.admin_key()))
                .await;
            let mut texts: Vec<&str> = versions.as_array().unwrap()[..2]
                .iter()
                .map(|v| v["query"]["query"].as_str().unwrap())
                .collect();
            texts.sort();
            assert_eq!(texts, ["select 100 as n", "select 200 as n"]);
            delete(&world, &uri, &["signups"]).await;
        }
    }
}

#[tokio::test]
async fn runs_check_their_input_and_answer_posthogs_shape() {
    for world in World::all().await {
        seed(&world).await;
        for prefix in PREFIXES {
            let uri = world.endpoints_uri(prefix);
            let item = format!("{uri}by-event/");
            world
                .create_endpoint(prefix, json!({"name": "by-event", "query": by_event()}))
                .await;

            let (status, answer) =
                run(&world, &item, json!({"variables": {"event": "pageview"}})).await;
            assert_eq!(status, StatusCode::OK, "{answer}");
            assert_eq!(answer["results"], json!([[2]]));
            assert_eq!(answer["columns"], json!(["n"]));
            assert_eq!(answer["endpoint_version"], 1);
            assert_eq!(answer["endpoint_materialized"], false);
            assert_eq!(answer["name"], "by-event");
            assert!(answer["endpoint_version_created_at"].is_string());
            let execution = answer["execution_id"].as_str().unwrap().to_owned();
            for hidden in ["cache_key", "timings", "hogql", "modifiers", "explain"] {
                assert!(answer.get(hidden).is_none(), "{hidden} in {answer}");
            }
            let (_, debug) = run(
                &world,
                &item,
                json!({"debug": true, "client_query_id": format!("dbg-{prefix}")}),
            )
            .await;
            assert!(
                debug.get("timings").is_some() && debug.get("hogql").is_some(),
                "{debug}"
            );
            assert_eq!(debug["execution_id"], format!("dbg-{prefix}").as_str());
            // The default variable value applies when none is given; GET runs the same.
            let (_, default) = world
                .get(&format!("{item}run/"), Some(world.admin_key()))
                .await;
            assert_eq!(default["results"], json!([[3]]));

            let cases = [
                (
                    json!({"variables": {"nope": 1, "other": 2}}),
                    Some("variables"),
                    "Unknown variable(s): nope, other",
                ),
                (
                    json!({"query_override": {}}),
                    Some("query_override"),
                    "query_override is not allowed. Use variables instead.",
                ),
                (
                    json!({"filters_override": {}}),
                    Some("filters_override"),
                    "filters_override is not allowed",
                ),
                (
                    json!({"refresh": "async"}),
                    Some("refresh"),
                    "Only sync modes are supported",
                ),
                (
                    json!({"refresh": "direct"}),
                    Some("refresh"),
                    "only for materialized endpoints",
                ),
                (
                    json!({"offset": 2}),
                    Some("offset"),
                    "offset requires limit.",
                ),
                (
                    json!({"limit": 0}),
                    Some("limit"),
                    "limit must be between 1 and 50000.",
                ),
                (json!({"whatever": 1}), Some("whatever"), "unknown field"),
            ];
            for (body, attr, detail) in cases {
                let (status, answer) = run(&world, &item, body.clone()).await;
                expect_error(status, &answer, StatusCode::BAD_REQUEST, attr, detail);
            }
            // A variable defined but not used by the text.
            world
                .create_endpoint(
                    prefix,
                    json!({"name": "unused-var", "query": {"kind": "HogQLQuery",
                "query": "select 1", "variables": {"v": {"code_name": "x", "value": 1}}}}),
                )
                .await;
            let (status, answer) = run(
                &world,
                &format!("{uri}unused-var/"),
                json!({"variables": {"x": 2}}),
            )
            .await;
            expect_error(
                status,
                &answer,
                StatusCode::BAD_REQUEST,
                Some("variables"),
                "Variable 'x' not found in query",
            );
            // A query that fails at run time is a 400 naming it.
            world
                .create_endpoint(
                    prefix,
                    json!({"name": "fails",
                "query": sql("select match(event, '(') from events")}),
                )
                .await;
            let (status, answer) = run(&world, &format!("{uri}fails/"), json!({})).await;
            expect_error(
                status,
                &answer,
                StatusCode::BAD_REQUEST,
                None,
                "Query execution failed",
            );

            // Pages: limit and offset over the query's rows.
            world
                .create_endpoint(
                    prefix,
                    json!({"name": "events-list",
                "query": sql("select event, distinct_id from events order by timestamp")}),
                )
                .await;
            let (status, page) = run(
                &world,
                &format!("{uri}events-list/"),
                json!({"limit": 2, "offset": 1}),
            )
            .await;
            assert_eq!(status, StatusCode::OK, "{page}");
            assert_eq!(page["results"], json!([["signup", "b"], ["signup", "c"]]));
            assert_eq!(page["hasMore"], true);
            assert_eq!(
                (page["limit"].clone(), page["offset"].clone()),
                (json!(2), json!(1))
            );
            let (_, last) = run(
                &world,
                &format!("{uri}events-list/"),
                json!({"limit": 2, "offset": 4}),
            )
            .await;
            assert_eq!(last["results"], json!([["pageview", "b"]]));
            assert_eq!(last["hasMore"], false);

            // The query log names the endpoint and its run path.
            let (status, log) = world
                .send_json(
                    Method::POST,
                    &format!("/api/projects/{}/query/", world.bootstrap.project.id),
                    json!({"query": sql(&format!(
                    "select name, endpoint from query_log where query_id = '{execution}'"))}),
                )
                .await;
            assert_eq!(status, StatusCode::OK, "{log}");
            assert_eq!(
                log["results"],
                json!([[
                    "by-event",
                    format!(
                        "/api/{prefix}/{}/endpoints/by-event/run",
                        world.bootstrap.project.id
                    )
                ]])
            );
            delete(
                &world,
                &uri,
                &["by-event", "unused-var", "fails", "events-list"],
            )
            .await;
        }
        // Insight endpoints take their breakdown property and dates as variables.
        let trends = json!({"kind": "TrendsQuery", "series": [{"kind": "EventsNode", "event": "signup", "math": "total"}],
            "dateRange": {"date_from": "2026-11-01", "date_to": "2026-11-07"}, "interval": "day",
            "breakdownFilter": {"breakdown": "$browser", "breakdown_type": "event"}});
        let item = format!("{}trend/", world.endpoints_uri("projects"));
        world
            .create_endpoint("projects", json!({"name": "trend", "query": trends}))
            .await;
        let (status, answer) = run(
            &world,
            &item,
            json!({"variables": {"$browser": "Chrome", "date_to": "2026-11-02"}}),
        )
        .await;
        assert_eq!(status, StatusCode::OK, "{answer}");
        let total: f64 = answer["results"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["count"].as_f64().unwrap())
            .sum();
        assert_eq!(total, 2.0, "{answer}");
        let (status, answer) = run(
            &world,
            &item,
            json!({"variables": {"$os": "x"}, "limit": 3}),
        )
        .await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{answer}");
    }
}

#[tokio::test]
async fn last_execution_times_and_scopes() {
    for world in World::all().await {
        seed(&world).await;
        for prefix in PREFIXES {
            let uri = world.endpoints_uri(prefix);
            world
                .create_endpoint(prefix, json!({"name": "ran", "query": sql("select 1")}))
                .await;
            world
                .create_endpoint(prefix, json!({"name": "idle", "query": sql("select 2")}))
                .await;
            let (status, _) = run(&world, &format!("{uri}ran/"), json!({})).await;
            assert_eq!(status, StatusCode::OK);
            let times = format!("{uri}last_execution_times/");
            let (status, answer) = world
                .send_json(Method::POST, &times, json!({"names": ["ran", "idle"]}))
                .await;
            assert_eq!(status, StatusCode::OK, "{answer}");
            let results = answer["query_status"]["results"]
                .as_array()
                .unwrap()
                .clone();
            assert_eq!(results.len(), 1, "{answer}");
            assert_eq!(results[0][0], "ran");
            assert_eq!(answer["query_status"]["complete"], true);
            assert_eq!(
                answer["query_status"]["team_id"],
                world.bootstrap.project.id
            );
            // The whole status object, as the async query status route answers one.
            let keys = |status: &Value| {
                let mut keys: Vec<String> = status.as_object().unwrap().keys().cloned().collect();
                keys.sort_unstable();
                keys
            };
            assert_eq!(
                keys(&answer["query_status"]),
                [
                    "complete",
                    "dashboard_id",
                    "end_time",
                    "error",
                    "error_message",
                    "expiration_time",
                    "id",
                    "insight_id",
                    "labels",
                    "pickup_time",
                    "query_async",
                    "query_progress",
                    "results",
                    "start_time",
                    "task_id",
                    "team_id"
                ],
                "{answer}"
            );
            let (status, queued) = world
                .send_json(
                    Method::POST,
                    &format!("/api/projects/{}/query/", world.bootstrap.project.id),
                    json!({"query": {"kind": "HogQLQuery", "query": "select 1"},
                        "refresh": "force_async", "client_query_id": format!("keys-{prefix}")}),
                )
                .await;
            assert_eq!(status, StatusCode::ACCEPTED, "{queued}");
            assert_eq!(
                keys(&answer["query_status"]),
                keys(&queued["query_status"]),
                "{queued}"
            );
            assert_eq!(
                answer["query_status"]
                    .as_object()
                    .unwrap()
                    .iter()
                    .filter(|(key, _)| !["team_id", "results"].contains(&key.as_str()))
                    .map(|(key, value)| (key.as_str(), value.clone()))
                    .collect::<std::collections::BTreeMap<_, _>>(),
                [
                    ("complete", json!(true)),
                    ("dashboard_id", Value::Null),
                    ("end_time", Value::Null),
                    ("error", json!(false)),
                    ("error_message", Value::Null),
                    ("expiration_time", Value::Null),
                    ("id", json!("")),
                    ("insight_id", Value::Null),
                    ("labels", Value::Null),
                    ("pickup_time", Value::Null),
                    ("query_async", json!(true)),
                    ("query_progress", Value::Null),
                    ("start_time", Value::Null),
                    ("task_id", Value::Null),
                ]
                .into_iter()
                .collect(),
                "{answer}: QueryStatus's defaults"
            );
            let (_, empty) = world
                .send_json(Method::POST, &times, json!({"names": []}))
                .await;
            assert_eq!(empty["query_status"]["results"], json!([]));
            assert_eq!(keys(&empty["query_status"]).len(), 16, "{empty}");
            let (status, bad) = world
                .send_json(Method::POST, &times, json!({"names": ["no way"]}))
                .await;
            expect_error(
                status,
                &bad,
                StatusCode::BAD_REQUEST,
                Some("names"),
                "Invalid endpoint name: no way",
            );
            let (_, item) = world
                .get(&format!("{uri}ran/"), Some(world.admin_key()))
                .await;
            assert!(item["last_executed_at"].is_string(), "{item}");

            // Scopes: endpoint:read reads and runs; writing needs endpoint:write.
            let reader = world.key(&["endpoint:read"], None).await;
            let (status, _) = world.get(&uri, Some(&reader)).await;
            assert_eq!(status, StatusCode::OK);
            let (status, _) = world
                .send(
                    Method::POST,
                    &format!("{uri}ran/run/"),
                    Some(&reader),
                    Some("{}"),
                )
                .await;
            assert_eq!(status, StatusCode::OK);
            let (status, _) = world
                .send(
                    Method::POST,
                    &uri,
                    Some(&reader),
                    Some(&json!({"name": "x", "query": sql("select 1")}).to_string()),
                )
                .await;
            assert_eq!(status, StatusCode::FORBIDDEN);
            let (status, _) = world
                .send(Method::DELETE, &format!("{uri}ran/"), Some(&reader), None)
                .await;
            assert_eq!(status, StatusCode::FORBIDDEN);
            let other = world.key(&["query:read"], None).await;
            let (status, _) = world.get(&uri, Some(&other)).await;
            assert_eq!(status, StatusCode::FORBIDDEN);
            let (status, _) = world.get(&uri, None).await;
            assert_eq!(status, StatusCode::UNAUTHORIZED);
            // Another organization's project is not reachable.
            let foreign = format!("/api/{prefix}/{}/endpoints/", world.foreign_project);
            let (status, _) = world.get(&foreign, Some(world.admin_key())).await;
            assert_eq!(status, StatusCode::FORBIDDEN);
            delete(&world, &uri, &["ran", "idle"]).await;
        }
    }
}

/// The app over `world`'s backend with another clock or config.
fn app_with(world: &World, minutes_later: i64, concurrency: usize) -> common::http::App {
    let mut state = world.backend.state.clone();
    let mut config = (*state.config).clone();
    config.query.concurrency = concurrency;
    state.config = std::sync::Arc::new(config);
    state.clock = std::sync::Arc::new(common::clock::ManualClock::at(
        chrono::Utc::now() + chrono::Duration::minutes(minutes_later),
    ));
    local::app(state)
}

async fn run_on(
    app: common::http::App,
    world: &World,
    uri: &str,
    body: Value,
) -> (StatusCode, Value) {
    let request = axum::http::Request::post(format!("{uri}run/"))
        .header("authorization", format!("Bearer {}", world.admin_key()))
        .header("content-type", "application/json")
        .body(axum::body::Body::from(body.to_string()))
        .unwrap();
    api_tests::respond(app, request).await
}

#[tokio::test]
async fn cache_age_and_the_concurrency_bound() {
    for world in World::all().await {
        seed(&world).await;
        for prefix in PREFIXES {
            let uri = world.endpoints_uri(prefix);
            let item = format!("{uri}cached/");
            world
                .create_endpoint(
                    prefix,
                    json!({"name": "cached",
                    "query": sql("select count() as n from events"), "cache_age_seconds": 300}),
                )
                .await;
            let (_, first) = run(&world, &item, json!({})).await;
            let count = first["results"][0][0].as_i64().unwrap();
            world
                .capture(vec![json!({"event": "late", "distinct_id": "q", "timestamp": "2026-11-09T00:00:00Z"})])
                .await;
            lake::commit_all(&world.backend.state).await.unwrap();
            // Within the cache age the earlier answer stands, new events or not.
            let (_, again) = run(&world, &item, json!({})).await;
            assert_eq!(again["results"], json!([[count]]), "{again}");
            assert_eq!(again["is_cached"], true);
            // `force` and an older answer compute again.
            let (_, forced) = run(&world, &item, json!({"refresh": "force"})).await;
            assert_eq!(forced["results"], json!([[count + 1]]));
            let (status, later) = run_on(app_with(&world, 6, 4), &world, &item, json!({})).await;
            assert_eq!(status, StatusCode::OK, "{later}");
            assert_eq!(later["results"], json!([[count + 1]]));

            // Every slot of the project taken: 429, and nothing is lost once one is free.
            let bounded = app_with(&world, 0, 1);
            let slot =
                query_service::slots::acquire(&world.backend.state, world.bootstrap.project.id)
                    .await
                    .unwrap()
                    .expect("a free slot");
            let (status, busy) =
                run_on(bounded.clone(), &world, &item, json!({"refresh": "force"})).await;
            expect_error(
                status,
                &busy,
                StatusCode::TOO_MANY_REQUESTS,
                None,
                "Too many concurrent requests. Please try again later.",
            );
            slot.release().await;
            let (status, _) = run_on(bounded, &world, &item, json!({"refresh": "force"})).await;
            assert_eq!(status, StatusCode::OK);
            delete(&world, &uri, &["cached"]).await;
        }
    }
}
