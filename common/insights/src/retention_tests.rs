//! Unit tests of `retention.rs`.

use super::*;

fn context(timezone: chrono_tz::Tz, week_start_day: u8) -> Context {
    crate::testing::context(timezone, "2026-11-22T10:00:00Z", week_start_day)
}

fn utc(text: &str) -> DateTime<Utc> {
    crate::testing::utc(text)
}

fn error_attr(node: Value) -> String {
    match compile(&node, &context(chrono_tz::UTC, 0)) {
        Err(invalid) => invalid.attr,
        Ok(_) => "compiled".into(),
    }
}

#[test]
fn invalid_fields_are_named() {
    let base = |filter: Value| json!({"kind": "RetentionQuery", "retentionFilter": filter});
    assert_eq!(
        error_attr(json!({"kind": "RetentionQuery"})),
        "retentionFilter"
    );
    assert_eq!(
        error_attr(base(json!({"period": "Year"}))),
        "retentionFilter.period"
    );
    assert_eq!(
        error_attr(base(json!({"period": 3}))),
        "retentionFilter.period"
    );
    assert_eq!(
        error_attr(base(json!({"totalIntervals": -2}))),
        "retentionFilter.totalIntervals"
    );
    assert_eq!(
        error_attr(base(json!({"totalIntervals": 2.5}))),
        "retentionFilter.totalIntervals"
    );
    assert_eq!(
        error_attr(base(json!({"totalIntervals": "8"}))),
        "retentionFilter.totalIntervals"
    );
    assert_eq!(
        error_attr(base(json!({"retentionType": "retention_sometimes"}))),
        "retentionFilter.retentionType"
    );
    assert_eq!(
        error_attr(base(json!({"cumulative": "yes"}))),
        "retentionFilter.cumulative"
    );
    assert_eq!(
        error_attr(base(json!({"minimumOccurrences": 0}))),
        "retentionFilter.minimumOccurrences"
    );
    assert_eq!(
        error_attr(base(json!({"targetEntity": {"id": 3, "type": "actions"}}))),
        "retentionFilter.targetEntity.id"
    );
    assert_eq!(
        error_attr(base(
            json!({"returningEntity": {"id": 3, "type": "events"}})
        )),
        "retentionFilter.returningEntity.id"
    );
    let breakdown = json!({"kind": "RetentionQuery", "retentionFilter": {},
        "breakdownFilter": {"breakdown": "$browser", "breakdown_type": "event"}});
    assert_eq!(error_attr(breakdown), "breakdownFilter");
}

#[test]
fn total_intervals_defaults_follow_posthog() {
    let lookahead = |filter: Value| {
        let node = json!({"kind": "RetentionQuery", "retentionFilter": filter});
        settings(&node, &context(chrono_tz::UTC, 0)).map(|s| s.lookahead)
    };
    assert_eq!(lookahead(json!({})), Ok(8));
    assert_eq!(lookahead(json!({"totalIntervals": null})), Ok(7));
    assert_eq!(lookahead(json!({"totalIntervals": 0})), Ok(7));
    assert_eq!(lookahead(json!({"totalIntervals": 3})), Ok(3));
}

#[test]
fn entity_text_is_quoted() {
    let ctx = context(chrono_tz::UTC, 0);
    let condition = entity_condition(Some(&json!({"id": "it's", "type": "events"})), "e", &ctx);
    assert_eq!(condition, Ok(r"event = 'it\'s'".to_string()));
    assert_eq!(
        entity_condition(None, "e", &ctx),
        Ok("event = '$pageview'".to_string())
    );
    assert_eq!(
        entity_condition(Some(&json!({"id": null})), "e", &ctx),
        Ok("true".to_string())
    );
}

