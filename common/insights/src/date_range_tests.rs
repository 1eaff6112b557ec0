//! Unit tests of `date_range.rs`.

use super::*;
use serde_json::json;

fn context(timezone: Tz, now: &str, week_start_day: u8) -> Context {
    crate::testing::context(timezone, now, week_start_day)
}

fn utc(text: &str) -> DateTime<Utc> {
    crate::testing::utc(text)
}

fn isos(range: &Range, ctx: &Context) -> (String, String) {
    (iso(range.from, ctx), iso(range.to, ctx))
}

#[test]
fn default_is_last_seven_days_to_end_of_today() {
    let ctx = context(Tz::UTC, "2024-03-15T10:30:00Z", 0);
    let range = resolve(None, Interval::Day, &ctx, "dateRange").expect("resolves");
    assert_eq!(
        isos(&range, &ctx),
        (
            "2024-03-08T00:00:00+00:00".into(),
            "2024-03-15T23:59:59.999999+00:00".into()
        )
    );
}

#[test]
fn relative_values_in_the_project_zone() {
    // 02:00 UTC on Mar 15 is still Mar 14 in New York.
    let ctx = context(chrono_tz::America::New_York, "2024-03-15T02:00:00Z", 0);
    let cases = [
        ("-7d", "2024-03-07T00:00:00-05:00"),
        ("-1w", "2024-03-07T00:00:00-05:00"),
        ("-1m", "2024-02-14T00:00:00-05:00"),
        ("-1y", "2023-03-14T00:00:00-04:00"),
        ("-90d", "2023-12-15T00:00:00-05:00"),
        ("mStart", "2024-03-01T00:00:00-05:00"),
        ("yStart", "2024-01-01T00:00:00-05:00"),
        ("dStart", "2024-03-14T00:00:00-04:00"),
        ("-1mStart", "2024-02-01T00:00:00-05:00"),
    ];
    for (text, expected) in cases {
        let range = resolve(
            Some(&json!({"date_from": text})),
            Interval::Day,
            &ctx,
            "dateRange",
        )
        .expect("resolves");
        assert_eq!(iso(range.from, &ctx), expected, "{text}");
        assert_eq!(
            iso(range.to, &ctx),
            "2024-03-14T23:59:59.999999-04:00",
            "{text}"
        );
    }
}

#[test]
fn hours_keep_their_hour() {
    let ctx = context(Tz::UTC, "2024-03-15T10:30:00Z", 0);
    let range = resolve(
        Some(&json!({"date_from": "-24h"})),
        Interval::Hour,
        &ctx,
        "dateRange",
    )
    .expect("resolves");
    assert_eq!(
        isos(&range, &ctx),
        (
            "2024-03-14T10:00:00+00:00".into(),
            "2024-03-15T10:59:59.999999+00:00".into()
        )
    );
    assert_eq!(
        range
            .buckets(Interval::Hour, &ctx, "interval")
            .expect("buckets")
            .len(),
        25
    );
}

#[test]
fn absolute_dates_round_unless_explicit() {
    let ctx = context(chrono_tz::Europe::Paris, "2024-06-01T00:00:00Z", 0);
    let node = json!({"date_from": "2024-01-10T15:00:00", "date_to": "2024-01-12"});
    let range = resolve(Some(&node), Interval::Day, &ctx, "dateRange").expect("resolves");
    assert_eq!(
        isos(&range, &ctx),
        (
            "2024-01-10T00:00:00+01:00".into(),
            "2024-01-12T23:59:59.999999+01:00".into()
        )
    );
    let explicit = json!({"date_from": "2024-01-10T15:00:00", "date_to": "2024-01-12T08:00:00Z", "explicitDate": true});
    let range = resolve(Some(&explicit), Interval::Day, &ctx, "dateRange").expect("resolves");
    assert_eq!(
        isos(&range, &ctx),
        (
            "2024-01-10T15:00:00+01:00".into(),
            "2024-01-12T09:00:00+01:00".into()
        )
    );
}

#[test]
fn malformed_values_name_the_field() {
    let ctx = context(Tz::UTC, "2024-03-15T10:30:00Z", 0);
    let error = resolve(
        Some(&json!({"date_from": "yesterday"})),
        Interval::Day,
        &ctx,
        "dateRange",
    )
    .expect_err("refused");
    assert_eq!(error.attr, "dateRange.date_from");
    let error = resolve(
        Some(&json!({"date_to": 5})),
        Interval::Day,
        &ctx,
        "dateRange",
    )
    .expect_err("refused");
    assert_eq!(error.attr, "dateRange.date_to");
    let error = resolve(
        Some(&json!({"date_from": "2024-02-01", "date_to": "2024-01-01"})),
        Interval::Day,
        &ctx,
        "dateRange",
    )
    .expect_err("refused");
    assert_eq!(error.attr, "dateRange.date_from");
    assert_eq!(
        Interval::from_field(Some(&json!("fortnight")), Interval::Day, "interval")
            .expect_err("refused")
            .attr,
        "interval"
    );
    assert_eq!(
        Interval::from_field(Some(&json!("Week")), Interval::Day, "x"),
        Ok(Interval::Week)
    );
}

