use std::sync::Arc;

use action_core::Action;
use serde_json::{Value, json};

use super::*;

fn action(id: i64, name: &str, steps: Value) -> Action {
    serde_json::from_value(json!({
        "id": id, "team_id": 1, "name": name, "steps": steps,
        "created_at": "2024-01-01T00:00:00Z"}))
    .unwrap()
}

fn context_with(actions: Vec<Action>) -> Context {
    let mut ctx = crate::testing::context(chrono_tz::UTC, "2024-06-01T12:00:00Z", 0);
    ctx.actions = Arc::new(actions.into_iter().map(|a| (a.id, a)).collect());
    ctx
}

#[test]
fn referenced_finds_every_kind_of_reference() {
    let node = json!({"kind": "TrendsQuery", "series": [
        {"kind": "ActionsNode", "id": 7}, {"kind": "EventsNode", "event": "x", "id": 99}],
        "retentionFilter": {"targetEntity": {"type": "actions", "id": "3"}},
        "funnelsFilter": {"exclusions": [{"kind": "FunnelExclusionActionsNode", "id": 5}]}});
    assert_eq!(referenced(&node), [3, 5, 7]);
    assert!(referenced(&json!({"kind": "TrendsQuery"})).is_empty());
}

#[test]
fn steps_compile_as_posthog_builds_them() {
    let ctx = context_with(vec![]);
    let signup = action(
        1,
        "Sign up",
        json!([
            {"event": "$pageview", "url": "/signup", "url_matching": "contains"},
            {"event": "$autocapture", "selector": "button.primary", "text": "Sign up",
             "href": "/go", "href_matching": "regex", "tag_name": "button"},
            {"event": "signed_up", "url": "^https://a\\.com", "url_matching": "regex",
             "properties": [{"key": "plan", "value": "pro", "operator": "exact", "type": "event"}]},
        ]),
    );
    let sql = condition(&signup, &ctx, "series[0]").unwrap();
    assert!(
        sql.starts_with(
            "((event = '$pageview' AND properties['$current_url'] LIKE '%/signup%') OR "
        ),
        "{sql}"
    );
    assert!(
        sql.contains("match(elements_chain, '(^|;)button.*?\\\\.primary"),
        "{sql}"
    );
    assert!(
        sql.contains("match(elements_chain, '(?:^|;)(?:button)"),
        "{sql}"
    );
    assert!(
        sql.contains("match(elements_chain, '(^|;)button(\\\\.|$|;|:)')"),
        "{sql}"
    );
    assert!(
        sql.contains("match(extract(elements_chain, '(?::|\")href=\"(.*?)\"'), '/go')"),
        "{sql}"
    );
    assert!(
        sql.contains("arrayExists(x -> x = 'Sign up', arrayFilter("),
        "{sql}"
    );
    assert!(
        sql.contains("match(properties['$current_url'], '^https://a\\\\.com')"),
        "{sql}"
    );
    assert!(sql.contains("'pro'"), "{sql}");

    // Element fields apply to autocapture steps only, as in PostHog; no steps match everything.
    let pageview = action(
        2,
        "Views",
        json!([{"event": "$pageview", "text": "ignored"}]),
    );
    assert_eq!(
        condition(&pageview, &ctx, "a").unwrap(),
        "((event = '$pageview'))"
    );
    assert_eq!(
        condition(&action(3, "All", json!([])), &ctx, "a").unwrap(),
        "true"
    );
    let anything = action(4, "Any", json!([{"event": null}, {"event": "x"}]));
    assert_eq!(condition(&anything, &ctx, "a").unwrap(), "true");
}

#[test]
fn nodes_name_their_action_or_the_missing_id() {
    let ctx = context_with(vec![action(7, "Bought", json!([{"event": "purchase"}]))]);
    let trends = |series: Value| {
        crate::compile(
            &json!({"kind": "TrendsQuery", "series": [series],
                    "dateRange": {"date_from": "2024-05-01", "date_to": "2024-05-02"}}),
            &ctx,
        )
    };
    let compiled = trends(json!({"kind": "ActionsNode", "id": 7})).unwrap();
    assert!(
        compiled.queries[0].contains("event = 'purchase'"),
        "{}",
        compiled.queries[0]
    );
    let missing = trends(json!({"kind": "ActionsNode", "id": 8}))
        .err()
        .unwrap();
    assert_eq!(missing.attr, "series[0].id");
    assert_eq!(missing.detail, "Action 8 does not exist in this project.");

    let funnel = crate::compile(
        &json!({"kind": "FunnelsQuery", "series": [
            {"kind": "EventsNode", "event": "$pageview"}, {"kind": "ActionsNode", "id": 9}],
            "dateRange": {"date_from": "2024-05-01", "date_to": "2024-05-02"}}),
        &ctx,
    );
    assert_eq!(funnel.err().unwrap().attr, "series[1].id");
    let retention = crate::compile(
        &json!({"kind": "RetentionQuery", "retentionFilter": {
            "targetEntity": {"type": "actions", "id": 7},
            "returningEntity": {"type": "actions", "id": 70}}}),
        &ctx,
    );
    assert_eq!(
        retention.err().unwrap().attr,
        "retentionFilter.returningEntity.id"
    );
}

#[test]
fn exclusions_and_lifecycle_series_take_actions_too() {
    let ctx = context_with(vec![action(7, "Bought", json!([{"event": "purchase"}]))]);
    let funnel = crate::compile(
        &json!({"kind": "FunnelsQuery", "series": [
            {"kind": "EventsNode", "event": "a"}, {"kind": "EventsNode", "event": "b"}],
            "funnelsFilter": {"exclusions": [
                {"kind": "FunnelExclusionActionsNode", "id": 7, "funnelFromStep": 0, "funnelToStep": 1}]},
            "dateRange": {"date_from": "2024-05-01", "date_to": "2024-05-02"}}),
        &ctx,
    )
    .unwrap();
    assert!(
        funnel.queries[0].contains("event = 'purchase'"),
        "{}",
        funnel.queries[0]
    );
    let lifecycle = crate::compile(
        &json!({"kind": "LifecycleQuery", "series": [{"kind": "ActionsNode", "id": 7}],
            "dateRange": {"date_from": "2024-05-01", "date_to": "2024-05-03"}}),
        &ctx,
    )
    .unwrap();
    assert!(lifecycle.queries[0].contains("event = 'purchase'"));
    let answer = lifecycle.assemble(vec![crate::Table::default()]).unwrap();
    let first = &answer["results"][0];
    assert_eq!(first["label"], "Bought - new");
    assert_eq!(first["action"]["id"], 7);
    assert_eq!(first["action"]["type"], "actions");
}
