//! Dates around daylight-saving changes, interval arithmetic with any count, the project's time
//! zone for naive date-time text and `today()`, and user mistakes reported as query errors.

use engine::{Bindings, Limits, Output, QueryError};

async fn run(text: &str, zone: &str) -> Result<Output, QueryError> {
    let backend = common::testing::TestState::embedded().await;
    let limits = Limits {
        memory_bytes: 64 * 1024 * 1024,
        timeout: std::time::Duration::from_secs(30),
    };
    let prepared = engine::prepare(text, &Bindings::default())?;
    let session = engine::open_session(&backend.state, 1, zone, &prepared, &limits).await?;
    session.execute(&prepared, &limits).await
}

async fn row(text: &str, zone: &str) -> Vec<serde_json::Value> {
    match run(text, zone).await {
        Ok(output) => output.results[0].clone(),
        Err(error) => panic!("{text}: {error:?}"),
    }
}

async fn query_error(text: &str) -> String {
    match run(text, "UTC").await {
        Err(QueryError::Query(message)) => message,
        other => panic!("{text}: expected a query error (400), got {other:?}"),
    }
}

fn local_date(instant: &str, zone: &str) -> String {
    let tz: chrono_tz::Tz = zone.parse().unwrap();
    let instant: chrono::DateTime<chrono::Utc> = instant.parse().unwrap();
    instant.with_timezone(&tz).date_naive().to_string()
}

/// `toStartOfWeek` and the other truncations to a date, on zoned times next to both daylight-
/// saving changes of New York and Paris: the local calendar's date, never an error.
#[tokio::test]
async fn week_month_quarter_year_starts_around_dst() {
    // (instant, zone, toStartOfWeek mode 0 (Sunday), mode 1 (Monday), month)
    let cases = [
        // Saturday 24 October 2026, 02:30 in Paris; the clocks go back at 03:00 on the 25th.
        (
            "2026-10-24T00:30:00Z",
            "Europe/Paris",
            "2026-10-18",
            "2026-10-19",
            "2026-10-01",
        ),
        // Sunday 25 October, 02:30 CET (the repeated hour) and 01:30 CEST.
        (
            "2026-10-25T01:30:00Z",
            "Europe/Paris",
            "2026-10-25",
            "2026-10-19",
            "2026-10-01",
        ),
        (
            "2026-10-24T23:30:00Z",
            "Europe/Paris",
            "2026-10-25",
            "2026-10-19",
            "2026-10-01",
        ),
        // Saturday 28 March 2026, 02:30 in Paris; 02:00-03:00 is skipped on the 29th.
        (
            "2026-03-28T01:30:00Z",
            "Europe/Paris",
            "2026-03-22",
            "2026-03-23",
            "2026-03-01",
        ),
        (
            "2026-03-29T01:30:00Z",
            "Europe/Paris",
            "2026-03-29",
            "2026-03-23",
            "2026-03-01",
        ),
        // Saturday 31 October 2026, 01:30 EDT in New York; 01:00-02:00 repeats on 1 November.
        (
            "2026-10-31T05:30:00Z",
            "America/New_York",
            "2026-10-25",
            "2026-10-26",
            "2026-10-01",
        ),
        (
            "2026-11-01T05:30:00Z",
            "America/New_York",
            "2026-11-01",
            "2026-10-26",
            "2026-11-01",
        ),
        (
            "2026-11-01T06:30:00Z",
            "America/New_York",
            "2026-11-01",
            "2026-10-26",
            "2026-11-01",
        ),
        // Saturday 7 March 2026, 02:30 EST; 02:00-03:00 is skipped on the 8th.
        (
            "2026-03-07T07:30:00Z",
            "America/New_York",
            "2026-03-01",
            "2026-03-02",
            "2026-03-01",
        ),
        (
            "2026-03-08T07:30:00Z",
            "America/New_York",
            "2026-03-08",
            "2026-03-02",
            "2026-03-01",
        ),
        // Late on 31 October in UTC is already November in Paris.
        (
            "2026-10-31T23:30:00Z",
            "Europe/Paris",
            "2026-11-01",
            "2026-10-26",
            "2026-11-01",
        ),
    ];
    for (instant, zone, sunday, monday, month) in cases {
        let t = format!("toTimeZone(toDateTime('{instant}'), '{zone}')");
        let text = format!(
            "select toStartOfWeek({t}), toStartOfWeek({t}, 0), toStartOfWeek({t}, 1), \
             toMonday({t}), toStartOfMonth({t}), toStartOfQuarter({t}), toStartOfYear({t}), \
             toDate({t})"
        );
        for project in ["UTC", zone] {
            let values = row(&text, project).await;
            let quarter = format!("{}-{:02}-01", &month[..4], {
                let m: u32 = month[5..7].parse().unwrap();
                (m - 1) / 3 * 3 + 1
            });
            let year = format!("{}-01-01", &month[..4]);
            assert_eq!(
                values,
                vec![
                    serde_json::json!(sunday),
                    serde_json::json!(sunday),
                    serde_json::json!(monday),
                    serde_json::json!(monday),
                    serde_json::json!(month),
                    serde_json::json!(quarter),
                    serde_json::json!(year),
                    serde_json::json!(local_date(instant, zone)),
                ],
                "{instant} in {zone} (project {project})"
            );
        }
    }
    // Without toTimeZone, a naive text is a wall time of the project's zone.
    let values = row(
        "select toStartOfWeek(toDateTime('2026-10-31 01:30:00')), toStartOfWeek(toDateTime('2026-11-01 01:30:00'), 1), toStartOfWeek(toDate('2026-11-01'))",
        "America/New_York",
    )
    .await;
    assert_eq!(values, vec!["2026-10-25", "2026-10-26", "2026-11-01"]);
}