#[test]
fn all_starts_at_the_epoch() {
    let ctx = context(Tz::UTC, "2024-03-15T10:30:00Z", 0);
    let range = resolve(
        Some(&json!({"date_from": "all"})),
        Interval::Day,
        &ctx,
        "dateRange",
    )
    .expect("resolves");
    assert!(range.from_all());
}

#[test]
fn day_buckets_across_new_york_dst() {
    let ctx = context(chrono_tz::America::New_York, "2024-06-01T00:00:00Z", 0);
    let node = json!({"date_from": "2024-03-09", "date_to": "2024-03-11"});
    let range = resolve(Some(&node), Interval::Day, &ctx, "dateRange").expect("resolves");
    let buckets = range
        .buckets(Interval::Day, &ctx, "interval")
        .expect("buckets");
    let starts: Vec<String> = buckets.iter().map(|b| b.to_rfc3339()).collect();
    assert_eq!(
        starts,
        [
            "2024-03-09T00:00:00-05:00",
            "2024-03-10T00:00:00-05:00",
            "2024-03-11T00:00:00-04:00"
        ]
    );
    // 03:30 UTC on the 11th is the evening of the 10th locally.
    let bucket = bucket_start(utc("2024-03-11T03:30:00Z"), Interval::Day, &ctx);
    assert_eq!(bucket, buckets[1]);
    assert_eq!(day(&bucket, Interval::Day), "2024-03-10");
    assert_eq!(label(&bucket, Interval::Day), "10-Mar-2024");
}

#[test]
fn hour_buckets_across_fall_back_stay_distinct() {
    let ctx = context(chrono_tz::America::New_York, "2024-12-01T00:00:00Z", 0);
    let node = json!({"date_from": "2024-11-03T00:00:00", "date_to": "2024-11-03T03:00:00"});
    let range = resolve(Some(&node), Interval::Hour, &ctx, "dateRange").expect("resolves");
    let buckets = range
        .buckets(Interval::Hour, &ctx, "interval")
        .expect("buckets");
    let days: Vec<String> = buckets.iter().map(|b| day(b, Interval::Hour)).collect();
    // 01:00 happens twice; the absolute date_to (03:00) is not rounded for hours.
    assert_eq!(
        days,
        [
            "2024-11-03 00:00:00",
            "2024-11-03 01:00:00",
            "2024-11-03 01:00:00",
            "2024-11-03 02:00:00",
            "2024-11-03 03:00:00"
        ]
    );
    assert_eq!(label(&buckets[0], Interval::Hour), "3-Nov-2024 00:00");
}

#[test]
fn paris_spring_forward_gap_and_month_buckets() {
    let ctx = context(chrono_tz::Europe::Paris, "2024-06-01T00:00:00Z", 0);
    let node =
        json!({"date_from": "2024-03-31T02:30:00", "explicitDate": true, "date_to": "2024-04-01"});
    let range = resolve(Some(&node), Interval::Day, &ctx, "dateRange").expect("resolves");
    assert_eq!(iso(range.from, &ctx), "2024-03-31T03:30:00+02:00");
    let node = json!({"date_from": "2024-01-31", "date_to": "2024-04-15"});
    let range = resolve(Some(&node), Interval::Month, &ctx, "dateRange").expect("resolves");
    let starts: Vec<String> = range
        .buckets(Interval::Month, &ctx, "interval")
        .expect("buckets")
        .iter()
        .map(|b| b.to_rfc3339())
        .collect();
    assert_eq!(
        starts,
        [
            "2024-01-01T00:00:00+01:00",
            "2024-02-01T00:00:00+01:00",
            "2024-03-01T00:00:00+01:00",
            "2024-04-01T00:00:00+02:00"
        ]
    );
}

#[test]
fn month_arithmetic_clamps_at_month_end() {
    let ctx = context(Tz::UTC, "2024-03-31T12:00:00Z", 0);
    let range = resolve(
        Some(&json!({"date_from": "-1m"})),
        Interval::Day,
        &ctx,
        "dateRange",
    )
    .expect("resolves");
    assert_eq!(iso(range.from, &ctx), "2024-02-29T00:00:00+00:00");
    let range = resolve(
        Some(&json!({"date_from": "-1mEnd", "date_to": "-1mEnd"})),
        Interval::Day,
        &ctx,
        "dateRange",
    )
    .expect("resolves");
    assert_eq!(iso(range.to, &ctx), "2024-02-29T23:59:59.999999+00:00");
}

