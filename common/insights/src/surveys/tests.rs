use serde_json::{Value, json};
use survey_core::Survey;
use uuid::Uuid;

use super::*;
use crate::Table;
use crate::testing::utc;

fn survey() -> Survey {
    serde_json::from_value(json!({
        "id": "0190a1b2-0000-7000-8000-000000000001", "team_id": 1, "name": "s",
        "type": "popover", "created_at": "2026-01-01T00:00:00Z",
        "questions": [
            {"type": "rating", "question": "How?", "scale": 10, "id": "q-rating"},
            {"type": "open", "question": "Why?", "id": "q-open"},
            {"type": "multiple_choice", "question": "Which?", "choices": ["a", "b", "c"],
             "id": "q-multi"},
        ],
    }))
    .expect("survey")
}

fn table(rows: Value) -> Table {
    Table {
        rows: serde_json::from_value(rows).expect("rows"),
        ..Table::default()
    }
}

/// Every `{name}` of a text has a value and no user value is in the text itself.
fn assert_bound(query: &SurveyQuery, secrets: &[&str]) {
    for (name, _) in &query.values {
        assert!(query.text.contains(&format!("{{{name}}}")), "{name} unused");
    }
    let mut rest = query.text.as_str();
    while let Some(start) = rest.find('{') {
        let end = rest[start..].find('}').expect("closed") + start;
        assert!(
            query.values.contains_key(&rest[start + 1..end]),
            "{}",
            query.text
        );
        rest = &rest[end + 1..];
    }
    for secret in secrets {
        assert!(!query.text.contains(secret), "{secret} in {}", query.text);
    }
    assert!(query.text.contains(" LIMIT "), "{}", query.text);
}

#[test]
fn stats_queries_bind_every_value_and_dedup_sent_only() {
    let id = Uuid::now_v7();
    let archived = Uuid::now_v7();
    let window = Window {
        from: Some(utc("2026-02-01T00:00:00Z")),
        to: Some(utc("2026-02-10T12:00:00Z")),
    };
    let queries = stats::queries(&[id], &window, &[archived]);
    for query in [&queries.events, &queries.dismissed_and_sent] {
        assert_bound(query, &[&id.to_string(), &archived.to_string(), "2026-02"]);
        assert!(query.text.contains("argMax(uuid, timestamp)"));
        assert!(query.text.contains(SUBMISSION_KEY));
        assert!(query.text.contains("rep_uuid NOT IN ("));
        let values: Vec<&Value> = query.values.values().collect();
        assert!(values.contains(&&json!(id.to_string())));
        assert!(values.contains(&&json!(archived.to_string())));
        assert!(values.contains(&&json!("2026-02-01 00:00:00.000000Z")));
        assert!(values.contains(&&json!("2026-02-10 12:00:00.000000Z")));
    }
    // Several surveys (global stats), no window, nothing archived.
    let other = Uuid::now_v7();
    let global = stats::queries(&[id, other], &Window::default(), &[]);
    assert_bound(&global.events, &[&other.to_string()]);
    assert!(global.events.text.contains("properties.$survey_id IN ("));
    assert!(!global.events.text.contains("NOT IN"));
    assert!(!global.events.text.contains("timestamp >="));
}

#[test]
fn stats_adjustments_and_rates_follow_posthog() {
    let events = table(json!([
        [
            "survey dismissed",
            2,
            2,
            "2026-02-01T10:00:00+01:00",
            "2026-02-02T10:00:00+01:00"
        ],
        [
            "survey sent",
            3,
            2,
            "2026-02-01T09:00:00Z",
            "2026-02-03T09:00:00.500000Z"
        ],
        [
            "survey shown",
            9,
            6,
            "2026-02-01T08:00:00Z",
            "2026-02-04T08:00:00Z"
        ],
    ]));
    let stats = stats::assemble(&events, &table(json!([[1]])));
    // One person dismissed and answered: 2 - 1 dismissed persons; 6 - 1 - 2 only seen.
    assert_eq!(stats.dismissed.unique_persons, 1);
    assert_eq!(stats.shown.unique_persons_only_seen, 3);
    assert_eq!(stats.shown.total_count_only_seen, 4);
    assert_eq!(stats.sent.total_count_only_seen, 0);
    assert_eq!(
        stats.to_json(),
        json!({
            "stats": {
                "survey shown": {"total_count": 9, "unique_persons": 6,
                    "first_seen": "2026-02-01T08:00:00Z", "last_seen": "2026-02-04T08:00:00Z",
                    "unique_persons_only_seen": 3, "total_count_only_seen": 4},
                "survey dismissed": {"total_count": 2, "unique_persons": 1,
                    "first_seen": "2026-02-01T09:00:00Z", "last_seen": "2026-02-02T09:00:00Z",
                    "unique_persons_only_seen": 0, "total_count_only_seen": 0},
                "survey sent": {"total_count": 3, "unique_persons": 2,
                    "first_seen": "2026-02-01T09:00:00Z", "last_seen": "2026-02-03T09:00:00.500Z",
                    "unique_persons_only_seen": 0, "total_count_only_seen": 0},
            },
            "rates": {"response_rate": 33.33, "dismissal_rate": 22.22,
                "unique_users_response_rate": 33.33, "unique_users_dismissal_rate": 16.67},
        })
    );

    // Floors at 0, and no shown events means no rates.
    let events = table(json!([
        ["survey dismissed", 1, 1, null, null],
        ["survey sent", 4, 3, null, null],
        ["survey shown", 2, 1, null, null],
    ]));
    let stats = stats::assemble(&events, &table(json!([[5]])));
    assert_eq!(stats.dismissed.unique_persons, 0);
    assert_eq!(stats.shown.unique_persons_only_seen, 0);
    assert_eq!(stats.shown.total_count_only_seen, 0);
    assert_eq!(stats.rates.response_rate, 200.0);
    assert_eq!(stats.rates.unique_users_response_rate, 300.0);
    let none = stats::assemble(&table(json!([])), &table(json!([])));
    assert_eq!(none.rates, stats::Rates::default());
    assert_eq!(
        none.to_json()["stats"]["survey sent"]["first_seen"],
        Value::Null
    );
    assert_eq!(
        stats::empty_json(),
        json!({"stats": {}, "rates": {"response_rate": 0.0, "dismissal_rate": 0.0,
            "unique_users_response_rate": 0.0, "unique_users_dismissal_rate": 0.0}})
    );
    // Python's round: half to even on the exact value.
    assert_eq!(stats::rate(1, 32), 3.12);
    assert_eq!(stats::rate(2, 3), 66.67);
}

