//! `aggregateFunnel` through the dialect: planned, grouped per actor, exact at the window edge.

use engine::{Bindings, Limits};
use serde_json::{Value, json};

async fn run(text: &str) -> Vec<Vec<Value>> {
    let backend = common::testing::TestState::embedded().await;
    let limits = Limits {
        memory_bytes: 64 * 1024 * 1024,
        timeout: std::time::Duration::from_secs(30),
    };
    let prepared = engine::prepare(text, &Bindings::default()).unwrap();
    let session = engine::open_session(&backend.state, 1, "UTC", &prepared, &limits)
        .await
        .unwrap();
    let output = session.execute(&prepared, &limits).await;
    match output {
        Ok(output) => output.results,
        Err(error) => panic!("{text}: {error}\n{}", prepared.sql),
    }
}

/// Rows `(actor, seconds after 2024-01-01, step mask, exclusion mask)` as a dialect subquery.
fn rows(rows: &[(&str, i64, i64, i64)]) -> String {
    rows.iter()
        .map(|(actor, seconds, steps, exclusions)| {
            let (minutes, seconds) = (seconds / 60, seconds % 60);
            format!(
                "SELECT '{actor}' AS actor, toDateTime('2024-01-01 00:{minutes:02}:{seconds:02}') AS t, {steps} AS steps, {exclusions} AS exclusions"
            )
        })
        .collect::<Vec<_>>()
        .join(" UNION ALL ")
}

#[tokio::test]
async fn ordered_funnel_per_actor() {
    let data = rows(&[
        // a: converts exactly at the 60 s edge.
        ("a", 0, 1, 0),
        ("a", 30, 2, 0),
        ("a", 60, 4, 0),
        // b: third step one second past the edge.
        ("b", 0, 1, 0),
        ("b", 30, 2, 0),
        ("b", 61, 4, 0),
        // c: excluded between steps 0 and 1.
        ("c", 0, 1, 0),
        ("c", 5, 0, 1),
        ("c", 10, 2, 0),
        // d: only a later step, never entered.
        ("d", 0, 2, 0),
    ]);
    let text = format!(
        "SELECT actor, aggregateFunnel(3, 60, 'ordered', t, steps, exclusions) AS r FROM ({data}) GROUP BY actor ORDER BY actor LIMIT 100"
    );
    let results = run(&text).await;
    assert_eq!(
        results,
        vec![
            vec![json!("a"), json!([2.0, 30.0, 30.0])],
            vec![json!("b"), json!([1.0, 30.0, null])],
            vec![json!("c"), Value::Null],
            vec![json!("d"), Value::Null],
        ]
    );
}

#[tokio::test]
async fn outer_aggregation_over_the_result() {
    let data = rows(&[
        ("a", 0, 1, 0),
        ("a", 10, 2, 0),
        ("b", 0, 1, 0),
        ("b", 20, 2, 0),
        ("c", 0, 1, 0),
    ]);
    let text = format!(
        "SELECT countIf(arrayElement(r, 1) >= 0) AS entered, countIf(arrayElement(r, 1) >= 1) AS converted, avg(arrayElement(r, 2)) AS average, median(arrayElement(r, 2)) AS middle \
         FROM (SELECT actor, aggregateFunnel(2, 3600, 'strict', t, steps, exclusions) AS r FROM ({data}) GROUP BY actor) WHERE r IS NOT NULL LIMIT 10"
    );
    let results = run(&text).await;
    assert_eq!(
        results,
        vec![vec![json!(3), json!(2), json!(15.0), json!(15.0)]]
    );
}

#[tokio::test]
async fn flagged_events_do_not_open_attempts() {
    // Bit 62 of the step mask: the event counts for its steps but cannot start an attempt.
    let flag = 1i64 << 62;
    let data = rows(&[
        // a: the flagged step 0 at 50 s does not restart the clock.
        ("a", 0, 1, 0),
        ("a", 50, 1 + flag, 0),
        ("a", 60, 2, 0),
        // b: only a flagged step 0: not in the funnel.
        ("b", 0, 1 + flag, 0),
        ("b", 10, 2, 0),
    ]);
    let text = format!(
        "SELECT actor, aggregateFunnel(2, 100, 'ordered', t, steps, exclusions) AS r FROM ({data}) GROUP BY actor ORDER BY actor LIMIT 100"
    );
    assert_eq!(
        run(&text).await,
        vec![
            vec![json!("a"), json!([1.0, 60.0])],
            vec![json!("b"), Value::Null],
        ]
    );
}