/// `x + toInterval*(n)` with a column or constant count, `dateAdd`/`dateSub`, `INTERVAL n UNIT`.
#[tokio::test]
async fn interval_arithmetic_with_any_count() {
    let values = row(
        "select toDateTime('2026-11-01 00:00:00') + toIntervalSecond(n), \
                toDateTime('2026-11-01 00:00:00') + toIntervalMinute(n), \
                toDateTime('2026-11-01 00:00:00') - toIntervalHour(n), \
                toDateTime('2026-11-01 00:00:00') + toIntervalDay(n), \
                toDateTime('2026-11-01 00:00:00') + toIntervalWeek(n), \
                toDateTime('2026-01-31 00:00:00') + toIntervalMonth(n / 90), \
                toIntervalDay(2) + toDateTime('2026-11-01 00:00:00'), \
                toDateTime('2026-11-01 00:00:00') + toIntervalSecond(3), \
                dateAdd('minute', n, toDateTime('2026-11-01 00:00:00')), \
                dateSub('day', n, toDateTime('2026-11-01 00:00:00')), \
                dateAdd(toDateTime('2026-11-01 00:00:00'), INTERVAL 2 DAY), \
                toDateTime('2026-11-01 00:00:00') - INTERVAL 1 WEEK, \
                toDate('2026-11-01') + toIntervalDay(n), \
                toDate('2026-03-31') - toIntervalMonth(1), \
                toDate('2026-11-01') + toIntervalHour(5), \
                toDateTime('2024-02-29 12:00:00') + toIntervalYear(1), \
                toDateTime('2026-11-01 00:00:00') + toIntervalQuarter(1) \
         from (select 90 as n)",
        "UTC",
    )
    .await;
    assert_eq!(
        values,
        vec![
            "2026-11-01T00:01:30+00:00",
            "2026-11-01T01:30:00+00:00",
            "2026-10-28T06:00:00+00:00",
            "2027-01-30T00:00:00+00:00",
            "2028-07-23T00:00:00+00:00",
            "2026-02-28T00:00:00+00:00",
            "2026-11-03T00:00:00+00:00",
            "2026-11-01T00:00:03+00:00",
            "2026-11-01T01:30:00+00:00",
            "2026-08-03T00:00:00+00:00",
            "2026-11-03T00:00:00+00:00",
            "2026-10-25T00:00:00+00:00",
            "2027-01-30",
            "2026-02-28",
            "2026-11-01T05:00:00+00:00",
            "2025-02-28T12:00:00+00:00",
            "2027-02-01T00:00:00+00:00",
        ]
    );
    // Days move the wall time of the zone: across the end of summer time in Paris, a day is 25
    // hours; landing on the repeated hour takes its first occurrence, on the skipped hour the
    // time after the gap. Hours move the instant.
    let values = row(
        "select toTimeZone(toDateTime('2026-10-24T10:00:00Z'), 'Europe/Paris') + toIntervalDay(n), \
                toTimeZone(toDateTime('2026-10-24T00:30:00Z'), 'Europe/Paris') + INTERVAL 1 DAY, \
                toTimeZone(toDateTime('2026-03-28T01:30:00Z'), 'Europe/Paris') + toIntervalDay(n), \
                toTimeZone(toDateTime('2026-10-24T10:00:00Z'), 'Europe/Paris') + toIntervalHour(24 * n), \
                dateAdd('day', n, toTimeZone(toDateTime('2026-10-31T05:30:00Z'), 'America/New_York')) \
         from (select 1 as n)",
        "UTC",
    )
    .await;
    assert_eq!(
        values,
        vec![
            "2026-10-25T11:00:00+00:00",
            "2026-10-25T00:30:00+00:00",
            "2026-03-29T01:30:00+00:00",
            "2026-10-25T10:00:00+00:00",
            "2026-11-01T05:30:00+00:00",
        ]
    );
}

