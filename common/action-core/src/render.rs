//! An action as PostHog's serializers show it: `ActionSerializer` (the actions API, and the
//! actions a survey's conditions name in the surveys API) and `SurveyAPIActionSerializer`
//! (`{id, name, steps}`, what posthog-js reads in a survey's conditions). Steps are
//! `ActionStepJSONSerializer` in both.

use serde_json::{Value, json};

use crate::{Action, Step, selector};

/// ActionSerializer's JSON; `creator` is the creator's UserBasic JSON (or null).
pub fn action(action: &Action, creator: Value) -> Value {
    json!({
        "id": action.id,
        "name": action.name,
        "description": action.description,
        "tags": action.tags,
        "post_to_slack": action.post_to_slack,
        "slack_message_format": action.slack_message_format,
        "steps": steps(action),
        "created_at": action.created_at,
        "created_by": creator,
        "deleted": action.deleted,
        "is_calculating": false,
        "last_calculated_at": action.last_calculated_at,
        "team_id": action.team_id,
        "is_action": true,
        "bytecode_error": null,
        "pinned_at": action.pinned_at,
        "creation_context": null,
        "user_access_level": "editor",
    })
}

/// SurveyAPIActionSerializer's JSON: what the SDK needs to match the action's events.
pub fn for_sdk(action: &Action) -> Value {
    json!({
        "id": action.id,
        "name": action.name,
        "steps": steps(action),
    })
}

fn steps(action: &Action) -> Vec<Value> {
    action.steps.iter().map(step).collect()
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