#[test]
fn survey_stats_carry_the_survey_and_per_question_stats() {
    let mut survey = survey();
    survey.start_date = Some(utc("2026-02-01T00:00:00Z"));
    let stats = stats::assemble(&table(json!([])), &table(json!([])));
    let body = stats.survey_json(&survey, Some(json!([])));
    assert_eq!(body["survey_id"], json!(survey.id.to_string()));
    assert_eq!(body["start_date"], json!("2026-02-01T00:00:00Z"));
    assert_eq!(body["end_date"], Value::Null);
    assert_eq!(body["per_question_stats"], json!([]));
    assert!(
        stats
            .survey_json(&survey, None)
            .get("per_question_stats")
            .is_none()
    );
}

#[test]
fn answers_read_the_id_key_then_the_legacy_key() {
    assert_eq!(legacy_key(0), "$survey_response");
    assert_eq!(legacy_key(2), "$survey_response_2");
    let mut params = Params::default();
    let expression = answer_expression(&mut params, "q'x", 1);
    let query = params.finish(expression);
    assert_eq!(
        query.values.values().cloned().collect::<Vec<_>>(),
        vec![json!("$survey_response_q'x"), json!("$survey_response_1")]
    );
    assert!(
        query
            .text
            .starts_with("coalesce(if(JSONExtractRaw(properties, {p0}) IN")
    );
    assert!(!query.text.contains("q'x"));
}

#[test]
fn per_question_stats_count_choices_and_average_ratings() {
    let survey = survey();
    let query = questions::query(&survey, &Window::default(), &[Uuid::nil()]).expect("query");
    assert_bound(&query, &["q-rating", "q-multi"]);
    assert!(query.text.contains("isNotNull(v1) AS o1"));
    assert!(query.text.contains("GROUP BY v0, isNotNull(v1), v2"));
    assert!(
        query
            .text
            .contains("argMaxIf(r0, timestamp, isNotNull(r0))")
    );

    // Columns: rating raw, open answered, multiple raw, submissions.
    let rows = table(json!([
        ["7", 1, "[\"a\",\"b\"]", 2],
        ["\"9\"", 0, "[\"b\"]", 1],
        [null, 1, null, 3],
        ["\"n/a\"", 1, "\"c\"", 1],
    ]));
    let stats = questions::assemble(&survey, Some(&rows));
    assert_eq!(
        questions::to_json(&stats),
        json!([
            {"question_id": "q-rating", "question_index": 0, "question_text": "How?",
             "question_type": "rating", "response_count": 4,
             "distribution": {"7": 2, "9": 1, "n/a": 1}, "average": (7.0 * 2.0 + 9.0) / 3.0},
            {"question_id": "q-open", "question_index": 1, "question_text": "Why?",
             "question_type": "open", "response_count": 6, "distribution": {}, "average": null},
            {"question_id": "q-multi", "question_index": 2, "question_text": "Which?",
             "question_type": "multiple_choice", "response_count": 4,
             "distribution": {"a": 2, "b": 3, "c": 1}, "average": null},
        ])
    );
    let empty = questions::assemble(&survey, None);
    assert_eq!(empty[0].response_count, 0);
    assert_eq!(empty[0].average, None);
}