/// Naive date-time text is read in the project's time zone; `Z` or an offset keeps its own.
/// `today()`, `yesterday()` and `toDate(now())` are the project's local date.
#[tokio::test]
async fn naive_text_and_today_in_the_project_zone() {
    let values = row(
        "select toDateTime('2026-11-01 00:00:00'), toDateTime('2026-11-01T00:00:00Z'), \
                toDateTime('2026-11-01 00:00:00+01:00'), toDateTime('2026-11-01'), \
                parseDateTimeBestEffort('2026-11-01 12:30:00'), toDate('2026-11-01 23:30:00'), \
                toDate('2026-11-01T02:00:00Z'), toDateTime('2026-11-01 00:00:00', 'UTC'), \
                toUnixTimestamp(toDateTime('2026-11-01 01:30:00')), \
                toDateTime('2026-03-08 02:30:00')",
        "America/New_York",
    )
    .await;
    assert_eq!(
        values,
        vec![
            serde_json::json!("2026-11-01T00:00:00-04:00"),
            serde_json::json!("2026-10-31T20:00:00-04:00"),
            serde_json::json!("2026-10-31T19:00:00-04:00"),
            serde_json::json!("2026-11-01T00:00:00-04:00"),
            serde_json::json!("2026-11-01T12:30:00-05:00"),
            serde_json::json!("2026-11-01"),
            // ClickHouse's toDateOrNull reads `YYYY-MM-DD` followed by nothing or a space.
            serde_json::Value::Null,
            serde_json::json!("2026-10-31T20:00:00-04:00"),
            // The first 01:30 of the night the clocks go back (EDT).
            serde_json::json!(1_793_511_000),
            // 02:30 does not exist on 8 March: ClickHouse reads it with the offset after the
            // change (EDT), which is 01:30 EST.
            serde_json::json!("2026-03-08T01:30:00-05:00"),
        ]
    );
    let output = run("select toDateTime('2026-11-01 00:00:00')", "Europe/Paris")
        .await
        .unwrap();
    assert_eq!(output.types[0].1, "DateTime64(6, 'Europe/Paris')");
    // The local date, whatever the hour of the test run: Kiritimati is UTC+14, Niue UTC-11, so
    // their dates differ from each other (and agree with toDate(now()) in the same zone).
    for zone in ["Pacific/Kiritimati", "Pacific/Niue"] {
        let values = row(
            "select today(), toDate(now()), yesterday(), toString(today()) = formatted, today() - yesterday() \
             from (select toString(toDate(now())) as formatted)",
            zone,
        )
        .await;
        let tz: chrono_tz::Tz = zone.parse().unwrap();
        let local = chrono::Utc::now().with_timezone(&tz).date_naive();
        let today = values[0].as_str().unwrap().to_owned();
        // A run across local midnight may see the next day; allow that one.
        assert!(
            today == local.to_string() || today == (local - chrono::Duration::days(1)).to_string(),
            "{zone}: {values:?} vs {local}"
        );
        assert_eq!(values[1], values[0], "{zone}");
        assert_eq!(values[3], serde_json::json!(1), "{zone}");
    }
    let kiritimati = row("select today()", "Pacific/Kiritimati").await;
    let niue = row("select today()", "Pacific/Niue").await;
    assert_ne!(kiritimati, niue);
    // The previous behaviour of the insights compiler's literals: explicit UTC stays UTC.
    let values = row(
        "select toDateTime('2026-11-01 05:00:00.000000Z'), toDateTime('2026-11-01T05:00:00.000000Z')",
        "America/New_York",
    )
    .await;
    // 05:00 UTC is 01:00 EDT: the clocks go back at 06:00 UTC.
    assert_eq!(
        values,
        vec!["2026-11-01T01:00:00-04:00", "2026-11-01T01:00:00-04:00"]
    );
}