#[test]
fn intervals_round_in_the_project_zone() {
    let paris = context(chrono_tz::Europe::Paris, 0);
    // 2026-03-29 00:30 in Paris is still the 28th in UTC.
    let instant = utc("2026-03-28T23:30:00Z");
    assert_eq!(
        start_of_interval(instant, Period::Day, &paris),
        utc("2026-03-28T23:00:00Z")
    );
    // Across the spring change, the next local midnight is 23 hours later.
    let next = step(utc("2026-03-28T23:00:00Z"), Period::Day, 1, &paris);
    assert_eq!(next, utc("2026-03-29T22:00:00Z"));
    // Weeks start on Sunday by default, on Monday with week_start_day 1.
    let wednesday = utc("2026-11-18T12:00:00Z");
    let sunday_weeks = context(chrono_tz::UTC, 0);
    let monday_weeks = context(chrono_tz::UTC, 1);
    assert_eq!(
        start_of_interval(wednesday, Period::Week, &sunday_weeks),
        utc("2026-11-15T00:00:00Z")
    );
    assert_eq!(
        start_of_interval(wednesday, Period::Week, &monday_weeks),
        utc("2026-11-16T00:00:00Z")
    );
    assert_eq!(
        start_of_interval(wednesday, Period::Month, &paris),
        utc("2026-10-31T23:00:00Z")
    );
    assert_eq!(
        step(utc("2026-01-31T00:00:00Z"), Period::Month, 1, &sunday_weeks),
        utc("2026-02-28T00:00:00Z")
    );
}

#[test]
fn grid_fills_zeros_and_drops_rows_out_of_range() {
    let table = Table {
        rows: vec![
            vec![json!(0), json!(0), json!(5)],
            vec![json!(0), json!(2), json!(3)],
            vec![json!(1), json!(0), json!(4)],
            vec![json!(1), json!(9), json!(1)],
            vec![json!(7), json!(0), json!(1)],
        ],
        ..Table::default()
    };
    let grid = counts_grid(&table, 2, 3, false);
    assert_eq!(grid, Ok(vec![vec![5, 0, 3], vec![4, 0, 0]]));
    let bad = Table {
        rows: vec![vec![json!("x"), json!(0), json!(1)]],
        ..Table::default()
    };
    assert!(counts_grid(&bad, 1, 1, false).is_err());
}

#[test]
fn cumulative_counts_every_interval_up_to_the_last_return() {
    // Cohort 0: 2 actors never returned, 1 last returned at k=1, 3 at k=2.
    let table = Table {
        rows: vec![
            vec![json!(0), json!(0), json!(2)],
            vec![json!(0), json!(1), json!(1)],
            vec![json!(0), json!(2), json!(3)],
        ],
        ..Table::default()
    };
    assert_eq!(counts_grid(&table, 1, 4, true), Ok(vec![vec![6, 4, 3, 0]]));
}

#[test]
fn response_has_posthog_labels_and_dates() {
    let dates = vec!["2026-03-01T00:00:00+01:00".to_string()];
    let value = response(Period::Week, &dates, &[vec![3, 1]]);
    assert_eq!(
        value,
        json!({"results": [{"date": "2026-03-01T00:00:00+01:00", "label": "Week 0", "values": [
            {"count": 3, "label": "Week 0"}, {"count": 1, "label": "Week 1"}]}]})
    );
}

#[test]
fn one_query_with_an_explicit_limit_and_quoted_names() {
    let ctx = Context {
        timezone: chrono_tz::Europe::Paris,
        now: DateTime::<Utc>::UNIX_EPOCH + Duration::days(20_000),
        week_start_day: 0,
        check_expression: |_| Ok(()),
        experiment: None,
        cohorts: Default::default(),
        actions: Default::default(),
        test_account_filters: Default::default(),
        path_cleaning_rules: Default::default(),
    };
    let node = json!({"kind": "RetentionQuery",
        "dateRange": {"date_from": "2026-10-01", "date_to": "2026-10-10"},
        "retentionFilter": {"period": "Week", "retentionType": "retention_first_time",
            "targetEntity": {"id": "sign'up", "type": "events"}}});
    let compiled = compile(&node, &ctx);
    let queries = compiled.map(|c| c.queries).unwrap_or_default();
    assert_eq!(queries.len(), 1);
    let text = &queries[0];
    assert!(text.ends_with("LIMIT 50000"), "{text}");
    assert!(text.contains(r"event = 'sign\'up'"), "{text}");
    // Weeks of the Paris calendar, from Sunday 27 September (22:00 UTC the day before).
    assert!(
        text.contains("timestamp >= toDateTime('2026-09-26 22:00:00.000000Z')"),
        "{text}"
    );
    assert!(
        text.contains("timestamp < toDateTime('2026-10-10 22:00:00.000000Z')"),
        "{text}"
    );
}
