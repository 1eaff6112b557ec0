//! Persons in the shared activity log, as PostHog's `PersonViewSet` logs them (scope `Person`,
//! the item id is the person's uuid): `updated` for a `PATCH` or `update_property` (the
//! `properties` change: the keys sent, before and after), `delete_property` for an `$unset`,
//! `deleted` for a delete; and the two routes that list them, `GET .../persons/activity/` and
//! `GET .../persons/:uuid/activity/`.

use axum::extract::{Path, State};
use axum::response::{IntoResponse, Response};
use chrono::{DateTime, Utc};
use common::activity::routes::{self, ACTIVITY_READ};
use common::activity::{self, ActivityPage, Actor, Change, Detail, Entry};
use common::error::ApiResult;
use common::models::person::Person;
use common::store::{StoreError, WriteOp};
use common::{AppState, Authenticated};
use serde_json::{Map, Value};
use uuid::Uuid;

use crate::persons;

/// The activity log's scope (PostHog's model name).
pub const SCOPE: &str = "Person";
/// PostHog's activity for an `$unset` through `delete_property`.
pub const DELETE_PROPERTY: &str = "delete_property";

/// One entry about `person`, to write in the transaction that changes it.
pub fn entry_op(
    person: &Person,
    actor: &Actor,
    kind: &str,
    changes: Option<Vec<Change>>,
    at: DateTime<Utc>,
) -> Result<WriteOp, StoreError> {
    let item_id = person.uuid.to_string();
    Entry {
        id: Uuid::now_v7(),
        user: actor.clone(),
        activity: kind.to_owned(),
        scope: SCOPE.to_owned(),
        item_id: item_id.clone(),
        detail: Detail {
            id: item_id.clone(),
            changes,
            merge: None,
            trigger: None,
            name: Some(item_id),
            short_id: None,
            kind: None,
        },
        created_at: at,
    }
    .put_op(person.team_id)
}

/// The `properties` change of an edit (one, as PostHog logs it even when nothing moved): the
/// keys it touched, as they were and as they are (null where absent).
pub fn properties_change(before: &Person, after: &Person, keys: &[&str]) -> Vec<Change> {
    let values = |person: &Person| -> Map<String, Value> {
        keys.iter()
            .map(|key| {
                let value = person.properties.get(*key).cloned();
                ((*key).to_owned(), value.unwrap_or(Value::Null))
            })
            .collect()
    };
    vec![Change {
        kind: SCOPE.to_owned(),
        action: "changed".to_owned(),
        field: "properties".to_owned(),
        before: Value::Object(values(before)),
        after: Value::Object(values(after)),
    }]
}

/// `GET /persons/activity/`: every person's entries, newest first (deleted persons' included).
pub async fn of_all(
    State(state): State<AppState>,
    auth: Authenticated,
    Path(project): Path<String>,
    page: ActivityPage,
) -> ApiResult<Response> {
    routes::of_scope(&state, &auth, &project, SCOPE, &page).await
}

/// `GET /persons/:uuid/activity/`: one person's entries; 404 once they are deleted, as PostHog
/// looks the person up first.
pub async fn of_one(
    State(state): State<AppState>,
    auth: Authenticated,
    Path((project, id)): Path<(String, String)>,
    page: ActivityPage,
) -> ApiResult<Response> {
    let store = state.store.as_ref();
    let project = auth.project(store, &project, ACTIVITY_READ).await?;
    let person = persons::load(&state, &project, &id).await?;
    let entries = activity::list(store, project.id, SCOPE, Some(&person.uuid.to_string())).await?;
    Ok(axum::Json(page.answer(&entries)).into_response())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn person(properties: Value) -> Person {
        serde_json::from_value(json!({
            "uuid": "01890000-0000-7000-8000-000000000001", "team_id": 1,
            "properties": properties, "is_identified": true,
            "created_at": "2026-01-01T00:00:00Z"
        }))
        .unwrap()
    }

    #[test]
    fn a_change_names_the_touched_keys_only_and_is_always_there() {
        let before = person(json!({"plan": "free", "email": "a@b.c"}));
        let after = person(json!({"plan": "pro", "email": "a@b.c", "seats": 3}));
        let changes = properties_change(&before, &after, &["plan", "seats"]);
        assert_eq!(changes.len(), 1);
        assert_eq!(changes[0].kind, "Person");
        assert_eq!(changes[0].field, "properties");
        assert_eq!(changes[0].before, json!({"plan": "free", "seats": null}));
        assert_eq!(changes[0].after, json!({"plan": "pro", "seats": 3}));
        let same = properties_change(&before, &before, &["plan"]);
        assert_eq!(
            (&same[0].before, &same[0].after),
            (&json!({"plan": "free"}), &json!({"plan": "free"}))
        );
    }
}
