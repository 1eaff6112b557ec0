//! A survey as PostHog's serializers show it (reference 1.5, 1.13): SurveySerializer for list
//! and retrieve, the create/update serializer's answer, and SurveyAPISerializer for posthog-js.
//! Internal fields (stored summaries) are never shown.

use feature_flags::FeatureFlag;
use serde_json::{Map, Value, json};

use crate::Survey;
use crate::validate::languages;

/// The flags a survey names, as read (None when absent or deleted).
#[derive(Debug, Clone, Copy, Default)]
pub struct Flags<'a> {
    pub linked: Option<&'a FeatureFlag>,
    pub targeting: Option<&'a FeatureFlag>,
    pub internal_targeting: Option<&'a FeatureFlag>,
    pub internal_response_sampling: Option<&'a FeatureFlag>,
}

pub use common::dates::iso;
use common::dates::iso_or_null as iso_opt;

fn minimal(flag: Option<&FeatureFlag>) -> Value {
    flag.map_or(Value::Null, feature_flags::render::minimal)
}

fn key(flag: Option<&FeatureFlag>) -> Value {
    flag.map_or(Value::Null, |flag| Value::String(flag.key.clone()))
}

/// The stored conditions, with `actions.values` replaced by the actions they name when they
/// name any (rendered for the API or the SDK: [`crate::actions::Actions`]), as PostHog's
/// `get_survey_conditions_with_actions`.
fn conditions(survey: &Survey, actions: &[Value]) -> Value {
    if actions.is_empty() {
        return survey.conditions.clone().unwrap_or(Value::Null);
    }
    let mut map = match &survey.conditions {
        Some(Value::Object(map)) => map.clone(),
        _ => Map::new(),
    };
    map.insert("actions".into(), json!({ "values": actions }));
    Value::Object(map)
}

/// PostHog keeps the daily limits as JSON text in a JSON column, and DRF's JSONField shows
/// that text as it is: a string holding the list.
fn daily_limits(survey: &Survey) -> Value {
    survey
        .response_sampling_daily_limits
        .clone()
        .map_or(Value::Null, Value::String)
}

/// The fields both API serializers show; `actions` are the survey's actions as the API shows
/// them.
fn common(
    survey: &Survey,
    flags: &Flags<'_>,
    creator: Value,
    actions: &[Value],
) -> Map<String, Value> {
    let fields = json!({
        "id": survey.id,
        "name": survey.name,
        "description": survey.description,
        "type": survey.kind,
        "schedule": survey.schedule,
        "linked_flag": minimal(flags.linked),
        "targeting_flag": minimal(flags.targeting),
        "internal_targeting_flag": minimal(flags.internal_targeting),
        "questions": survey.questions,
        "conditions": conditions(survey, actions),
        "appearance": survey.appearance,
        "created_at": iso(survey.created_at),
        "created_by": creator,
        "start_date": iso_opt(survey.start_date),
        "end_date": iso_opt(survey.end_date),
        "archived": survey.archived,
        "responses_limit": survey.responses_limit,
        "iteration_count": survey.iteration_count,
        "iteration_frequency_days": survey.iteration_frequency_days,
        "iteration_start_dates": survey
            .iteration_start_dates
            .as_ref()
            .map(|dates| dates.iter().map(|d| iso(*d)).collect::<Vec<_>>()),
        "current_iteration": survey.current_iteration,
        "current_iteration_start_date": iso_opt(survey.current_iteration_start_date),
        "response_sampling_start_date": iso_opt(survey.response_sampling_start_date),
        "response_sampling_interval_type": survey.response_sampling_interval_type,
        "response_sampling_interval": survey.response_sampling_interval,
        "response_sampling_limit": survey.response_sampling_limit,
        "response_sampling_daily_limits": daily_limits(survey),
        "enable_partial_responses": survey.enable_partial_responses,
        "enable_iframe_embedding": survey.enable_iframe_embedding,
        "base_language": survey.base_language,
        "translations": survey.translations,
        "form_content": survey.form_content,
    });
    match fields {
        Value::Object(map) => map,
        _ => Map::new(),
    }
}

/// SurveySerializer (list and retrieve). `creator` is the UserBasic JSON (or null), `actions`
/// the actions its conditions name ([`crate::actions::Actions::api`]).
pub fn survey(survey: &Survey, flags: &Flags<'_>, creator: Value, actions: &[Value]) -> Value {
    searched(survey, flags, creator, actions, None)
}

