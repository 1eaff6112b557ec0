//! The survey repository on the Store, on every backend the test environment has: names are
//! claimed (concurrent creates of one name make one survey), a rename moves the claim, the
//! survey's flags are numbered in its own transaction, and archives are idempotent.

use chrono::Utc;
use common::activity::{self, Actor};
use common::store::Store;
use common::testing::TestState;
use serde_json::json;
use survey_core::flags::{self, Owned};
use survey_core::repository::{self, NameTaken, WriteError};
use survey_core::validate::{self, Targeting};
use survey_core::{Survey, archive};

async fn checked(store: &dyn Store, body: serde_json::Value) -> (Survey, Targeting) {
    let body = serde_json::from_value(body).expect("body");
    let checked = validate::create(store, 1, body, Utc::now())
        .await
        .expect("valid");
    (checked.survey, checked.targeting)
}

/// Plans and commits a new survey with its flags, as the create route does.
async fn create(store: &dyn Store, name: &str, targeting: bool) -> Result<Survey, WriteError> {
    let mut body = json!({"name": name, "type": "popover",
        "questions": [{"type": "open", "question": "Why?"}]});
    if targeting {
        body["targeting_flag_filters"] = json!({"groups": [{"properties": [
            {"key": "plan", "type": "person", "value": ["pro"], "operator": "exact"}],
            "rollout_percentage": 50}]});
    }
    let (mut survey, targeting) = checked(store, body).await;
    survey.team_id = 1;
    let actor = Actor::system();
    let mut ops = flags::plan(
        store,
        &mut survey,
        &Owned::default(),
        &targeting,
        &actor,
        Utc::now(),
    )
    .await?;
    ops.extend(repository::plan_create(&mut survey, &actor)?);
    repository::commit(store, &survey, ops).await?;
    Ok(survey)
}

#[tokio::test]
async fn names_flags_and_archives_on_every_backend() {
    for backend in TestState::all().await {
        let store = backend.state.store.as_ref();
        let label = format!("{:?}", backend.backend);

        // One name, two writers: exactly one survey holds it.
        let (a, b) = tokio::join!(create(store, "Pulse", false), create(store, "Pulse", false));
        let outcomes = [a.is_ok(), b.is_ok()];
        assert_eq!(outcomes.iter().filter(|ok| **ok).count(), 1, "{label}");
        let lost = if a.is_ok() { b } else { a };
        assert!(
            matches!(
                lost,
                Err(WriteError::Refused(NameTaken) | WriteError::Raced)
            ),
            "{label}"
        );

        // Two flags (targeting and internal) take consecutive ids in the survey's transaction.
        let nps = create(store, "NPS", true).await.expect("created");
        let (targeting, internal) = (
            nps.targeting_flag_id.expect("targeting"),
            nps.internal_targeting_flag_id.expect("internal"),
        );
        assert_eq!((targeting - internal).abs(), 1, "{label}");
        let owned = Owned::load(store, &nps).await.unwrap();
        let internal_flag = &owned.internal_targeting.as_ref().unwrap().flag;
        assert!(
            !internal_flag.active,
            "a draft's flags are inactive ({label})"
        );
        assert!(internal_flag.key.ends_with("-custom"), "{label}");

        // A rename onto a taken name fails; onto a free one it moves the claim.
        let stored = repository::get(store, 1, nps.id).await.unwrap().unwrap();
        let mut renamed = stored.survey.clone();
        renamed.name = "Pulse".into();
        let ops = repository::plan_save(
            &stored,
            &mut renamed,
            activity::UPDATED,
            &Actor::system(),
            Utc::now(),
        )
        .unwrap();
        assert!(matches!(
            repository::commit(store, &renamed, ops).await,
            Err(WriteError::Refused(NameTaken))
        ));
        let mut renamed = stored.survey.clone();
        renamed.name = "NPS 2".into();
        let ops = repository::plan_save(
            &stored,
            &mut renamed,
            activity::UPDATED,
            &Actor::system(),
            Utc::now(),
        )
        .unwrap();
        repository::commit(store, &renamed, ops).await.unwrap();
        create(store, "NPS", false)
            .await
            .expect("the old name is free again");

        // Archiving twice writes once; unarchiving what is not archived writes nothing.
        let response = uuid::Uuid::new_v4();
        let actor = Actor::system();
        assert!(
            archive::archive(store, &renamed, response, &actor, Utc::now())
                .await
                .unwrap()
        );
        assert!(
            !archive::archive(store, &renamed, response, &actor, Utc::now())
                .await
                .unwrap()
        );
        assert_eq!(
            archive::list(store, 1, renamed.id).await.unwrap(),
            [response]
        );
        assert!(
            archive::unarchive(store, &renamed, response, &actor, Utc::now())
                .await
                .unwrap()
        );
        assert!(
            !archive::unarchive(store, &renamed, response, &actor, Utc::now())
                .await
                .unwrap()
        );
        assert!(
            archive::list(store, 1, renamed.id)
                .await
                .unwrap()
                .is_empty()
        );
        let history = activity::list(store, 1, repository::SCOPE, Some(&renamed.id.to_string()))
            .await
            .unwrap();
        let kinds: Vec<&str> = history.iter().map(|e| e.activity.as_str()).collect();
        assert_eq!(
            kinds,
            [
                "response_unarchived",
                "response_archived",
                "updated",
                "created"
            ],
            "{label}"
        );

        // Deleting frees the name and soft-deletes the survey's own flags.
        let stored = repository::get(store, 1, renamed.id)
            .await
            .unwrap()
            .unwrap();
        let owned = Owned::load(store, &stored.survey).await.unwrap();
        let mut ops = flags::plan_delete(&stored.survey, &owned, &actor, Utc::now()).unwrap();
        ops.extend(repository::plan_delete(&stored, &actor, Utc::now()).unwrap());
        store.transact_write(ops).await.unwrap();
        assert!(
            repository::get(store, 1, renamed.id)
                .await
                .unwrap()
                .is_none()
        );
        for id in [targeting, internal] {
            let flag = feature_flags::repository::get_live(store, 1, id)
                .await
                .unwrap();
            assert!(flag.is_none(), "flag {id} still live ({label})");
        }
        create(store, "NPS 2", false).await.expect("name freed");
    }
}
