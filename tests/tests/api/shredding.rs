//! Shredded property columns never change an answer: the same queries give the same rows with
//! shredding off (JSON only), mid-backfill (some files with a key's column, some without, and a
//! key whose values stopped fitting its type), and after compaction backfilled every file; on
//! both backends.

use std::sync::Arc;

use api_tests::World;
use axum::http::StatusCode;
use common::AppState;
use lake::shred::{self, ColumnType, Origin, Source};
use serde_json::{Value, json};

/// Reads `properties` in every form the rewrite knows, and in forms it must leave alone.
const QUERIES: &[&str] = &[
    "select event, count() as c from events group by event order by c desc, event",
    "select e.event, count() from events e where e.event != 'nope' group by e.event order by e.event",
    "select event as name, countIf(event = 'buy'), count() from events group by name order by name",
    "select event, count() from events where event in ('view', 'nope') group by event having event != 'x' \
       order by event",
    "select count() from events where event = 'buy' and properties.plan = 'pro'",
    "select toStartOfDay(timestamp) as day, event, uniq(distinct_id) from events group by day, event \
       order by day, event",
    "select count() from events where properties.plan = 'pro'",
    "select countIf(properties.plan = 'pro') from events",
    "select properties.plan, count() from events group by 1 order by 1",
    "select count() from events where event = 'view' and properties.plan = 'pro'",
    "select properties.$browser as b, count() as c from events group by b order by b",
    "select properties['$browser'] as b, count() from events where event = 'view' group by b order by b",
    "select e.properties.$browser, e.event from events e order by e.timestamp, e.uuid limit 40",
    "select sum(toFloat(properties.amount)), sum(toInt(properties.amount)), count(properties.amount), \
       countIf(properties.amount = '7') from events",
    "select properties.amount as a, toFloat(properties.amount) as f, toInt(properties.amount) as i, count() \
       from events group by a, f, i order by a, f, i",
    "select event, count() from events where properties.plan = 'pro' group by event order by event",
    "select event, count() from events where properties.plan != 'pro' group by event order by event",
    "select toFloat(properties.ratio), properties.ratio, properties.flag, count() from events \
       group by 1, 2, 3 order by 1, 2, 3",
    "select properties.price, sum(toFloat(properties.price)), avg(toInt(properties.price)) from events \
       group by 1 order by 1",
    "select quantile(0.9)(toFloat(properties.price)), sum(toFloat(properties.flag)) from events",
    "select b, count() from (select properties.$browser as b from events) group by b order by b",
    "select properties.nested.inner, properties.nested, count() from events group by 1, 2 order by 1, 2",
    "select JSONExtractString(properties, '$browser') as b, JSONExtractInt(properties, 'amount') as a, count() \
       from events group by b, a order by b, a",
    "select person.properties.email as email, count() from events group by email order by email",
    "select * from events order by timestamp, uuid limit 3",
    "select events.* from events order by timestamp, uuid limit 2",
    // A nested SELECT the rewrite leaves on the JSON (its unnamed column) still hides the
    // view's own columns from `*`.
    "select * from (select *, properties.plan from events) order by timestamp, uuid limit 2",
    "select (select count() from events where properties.plan = 'free'), count() from events \
       where properties.$browser = 'Chrome'",
    "select properties.$browser, count() from events where event = 'view' group by 1 \
       union all select properties.plan, count() from events group by 1 order by 1, 2",
    // `JSONExtract*` of a key: never from its column, which reads the same for `1` and `"1"`
    // (`qty`, `score`, `opt_in` are typed with both), for a text key (`$browser`), one whose
    // type changes midway (`amount`) and an object (`nested`).
    "select JSONExtractInt(properties, 'qty') as i, JSONExtractUInt(properties, 'qty') as u, \
       JSONExtractFloat(properties, 'qty') as f, JSONExtractBool(properties, 'qty') as b, \
       JSONExtractString(properties, 'qty') as s, JSONExtractRaw(properties, 'qty') as r, \
       properties.qty as p, count() from events group by i, u, f, b, s, r, p \
       order by i, u, f, b, s, r, p",
    "select JSONExtractFloat(properties, 'score') as f, JSONExtractInt(properties, 'score') as i, \
       JSONExtractString(properties, 'score') as s, JSONExtractRaw(properties, 'score') as r, \
       toFloat(properties.score) as p, count() from events group by f, i, s, r, p \
       order by f, i, s, r, p",
    "select JSONExtractBool(properties, 'opt_in') as b, JSONExtractInt(properties, 'opt_in') as i, \
       JSONExtractFloat(properties, 'opt_in') as f, JSONExtractString(properties, 'opt_in') as s, \
       JSONExtractRaw(properties, 'opt_in') as r, properties.opt_in as p, count() from events \
       group by b, i, f, s, r, p order by b, i, f, s, r, p",
    "select JSONExtractInt(properties, 'amount') as i, JSONExtractUInt(properties, 'amount') as u, \
       JSONExtractFloat(properties, 'amount') as f, JSONExtractString(properties, 'amount') as s, \
       JSONExtractRaw(properties, 'amount') as r, count() from events group by i, u, f, s, r \
       order by i, u, f, s, r",
    "select JSONExtractString(properties, '$browser') as s, JSONExtractRaw(properties, '$browser') as r, \
       JSONExtractBool(properties, '$browser') as b, JSONExtractRaw(properties, 'nested') as n, \
       JSONExtractString(properties, 'nested') as ns, count() from events group by s, r, b, n, ns \
       order by s, r, b, n, ns",
    "select sum(JSONExtractInt(properties, 'qty')), sum(JSONExtractFloat(properties, 'score')), \
       countIf(JSONExtractBool(properties, 'opt_in')), countIf(JSONExtractBool(properties, 'flag')), \
       sum(JSONExtractFloat(properties, 'price')), sum(JSONExtractInt(properties, 'price')) from events \
       where JSONExtractString(properties, 'plan') = 'pro' or JSONExtractInt(properties, 'qty') > 1",
    "select JSONExtractString(person.properties, 'email') as e, JSONExtractRaw(person.properties, 'email') \
       as r, count() from events group by e, r order by e, r",
    // Over a property's text, which is read from its column.
    "select JSONExtractInt(properties.nested, 'inner') as i, JSONExtractRaw(properties.nested, 'inner') \
       as r, count() from events group by i, r order by i, r",
];

