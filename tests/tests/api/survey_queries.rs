//! Surveys' queries over events (`query_service::surveys`) on every backend, over a small event
//! set whose answers are worked out by hand in the comments: partial responses and
//! resubmissions merged into one submission, a dismissal after a response, legacy response keys,
//! archived submissions (only the representative uuid counts), date windows, the responses
//! count since the earliest start, and the responses list's filters and pages.

use api_tests::World;
use chrono::{DateTime, Utc};
use query_service::Caller;
use query_service::surveys::{self, ResponseFilters, Window};
use serde_json::{Value, json};
use survey_core::Survey;
use uuid::Uuid;

fn at(text: &str) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(text)
        .expect("test instant")
        .with_timezone(&Utc)
}

fn survey(id: Uuid, start: &str) -> Survey {
    serde_json::from_value(json!({
        "id": id, "team_id": 1, "name": format!("survey {id}"), "type": "popover",
        "created_at": "2026-10-01T00:00:00Z", "start_date": start,
        "questions": [
            {"type": "rating", "question": "How?", "scale": 10, "id": "q-rating"},
            {"type": "open", "question": "Why?", "id": "q-open"},
            {"type": "multiple_choice", "question": "Which?", "choices": ["a", "b", "c"],
             "id": "q-multi"},
        ],
    }))
    .expect("survey")
}

/// Event uuids the assertions name.
struct Ids {
    bob_first: Uuid,
    bob_last: Uuid,
    alice_final: Uuid,
    alice_second: Uuid,
    carol: Uuid,
    dave: Uuid,
    frank: Uuid,
}

fn event(name: &str, who: &str, ts: &str, uuid: Uuid, survey: Uuid, extra: Value) -> Value {
    let mut properties =
        json!({"$survey_id": survey.to_string(), "$session_id": format!("s-{who}")});
    if let (Value::Object(properties), Value::Object(extra)) = (&mut properties, extra) {
        properties.extend(extra);
    }
    json!({"event": name, "distinct_id": who, "timestamp": ts, "uuid": uuid.to_string(),
           "properties": properties})
}