/// Bad regular expressions, casts of constants that cannot convert and division by zero are the
/// query's fault: 400s with a clear message.
#[tokio::test]
async fn user_mistakes_are_query_errors() {
    for text in [
        "select match('abc', '(')",
        "select match(s, '(') from (select 'abc' as s)",
        "select extract(s, '[a-') from (select 'abc' as s)",
        "select replaceRegexpAll(s, '(', 'x') from (select 'abc' as s)",
        "select replaceRegexpOne(s, '(', 'x') from (select 'abc' as s)",
        "select s ~ '(' from (select 'abc' as s)",
        "select not match(s, 'a{2,1}') from (select 'abc' as s)",
    ] {
        let message = query_error(text).await;
        assert!(
            message.starts_with("Invalid regular expression `"),
            "{text}: {message}"
        );
    }
    assert_eq!(
        query_error("select match('abc', '(')").await,
        "Invalid regular expression `(`: unclosed group"
    );
    for text in [
        "select CAST('abc' AS INT)",
        "select CAST(s AS INT) from (select 'abc' as s)",
        "select 1 % 0",
        "select n % 0 from (select 1 as n)",
        "select intDiv(1, 0)",
        "select toDateTime('2026-11-01', 'Mars/Olympus')",
        "select toStartOfWeek(toDateTime('2026-11-01'), n) from (select 1 as n)",
        "select dateAdd('fortnight', 1, toDateTime('2026-11-01'))",
    ] {
        query_error(text).await;
    }
    // LIKE patterns cannot be invalid; they match or not.
    assert_eq!(
        row(
            "select 'a(' like 'a(%', 'A(' ilike 'a(', 'x' like '\\\\'",
            "UTC"
        )
        .await,
        vec![1, 1, 0]
    );
}

/// `count()` is a UInt64, as in ClickHouse; inside expressions it still mixes with signed numbers.
#[tokio::test]
async fn count_is_unsigned() {
    let output = run(
        "select count(), count(*) as c, count(n) - 2 as d, countIf(n > 1) from (select 1 as n) order by count() desc",
        "UTC",
    )
    .await
    .unwrap();
    assert_eq!(output.types[0], ("count()".to_owned(), "UInt64".to_owned()));
    assert_eq!(output.types[1], ("c".to_owned(), "UInt64".to_owned()));
    assert_eq!(output.results[0][0], serde_json::json!(1));
    assert_eq!(output.results[0][2], serde_json::json!(-1));
}