fn event(i: usize, amount: Value) -> Value {
    let browsers = [
        json!("Chrome"),
        json!("Firefox"),
        Value::Null,
        json!(""),
        json!("Safari"),
    ];
    let mut properties = json!({
        "$browser": browsers[i % browsers.len()],
        "amount": amount,
        "plan": if i.is_multiple_of(3) { json!("pro") } else { json!("free") },
        "ratio": if i.is_multiple_of(4) { json!(0.25 * i as f64) } else { json!(i) },
        "flag": i.is_multiple_of(2),
        "price": 0.5 + (i % 40) as f64,
        "nested": {"inner": i % 5},
        "$set": {"email": format!("user{}@example.com", i % 7)},
    });
    // Typed keys whose values are JSON values or the same text as JSON strings.
    let (n, m) = ((i / 4) % 4, (i / 3) % 3);
    let qty = [json!(n), json!(n.to_string()), Value::Null, json!("")];
    let score = [json!(0.5 + m as f64), json!(format!("{m}.5")), Value::Null];
    let opt_in = [json!(true), json!("true"), json!(false), json!("false")];
    let object = properties.as_object_mut().unwrap();
    object.insert("qty".into(), qty[i % qty.len()].clone());
    object.insert("score".into(), score[i % score.len()].clone());
    if i % 5 != 4 {
        object.insert("opt_in".into(), opt_in[i % opt_in.len()].clone());
    }
    if i % 6 == 5 {
        object.remove("$browser");
    }
    json!({
        "event": if i.is_multiple_of(2) { "view" } else { "buy" },
        "distinct_id": format!("user-{}", i % 7),
        "timestamp": format!("2026-11-{:02}T{:02}:{:02}:00Z", 1 + i % 20, i % 24, i % 60),
        "properties": properties,
    })
}

fn with_shredding(state: &AppState, on: bool) -> AppState {
    let mut config = (*state.config).clone();
    config.query.shredding = on;
    AppState {
        config: Arc::new(config),
        ..state.clone()
    }
}

async fn answers(world: &World, state: &AppState) -> Vec<Value> {
    let app = local::app(state.clone());
    let path = format!("/api/projects/{}/query/", world.bootstrap.project.id);
    let mut answers = Vec::new();
    for text in QUERIES {
        let body =
            json!({"query": {"kind": "HogQLQuery", "query": text}, "refresh": "force_blocking"});
        let request = axum::http::Request::post(&path)
            .header("authorization", format!("Bearer {}", world.admin_key()))
            .header("content-type", "application/json")
            .body(axum::body::Body::from(body.to_string()))
            .unwrap();
        let (status, body) = api_tests::respond(app.clone(), request).await;
        assert_eq!(status, StatusCode::OK, "{}: {text}: {body}", world.name());
        answers.push(
            json!({"columns": body["columns"], "types": body["types"], "results": body["results"]}),
        );
    }
    answers
}