/// Survey S starts 2026-11-01, T on 2026-10-20.
///
/// S's submissions (representative event first):
/// - sub-a (alice): 11-02 10:02 open "great", multi [a, b]; its partial 10:01 rated 8;
/// - sub-b (bob): 11:05 rated "5", multi [c], Firefox; its first event 11:01 rated "3", open
///   "meh", Chrome;
/// - carol (no submission id, legacy keys): 11-03 09:01 rated 9, "legacy text", [b];
/// - sub-d (dave): 11-03 10:01 rated 10, open "" and multi [] (no answers); dismissed 10:02;
/// - sub-a2 (alice): 11-05 09:01 rated 6;
/// - frank: 10-25 10:01 rated 1 (before S's start).
///
/// Shown: alice 11-02 10:00 and 11-05 09:00, bob 11:00, carol 11-03 09:00, dave 10:00,
/// erin 11-04 09:00, frank 10-25 10:00. Dismissed: dave 11-03 10:02, erin 11-04 09:01.
/// T: alice shown 11-06 10:00, sent 10:01.
fn events(s: Uuid, t: Uuid) -> (Vec<Value>, Ids) {
    let ids = Ids {
        bob_first: Uuid::now_v7(),
        bob_last: Uuid::now_v7(),
        alice_final: Uuid::now_v7(),
        alice_second: Uuid::now_v7(),
        carol: Uuid::now_v7(),
        dave: Uuid::now_v7(),
        frank: Uuid::now_v7(),
    };
    let new = Uuid::now_v7;
    let shown = |who: &str, ts: &str| event("survey shown", who, ts, new(), s, json!({}));
    let events = vec![
        shown("alice", "2026-11-02T10:00:00Z"),
        shown("alice", "2026-11-05T09:00:00Z"),
        shown("bob", "2026-11-02T11:00:00Z"),
        shown("carol", "2026-11-03T09:00:00Z"),
        shown("dave", "2026-11-03T10:00:00Z"),
        shown("erin", "2026-11-04T09:00:00Z"),
        shown("frank", "2026-10-25T10:00:00Z"),
        event(
            "survey sent",
            "alice",
            "2026-11-02T10:01:00Z",
            new(),
            s,
            json!({"$survey_submission_id": "sub-a", "$survey_completed": false,
                   "$survey_response_q-rating": 8}),
        ),
        event(
            "survey sent",
            "alice",
            "2026-11-02T10:02:00Z",
            ids.alice_final,
            s,
            json!({"$survey_submission_id": "sub-a", "$survey_completed": true,
                   "$survey_response_q-open": "great", "$survey_response_q-multi": ["a", "b"]}),
        ),
        event(
            "survey sent",
            "bob",
            "2026-11-02T11:01:00Z",
            ids.bob_first,
            s,
            json!({"$survey_submission_id": "sub-b", "$survey_response_q-rating": "3",
                   "$survey_response_q-open": "meh", "$browser": "Chrome"}),
        ),
        event(
            "survey sent",
            "bob",
            "2026-11-02T11:05:00Z",
            ids.bob_last,
            s,
            json!({"$survey_submission_id": "sub-b", "$survey_response_q-rating": "5",
                   "$survey_response_q-multi": ["c"], "$browser": "Firefox",
                   "$survey_iteration": 2}),
        ),
        event(
            "survey sent",
            "carol",
            "2026-11-03T09:01:00Z",
            ids.carol,
            s,
            json!({"$survey_response": 9, "$survey_response_1": "legacy text",
                   "$survey_response_2": ["b"]}),
        ),
        event(
            "survey sent",
            "dave",
            "2026-11-03T10:01:00Z",
            ids.dave,
            s,
            json!({"$survey_submission_id": "sub-d", "$survey_response_q-rating": 10,
                   "$survey_response_q-open": "", "$survey_response_q-multi": []}),
        ),
        event(
            "survey dismissed",
            "dave",
            "2026-11-03T10:02:00Z",
            new(),
            s,
            json!({"$survey_submission_id": "sub-d", "$survey_partially_completed": true}),
        ),
        event(
            "survey dismissed",
            "erin",
            "2026-11-04T09:01:00Z",
            new(),
            s,
            json!({"$survey_partially_completed": false}),
        ),
        event(
            "survey sent",
            "alice",
            "2026-11-05T09:01:00Z",
            ids.alice_second,
            s,
            json!({"$survey_submission_id": "sub-a2", "$survey_response_q-rating": 6}),
        ),
        event(
            "survey sent",
            "frank",
            "2026-10-25T10:01:00Z",
            ids.frank,
            s,
            json!({"$survey_response_q-rating": 1}),
        ),
        event(
            "survey shown",
            "alice",
            "2026-11-06T10:00:00Z",
            new(),
            t,
            json!({}),
        ),
        event(
            "survey sent",
            "alice",
            "2026-11-06T10:01:00Z",
            new(),
            t,
            json!({"$survey_submission_id": "sub-t", "$survey_response_q-rating": 4}),
        ),
    ];
    (events, ids)
}

fn counts(stats: &Value, event: &str) -> (u64, u64, u64, u64) {
    let entry = &stats["stats"][event];
    let n = |key: &str| {
        entry[key]
            .as_u64()
            .unwrap_or_else(|| panic!("{key} in {stats}"))
    };
    (
        n("total_count"),
        n("unique_persons"),
        n("unique_persons_only_seen"),
        n("total_count_only_seen"),
    )
}

fn rates(stats: &Value) -> [f64; 4] {
    let rate = |key: &str| stats["rates"][key].as_f64().expect("rate");
    [
        rate("response_rate"),
        rate("dismissal_rate"),
        rate("unique_users_response_rate"),
        rate("unique_users_dismissal_rate"),
    ]
}

