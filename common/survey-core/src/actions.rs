//! The actions a survey's conditions name. PostHog links a survey to the project's actions whose
//! ids are in `conditions.actions.values[*].id` (a many-to-many set on every write) and, when
//! there are any, shows them in place of the stored values: `ActionSerializer` in the API,
//! `{id, name, steps}` to the SDK, so an action renamed or edited since is shown as it is now.
//! Here the link is read off the stored conditions when rendering: ids that name no action of
//! the project are left out (deleted actions are kept, as PostHog's relation keeps them).

use std::collections::{BTreeMap, BTreeSet};

use action_core::Action;
use common::models::User;
use common::store::{Store, StoreError};
use serde_json::Value;
use uuid::Uuid;

use crate::Survey;

/// The action ids `conditions.actions.values` names (integers, or integers as text), in order.
pub fn named_ids(survey: &Survey) -> Vec<i64> {
    let values = survey
        .conditions
        .as_ref()
        .and_then(|conditions| conditions.get("actions"))
        .and_then(|actions| actions.get("values"))
        .and_then(Value::as_array);
    let mut ids: Vec<i64> = values
        .into_iter()
        .flatten()
        .filter_map(|value| match value.get("id")? {
            Value::Number(number) => number.as_i64(),
            Value::String(text) => text.trim().parse().ok(),
            _ => None,
        })
        .collect();
    ids.sort_unstable();
    ids.dedup();
    ids
}

/// The actions some surveys name, read once for all of them (one Store read per action), and
/// their creators when the API shape is wanted.
#[derive(Debug, Clone, Default)]
pub struct Actions {
    by_id: BTreeMap<i64, Action>,
    creators: BTreeMap<Uuid, Value>,
}

impl Actions {
    /// Reads the actions of project `team_id` that `surveys` name; none when they name none.
    pub async fn load<'a>(
        store: &dyn Store,
        team_id: i64,
        surveys: impl IntoIterator<Item = &'a Survey>,
    ) -> Result<Self, StoreError> {
        let ids: BTreeSet<i64> = surveys.into_iter().flat_map(named_ids).collect();
        let mut by_id = BTreeMap::new();
        for id in ids {
            if let Some(stored) = action_core::repository::get(store, team_id, id).await? {
                by_id.insert(id, stored.action);
            }
        }
        Ok(Self {
            by_id,
            creators: BTreeMap::new(),
        })
    }

    /// Also reads the actions' creators, for [`Actions::api`].
    pub async fn with_creators(mut self, store: &dyn Store) -> Result<Self, StoreError> {
        let uuids: BTreeSet<Uuid> = self.by_id.values().filter_map(|a| a.created_by).collect();
        for uuid in uuids {
            if let Some(user) = User::load(store, uuid).await? {
                self.creators
                    .insert(uuid, feature_flags::render::user_basic(&user));
            }
        }
        Ok(self)
    }

    fn of<'a>(&'a self, survey: &Survey) -> impl Iterator<Item = &'a Action> + 'a {
        named_ids(survey)
            .into_iter()
            .filter_map(|id| self.by_id.get(&id))
    }

    /// The survey's actions as the API shows them (ActionSerializer), in id order.
    pub fn api(&self, survey: &Survey) -> Vec<Value> {
        self.of(survey)
            .map(|action| {
                let creator = action
                    .created_by
                    .and_then(|uuid| self.creators.get(&uuid).cloned())
                    .unwrap_or(Value::Null);
                action_core::render::action(action, creator)
            })
            .collect()
    }

    /// The survey's actions as posthog-js reads them (`{id, name, steps}`), in id order.
    pub fn sdk(&self, survey: &Survey) -> Vec<Value> {
        self.of(survey).map(action_core::render::for_sdk).collect()
    }
}

#[cfg(test)]
mod tests {
    use chrono::{TimeZone, Utc};
    use common::activity::Actor;
    use serde_json::json;

    use super::*;

    fn survey(conditions: Value) -> Survey {
        serde_json::from_value(json!({
            "id": "01890000-0000-7000-8000-000000000001", "team_id": 1, "name": "NPS",
            "type": "popover", "conditions": conditions,
            "created_at": "2025-01-01T00:00:00Z", "version": 1
        }))
        .unwrap()
    }

    #[test]
    fn ids_come_from_the_conditions_values() {
        let named = survey(json!({"actions": {"values": [
            {"id": 3, "name": "old name"}, {"id": "2"}, {"name": "no id"}, {"id": 3}, {"id": true}
        ]}}));
        assert_eq!(named_ids(&named), [2, 3]);
        assert!(named_ids(&survey(json!({"url": "/"}))).is_empty());
        assert!(named_ids(&survey(Value::Null)).is_empty());
    }

    #[tokio::test]
    async fn the_named_actions_of_the_project_are_shown_as_they_are_now() {
        let store = common::testing::memory_store();
        let at = Utc.with_ymd_and_hms(2025, 1, 2, 3, 4, 5).unwrap();
        let actor = Actor::system();
        for name in ["Signed up", "Bought"] {
            let mut action = Action::default_new(None, at);
            action.name = name.into();
            action.steps = vec![action_core::Step {
                event: Some(name.to_lowercase()),
                ..Default::default()
            }];
            action_core::repository::create(&store, 1, action, &actor, at)
                .await
                .unwrap();
        }
        // Another project's action 1 is not this project's.
        let mut foreign = Action::default_new(None, at);
        foreign.name = "Elsewhere".into();
        action_core::repository::create(&store, 2, foreign, &actor, at)
            .await
            .unwrap();

        let named = survey(json!({"actions": {"values": [{"id": 2, "name": "stale"}, {"id": 9}]}}));
        let actions = Actions::load(&store, 1, [&named])
            .await
            .unwrap()
            .with_creators(&store)
            .await
            .unwrap();
        let api = actions.api(&named);
        assert_eq!(api.len(), 1);
        assert_eq!(api[0]["id"], 2);
        assert_eq!(api[0]["name"], "Bought");
        assert_eq!(api[0]["steps"][0]["event"], "bought");
        assert_eq!(api[0]["created_by"], Value::Null);
        assert_eq!(
            actions.sdk(&named),
            [json!({"id": 2, "name": "Bought", "steps": [api[0]["steps"][0].clone()]})]
        );
        let other = Actions::load(&store, 2, [&named]).await.unwrap();
        assert!(other.sdk(&named).is_empty());
    }
}
