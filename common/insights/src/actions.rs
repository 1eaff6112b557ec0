//! Actions in nodes: an `ActionsNode` (a series, a funnel step, a retention entity of
//! `type: "actions"`, an experiment metric's source) and the dialect's `matchesAction(...)` stand
//! for the action's condition over `events`, as PostHog's `action_to_expr` builds it:
//!
//! - the action matches when any step matches (no steps: every event);
//! - a step ANDs what it sets: the event name; for `$autocapture` steps only, the element
//!   `selector` (a regex over `elements_chain`, see [`action_core::selector`]), `tag_name`,
//!   `href` (the chain's first href) and `text` (any element's text); the URL on
//!   `properties.$current_url`; and its property filters (through [`crate::filters`]).
//!
//! `text` and `href` compare exactly unless `*_matching` says `contains` (case-insensitive) or
//! `regex`; `url` compares with `contains` (case-sensitive `LIKE`) unless it says otherwise.
//!
//! The actions come from `ctx.actions`, loaded by the caller (see [`referenced`]).

use std::collections::{BTreeMap, BTreeSet};

use action_core::selector::{self, SelectorMatch};
use action_core::{Action, Matching, Step};
use serde_json::Value;

use crate::sql_text::{property, string};
use crate::{Context, Invalid, filters};

/// Actions by id.
pub type Actions = BTreeMap<i64, Action>;

/// Node kinds that name an action by `id`.
const NODE_KINDS: &[&str] = &["ActionsNode", "FunnelExclusionActionsNode"];

/// PostHog's `elements_chain_href`: the chain's first `href`, `''` when none.
const HREF: &str = r#"extract(elements_chain, '(?::|")href="(.*?)"')"#;
/// PostHog's `elements_chain_texts`: each element's `text`, the ones without left out.
const TEXTS: &str = r#"arrayFilter(t -> t != '', arrayMap(e -> extract(e, '(?::|")text="(.*?)"'), splitByChar(';', elements_chain)))"#;

/// The ids of the actions `node` names: `ActionsNode`s and retention entities of type
/// `actions`, at any depth, in id order (none: the caller loads nothing).
pub fn referenced(node: &Value) -> Vec<i64> {
    let mut ids = BTreeSet::new();
    collect(node, &mut ids);
    ids.into_iter().collect()
}

fn collect(value: &Value, ids: &mut BTreeSet<i64>) {
    match value {
        Value::Object(object) => {
            let kind = object.get("kind").and_then(Value::as_str);
            let names_action = kind.is_some_and(|kind| NODE_KINDS.contains(&kind))
                || object.get("type").and_then(Value::as_str) == Some("actions");
            if names_action && let Some(id) = object.get("id").and_then(action_id) {
                ids.insert(id);
            }
            object.values().for_each(|value| collect(value, ids));
        }
        Value::Array(items) => items.iter().for_each(|item| collect(item, ids)),
        _ => {}
    }
}

/// An action id as nodes write it: a number, or a number in a string (PostHog's legacy filters).
fn action_id(value: &Value) -> Option<i64> {
    match value {
        Value::Number(number) => number.as_i64(),
        Value::String(text) => text.trim().parse().ok(),
        _ => None,
    }
}

/// The action an entry names by `id` (`attr` is the entry: `series[0]`): a 400 naming
/// `<attr>.id` when it is not an action of the project.
pub fn named<'a>(entry: &Value, ctx: &'a Context, attr: &str) -> Result<&'a Action, Invalid> {
    let attr = format!("{attr}.id");
    let Some(id) = entry.get("id").and_then(action_id) else {
        return Err(Invalid::new(attr, "An ActionsNode needs the action's id."));
    };
    ctx.actions
        .get(&id)
        .ok_or_else(|| Invalid::new(attr, format!("Action {id} does not exist in this project.")))
}

/// The action's condition over `events`, parenthesized; errors in its steps' property filters
/// name `attr` (the node's field that named the action).
pub fn condition(action: &Action, ctx: &Context, attr: &str) -> Result<String, Invalid> {
    if action.steps.is_empty() {
        return Ok("true".into());
    }
    let steps = action
        .steps
        .iter()
        .enumerate()
        .map(|(index, step)| step_condition(step, ctx, &format!("{attr}.steps[{index}]")))
        .collect::<Result<Vec<_>, _>>()?;
    if steps.iter().any(|step| step == "true") {
        return Ok("true".into());
    }
    Ok(format!("({})", steps.join(" OR ")))
}

fn step_condition(step: &Step, ctx: &Context, attr: &str) -> Result<String, Invalid> {
    let mut parts = Vec::new();
    if let Some(event) = step.event.as_deref().filter(|event| !event.is_empty()) {
        parts.push(format!("event = {}", string(event)));
    }
    if step.is_autocapture() {
        if let Some(matched) = step.selector.as_deref().and_then(selector::compile) {
            parts.push(selector_condition(&matched));
        }
        if let Some(tag) = &step.tag_name {
            let pattern = selector::tag_pattern(tag);
            parts.push(format!("match(elements_chain, {})", string(&pattern)));
        }
        if let Some(href) = &step.href {
            parts.push(compare(
                HREF,
                href,
                step.href_matching.unwrap_or(Matching::Exact),
                true,
            ));
        }
        if let Some(text) = &step.text {
            let test = compare(
                "x",
                text,
                step.text_matching.unwrap_or(Matching::Exact),
                true,
            );
            parts.push(format!("arrayExists(x -> {test}, {TEXTS})"));
        }
    }
    if let Some(url) = step.url.as_deref().filter(|url| !url.is_empty()) {
        let current_url = property("$current_url", false);
        parts.push(compare(
            &current_url,
            url,
            step.url_matching.unwrap_or_default(),
            false,
        ));
    }
    if let Some(properties) = &step.properties {
        let filters = Value::Array(properties.clone());
        let condition = filters::expression(Some(&filters), ctx, &format!("{attr}.properties"))?;
        if condition != "true" {
            parts.push(condition);
        }
    }
    Ok(match parts.len() {
        0 => "true".into(),
        _ => format!("({})", parts.join(" AND ")),
    })
}

/// `expr` against `value`: `=`, a regex match, or a `%value%` pattern (`ILIKE` when
/// `contains_ignores_case`, as PostHog's text and href; `LIKE` for the URL).
fn compare(expr: &str, value: &str, matching: Matching, contains_ignores_case: bool) -> String {
    match matching {
        Matching::Exact => format!("{expr} = {}", string(value)),
        Matching::Regex => format!("match({expr}, {})", string(value)),
        Matching::Contains => {
            let operator = if contains_ignores_case {
                "ILIKE"
            } else {
                "LIKE"
            };
            format!("{expr} {operator} {}", string(&format!("%{value}%")))
        }
    }
}

/// PostHog's `selector_to_expr`: the chain regex, each id on some element, and one of the
/// selector's useful tags present.
fn selector_condition(matched: &SelectorMatch) -> String {
    let mut parts = Vec::new();
    if !matched.id_only {
        parts.push(format!("match(elements_chain, {})", string(&matched.regex)));
    }
    let side_checks = matched.id_patterns.iter().chain(&matched.useful_pattern);
    for pattern in side_checks {
        parts.push(format!("match(elements_chain, {})", string(pattern)));
    }
    format!("({})", parts.join(" AND "))
}

#[cfg(test)]
#[path = "actions_tests.rs"]
mod tests;