fn assert_same(expected: &[Value], actual: &[Value], stage: &str) {
    let mut bad = Vec::new();
    for ((text, expected), actual) in QUERIES.iter().zip(expected).zip(actual) {
        if expected != actual {
            bad.push(format!(
                "{stage}: {text}\n  off: {expected}\n  on:  {actual}"
            ));
        }
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

async fn coverage(world: &World) -> Vec<(String, bool)> {
    let state = &world.backend.state;
    let team = world.bootstrap.project.id;
    let table = lake::table::open_existing(state, team)
        .await
        .unwrap()
        .unwrap();
    let registry = shred::registry::load(state.store.as_ref(), team)
        .await
        .unwrap();
    let mut keys: Vec<(String, bool)> = shred::Coverage::of(&table, &registry)
        .unwrap()
        .keys
        .into_iter()
        .map(|k| (k.column, k.everywhere))
        .collect();
    keys.sort();
    keys
}

#[tokio::test]
async fn answers_are_the_same_with_shredding_off_mid_backfill_and_after() {
    for world in World::all().await {
        let name = world.name();
        let state = world.backend.state.clone();
        let team = world.bootstrap.project.id;
        let now = state.clock.now();
        // First commit: nothing is shredded yet (too few rows to pick keys).
        world
            .capture((0..120).map(|i| event(i, json!(i % 9))).collect())
            .await;
        lake::commit_all(&state).await.unwrap();
        let off = with_shredding(&state, false);
        let expected_first = answers(&world, &off).await;

        // Keys added by hand, typed as the first rows suggest.
        for (source, key, column_type) in [
            (Source::Properties, "$browser", ColumnType::String),
            (Source::Properties, "amount", ColumnType::Int64),
            (Source::Properties, "plan", ColumnType::String),
            (Source::Properties, "ratio", ColumnType::Float64),
            (Source::Properties, "flag", ColumnType::Boolean),
            (Source::Properties, "price", ColumnType::Float64),
            (Source::Properties, "nested", ColumnType::String),
            (Source::Properties, "qty", ColumnType::Int64),
            (Source::Properties, "score", ColumnType::Float64),
            (Source::Properties, "opt_in", ColumnType::Boolean),
            (Source::PersonProperties, "email", ColumnType::String),
        ] {
            shred::registry::add(
                state.store.as_ref(),
                team,
                source,
                key,
                column_type,
                Origin::Admin,
                now,
            )
            .await
            .unwrap();
        }
        assert_same(
            &expected_first,
            &answers(&world, &state).await,
            &format!("{name} before any shredded file"),
        );

        // Second commit: shredded, but `amount` turns to text and fractions midway, so this
        // file cannot type it (its rows keep reading the JSON).
        let amounts = [
            json!("7"),
            json!(12.5),
            json!("n/a"),
            json!(-3),
            json!(null),
            json!(""),
        ];
        world
            .capture(
                (120..260)
                    .map(|i| event(i, amounts[i % amounts.len()].clone()))
                    .collect(),
            )
            .await;
        lake::commit_all(&state).await.unwrap();
        let expected = answers(&world, &off).await;
        assert_same(
            &expected,
            &answers(&world, &state).await,
            &format!("{name} mid-backfill"),
        );
        let mid = coverage(&world).await;
        assert!(
            mid.iter()
                .any(|(column, everywhere)| column == "p_$browser" && !everywhere),
            "{name}: {mid:?}"
        );

        // `amount` became a text key when its values stopped fitting Int64; compaction
        // backfills every file with what it lacks: every key is then everywhere.
        let report = lake::compaction::compact_team(&state, team).await.unwrap();
        assert!(report.files_backfilled >= 1, "{name}: {report:?}");
        let after = coverage(&world).await;
        for column in [
            "p_$browser",
            "p_amount",
            "p_plan",
            "p_ratio",
            "p_price__f64",
            "p_flag__bool",
            "p_nested",
            "p_qty__i64",
            "p_score__f64",
            "p_opt_in__bool",
            "pp_email",
        ] {
            assert!(
                after.contains(&(column.to_owned(), true)),
                "{name}: {column} not everywhere: {after:?}"
            );
        }
        assert_same(
            &expected,
            &answers(&world, &state).await,
            &format!("{name} after backfill"),
        );
        assert_same(
            &expected,
            &answers(&world, &off).await,
            &format!("{name} off after backfill"),
        );

        // `select *` shows the events columns only.
        let star = QUERIES
            .iter()
            .position(|q| q.starts_with("select * "))
            .unwrap();
        let columns = &answers(&world, &state).await[star]["columns"];
        assert!(
            !columns.to_string().contains("p_") && !columns.to_string().contains("__shred"),
            "{name}: {columns}"
        );

        // A dropped key stops being written; its files still answer the same.
        shred::registry::drop_key(state.store.as_ref(), team, Source::Properties, "plan")
            .await
            .unwrap();
        world
            .capture((260..300).map(|i| event(i, json!(i))).collect())
            .await;
        lake::commit_all(&state).await.unwrap();
        let expected = answers(&world, &off).await;
        assert_same(
            &expected,
            &answers(&world, &state).await,
            &format!("{name} after a drop"),
        );
    }
}
