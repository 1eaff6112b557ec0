//! The SQL dialect through `POST /api/projects/:id/query/`, on both backends, over events sent
//! through capture and committed to the lake.

use api_tests::{World, error_shape};
use axum::http::{Method, StatusCode};
use serde_json::{Value, json};

async fn capture_events(world: &World, project_token: &str, events: Vec<Value>) {
    let body = json!({"api_key": project_token, "batch": events});
    let (status, reply) = world
        .send(Method::POST, "/batch/", None, Some(&body.to_string()))
        .await;
    assert_eq!(status, StatusCode::OK, "{reply}");
}

async fn commit(world: &World, team: i64) {
    lake::commit_team(&world.backend.state, team).await.unwrap();
}

pub async fn query(world: &World, team: i64, key: &str, body: Value) -> (StatusCode, Value) {
    world
        .send(
            Method::POST,
            &format!("/api/projects/{team}/query/"),
            Some(key),
            Some(&body.to_string()),
        )
        .await
}

async fn sql(world: &World, team: i64, text: &str) -> Value {
    let (status, body) = query(
        world,
        team,
        world.admin_key(),
        json!({"query": {"kind": "HogQLQuery", "query": text}}),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{text}: {body}");
    body
}

fn sample_events() -> Vec<Value> {
    let mut events = Vec::new();
    for i in 0..30 {
        let browser = ["Chrome", "Firefox", "Safari"][i % 3];
        events.push(json!({
            "event": if i % 5 == 0 { "signed_up" } else { "$pageview" },
            "distinct_id": format!("user-{}", i % 7),
            "timestamp": format!("2026-11-{:02}T10:{:02}:00Z", 1 + i % 4, i),
            "properties": {"$browser": browser, "amount": i, "$session_id": format!("s-{}", i % 4),
                           "nested": {"level": i % 2}, "$set": {"plan": if i % 2 == 0 {"free"} else {"pro"}}},
        }));
    }
    events
}

#[tokio::test]
async fn sql_over_captured_events() {
    for world in World::all().await {
        let name = world.name();
        let team = world.bootstrap.project.id;
        capture_events(
            &world,
            &world.bootstrap.project.api_token.clone(),
            sample_events(),
        )
        .await;
        commit(&world, team).await;

        let body = sql(
            &world,
            team,
            "select event, count() from events group by event order by event",
        )
        .await;
        assert_eq!(
            body["results"],
            json!([["$pageview", 24], ["signed_up", 6]]),
            "{name} {body}"
        );
        assert_eq!(body["columns"], json!(["event", "count()"]), "{name}");
        assert_eq!(body["hasMore"], json!(false));
        assert_eq!(body["limit"], json!(100));

        let body = sql(&world, team, "select properties.$browser as b, uniq(distinct_id), sum(toInt(properties.amount)) from events group by b order by b").await;
        assert_eq!(
            body["results"][0],
            json!(["Chrome", 7, 135]),
            "{name} {body}"
        );

        // A SELECT's aliases can be named in the select list and in WHERE, as in ClickHouse.
        let body = sql(&world, team, "select properties.$browser as b, count() as n, n * 2 as twice from events where b != 'Safari' group by b order by b").await;
        assert_eq!(
            body["results"],
            json!([["Chrome", 10, 20], ["Firefox", 10, 20]]),
            "{name} {body}"
        );
        let body = sql(&world, team, "select toInt(properties.amount) as amount, amount + 1 as next from events where amount = 3 and next = 4").await;
        assert_eq!(body["results"], json!([[3, 4]]), "{name} {body}");
        // Lambdas over arrays built from events.
        let body = sql(&world, team, "select arrayExists(x -> x = 'signed_up', groupArray(event)), length(arrayFilter(x -> x = 'Chrome', groupArray(properties.$browser))) from events").await;
        assert_eq!(body["results"], json!([[1, 10]]), "{name} {body}");
        // An alias's own expression means the column, and a subquery keeps its own scope.
        let body = sql(&world, team, "select upper(event) as event from events where event = 'SIGNED_UP' and event in (select upper(event) as e from events where event = 'signed_up') limit 1").await;
        assert_eq!(body["results"], json!([["SIGNED_UP"]]), "{name} {body}");

        let body = sql(&world, team, "select count(distinct distinct_id), count(DISTINCT properties.$browser), countDistinct(event), count(*), COUNT(event) from events").await;
        assert_eq!(
            body["results"],
            json!([[7, 3, 2, 30, 30]]),
            "{name}: DISTINCT is kept {body}"
        );
        let body = sql(
            &world,
            team,
            "select count() from events where properties.missing = 'x'",
        )
        .await;
        assert_eq!(body["results"], json!([[0]]), "{name}");
        let body = sql(
            &world,
            team,
            "select count() from events where properties.missing != 'x'",
        )
        .await;
        assert_eq!(
            body["results"],
            json!([[30]]),
            "{name}: != is true for a missing property"
        );
        let body = sql(&world, team, "select countIf(properties.nested.level = '1'), countIf(properties['$browser'] = 'Safari') from events").await;
        assert_eq!(body["results"], json!([[15, 10]]), "{name} {body}");

        let body = sql(
            &world,
            team,
            "select toDate(timestamp) d, count() c from events group by d order by d limit 2",
        )
        .await;
        assert_eq!(
            body["results"],
            json!([["2026-11-01", 8], ["2026-11-02", 8]]),
            "{name} {body}"
        );
        assert_eq!(
            body["hasMore"],
            Value::Null,
            "{name}: a LIMIT means no pagination"
        );

        let body = sql(&world, team, "select distinct_id, timestamp from events order by timestamp, distinct_id limit 1 by distinct_id").await;
        assert_eq!(
            body["results"].as_array().unwrap().len(),
            7,
            "{name} {body}"
        );

        let body = sql(&world, team, "select dateDiff('day', toDateTime('2026-11-01 23:00:00'), toDateTime('2026-11-02 01:00:00')), if(1 = 1, 'y', 'n'), multiIf(false, 1, true, 2, 3)").await;
        assert_eq!(body["results"], json!([[1, "y", 2]]), "{name} {body}");

        let body = sql(&world, team, "select bitAnd(12, 10), bitOr(12, 10), bitShiftLeft(1, 5), bitShiftRight(32, 2), bitTest(5, 2), bitTest(5, 1)").await;
        assert_eq!(
            body["results"],
            json!([[8, 14, 32, 8, 1, 0]]),
            "{name} {body}"
        );

        // Shifts past the width give 0 (as in ClickHouse), not a wrapped count.
        let body = sql(&world, team, "select bitShiftLeft(1, 64), bitShiftRight(-8, 70), bitShiftLeft(1, -1), bitTest(1, 64), bitTest(6, 63)").await;
        assert_eq!(
            body["results"],
            json!([[0, 0, null, null, 0]]),
            "{name} {body}"
        );

        let body = sql(&world, team, "select groupBitOr(bitShiftLeft(1, x)), groupBitAnd(x + 8), groupBitXor(x) from (select arrayJoin(range(4)) as x)").await;
        assert_eq!(body["results"], json!([[15, 8, 0]]), "{name} {body}");

        let body = sql(
            &world,
            team,
            "select event, count() as c from events group by event having c > 10",
        )
        .await;
        assert_eq!(body["results"], json!([["$pageview", 24]]), "{name}");

        let body = sql(&world, team, "with u as (select distinct_id, count() c from events group by distinct_id) select count() from u where c >= 5").await;
        assert_eq!(body["results"], json!([[2]]), "{name} {body}");

        let body = sql(&world, team, "select event from events union all select event from events union all select event from events union all select event from events").await;
        assert_eq!(body["results"].as_array().unwrap().len(), 100);
        assert_eq!(body["hasMore"], json!(true));

        let body = sql(&world, team, "select count() from events e join (select distinct distinct_id from events where event = 'signed_up') s on e.distinct_id = s.distinct_id").await;
        assert!(body["results"][0][0].as_i64().unwrap() > 0, "{name} {body}");

        let body = sql(
            &world,
            team,
            "select person.properties.plan, count() from events group by 1 order by 1",
        )
        .await;
        assert_eq!(
            body["results"].as_array().unwrap().len(),
            2,
            "{name} {body}"
        );

        let body = sql(&world, team, "select row_number() over (partition by event order by timestamp) rn from events order by rn desc limit 1").await;
        assert_eq!(body["results"], json!([[24]]), "{name}");

        let body = sql(&world, team, "select count() from events where timestamp > toDateTime('2026-11-03') - interval 1 day").await;
        assert_eq!(body["results"], json!([[22]]), "{name} {body}");

        let body = sql(&world, team, "select count() from persons").await;
        assert_eq!(body["results"], json!([[7]]), "{name} {body}");
    }
}

#[tokio::test]
async fn bad_queries_are_400s_in_the_error_shape() {
    for world in World::all().await {
        let name = world.name();
        let team = world.bootstrap.project.id;
        for (text, code, needle) in [
            ("select from where", "hogql_syntax_error", ""),
            (
                "select * from nope",
                "hogql_query_error",
                "Unknown table `nope`",
            ),
            (
                "select nope(1)",
                "hogql_query_error",
                "Unsupported function call 'nope(...)'",
            ),
            (
                "select toDate()",
                "hogql_query_error",
                "expects 1 arguments",
            ),
            ("drop table events", "hogql_syntax_error", "Only SELECT"),
            (
                "select * from information_schema.tables",
                "hogql_query_error",
                "Unknown table",
            ),
            (
                "select * from generate_series(1, 3)",
                "hogql_query_error",
                "does not accept arguments",
            ),
            ("select * from 'data/lake'", "hogql_query_error", ""),
            (
                "select {missing}",
                "hogql_query_error",
                "Unresolved placeholder",
            ),
            ("select 1; select 2", "hogql_syntax_error", ""),
            (
                "select bitAnd(1.5, 2)",
                "hogql_query_error",
                "bitAnd takes integers, not Float64",
            ),
            (
                "select bitShiftLeft(1, toFloat(2))",
                "hogql_query_error",
                "bitShiftLeft takes integers",
            ),
        ] {
            let (status, body) = query(
                &world,
                team,
                world.admin_key(),
                json!({"query": {"kind": "HogQLQuery", "query": text}}),
            )
            .await;
            assert_eq!(status, StatusCode::BAD_REQUEST, "{name} {text}: {body}");
            let (got, _) = error_shape(&body);
            assert_eq!(got, code, "{name} {text}: {body}");
            assert!(
                body["detail"].as_str().unwrap().contains(needle),
                "{name} {text}: {body}"
            );
        }
    }
}

/// A person seen on two devices, then identified on both: PostHog merges the second person into
/// the first, and every earlier event of the second counts as the first's.
#[tokio::test]
async fn events_of_a_merged_person_count_as_the_person_they_joined() {
    for world in World::all().await {
        let name = world.name();
        let team = world.bootstrap.project.id;
        let token = world.bootstrap.project.api_token.clone();
        let pageview = |device: &str, minute: u32| {
            json!({"event": "$pageview", "distinct_id": device,
                "timestamp": format!("2026-11-01T10:{minute:02}:00Z")})
        };
        capture_events(
            &world,
            &token,
            vec![
                pageview("laptop", 0),
                pageview("phone", 1),
                pageview("phone", 2),
            ],
        )
        .await;
        commit(&world, team).await;
        let persons = "select count(distinct person_id) from events";
        assert_eq!(
            sql(&world, team, persons).await["results"],
            json!([[2]]),
            "{name}"
        );

        let identify = json!({"event": "$identify", "distinct_id": "laptop",
            "timestamp": "2026-11-01T10:03:00Z",
            "properties": {"$anon_distinct_id": "phone", "$set": {"email": "ada@example.com"}}});
        capture_events(&world, &token, vec![identify, pageview("phone", 4)]).await;
        commit(&world, team).await;
        assert_eq!(
            sql(&world, team, persons).await["results"],
            json!([[1]]),
            "{name}"
        );
        let laptop = lake::persons::person_of(world.backend.state.store.clone(), team, "laptop")
            .await
            .unwrap()
            .unwrap();
        let body = sql(
            &world,
            team,
            "select person_id, count() from events group by person_id",
        )
        .await;
        assert_eq!(
            body["results"],
            json!([[laptop.uuid.to_string(), 5]]),
            "{name} {body}"
        );
        // The persons table holds the survivor only, and the events join it.
        let join = "select count() from events e join persons p on e.person_id = p.id";
        let body = sql(&world, team, join).await;
        assert_eq!(body["results"], json!([[5]]), "{name} {body}");

        // Compaction squashes an override into the rows once it is older than a grace period
        // (given here): the rows carry the survivor themselves and the override is gone; the
        // answers do not change.
        let state = &world.backend.state;
        let store = state.store.as_ref();
        let table = lake::table::open_existing(state, team)
            .await
            .unwrap()
            .unwrap();
        let earlier = chrono::Utc::now() - chrono::Duration::minutes(10);
        let (table, report) = lake::squash::squash_overrides(state, team, table, earlier)
            .await
            .unwrap();
        assert_eq!(report.overrides_squashed, 0, "{name}");
        assert_eq!(
            lake_core::person_overrides::override_list(store, team)
                .await
                .unwrap()
                .len(),
            1
        );
        let later = chrono::Utc::now() + chrono::Duration::seconds(1);
        let (_, report) = lake::squash::squash_overrides(state, team, table, later)
            .await
            .unwrap();
        assert_eq!(
            (report.overrides_squashed, report.rows_reassigned),
            (1, 2),
            "{name}"
        );
        assert!(
            lake_core::person_overrides::override_list(store, team)
                .await
                .unwrap()
                .is_empty()
        );
        let body = sql(
            &world,
            team,
            "select person_id, count() from events group by person_id",
        )
        .await;
        assert_eq!(
            body["results"],
            json!([[laptop.uuid.to_string(), 5]]),
            "{name} {body}"
        );
        let body = sql(&world, team, join).await;
        assert_eq!(body["results"], json!([[5]]), "{name} {body}");
    }
}

/// `timestamp >= today() - interval N day` and `timestamp < yesterday()` read the `date`
/// partitions instead of every timestamp: the same rows, down to the millisecond around
/// midnight.
#[tokio::test]
async fn day_bounds_keep_the_rows_around_midnight() {
    use chrono::{Days, Duration, SecondsFormat, Utc};
    for world in World::all().await {
        let name = world.name();
        let team = world.bootstrap.project.id;
        let today = Utc::now().date_naive();
        let midnight = |days_ago: u64| {
            (today - Days::new(days_ago))
                .and_hms_opt(0, 0, 0)
                .unwrap()
                .and_utc()
        };
        let times: Vec<_> = (0..4)
            .flat_map(|days_ago| {
                let at = midnight(days_ago);
                [
                    at - Duration::milliseconds(1),
                    at,
                    at + Duration::milliseconds(1),
                ]
            })
            .collect();
        let events = times
            .iter()
            .enumerate()
            .map(|(i, at)| {
                json!({"event": "e", "distinct_id": format!("d{i}"),
                       "timestamp": at.to_rfc3339_opts(SecondsFormat::Millis, true)})
            })
            .collect();
        capture_events(&world, &world.bootstrap.project.api_token.clone(), events).await;
        commit(&world, team).await;
        let count = |keep: &dyn Fn(&chrono::DateTime<Utc>) -> bool| {
            times.iter().filter(|at| keep(at)).count()
        };
        let cases: [(&str, usize); 5] = [
            ("timestamp >= today()", count(&|at| *at >= midnight(0))),
            (
                "timestamp >= today() - interval 2 day",
                count(&|at| *at >= midnight(2)),
            ),
            ("e.timestamp < yesterday()", count(&|at| *at < midnight(1))),
            (
                "yesterday() <= e.timestamp and e.timestamp < today()",
                count(&|at| *at >= midnight(1) && *at < midnight(0)),
            ),
            (
                "timestamp >= today() - interval '1 week' and timestamp > today() - interval 2 day",
                count(&|at| *at > midnight(2)),
            ),
        ];
        for (filter, expected) in cases {
            let body = sql(
                &world,
                team,
                &format!("select count() from events e where {filter}"),
            )
            .await;
            if Utc::now().date_naive() != today {
                // Midnight passed while the test ran: `today()` is another day now.
                return;
            }
            assert_eq!(body["results"], json!([[expected]]), "{name} {filter}");
        }
    }
}