#[test]
fn week_buckets_start_on_sunday_or_monday() {
    // 2024-01-10 is a Wednesday.
    for (week_start_day, first) in [(0, "2024-01-07"), (1, "2024-01-08")] {
        let ctx = context(
            chrono_tz::America::New_York,
            "2024-06-01T00:00:00Z",
            week_start_day,
        );
        let node = json!({"date_from": "2024-01-10", "date_to": "2024-01-21"});
        let range = resolve(Some(&node), Interval::Week, &ctx, "dateRange").expect("resolves");
        let buckets = range
            .buckets(Interval::Week, &ctx, "interval")
            .expect("buckets");
        assert_eq!(day(&buckets[0], Interval::Week), first);
        let expected_len = if week_start_day == 0 { 3 } else { 2 };
        assert_eq!(buckets.len(), expected_len, "week start {week_start_day}");
        let sunday = bucket_start(utc("2024-01-14T15:00:00Z"), Interval::Week, &ctx);
        assert_eq!(
            day(&sunday, Interval::Week),
            if week_start_day == 0 {
                "2024-01-14"
            } else {
                "2024-01-08"
            }
        );
    }
}

#[test]
fn too_many_buckets_is_refused() {
    let ctx = context(Tz::UTC, "2024-03-15T10:30:00Z", 0);
    let range = resolve(
        Some(&json!({"date_from": "-2y"})),
        Interval::Minute,
        &ctx,
        "dateRange",
    )
    .expect("resolves");
    assert_eq!(
        range
            .buckets(Interval::Minute, &ctx, "interval")
            .expect_err("refused")
            .attr,
        "interval"
    );
}

#[test]
fn previous_period_has_the_same_length() {
    let ctx = context(Tz::UTC, "2024-03-15T10:30:00Z", 0);
    let node = json!({"date_from": "2024-01-08", "date_to": "2024-01-14"});
    let range = resolve(Some(&node), Interval::Day, &ctx, "dateRange").expect("resolves");
    let previous = range.previous_period(Interval::Day, Some(&node), &ctx);
    assert_eq!(
        isos(&previous, &ctx),
        (
            "2024-01-01T00:00:00+00:00".into(),
            "2024-01-07T23:59:59.999999+00:00".into()
        )
    );
    // -7d spans 8 days (today included); PostHog starts the previous one a day later.
    let node = json!({"date_from": "-7d"});
    let range = resolve(Some(&node), Interval::Day, &ctx, "dateRange").expect("resolves");
    let previous = range.previous_period(Interval::Day, Some(&node), &ctx);
    assert_eq!(
        isos(&previous, &ctx),
        (
            "2024-03-01T00:00:00+00:00".into(),
            "2024-03-08T23:59:59.999999+00:00".into()
        )
    );
}

#[test]
fn compare_to_shifts_both_bounds() {
    let ctx = context(Tz::UTC, "2024-03-15T10:30:00Z", 0);
    let node = json!({"date_from": "2024-03-01", "date_to": "2024-03-31"});
    let range = resolve(Some(&node), Interval::Day, &ctx, "dateRange").expect("resolves");
    let shifted = range
        .shifted_back("-1m", &ctx, "compareFilter.compare_to")
        .expect("shifts");
    assert_eq!(
        isos(&shifted, &ctx),
        (
            "2024-02-01T00:00:00+00:00".into(),
            "2024-02-29T23:59:59.999999+00:00".into()
        )
    );
    assert_eq!(
        range
            .shifted_back("soon", &ctx, "compareFilter.compare_to")
            .expect_err("refused")
            .attr,
        "compareFilter.compare_to"
    );
}

#[test]
fn engine_times_read_back_in_the_project_zone() {
    let ctx = context(chrono_tz::America::New_York, "2024-06-01T00:00:00Z", 0);
    let from_offset = parse_engine_time(&json!("2024-03-10T05:00:00+00:00"), &ctx).expect("parses");
    assert_eq!(from_offset.to_rfc3339(), "2024-03-10T00:00:00-05:00");
    let from_date = parse_engine_time(&json!("2024-03-01"), &ctx).expect("parses");
    assert_eq!(from_date.to_rfc3339(), "2024-03-01T00:00:00-05:00");
    assert!(parse_engine_time(&json!(12), &ctx).is_none());
    assert_eq!(
        sql_datetime(utc("2024-03-10T05:00:00Z")),
        "toDateTime('2024-03-10 05:00:00.000000Z')"
    );
}