/// [`survey`] for a list filtered by `?search=`: how the survey matched (`exact`|`similar`).
pub fn searched(
    survey: &Survey,
    flags: &Flags<'_>,
    creator: Value,
    actions: &[Value],
    match_type: Option<&str>,
) -> Value {
    let mut map = common(survey, flags, creator, actions);
    // `linked_flag_id` reads through the relation: a deleted flag shows as null.
    map.insert("linked_flag_id".into(), json!(flags.linked.map(|f| f.id)));
    map.insert("linked_insight_id".into(), json!(survey.linked_insight_id));
    map.insert(
        "feature_flag_keys".into(),
        json!([
            {"key": "linked_flag_key", "value": key(flags.linked)},
            {"key": "targeting_flag_key", "value": key(flags.targeting)},
            {"key": "internal_targeting_flag_key", "value": key(flags.internal_targeting)},
            {"key": "internal_response_sampling_flag_key", "value": key(flags.internal_response_sampling)},
        ]),
    );
    // No access control here: whoever may read a project edits its surveys.
    map.insert("user_access_level".into(), json!("editor"));
    map.insert("search_match_type".into(), json!(match_type));
    Value::Object(map)
}

/// The create/update serializer's answer: its write-only fields (`linked_flag_id`,
/// `linked_insight_id`, `targeting_flag_id`, `targeting_flag_filters`, `remove_targeting_flag`)
/// are never shown by DRF, and it has no `feature_flag_keys` or `user_access_level`; its
/// conditions show the actions as [`survey`]'s do.
pub fn written(survey: &Survey, flags: &Flags<'_>, creator: Value, actions: &[Value]) -> Value {
    Value::Object(common(survey, flags, creator, actions))
}

/// SurveyAPISerializer: what posthog-js reads (no description: customers keep notes there);
/// `actions` are the actions its conditions name as the SDK reads them
/// ([`crate::actions::Actions::sdk`]: `{id, name, steps}`).
pub fn sdk(survey: &Survey, flags: &Flags<'_>, actions: &[Value]) -> Value {
    let mut map = match json!({
        "id": survey.id,
        "name": survey.name,
        "type": survey.kind,
        "linked_flag_key": key(flags.linked),
        "targeting_flag_key": key(flags.targeting),
        "internal_targeting_flag_key": key(flags.internal_targeting),
        "questions": survey.questions,
        "conditions": conditions(survey, actions),
        "appearance": survey.appearance,
        "start_date": iso_opt(survey.start_date),
        "end_date": iso_opt(survey.end_date),
        "current_iteration": survey.current_iteration,
        "current_iteration_start_date": iso_opt(survey.current_iteration_start_date),
        "schedule": survey.schedule,
        "enable_partial_responses": survey.enable_partial_responses,
        "base_language": survey.base_language,
    }) {
        Value::Object(map) => map,
        _ => Map::new(),
    };
    if let Some(translations) = sdk_translations(survey.translations.as_ref()) {
        map.insert("translations".into(), translations);
    }
    Value::Object(map)
}

/// Survey-level translations the SDK uses: valid language keys, the name and thank-you texts;
/// none at all when nothing is left.
fn sdk_translations(translations: Option<&Value>) -> Option<Value> {
    const FIELDS: &[&str] = &[
        "name",
        "thankYouMessageHeader",
        "thankYouMessageDescription",
        "thankYouMessageCloseButtonText",
    ];
    let Some(Value::Object(languages)) = translations else {
        return None;
    };
    let mut kept = Map::new();
    for (code, fields) in languages {
        if !languages::is_translation_key(code) {
            continue;
        }
        let Value::Object(fields) = fields else {
            continue;
        };
        let texts: Map<String, Value> = fields
            .iter()
            .filter(|(field, value)| FIELDS.contains(&field.as_str()) && value.is_string())
            .map(|(field, value)| (field.clone(), value.clone()))
            .collect();
        if !texts.is_empty() {
            kept.insert(code.clone(), Value::Object(texts));
        }
    }
    (!kept.is_empty()).then_some(Value::Object(kept))
}

#[cfg(test)]
mod tests {
    use chrono::{TimeZone, Utc};

    use super::*;

    fn stored() -> Survey {
        serde_json::from_value(json!({
            "id": "01890000-0000-7000-8000-000000000001", "team_id": 1, "name": "NPS",
            "description": "internal note", "type": "popover", "schedule": "once",
            "linked_flag_id": 7, "internal_targeting_flag_id": 9,
            "questions": [{"id": "q1", "type": "rating", "question": "How likely?", "scale": 10}],
            "conditions": {"url": "/app", "actions": {"values": [{"id": 3}]}},
            "start_date": "2025-01-10T12:00:00.250Z",
            "response_sampling_daily_limits": "[{\"date\": \"2025-01-10T00:00:00+00:00\"}]",
            "translations": {"fr": {"name": "NPS fr", "description": "x"}, "default": {"name": "no"}, "de": {"description": "only"}},
            "headline_summary": "secret", "created_at": "2025-01-01T00:00:00Z", "version": 3
        }))
        .unwrap()
    }

