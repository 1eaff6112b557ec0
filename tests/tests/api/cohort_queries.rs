//! Cohorts in query nodes and the cohort calculation, on every backend: an EventsQuery and a
//! TrendsQuery filtered by static, person-property, behavioural (count and window), nested and
//! negated cohorts answer exactly the expected persons' events; a static cohort's new member
//! is never served from an old cached answer; the `cohort_calculation` job stores a dynamic
//! cohort's members and count, recounts a static one and counts a failure; and
//! `experiments/requires_flag_implementation` answers true until an event carries `$feature/`.

use std::collections::{BTreeMap, BTreeSet};

use api_tests::World;
use axum::http::{Method, StatusCode};
use chrono::{Duration, Utc};
use cohort_core::Cohort;
use common::activity::Actor;
use common::jobs::JobContext;
use serde_json::{Value, json};
use uuid::Uuid;

const PEOPLE: [&str; 4] = ["alice", "bob", "carol", "dave"];

async fn post_query(world: &World, key: &str, query: Value) -> (StatusCode, Value) {
    let path = format!("/api/projects/{}/query/", world.bootstrap.project.id);
    let body = json!({"query": query}).to_string();
    world
        .send(Method::POST, &path, Some(key), Some(&body))
        .await
}

/// Stores a cohort directly (the cohorts routes are another family's).
async fn create_cohort(world: &World, name: &str, fields: Value) -> Cohort {
    let mut body = json!({"id": 0, "team_id": 0, "name": name,
        "created_at": "2026-01-01T00:00:00Z"});
    if let (Value::Object(body), Value::Object(fields)) = (&mut body, fields) {
        body.extend(fields);
    }
    let cohort: Cohort = serde_json::from_value(body).unwrap();
    cohort_core::repository::create(
        world.backend.state.store.as_ref(),
        world.bootstrap.project.id,
        cohort,
        &Actor::system(),
        Utc::now(),
        |_| Ok(vec![]),
    )
    .await
    .unwrap()
}

fn definition(properties: Value) -> Value {
    let filters =
        cohort_core::Filters::parse(&json!({"properties": properties}), "filters").unwrap();
    json!({"filters": filters})
}

fn cohort_filter(id: i64, extra: Value) -> Value {
    let mut filter = json!({"type": "cohort", "key": "id", "value": id});
    if let (Value::Object(filter), Value::Object(extra)) = (&mut filter, extra) {
        filter.extend(extra);
    }
    filter
}