#[tokio::test]
async fn survey_stats_counts_and_responses() {
    for world in World::all().await {
        let name = world.name();
        let state = &world.backend.state;
        let project = &world.bootstrap.project;
        let caller = Caller::default();
        let (s, t) = (Uuid::now_v7(), Uuid::now_v7());
        let (events, ids) = events(s, t);
        world.capture(events).await;
        lake::commit_all(state).await.unwrap();
        let survey_s = survey(s, "2026-11-01T00:00:00Z");
        let survey_t = survey(t, "2026-10-20T00:00:00Z");
        // The representative of sub-a2 is archived (drops it); bob's first event is not a
        // representative (drops nothing).
        let archived = [ids.alice_second, ids.bob_first];

        // From S's start: shown 6 by 5 persons; dismissed 2 by 2, less dave who also answered;
        // 5 submissions by 4 persons (frank's is before the start).
        let all = Window::default();
        let stats = surveys::survey_stats(state, project, &survey_s, &all, &[], false, &caller)
            .await
            .unwrap();
        assert_eq!(
            counts(&stats, "survey shown"),
            (6, 5, 0, 0),
            "{name} {stats}"
        );
        assert_eq!(counts(&stats, "survey dismissed"), (2, 1, 0, 0), "{name}");
        assert_eq!(counts(&stats, "survey sent"), (5, 4, 0, 0), "{name}");
        assert_eq!(rates(&stats), [83.33, 33.33, 80.0, 20.0], "{name}");
        let sent = &stats["stats"]["survey sent"];
        assert_eq!(sent["first_seen"], json!("2026-11-02T10:02:00Z"), "{name}");
        assert_eq!(sent["last_seen"], json!("2026-11-05T09:01:00Z"), "{name}");
        assert_eq!(
            stats["stats"]["survey shown"]["first_seen"],
            json!("2026-11-02T10:00:00Z")
        );
        assert_eq!(stats["survey_id"], json!(s.to_string()));
        assert_eq!(stats["start_date"], json!("2026-11-01T00:00:00Z"));
        assert_eq!(stats["end_date"], Value::Null);
        assert!(stats.get("per_question_stats").is_none());

        // Archived: sub-a2 goes, so 4 submissions by the same 4 persons; last is dave's.
        let stats =
            surveys::survey_stats(state, project, &survey_s, &all, &archived, true, &caller)
                .await
                .unwrap();
        assert_eq!(
            counts(&stats, "survey sent"),
            (4, 4, 0, 0),
            "{name} {stats}"
        );
        assert_eq!(rates(&stats), [66.67, 33.33, 80.0, 20.0], "{name}");
        assert_eq!(
            stats["stats"]["survey sent"]["last_seen"],
            json!("2026-11-03T10:01:00Z")
        );
        // Ratings 8, "5", 9 (legacy key), 10; open: great, meh, legacy text (dave's "" is
        // none); choices a, b / c / b (dave's [] is none).
        assert_eq!(
            stats["per_question_stats"],
            json!([
                {"question_id": "q-rating", "question_index": 0, "question_text": "How?",
                 "question_type": "rating", "response_count": 4,
                 "distribution": {"10": 1, "5": 1, "8": 1, "9": 1}, "average": 8.0},
                {"question_id": "q-open", "question_index": 1, "question_text": "Why?",
                 "question_type": "open", "response_count": 3, "distribution": {},
                 "average": null},
                {"question_id": "q-multi", "question_index": 2, "question_text": "Which?",
                 "question_type": "multiple_choice", "response_count": 3,
                 "distribution": {"a": 1, "b": 2, "c": 1}, "average": null},
            ]),
            "{name}"
        );

        // 11-03 to 11-04: shown carol, dave, erin; dismissed dave, erin (dave answered);
        // sent carol, dave.
        let window = Window {
            from: Some(at("2026-11-03T00:00:00Z")),
            to: Some(at("2026-11-04T23:59:59Z")),
        };
        let stats = surveys::survey_stats(state, project, &survey_s, &window, &[], false, &caller)
            .await
            .unwrap();
        assert_eq!(
            counts(&stats, "survey shown"),
            (3, 3, 0, 0),
            "{name} {stats}"
        );
        assert_eq!(counts(&stats, "survey dismissed"), (2, 1, 0, 0), "{name}");
        assert_eq!(counts(&stats, "survey sent"), (2, 2, 0, 0), "{name}");
        assert_eq!(rates(&stats), [66.67, 66.67, 66.67, 33.33], "{name}");

        // Global over S and T, no dates: shown 8 by 6; dismissed 2 by 2 less dave; sent 6 + 1
        // by 5 (frank counts: only the date window applies).
        let global = surveys::global_stats(state, project, &[&survey_s, &survey_t], &all, &caller)
            .await
            .unwrap();
        assert_eq!(
            counts(&global, "survey shown"),
            (8, 6, 0, 0),
            "{name} {global}"
        );
        assert_eq!(counts(&global, "survey dismissed"), (2, 1, 0, 0), "{name}");
        assert_eq!(counts(&global, "survey sent"), (7, 5, 0, 0), "{name}");
        assert_eq!(rates(&global), [87.5, 25.0, 83.33, 16.67], "{name}");
        assert!(global.get("survey_id").is_none());
        let none = surveys::global_stats(state, project, &[], &all, &caller)
            .await
            .unwrap();
        assert_eq!(none["stats"], json!({}));

        // Since T's start (10-20): S has 6 submissions (frank's included), T one.
        let both = [&survey_s, &survey_t];
        let count = surveys::responses_count(state, project, &both, None, &[], &caller)
            .await
            .unwrap();
        assert_eq!(count, json!({s.to_string(): 6, t.to_string(): 1}), "{name}");
        let count = surveys::responses_count(state, project, &both, None, &archived, &caller)
            .await
            .unwrap();
        assert_eq!(count, json!({s.to_string(): 5, t.to_string(): 1}), "{name}");
        let count = surveys::responses_count(state, project, &both, Some(&[t]), &[], &caller)
            .await
            .unwrap();
        assert_eq!(count, json!({t.to_string(): 1}), "{name}");
        // The earliest start is S's (11-01): frank's is before; every survey is counted.
        let count = surveys::responses_count(state, project, &[&survey_s], None, &[], &caller)
            .await
            .unwrap();
        assert_eq!(count, json!({s.to_string(): 5, t.to_string(): 1}), "{name}");
        let mut draft = survey_s.clone();
        draft.start_date = None;
        let count = surveys::responses_count(state, project, &[&draft], None, &[], &caller)
            .await
            .unwrap();
        assert_eq!(count, json!({}), "{name}");

        // The list, newest first: sub-a2, sub-d, carol, sub-b, sub-a, frank.
        let list = |filters: ResponseFilters| {
            let survey = &survey_s;
            let caller = &caller;
            async move {
                surveys::responses(state, project, survey, &filters, &[], caller)
                    .await
                    .unwrap()
            }
        };
        let uuids = |page: &query_service::surveys::ResponsePage| -> Vec<Uuid> {
            page.rows.iter().map(|row| row.uuid).collect()
        };
        let page = list(ResponseFilters::default()).await;
        assert_eq!(
            uuids(&page),
            [
                ids.alice_second,
                ids.dave,
                ids.carol,
                ids.bob_last,
                ids.alice_final,
                ids.frank
            ],
            "{name}"
        );
        assert!(!page.has_more);
        let bob = &page.rows[3];
        assert_eq!(bob.distinct_id, "bob");
        assert_eq!(bob.session_id.as_deref(), Some("s-bob"));
        assert_eq!(bob.submitted_at, at("2026-11-02T11:05:00Z"));
        assert_eq!(bob.extra.browser.as_deref(), Some("Firefox"));
        assert_eq!(bob.extra.iteration, Some(json!(2)));
        let answers: Vec<Option<Value>> = bob
            .answers
            .iter()
            .map(|answer| answer.answer.clone())
            .collect();
        assert_eq!(
            answers,
            [Some(json!("5")), Some(json!("meh")), Some(json!(["c"]))]
        );
        let alice = &page.rows[4];
        let answers: Vec<Option<Value>> = alice
            .answers
            .iter()
            .map(|answer| answer.answer.clone())
            .collect();
        assert_eq!(
            answers,
            [
                Some(json!(8)),
                Some(json!("great")),
                Some(json!(["a", "b"]))
            ]
        );
        let carol = &page.rows[2];
        let answers: Vec<Option<Value>> = carol
            .answers
            .iter()
            .map(|answer| answer.answer.clone())
            .collect();
        assert_eq!(
            answers,
            [
                Some(json!(9)),
                Some(json!("legacy text")),
                Some(json!(["b"]))
            ]
        );
        let dave: Vec<Option<Value>> = page.rows[1]
            .answers
            .iter()
            .map(|answer| answer.answer.clone())
            .collect();
        assert_eq!(dave, [Some(json!(10)), None, None]);
        assert_eq!(
            page.to_json()["results"][3]["submitted_at"],
            json!("2026-11-02T11:05:00Z")
        );

        let page = list(ResponseFilters {
            limit: 2,
            ..Default::default()
        })
        .await;
        assert_eq!(uuids(&page), [ids.alice_second, ids.dave], "{name}");
        assert!(page.has_more);
        let page = list(ResponseFilters {
            limit: 2,
            offset: 4,
            ..Default::default()
        })
        .await;
        assert_eq!(uuids(&page), [ids.alice_final, ids.frank], "{name}");
        assert!(!page.has_more);

        let page = surveys::responses(
            state,
            project,
            &survey_s,
            &ResponseFilters::default(),
            &archived,
            &caller,
        )
        .await
        .unwrap();
        assert_eq!(
            uuids(&page),
            [
                ids.dave,
                ids.carol,
                ids.bob_last,
                ids.alice_final,
                ids.frank
            ],
            "{name}"
        );

        let rating = |gte: Option<f64>, lte: Option<f64>| ResponseFilters {
            question_id: Some("q-rating".into()),
            score_gte: gte,
            score_lte: lte,
            ..Default::default()
        };
        let page = list(rating(Some(8.0), None)).await;
        assert_eq!(
            uuids(&page),
            [ids.dave, ids.carol, ids.alice_final],
            "{name}"
        );
        let page = list(rating(None, Some(5.0))).await;
        assert_eq!(uuids(&page), [ids.bob_last, ids.frank], "{name}");
        let page = list(ResponseFilters {
            question_id: Some("q-open".into()),
            ..Default::default()
        })
        .await;
        assert_eq!(
            uuids(&page),
            [ids.carol, ids.bob_last, ids.alice_final],
            "{name}"
        );
        let page = list(ResponseFilters {
            since: Some(at("2026-11-02T11:03:00Z")),
            until: Some(at("2026-11-03T09:30:00Z")),
            ..Default::default()
        })
        .await;
        // Only bob's last event is in the window, so his answer to "Why?" is not.
        assert_eq!(uuids(&page), [ids.carol, ids.bob_last], "{name}");
        assert_eq!(page.rows[1].answers[1].answer, None);

        let bad = surveys::responses(
            state,
            project,
            &survey_s,
            &ResponseFilters {
                score_gte: Some(1.0),
                ..Default::default()
            },
            &[],
            &caller,
        )
        .await;
        assert!(
            matches!(bad, Err(engine::QueryError::Invalid { ref attr, .. }) if attr == "question_id"),
            "{name}"
        );
    }
}