    fn flag(id: i64, key: &str) -> FeatureFlag {
        serde_json::from_value(json!({"id": id, "team_id": 1, "key": key, "active": true,
            "version": 1, "created_at": "2025-01-01T00:00:00Z"}))
        .unwrap()
    }

    #[test]
    fn survey_serializer() {
        let linked = flag(7, "beta");
        let internal = flag(9, "survey-targeting-abc-custom");
        let flags = Flags {
            linked: Some(&linked),
            internal_targeting: Some(&internal),
            ..Default::default()
        };
        let out = survey(&stored(), &flags, json!({"email": "a@b.c"}), &[]);
        assert_eq!(out["type"], "popover");
        assert_eq!(out["linked_flag_id"], 7);
        assert_eq!(out["linked_flag"]["key"], "beta");
        assert_eq!(out["targeting_flag"], Value::Null);
        assert_eq!(out["internal_targeting_flag"]["id"], 9);
        assert_eq!(out["created_at"], "2025-01-01T00:00:00Z");
        assert_eq!(out["start_date"], "2025-01-10T12:00:00.250000Z");
        assert_eq!(out["created_by"]["email"], "a@b.c");
        // No action of the project is named: the conditions as stored.
        assert_eq!(
            out["conditions"],
            json!({"url": "/app", "actions": {"values": [{"id": 3}]}})
        );
        // The actions it names, as they are now, in their place.
        let shown = [json!({"id": 3, "name": "Signed up", "steps": []})];
        assert_eq!(
            survey(&stored(), &flags, Value::Null, &shown)["conditions"],
            json!({"url": "/app", "actions": {"values": shown}})
        );
        assert_eq!(
            out["feature_flag_keys"],
            json!([{"key": "linked_flag_key", "value": "beta"},
                   {"key": "targeting_flag_key", "value": null},
                   {"key": "internal_targeting_flag_key", "value": "survey-targeting-abc-custom"},
                   {"key": "internal_response_sampling_flag_key", "value": null}])
        );
        assert_eq!(out["user_access_level"], "editor");
        assert_eq!(out["search_match_type"], Value::Null);
        assert_eq!(
            out["response_sampling_daily_limits"],
            "[{\"date\": \"2025-01-10T00:00:00+00:00\"}]"
        );
        assert_eq!(
            out["questions"][0],
            json!({"id": "q1", "type": "rating", "question": "How likely?", "scale": 10})
        );
        assert!(out.get("headline_summary").is_none());
        assert!(out.get("question_summaries").is_none());
        assert_eq!(
            searched(&stored(), &flags, Value::Null, &[], Some("exact"))["search_match_type"],
            "exact"
        );
        // A linked flag deleted since reads as no linked flag.
        assert_eq!(
            survey(&stored(), &Flags::default(), Value::Null, &[])["linked_flag_id"],
            Value::Null
        );
    }

    #[test]
    fn written_answer() {
        let shown = [json!({"id": 3, "name": "Signed up"})];
        let out = written(&stored(), &Flags::default(), Value::Null, &shown);
        for absent in [
            "linked_flag_id",
            "linked_insight_id",
            "feature_flag_keys",
            "user_access_level",
            "search_match_type",
        ] {
            assert!(out.get(absent).is_none(), "{absent}");
        }
        assert_eq!(out["conditions"]["actions"], json!({"values": shown}));
        assert_eq!(out["conditions"]["url"], "/app");
        assert_eq!(out["name"], "NPS");
    }

    #[test]
    fn sdk_payload() {
        let targeting = flag(8, "survey-targeting-xyz");
        let flags = Flags {
            targeting: Some(&targeting),
            ..Default::default()
        };
        let out = sdk(&stored(), &flags, &[]);
        assert!(out.get("description").is_none());
        assert_eq!(out["targeting_flag_key"], "survey-targeting-xyz");
        assert_eq!(out["linked_flag_key"], Value::Null);
        assert_eq!(out["translations"], json!({"fr": {"name": "NPS fr"}}));
        let mut plain = stored();
        plain.translations = Some(json!({"de": {"description": "only"}}));
        assert!(sdk(&plain, &flags, &[]).get("translations").is_none());
        let shown = [json!({"id": 3, "name": "Signed up", "steps": [{"event": "signup"}]})];
        assert_eq!(
            sdk(&stored(), &flags, &shown)["conditions"]["actions"],
            json!({"values": shown})
        );
        plain.conditions = None;
        assert_eq!(sdk(&plain, &flags, &[])["conditions"], Value::Null);
    }

    #[test]
    fn dates() {
        let at = Utc.with_ymd_and_hms(2025, 1, 2, 3, 4, 5).unwrap();
        assert_eq!(iso(at), "2025-01-02T03:04:05Z");
    }
}