/// The distinct ids of the `$pageview`s `filter` keeps.
async fn viewers(world: &World, key: &str, filter: Value) -> BTreeSet<String> {
    let query = json!({"kind": "EventsQuery", "select": ["distinct_id"], "event": "$pageview",
        "after": "-7d", "properties": [filter], "orderBy": ["distinct_id"]});
    let (status, body) = post_query(world, key, query).await;
    assert_eq!(status, StatusCode::OK, "{} {body}", world.name());
    body["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|row| row[0].as_str().unwrap().to_owned())
        .collect()
}

fn set(names: &[&str]) -> BTreeSet<String> {
    names.iter().map(|name| name.to_string()).collect()
}

async fn calculate(world: &World, cohort_id: i64) -> Value {
    let state = &world.backend.state;
    let job = state
        .jobs
        .get(cohort_core::calculation::JOB)
        .expect("registered");
    let project = world.bootstrap.project.id;
    let context = JobContext {
        run_id: Uuid::now_v7(),
        team_id: Some(project),
        payload: json!({"team_id": project, "cohort_id": cohort_id}),
        attempt: 1,
        deadline: None,
    };
    job.run(state, &context).await.unwrap()
}

/// The scheduled run of the calculation job: no project, no payload.
async fn run_scheduled(world: &World) -> Value {
    let state = &world.backend.state;
    let job = state
        .jobs
        .get(cohort_core::calculation::JOB)
        .expect("registered");
    let context = JobContext {
        run_id: Uuid::now_v7(),
        team_id: None,
        payload: Value::Null,
        attempt: 1,
        deadline: None,
    };
    job.run(state, &context).await.unwrap()
}

async fn stored(world: &World, id: i64) -> Cohort {
    cohort_core::repository::get_live(
        world.backend.state.store.as_ref(),
        world.bootstrap.project.id,
        id,
    )
    .await
    .unwrap()
    .unwrap()
}

#[tokio::test]
async fn cohort_filters_and_calculation() {
    for world in World::all().await {
        let name = world.name();
        let project = world.bootstrap.project.id;
        let store = world.backend.state.store.clone();
        let key = world.key(&["query:read"], Some(vec![project])).await;

        // Everyone viewed a page two hours ago; alice paid twice this week, bob once, carol
        // three weeks ago. alice and bob have example.com emails.
        let now = Utc::now();
        let at = |ago: Duration| (now - ago).to_rfc3339();
        let mut events = Vec::new();
        for person in PEOPLE {
            let domain = if person == "alice" || person == "bob" {
                "example.com"
            } else {
                "other.com"
            };
            events.push(json!({"event": "$pageview", "distinct_id": person,
                "timestamp": at(Duration::hours(2)),
                "properties": {"$set": {"email": format!("{person}@{domain}")}}}));
        }
        for (person, ago) in [
            ("alice", Duration::days(1)),
            ("alice", Duration::days(2)),
            ("bob", Duration::days(3)),
            ("carol", Duration::days(20)),
        ] {
            events.push(
                json!({"event": "paid", "distinct_id": person, "timestamp": at(ago),
                "properties": {"plan": "pro"}}),
            );
        }
        // alice and dave saw the experiment's flag three hours ago.
        for person in ["alice", "dave"] {
            events.push(
                json!({"event": "$feature_flag_called", "distinct_id": person,
                "timestamp": at(Duration::hours(3)),
                "properties": {"$feature_flag": "exp-flag", "$feature_flag_response": "test"}}),
            );
        }
        world.capture(events).await;
        lake::commit_all(&world.backend.state).await.unwrap();

        let (status, ids) = post_query(
            &world,
            &key,
            json!({"kind": "HogQLQuery",
                   "query": "select distinct_id, any(person_id) from events group by distinct_id"}),
        )
        .await;
        assert_eq!(status, StatusCode::OK, "{name} {ids}");
        let person: BTreeMap<String, Uuid> = ids["results"]
            .as_array()
            .unwrap()
            .iter()
            .map(|row| {
                (
                    row[0].as_str().unwrap().to_owned(),
                    row[1].as_str().unwrap().parse().unwrap(),
                )
            })
            .collect();
        assert_eq!(person.len(), 4, "{name} {ids}");

        let fixed = create_cohort(&world, "static", json!({"is_static": true})).await;
        cohort_core::members::add(
            store.as_ref(),
            project,
            fixed.id,
            &[person["alice"], person["carol"]],
        )
        .await
        .unwrap();
        let emails = create_cohort(
            &world,
            "example.com",
            definition(
                json!({"type": "AND", "values": [{"type": "person", "key": "email",
                "value": "example.com", "operator": "icontains"}]}),
            ),
        )
        .await;
        let twice = create_cohort(
            &world,
            "paid twice this week",
            definition(
                json!({"type": "OR", "values": [{"type": "behavioral", "key": "paid",
                "value": "performed_event_multiple", "event_type": "events", "time_value": 7,
                "time_interval": "day", "operator": "gte", "operator_value": 2,
                "event_filters": [{"key": "plan", "value": "pro", "type": "event"}]}]}),
            ),
        )
        .await;
        let month = create_cohort(
            &world,
            "paid this month",
            definition(
                json!({"type": "OR", "values": [{"type": "behavioral", "key": "paid",
                "value": "performed_event", "event_type": "events",
                "explicit_datetime": "-30d"}]}),
            ),
        )
        .await;
        let nested = create_cohort(
            &world,
            "example.com, not static",
            definition(json!({"type": "AND", "values": [
                {"type": "cohort", "key": "id", "value": emails.id},
                {"type": "cohort", "key": "id", "value": fixed.id, "negation": true}]})),
        )
        .await;

        for (filter, expected) in [
            (cohort_filter(fixed.id, json!({})), set(&["alice", "carol"])),
            (
                cohort_filter(fixed.id, json!({"operator": "not_in"})),
                set(&["bob", "dave"]),
            ),
            (
                json!({"type": "static-cohort", "key": "id", "value": fixed.id.to_string()}),
                set(&["alice", "carol"]),
            ),
            (cohort_filter(emails.id, json!({})), set(&["alice", "bob"])),
            (cohort_filter(twice.id, json!({})), set(&["alice"])),
            (
                cohort_filter(month.id, json!({})),
                set(&["alice", "bob", "carol"]),
            ),
            (cohort_filter(nested.id, json!({})), set(&["bob"])),
            (
                cohort_filter(nested.id, json!({"negation": true})),
                set(&["alice", "carol", "dave"]),
            ),
        ] {
            assert_eq!(
                viewers(&world, &key, filter.clone()).await,
                expected,
                "{name} {filter}"
            );
        }

        // HogQL's `IN COHORT <id>` / `IN COHORT 'name'`, in a filter and in the select list.
        let pageviews = |condition: String| {
            format!(
                "select distinct_id from events where event = '$pageview' and {condition} \
                 order by distinct_id"
            )
        };
        for (text, expected) in [
            (
                pageviews(format!("person_id in cohort {}", fixed.id)),
                vec!["alice", "carol"],
            ),
            (
                pageviews(format!("person_id not in cohort {}", fixed.id)),
                vec!["bob", "dave"],
            ),
            (
                pageviews("person_id IN COHORT 'example.com'".into()),
                vec!["alice", "bob"],
            ),
            (
                pageviews(format!("person_id in cohort {}", nested.id)),
                vec!["bob"],
            ),
        ] {
            let (status, body) =
                post_query(&world, &key, json!({"kind": "HogQLQuery", "query": text})).await;
            assert_eq!(status, StatusCode::OK, "{name} {text} {body}");
            let found: Vec<&str> = body["results"]
                .as_array()
                .unwrap()
                .iter()
                .map(|row| row[0].as_str().unwrap())
                .collect();
            assert_eq!(found, expected, "{name} {text}");
        }
        let text = format!(
            "select countIf(person_id in cohort {}), countIf(person_id in cohort 'paid twice this week') \
             from events where event = '$pageview'",
            fixed.id
        );
        let (status, body) =
            post_query(&world, &key, json!({"kind": "HogQLQuery", "query": text})).await;
        assert_eq!(status, StatusCode::OK, "{name} {body}");
        assert_eq!(body["results"], json!([[2, 1]]), "{name} {body}");
        for (text, detail) in [
            (
                "select count() from events where person_id in cohort 999999",
                "Cohort with id 999999 does not exist",
            ),
            (
                "select count() from events where person_id in cohort 'nobody'",
                "Could not find a cohort with the name 'nobody'",
            ),
        ] {
            let (status, body) =
                post_query(&world, &key, json!({"kind": "HogQLQuery", "query": text})).await;
            assert_eq!(status, StatusCode::BAD_REQUEST, "{name} {text} {body}");
            assert_eq!(body["detail"], detail, "{name} {body}");
        }

        // An experiment's exposure cohort, as `create_exposure_cohort_for_experiment` defines
        // it, in a trend; and a SQL node's `{filters}`.
        let exposed = create_cohort(
            &world,
            "Users exposed to experiment",
            definition(json!({"type": "OR", "values": [{"type": "OR", "values": [{
                "type": "behavioral", "value": "performed_event", "key": "$feature_flag_called",
                "event_type": "events", "negation": false,
                "event_filters": [{"key": "$feature_flag", "value": ["exp-flag"],
                                   "operator": "exact", "type": "event"}],
                "explicit_datetime": (now - Duration::days(1)).to_rfc3339()}]}]})),
        )
        .await;
        let (status, body) = post_query(
            &world,
            &key,
            json!({"kind": "TrendsQuery", "dateRange": {"date_from": "-7d"},
                "series": [{"kind": "EventsNode", "event": "$pageview", "math": "dau"}],
                "trendsFilter": {"display": "BoldNumber"},
                "properties": [cohort_filter(exposed.id, json!({}))]}),
        )
        .await;
        assert_eq!(status, StatusCode::OK, "{name} {body}");
        assert_eq!(
            body["results"][0]["aggregated_value"].as_f64(),
            Some(2.0),
            "{name} {body}"
        );
        let (status, body) = post_query(
            &world,
            &key,
            json!({"kind": "HogQLQuery",
                "query": "select distinct_id from events where event = '$pageview' and {filters} order by distinct_id",
                "filters": {"properties": [cohort_filter(exposed.id, json!({"operator": "not_in"}))]}}),
        )
        .await;
        assert_eq!(status, StatusCode::OK, "{name} {body}");
        assert_eq!(
            body["results"],
            json!([["bob"], ["carol"]]),
            "{name} {body}"
        );

        // A trend: pageviews of the example.com cohort, and the same over an OR group.
        let trend = |properties: Value| {
            json!({"kind": "TrendsQuery", "dateRange": {"date_from": "-7d"},
                "series": [{"kind": "EventsNode", "event": "$pageview", "math": "total"}],
                "trendsFilter": {"display": "BoldNumber"}, "properties": properties})
        };
        for (properties, expected) in [
            (json!([cohort_filter(emails.id, json!({}))]), 2),
            (
                json!({"type": "OR", "values": [
                    cohort_filter(twice.id, json!({})),
                    cohort_filter(fixed.id, json!({}))]}),
                2,
            ),
            (
                json!([cohort_filter(month.id, json!({"operator": "not_in"}))]),
                1,
            ),
        ] {
            let (status, body) = post_query(&world, &key, trend(properties.clone())).await;
            assert_eq!(status, StatusCode::OK, "{name} {properties} {body}");
            assert_eq!(
                body["results"][0]["aggregated_value"].as_f64(),
                Some(expected as f64),
                "{name} {properties} {body}"
            );
        }

        // A funnel step filtered by a dynamic cohort (a condition inside the query's
        // projection, where the engine cannot run a subquery: the cohort is resolved first),
        // and a funnel and a retention filtered as a whole.
        let funnel = |steps: Value, properties: Value| {
            json!({"kind": "FunnelsQuery", "dateRange": {"date_from": "-30d"},
                "series": steps, "properties": properties})
        };
        for (query, expected) in [
            (
                funnel(
                    json!([{"kind": "EventsNode", "event": "paid",
                            "properties": [cohort_filter(emails.id, json!({}))]},
                           {"kind": "EventsNode", "event": "$pageview"}]),
                    json!([]),
                ),
                [2, 2],
            ),
            (
                funnel(
                    json!([{"kind": "EventsNode", "event": "paid"},
                           {"kind": "EventsNode", "event": "$pageview"}]),
                    json!([cohort_filter(nested.id, json!({}))]),
                ),
                [1, 1],
            ),
        ] {
            let (status, body) = post_query(&world, &key, query.clone()).await;
            assert_eq!(status, StatusCode::OK, "{name} {body}");
            let counts: Vec<i64> = body["results"]
                .as_array()
                .unwrap()
                .iter()
                .map(|step| step["count"].as_i64().unwrap())
                .collect();
            assert_eq!(counts, expected, "{name} {query} {body}");
        }
        let (status, body) = post_query(
            &world,
            &key,
            json!({"kind": "RetentionQuery", "dateRange": {"date_from": "-7d"},
                   "properties": [cohort_filter(twice.id, json!({}))],
                   "retentionFilter": {"period": "Day", "totalIntervals": 3}}),
        )
        .await;
        assert_eq!(status, StatusCode::OK, "{name} {body}");

        // A new static member is never answered from the cache.
        let before = viewers(&world, &key, cohort_filter(fixed.id, json!({}))).await;
        assert_eq!(before, set(&["alice", "carol"]), "{name}");
        cohort_core::members::add(store.as_ref(), project, fixed.id, &[person["dave"]])
            .await
            .unwrap();
        assert_eq!(
            viewers(&world, &key, cohort_filter(fixed.id, json!({}))).await,
            set(&["alice", "carol", "dave"]),
            "{name}"
        );

        // Unknown and deleted cohorts are a 400 naming the field.
        let (status, body) = post_query(
            &world,
            &key,
            json!({"kind": "EventsQuery", "select": ["event"],
                   "properties": [cohort_filter(999, json!({}))]}),
        )
        .await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{name} {body}");
        assert_eq!(
            body["detail"],
            json!("Cohort with id 999 does not exist"),
            "{name}"
        );
        assert!(
            body["attr"]
                .as_str()
                .is_some_and(|attr| attr.ends_with("properties[0].value")),
            "{name} {body}"
        );

        // The calculation: a behavioural cohort's members and count.
        let output = calculate(&world, month.id).await;
        assert_eq!(output["count"], json!(3), "{name} {output}");
        let members: BTreeSet<Uuid> = cohort_core::members::list(store.as_ref(), project, month.id)
            .await
            .unwrap()
            .into_iter()
            .collect();
        let expected: BTreeSet<Uuid> = ["alice", "bob", "carol"]
            .iter()
            .map(|name| person[*name])
            .collect();
        assert_eq!(members, expected, "{name}");
        let calculated = stored(&world, month.id).await;
        assert_eq!(calculated.count, Some(3), "{name}");
        assert!(calculated.last_calculation.is_some(), "{name}");
        assert!(!calculated.is_calculating, "{name}");

        // Nested and person-property cohorts calculate over `persons` too.
        assert_eq!(
            calculate(&world, nested.id).await["count"],
            json!(1),
            "{name}"
        );
        assert_eq!(
            cohort_core::members::list(store.as_ref(), project, nested.id)
                .await
                .unwrap(),
            vec![person["bob"]],
            "{name}"
        );
        assert_eq!(
            calculate(&world, twice.id).await["count"],
            json!(1),
            "{name}"
        );

        // A static cohort is recounted.
        let output = calculate(&world, fixed.id).await;
        assert_eq!(output["count"], json!(3), "{name} {output}");
        assert_eq!(stored(&world, fixed.id).await.count, Some(3), "{name}");

        // The schedule's run (no project, no payload) queues every behavioural cohort again,
        // and no static or person-property one.
        let scheduled = run_scheduled(&world).await;
        let queued: Vec<(i64, i64)> = scheduled["queued"]
            .as_array()
            .expect("a list of queued runs")
            .iter()
            .map(|run| {
                (
                    run["team_id"].as_i64().unwrap(),
                    run["cohort_id"].as_i64().unwrap(),
                )
            })
            .filter(|(team, _)| *team == project)
            .collect();
        assert!(queued.contains(&(project, month.id)), "{name} {scheduled}");
        assert!(queued.contains(&(project, twice.id)), "{name} {scheduled}");
        assert!(!queued.contains(&(project, fixed.id)), "{name} {scheduled}");
        assert!(
            !queued.contains(&(project, nested.id)),
            "{name} {scheduled}"
        );
        assert_eq!(stored(&world, month.id).await.count, Some(3), "{name}");

        // A failing calculation (the cohort it names was deleted) is counted on the cohort.
        let doomed = create_cohort(&world, "doomed", json!({"is_static": true})).await;
        let orphan = create_cohort(
            &world,
            "orphan",
            definition(json!({"type": "AND", "values": [
                {"type": "cohort", "key": "id", "value": doomed.id}]})),
        )
        .await;
        let read = cohort_core::repository::get(store.as_ref(), project, doomed.id)
            .await
            .unwrap()
            .unwrap();
        let mut deleted = read.cohort.clone();
        deleted.deleted = true;
        cohort_core::repository::save(
            store.as_ref(),
            project,
            &read,
            deleted,
            &Actor::system(),
            Utc::now(),
        )
        .await
        .unwrap();
        let output = calculate(&world, orphan.id).await;
        assert_eq!(output["status"], json!("failed"), "{name} {output}");
        let (status, body) = post_query(
            &world,
            &key,
            json!({"kind": "EventsQuery", "select": ["event"],
                   "properties": [cohort_filter(orphan.id, json!({}))]}),
        )
        .await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{name} {body}");
        assert_eq!(
            body["detail"],
            json!(format!("Cohort with id {} does not exist", doomed.id)),
            "{name} {body}"
        );
        assert!(
            body["attr"]
                .as_str()
                .is_some_and(|attr| attr.ends_with("properties[0].value")),
            "{name} {body}"
        );
        let failed = stored(&world, orphan.id).await;
        assert_eq!(failed.errors_calculating, 1, "{name}");
        assert!(failed.last_error_at.is_some(), "{name}");
        assert!(!failed.is_calculating, "{name}");
    }
}

#[tokio::test]
async fn requires_flag_implementation() {
    for world in World::all().await {
        let name = world.name();
        let project = world.bootstrap.project.id;
        let key = world.key(&["experiment:read"], Some(vec![project])).await;
        let now = Utc::now();
        world
            .capture(vec![
                json!({"event": "$pageview", "distinct_id": "a",
                       "timestamp": (now - Duration::hours(1)).to_rfc3339(), "properties": {}}),
                json!({"event": "checkout", "distinct_id": "a",
                       "timestamp": (now - Duration::hours(1)).to_rfc3339(),
                       "properties": {"$feature/new-checkout": "test"}}),
                // Older than the forced 7-day window.
                json!({"event": "signup", "distinct_id": "a",
                       "timestamp": (now - Duration::days(10)).to_rfc3339(),
                       "properties": {"$feature/new-checkout": "test"}}),
            ])
            .await;
        lake::commit_all(&world.backend.state).await.unwrap();
        let uri = |query: &str| {
            format!("/api/projects/{project}/experiments/requires_flag_implementation/?{query}")
        };
        let encoded = |events: Value| {
            form_urlencoded::Serializer::new(String::new())
                .append_pair("events", &events.to_string())
                .finish()
        };
        for (events, expected) in [
            (json!([{"id": "$pageview", "type": "events"}]), true),
            (
                json!([{"id": "checkout", "type": "events", "order": 0}]),
                false,
            ),
            (json!([{"id": "$pageview"}, {"id": "checkout"}]), false),
            (json!([{"id": "signup"}]), true),
            (json!([]), true),
        ] {
            let (status, body) = world.get(&uri(&encoded(events.clone())), Some(&key)).await;
            assert_eq!(status, StatusCode::OK, "{name} {events} {body}");
            assert_eq!(body, json!({"result": expected}), "{name} {events}");
        }
        let actions = form_urlencoded::Serializer::new(String::new())
            .append_pair("actions", "[{\"id\": 3}]")
            .finish();
        let (status, body) = world.get(&uri(&actions), Some(&key)).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{name} {body}");
        assert_eq!(body["attr"], json!("actions"), "{name} {body}");
        let (status, body) = world.get(&uri("limit=0"), Some(&key)).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{name} {body}");
        // The experiments family's `/experiments/{id}` is still routed beside it.
        let (status, _) = world
            .get(
                &format!("/api/projects/{project}/experiments/12345/"),
                Some(world.admin_key()),
            )
            .await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{name}");
    }
}
