//! Conditions, appearance, referenced flags, targeting and external surveys.

use super::*;

#[tokio::test]
async fn conditions_and_appearance() {
    let store = store();
    let cases = [
        (
            json!({"conditions": []}),
            "conditions",
            "Conditions must be an object",
        ),
        (
            json!({"appearance": "dark"}),
            "appearance",
            "Appearance must be an object",
        ),
        (
            json!({"appearance": {"thankYouMessageDescriptionContentType": "md"}}),
            "appearance",
            "thankYouMessageDescriptionContentType must be one of ['text', 'html']",
        ),
        (
            json!({"appearance": {"surveyPopupDelaySeconds": -1}}),
            "appearance",
            "Survey popup delay seconds must be a positive integer",
        ),
        (
            json!({"appearance": {"whiteLabel": "yes"}}),
            "appearance",
            "whiteLabel must be a boolean",
        ),
        (
            json!({"appearance": {"whiteLabel": true}}),
            "appearance",
            "You need to upgrade to PostHog Enterprise to use white labelling",
        ),
    ];
    for (extra, attr, message) in cases {
        let (got, _, detail) = refused(&store, with(extra.clone())).await;
        assert_eq!(
            (got.as_deref(), detail.as_str()),
            (Some(attr), message),
            "{extra}"
        );
    }
    let survey = created(
        &store,
        with(json!({"conditions": {"url": "/pricing"}, "appearance": {"whiteLabel": false, "surveyPopupDelaySeconds": 0}})),
    )
    .await
    .unwrap()
    .survey;
    assert_eq!(survey.conditions, Some(json!({"url": "/pricing"})));
}

#[tokio::test]
async fn referenced_flags_and_insights() {
    let store = store();
    let plain = flag(&store, "plain", &[]).await;
    let multi = flag(&store, "multi", &["control", "test"]).await;
    let no_flag = detail_of(&store, with(json!({"linked_flag_id": 999}))).await;
    assert_eq!(no_flag, "Feature Flag with this ID does not exist");
    let no_target = detail_of(&store, with(json!({"targeting_flag_id": 999}))).await;
    assert_eq!(
        no_target,
        "Targeting Feature Flag with this ID does not exist"
    );
    let insight = refused(&store, with(json!({"linked_insight_id": 1}))).await;
    assert_eq!(
        (insight.0.as_deref(), insight.2.as_str()),
        (None, "Insight with this ID does not exist")
    );
    let variant = |id: Value, variant: &str| {
        with(json!({"linked_flag_id": id, "conditions": {"linkedFlagVariant": variant}}))
    };
    assert_eq!(
        detail_of(&store, variant(json!(multi), "blue")).await,
        "Feature flag variant 'blue' does not exist. Available variants: control, test"
    );
    assert_eq!(
        detail_of(&store, variant(json!(plain), "blue")).await,
        "Feature flag variant 'blue' specified but the linked feature flag has no variants"
    );
    assert_eq!(
        detail_of(&store, variant(Value::Null, "blue")).await,
        "linkedFlagVariant can only be used when a linked_flag_id is specified"
    );
    for ok in ["test", "any"] {
        let survey = created(&store, variant(json!(multi), ok))
            .await
            .unwrap()
            .survey;
        assert_eq!(survey.linked_flag_id, Some(multi));
    }
    let survey = created(&store, with(json!({"targeting_flag_id": plain})))
        .await
        .unwrap()
        .survey;
    assert_eq!(survey.targeting_flag_id, Some(plain));
}

