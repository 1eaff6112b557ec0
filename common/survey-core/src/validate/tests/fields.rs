//! Per-field checks, the body's shape, and what create and update set.

use super::*;

#[tokio::test]
async fn create_fills_identity_defaults_and_question_ids() {
    let store = store();
    let checked = created(
        &store,
        with(json!({"questions": [question(json!({})), question(json!({"id": "keep"}))]})),
    )
    .await
    .unwrap();
    let survey = checked.survey;
    assert_eq!(survey.team_id, TEAM);
    assert_eq!(survey.created_at, now());
    assert_eq!(survey.version, 0);
    assert_eq!(survey.kind, SurveyType::Popover);
    assert_eq!(survey.schedule.as_deref(), Some("once"));
    assert_eq!(survey.base_language, "en");
    assert_eq!(survey.internal_targeting_flag_id, None);
    assert_eq!(survey.iteration_start_dates, Some(Vec::new()));
    assert_eq!(survey.questions[0].id.len(), 36);
    assert_eq!(survey.questions[1].id, "keep");
    assert_eq!(checked.targeting, Targeting::Keep);
}

#[tokio::test]
async fn drf_field_messages() {
    let store = store();
    let cases = [
        (
            json!({"type": "popover"}),
            "name",
            "required",
            "This field is required.",
        ),
        (
            json!({"name": "x"}),
            "type",
            "required",
            "This field is required.",
        ),
        (
            with(json!({"name": null})),
            "name",
            "null",
            "This field may not be null.",
        ),
        (
            with(json!({"name": " "})),
            "name",
            "blank",
            "This field may not be blank.",
        ),
        (
            with(json!({"name": "n".repeat(401)})),
            "name",
            "max_length",
            "Ensure this field has no more than 400 characters.",
        ),
        (
            with(json!({"description": null})),
            "description",
            "null",
            "This field may not be null.",
        ),
        (
            with(json!({"type": "modal"})),
            "type",
            "invalid_choice",
            "\"modal\" is not a valid choice.",
        ),
        (
            with(json!({"schedule": "weekly"})),
            "schedule",
            "invalid_input",
            "Schedule must be one of: once, recurring, always",
        ),
        (
            with(json!({"iteration_count": 501})),
            "iteration_count",
            "max_value",
            "Ensure this value is less than or equal to 500.",
        ),
        (
            with(json!({"responses_limit": -1})),
            "responses_limit",
            "min_value",
            "Ensure this value is greater than or equal to 0.",
        ),
        (
            with(json!({"response_sampling_interval_type": "year"})),
            "response_sampling_interval_type",
            "invalid_choice",
            "\"year\" is not a valid choice.",
        ),
        (
            with(json!({"archived": null})),
            "archived",
            "null",
            "This field may not be null.",
        ),
        (
            with(json!({"targeting_flag_id": null})),
            "targeting_flag_id",
            "null",
            "This field may not be null.",
        ),
    ];
    for (value, attr, code, message) in cases {
        let (got_attr, got_code, got_detail) = refused(&store, value.clone()).await;
        assert_eq!(
            (got_attr.as_deref(), got_code.as_str(), got_detail.as_str()),
            (Some(attr), code, message),
            "{value}"
        );
    }
    let name = "n".repeat(400);
    assert_eq!(
        created(&store, with(json!({"name": name})))
            .await
            .unwrap()
            .survey
            .name
            .len(),
        400
    );
}

#[test]
fn body_shape() {
    // Unknown keys are refused; read-only keys a client echoes back are not.
    let unknown = serde_json::from_value::<SurveyBody>(json!({"nme": "x"})).unwrap_err();
    assert!(unknown.to_string().contains("unknown field `nme`"));
    let echoed = json!({"id": "x", "created_at": "2024-01-01T00:00:00Z", "created_by": {"id": 1},
        "feature_flag_keys": [], "user_access_level": "editor", "linked_flag": null,
        "targeting_flag": null, "internal_targeting_flag": null, "search_match_type": "exact",
        "internal_response_sampling_flag": null, "_create_in_folder": "Unfiled",
        "iteration_start_dates": [], "response_sampling_daily_limits": "[]"});
    assert!(serde_json::from_value::<SurveyBody>(echoed).is_ok());
    // Absent and null are told apart.
    let parsed = body(json!({"end_date": null}));
    assert_eq!(parsed.end_date, Some(None));
    assert_eq!(parsed.start_date, None);
    // DRF's date-time formats, and its message for others.
    for ok in [
        "2025-01-10T12:00:00Z",
        "2025-01-10T12:00:00.5+02:00",
        "2025-01-10T12:00:00",
        "2025-01-10",
    ] {
        assert!(
            serde_json::from_value::<SurveyBody>(json!({"start_date": ok})).is_ok(),
            "{ok}"
        );
    }
    let bad = serde_json::from_value::<SurveyBody>(json!({"start_date": "soon"})).unwrap_err();
    assert!(bad.to_string().starts_with(body::DATETIME_FORMAT_ERROR));
}

#[tokio::test]
async fn update_applies_only_what_is_sent() {
    let store = store();
    let survey = created(
        &store,
        with(json!({"description": "d", "end_date": "2025-02-01T00:00:00Z", "questions": [question(json!({}))]})),
    )
    .await
    .unwrap()
    .survey;
    let patched = update(
        &store,
        TEAM,
        &survey,
        body(json!({"name": "Renamed", "end_date": null})),
        now(),
    )
    .await
    .unwrap()
    .survey;
    assert_eq!(patched.name, "Renamed");
    assert_eq!(patched.description, "d");
    assert_eq!(patched.end_date, None);
    assert_eq!(patched.questions, survey.questions, "ids kept");
    assert_eq!(patched.id, survey.id);
    // A PATCH never needs name or type.
    assert!(
        update(&store, TEAM, &survey, body(json!({})), now())
            .await
            .is_ok()
    );
    // Stored state nobody touched is not judged again (a sampling start now in the past).
    let mut old = survey.clone();
    old.response_sampling_start_date = Some(Utc.with_ymd_and_hms(2024, 1, 1, 0, 0, 0).unwrap());
    assert!(
        update(&store, TEAM, &old, body(json!({"name": "again"})), now())
            .await
            .is_ok()
    );
}
