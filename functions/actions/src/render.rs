//! PostHog's `ActionSerializer` JSON, with the creator read from the Store.

use action_core::selector;
use action_core::{Action, Step};
use common::error::ApiResult;
use common::models::User;
use common::store::Store;
use serde_json::{Value, json};

pub async fn action(store: &dyn Store, action: &Action) -> ApiResult<Value> {
    let creator = match action.created_by {
        Some(uuid) => User::load(store, uuid).await?,
        None => None,
    };
    Ok(json!({
        "id": action.id,
        "name": action.name,
        "description": action.description,
        "tags": action.tags,
        "post_to_slack": action.post_to_slack,
        "slack_message_format": action.slack_message_format,
        "steps": action.steps.iter().map(step).collect::<Vec<_>>(),
        "created_at": action.created_at,
        "created_by": creator.as_ref().map_or(Value::Null, feature_flags::render::user_basic),
        "deleted": action.deleted,
        "is_calculating": false,
        "last_calculated_at": action.last_calculated_at,
        "team_id": action.team_id,
        "is_action": true,
        "bytecode_error": null,
        "pinned_at": action.pinned_at,
        "creation_context": null,
        "user_access_level": "editor",
    }))
}

fn step(step: &Step) -> Value {
    json!({
        "event": step.event,
        "properties": step.properties,
        "selector": step.selector,
        "selector_regex": step.selector.as_deref().and_then(selector::compile).map(|m| m.regex),
        "tag_name": step.tag_name,
        "text": step.text,
        "text_matching": step.text_matching,
        "href": step.href,
        "href_matching": step.href_matching,
        "url": step.url,
        "url_matching": step.url_matching,
    })
}