#[tokio::test]
async fn targeting_filters() {
    let store = store();
    let everyone = [
        json!({"groups": [{"properties": [], "rollout_percentage": 100}]}),
        json!({"groups": [{"rollout_percentage": null}]}),
    ];
    for filters in everyone {
        let (attr, code, detail) =
            refused(&store, with(json!({"targeting_flag_filters": filters}))).await;
        assert_eq!((attr, code.as_str()), (None, "invalid_input"));
        assert!(detail.starts_with("Invalid operation: User targeting rolls out to everyone."));
    }
    let email =
        json!({"key": "email", "value": "@posthog.com", "operator": "icontains", "type": "person"});
    let sent = json!({"groups": [{"properties": [email], "rollout_percentage": 100}]});
    let checked = created(
        &store,
        with(json!({"targeting_flag_filters": sent.clone()})),
    )
    .await
    .unwrap();
    let Targeting::Set(filters) = &checked.targeting else {
        panic!("{:?}", checked.targeting);
    };
    assert_eq!(filters.groups[0].properties[0].key, "email");
    // Filters of the flag's own checks are answered as they are.
    let bad =
        json!({"groups": [{"properties": [{"key": "e", "value": 5, "operator": "icontains"}]}]});
    let (attr, _, _) = refused(&store, with(json!({"targeting_flag_filters": bad}))).await;
    assert_eq!(attr.as_deref(), Some("filters"));
    // null or {} ask for nothing; removal only means something on an update.
    for nothing in [Value::Null, json!({})] {
        let checked = created(
            &store,
            with(json!({"targeting_flag_filters": nothing, "remove_targeting_flag": true})),
        )
        .await
        .unwrap();
        assert_eq!(checked.targeting, Targeting::Keep);
    }
    let survey = checked.survey;
    let removed = update(
        &store,
        TEAM,
        &survey,
        body(json!({"remove_targeting_flag": true})),
        now(),
    )
    .await
    .unwrap();
    assert_eq!(removed.targeting, Targeting::Remove);
    // A PATCH merges the sent keys over the current targeting flag's filters.
    let current = flag(&store, "survey-targeting-x", &["a", "b"]).await;
    let mut targeted = survey.clone();
    targeted.targeting_flag_id = Some(current);
    let merged = update(
        &store,
        TEAM,
        &targeted,
        body(json!({"targeting_flag_filters": sent})),
        now(),
    )
    .await
    .unwrap();
    let Targeting::Set(filters) = merged.targeting else {
        panic!("not set");
    };
    assert!(filters.multivariate.is_some(), "kept from the current flag");
    assert_eq!(
        filters.groups[0].properties.len(),
        1,
        "replaced by the sent groups"
    );
}

#[tokio::test]
async fn external_surveys() {
    let store = store();
    let linked = flag(&store, "linked", &[]).await;
    let external = |extra: Value| {
        let mut value = with(json!({"type": "external_survey"}));
        if let (Value::Object(value), Value::Object(extra)) = (&mut value, extra) {
            value.extend(extra);
        }
        value
    };
    let targeting =
        json!({"groups": [{"properties": [{"key": "e", "value": "x"}], "rollout_percentage": 50}]});
    let cases = [
        (
            json!({"linked_flag_id": linked}),
            "linked_flag_id",
            "linked_flag_id is not allowed for external surveys",
        ),
        (
            json!({"targeting_flag_filters": targeting}),
            "targeting_flag_filters",
            "targeting_flag_filters is not allowed for external surveys",
        ),
        (
            json!({"conditions": {"url": "/", "deviceTypes": ["Mobile"], "events": {"values": [{"name": "x"}]}, "actions": {"values": []}}}),
            "conditions",
            "The following condition fields are not allowed for external surveys: url, deviceTypes, events",
        ),
        (
            json!({"appearance": {"surveyPopupDelaySeconds": 5}}),
            "appearance",
            "surveyPopupDelaySeconds is not allowed for external surveys",
        ),
    ];
    for (extra, attr, message) in cases {
        let (got, _, detail) = refused(&store, external(extra.clone())).await;
        assert_eq!(
            (got.as_deref(), detail.as_str()),
            (Some(attr), message),
            "{extra}"
        );
    }
    assert!(
        created(
            &store,
            external(json!({"conditions": {"events": {"values": []}}}))
        )
        .await
        .is_ok()
    );
}