#[test]
fn responses_count_is_a_flat_map() {
    let id = Uuid::now_v7();
    let query = count::query(utc("2026-01-01T00:00:00Z"), Some(&[id]), &[]);
    assert_bound(&query, &[&id.to_string()]);
    let all = count::query(utc("2026-01-01T00:00:00Z"), None, &[]);
    assert!(all.text.contains("isNotNull(properties.$survey_id)"));
    assert_eq!(
        count::assemble(&table(json!([["a", 2], ["b", 0], [null, 3]]))),
        json!({"a": 2})
    );
}

#[test]
fn response_filters_are_checked() {
    use responses::ResponseFilters;
    let survey = survey();
    let check = |filters: ResponseFilters| filters.check(&survey).map_err(|e| e.attr);
    assert_eq!(check(ResponseFilters::default()), Ok(None));
    for limit in [0, 501] {
        let filters = ResponseFilters {
            limit,
            ..Default::default()
        };
        assert_eq!(check(filters), Err("limit".into()));
    }
    let scored = ResponseFilters {
        score_gte: Some(5.0),
        ..Default::default()
    };
    assert_eq!(check(scored.clone()), Err("question_id".into()));
    let named = ResponseFilters {
        question_id: Some("q-rating".into()),
        ..scored
    };
    assert_eq!(check(named), Ok(Some(0)));
    let unknown = ResponseFilters {
        question_id: Some("nope".into()),
        ..Default::default()
    };
    assert_eq!(check(unknown), Err("question_id".into()));
}

#[test]
fn responses_query_binds_filters_and_asks_one_more_row() {
    use responses::ResponseFilters;
    let survey = survey();
    let archived = Uuid::now_v7();
    let filters = ResponseFilters {
        since: Some(utc("2026-02-01T00:00:00Z")),
        question_id: Some("q-rating".into()),
        score_gte: Some(7.0),
        score_lte: Some(9.5),
        limit: 20,
        offset: 40,
        ..Default::default()
    };
    let query = responses::query(&survey, &filters, &[archived]).expect("query");
    assert_bound(&query, &[&archived.to_string(), "9.5", "q-rating"]);
    let values: Vec<&Value> = query.values.values().collect();
    assert!(values.contains(&&json!(21)));
    assert!(values.contains(&&json!(40)));
    assert!(values.contains(&&json!(9.5)));
    assert!(query.text.contains("isNotNull(v0)"));
    assert!(query.text.contains("ORDER BY submitted_at DESC"));
    assert!(
        responses::query(
            &survey,
            &ResponseFilters {
                limit: 0,
                ..Default::default()
            },
            &[]
        )
        .is_err()
    );
}

#[test]
fn responses_rows_become_typed_submissions() {
    use responses::ResponseFilters;
    let survey = survey();
    let first = Uuid::now_v7();
    let second = Uuid::now_v7();
    let row = |uuid: Uuid, at: &str, answers: [Value; 3]| {
        let mut row = vec![
            json!(uuid.to_string()),
            json!("alice"),
            Value::Null,
            json!(at),
            json!("Desktop"),
            json!("Chrome"),
            Value::Null,
            Value::Null,
            Value::Null,
            Value::Null,
            json!("https://example.com/"),
            json!("2"),
        ];
        row.extend(answers);
        Value::Array(row)
    };
    let rows = table(json!([
        row(
            second,
            "2026-02-02T10:00:00+00:00",
            [json!("8"), json!("\"great\""), json!("[\"a\",\"c\"]")]
        ),
        row(
            first,
            "2026-02-01T10:00:00+00:00",
            [json!("\"3\""), Value::Null, Value::Null]
        ),
        ["not-a-uuid", "bob", null, "2026-02-01T09:00:00+00:00"],
    ]));
    let filters = ResponseFilters {
        limit: 2,
        ..Default::default()
    };
    let page = responses::assemble(&survey, &filters, &rows);
    assert!(page.has_more);
    assert_eq!(page.rows.len(), 2);
    assert_eq!(page.rows[0].uuid, second);
    assert_eq!(page.rows[0].answers[2].answer, Some(json!(["a", "c"])));
    assert_eq!(page.rows[1].answers[0].answer, Some(json!("3")));
    assert_eq!(page.rows[1].answers[1].answer, None);
    let body = page.to_json();
    assert_eq!(body["limit"], json!(2));
    assert_eq!(body["has_more"], json!(true));
    assert_eq!(
        body["results"][0]["submitted_at"],
        json!("2026-02-02T10:00:00Z")
    );
    assert_eq!(body["results"][0]["answers"][0]["answer"], json!(8));
    assert_eq!(body["results"][0]["answers"][1]["answer"], json!("great"));
    assert_eq!(
        body["results"][0]["answers"][1]["question_type"],
        json!("open")
    );
    assert_eq!(
        body["results"][0]["extra"],
        json!({"device_type": "Desktop", "browser": "Chrome", "os": null,
            "geoip_country_code": null, "geoip_country_name": null, "geoip_city_name": null,
            "current_url": "https://example.com/", "iteration": 2})
    );
}
