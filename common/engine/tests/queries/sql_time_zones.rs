//! Time zones in the dialect: `toTimeZone` keeps the instant and moves truncations to that
//! zone's calendar; `check_expression` accepts exactly one expression.

use engine::{Bindings, Limits};

async fn first_value(text: &str, zone: &str) -> serde_json::Value {
    let backend = common::testing::TestState::embedded().await;
    let limits = Limits {
        memory_bytes: 64 * 1024 * 1024,
        timeout: std::time::Duration::from_secs(30),
    };
    let prepared = engine::prepare(text, &Bindings::default()).unwrap();
    let session = engine::open_session(&backend.state, 1, zone, &prepared, &limits)
        .await
        .unwrap();
    let output = session.execute(&prepared, &limits).await;
    let output = output.unwrap_or_else(|e| panic!("{text}: {e}\n{}", prepared.sql));
    output.results[0][0].clone()
}

#[tokio::test]
async fn truncation_follows_the_zone_given() {
    // 03:00 UTC on Nov 1 is still Oct 31 in New York.
    let day = first_value(
        "select toStartOfDay(toTimeZone(toDateTime('2026-11-01T03:00:00Z'), 'America/New_York'))",
        "America/New_York",
    )
    .await;
    assert_eq!(day, "2026-10-31T00:00:00-04:00");
    let day = first_value(
        "select toStartOfDay(toDateTime('2026-11-01 03:00:00'), 'America/New_York')",
        "UTC",
    )
    .await;
    assert_eq!(day, "2026-10-31T04:00:00+00:00");
    let hour = first_value(
        "select toStartOfHour(toTimeZone(toDateTime('2026-11-01 03:30:00'), 'Asia/Kolkata'))",
        "UTC",
    )
    .await;
    // Kolkata is UTC+5:30: 09:00 local is 03:30 UTC.
    assert_eq!(hour, "2026-11-01T03:30:00+00:00");
    let month = first_value(
        "select toStartOfMonth(toTimeZone(toDateTime('2026-11-01 03:00:00'), 'America/New_York'))",
        "UTC",
    )
    .await;
    assert_eq!(month, "2026-10-01");
}

#[test]
fn single_expressions_only() {
    for ok in [
        "count()",
        "sum(toFloat(properties.price))",
        "properties.$browser",
        "if(event = 'a', 1, 0)",
        "(select 1)",
    ] {
        assert!(engine::check_expression(ok).is_ok(), "{ok}");
    }
    for bad in [
        "1) from persons where (1",
        "1 as a from events",
        "",
        "1; drop table events",
        "{placeholder}",
    ] {
        assert!(engine::check_expression(bad).is_err(), "{bad}");
    }
}

#[tokio::test]
async fn intervals_written_with_their_unit_inside_the_string() {
    let day = first_value(
        "select toDateTime('2026-11-02 00:00:00Z') - interval '1 day'",
        "UTC",
    )
    .await;
    assert_eq!(day, "2026-11-01T00:00:00+00:00");
    let week = first_value(
        "select toDateTime('2026-11-08 00:00:00Z') - INTERVAL '7 days'",
        "UTC",
    )
    .await;
    assert_eq!(week, "2026-11-01T00:00:00+00:00");
}
