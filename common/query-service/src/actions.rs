//! Actions in the service: the actions a node names (its `ActionsNode`s and retention entities
//! of type `actions`, or its SQL text's `matchesAction(...)`), read from the Store only when it
//! names one. Compiling them is `insights::actions`; a structured node's SQL and a text's
//! expanded SQL hold their conditions, so a changed action is a new cache key by itself.

use std::collections::BTreeSet;
use std::sync::Arc;

use action_core::Action;
use common::AppState;
use common::models::Project;
use engine::{ActionRef, QueryError};
use insights::actions::Actions;
use serde_json::Value;

use crate::SqlNode;

/// The actions `node` names (and `exposure`, an experiment's exposure criteria), by id; nothing
/// is read when they name none. An id that is not an
/// action of the project is left out: the compiler answers the 400 naming the field (a text's
/// unknown action: the engine's error naming it). Deleted actions still resolve by id, as in
/// PostHog; by name only live ones do.
pub async fn for_node(
    state: &AppState,
    project: &Project,
    node: &SqlNode,
    exposure: Option<&Value>,
) -> Result<Arc<Actions>, QueryError> {
    let mut ids: BTreeSet<i64> = BTreeSet::new();
    ids.extend(
        exposure
            .map(insights::actions::referenced)
            .unwrap_or_default(),
    );
    let mut names: BTreeSet<String> = BTreeSet::new();
    match &node.structured {
        Some(structured) => ids.extend(insights::actions::referenced(structured.as_value())),
        None => {
            for reference in engine::action_references(&node.text) {
                match reference {
                    ActionRef::Id(id) => ids.insert(id),
                    ActionRef::Name(name) => names.insert(name),
                };
            }
        }
    }
    if ids.is_empty() && names.is_empty() {
        return Ok(Arc::default());
    }
    let store = state.store.as_ref();
    let mut actions = Actions::new();
    if !names.is_empty() {
        let live = action_core::repository::list_live(store, project.id)
            .await
            .map_err(QueryError::internal)?;
        for action in live
            .into_iter()
            .filter(|action| names.contains(&action.name))
        {
            actions.insert(action.id, action);
        }
    }
    for id in ids {
        if let Some(stored) = action_core::repository::get(store, project.id, id)
            .await
            .map_err(QueryError::internal)?
        {
            actions.insert(id, stored.action);
        }
    }
    Ok(Arc::new(actions))
}

/// The action a text's reference names among the loaded `actions` (by name: the live one, the
/// newest when several share it).
pub fn resolve<'a>(actions: &'a Actions, reference: &ActionRef) -> Option<&'a Action> {
    match reference {
        ActionRef::Id(id) => actions.get(id),
        ActionRef::Name(name) => actions
            .values()
            .filter(|action| action.name == *name && !action.deleted)
            .max_by_key(|action| action.id),
    }
}
