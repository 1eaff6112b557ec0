//! Response sampling, recurrence and the shuffle / branching conflict.

use super::*;

#[tokio::test]
async fn response_sampling() {
    let store = store();
    let (attr, _, detail) = refused(
        &store,
        with(json!({"response_sampling_start_date": "2025-01-09T23:00:00Z"})),
    )
    .await;
    assert_eq!(attr.as_deref(), Some("response_sampling_start_date"));
    assert_eq!(
        detail,
        "Response sampling start date must be today or a future date in UTC. Got 2025-01-09 23:00:00+00:00 when current time is 2025-01-10 00:00:00+00:00"
    );
    let zero = refused(&store, with(json!({"response_sampling_interval": 0}))).await;
    assert_eq!(
        (zero.0.as_deref(), zero.2.as_str()),
        (
            Some("response_sampling_interval"),
            "Response sampling interval must be greater than 0."
        )
    );
    let no_start = refused(
        &store,
        with(json!({"response_sampling_interval": 1, "response_sampling_limit": 10})),
    )
    .await;
    assert_eq!(
        (no_start.0.as_deref(), no_start.2.as_str()),
        (
            Some("response_sampling_start_date"),
            "Response sampling start date should be set if response_sampling_start_date is not zero."
        )
    );
    let huge = detail_of(
        &store,
        with(
            json!({"response_sampling_interval": 200, "response_sampling_interval_type": "month"}),
        ),
    )
    .await;
    assert_eq!(
        huge,
        "Response sampling interval must be at most 3660 days."
    );

    let survey = created(
        &store,
        with(json!({"response_sampling_start_date": "2025-01-10T00:00:00Z", "response_sampling_interval_type": "day",
            "response_sampling_interval": 3, "response_sampling_limit": 10})),
    )
    .await
    .unwrap()
    .survey;
    assert_eq!(
        survey.response_sampling_daily_limits.as_deref(),
        Some(concat!(
            r#"[{"date": "2025-01-10T00:00:00+00:00", "daily_response_limit": 4, "rollout_percentage": 33.33}, "#,
            r#"{"date": "2025-01-11T00:00:00+00:00", "daily_response_limit": 7, "rollout_percentage": 66.67}, "#,
            r#"{"date": "2025-01-12T00:00:00+00:00", "daily_response_limit": 10, "rollout_percentage": 100.0}]"#
        ))
    );
    // Without a limit there is no schedule.
    let unlimited = update(
        &store,
        TEAM,
        &survey,
        body(json!({"response_sampling_limit": 0})),
        now(),
    )
    .await
    .unwrap();
    assert_eq!(unlimited.survey.response_sampling_daily_limits, None);
}

#[tokio::test]
async fn shuffling_and_branching_conflict() {
    let store = store();
    let message = "Question shuffling and question branching cannot be used together. Please disable one of these features.";
    let branching = json!([question(json!({"branching": {"type": "end"}}))]);
    let both =
        with(json!({"appearance": {"shuffleQuestions": true}, "questions": branching.clone()}));
    assert_eq!(detail_of(&store, both).await, message);
    // Across a PATCH: the stored appearance shuffles, the new questions branch.
    let survey = created(
        &store,
        with(json!({"appearance": {"shuffleQuestions": true}})),
    )
    .await
    .unwrap()
    .survey;
    let error = update(
        &store,
        TEAM,
        &survey,
        body(json!({"questions": branching})),
        now(),
    )
    .await
    .unwrap_err();
    assert_eq!(error.body.detail, message);
}

#[tokio::test]
async fn iterations() {
    let store = store();
    let recurring = with(
        json!({"start_date": "2025-01-10T12:00:00Z", "iteration_count": 3, "iteration_frequency_days": 7}),
    );
    let survey = created(&store, recurring).await.unwrap().survey;
    let day = |d: u32| Utc.with_ymd_and_hms(2025, 1, d, 12, 0, 0).unwrap();
    assert_eq!(
        survey.iteration_start_dates,
        Some(vec![day(10), day(17), day(24)])
    );
    assert_eq!(survey.current_iteration, Some(1));
    assert_eq!(survey.current_iteration_start_date, Some(day(10)));

    let draft = created(
        &store,
        with(json!({"iteration_count": 2, "iteration_frequency_days": 1})),
    )
    .await
    .unwrap()
    .survey;
    assert_eq!(
        draft.iteration_start_dates, None,
        "not known before a start date"
    );

    let mut running = survey.clone();
    running.current_iteration = Some(3);
    let error = update(
        &store,
        TEAM,
        &running,
        body(json!({"iteration_count": 2})),
        now(),
    )
    .await
    .unwrap_err();
    assert_eq!(
        error.body.detail,
        "Cannot change survey recurrence to 2, should be at least 3"
    );
    let fewer = update(
        &store,
        TEAM,
        &survey,
        body(json!({"iteration_count": 0})),
        now(),
    )
    .await
    .unwrap()
    .survey;
    assert_eq!(fewer.iteration_start_dates, Some(Vec::new()));
    assert_eq!(fewer.current_iteration, None);
}
