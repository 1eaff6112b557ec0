//! Write validation of a survey (reference 1.1–1.4): PostHog's SurveySerializerCreateUpdateOnly
//! field checks, its `validate`, the update-time recurrence check and what its pre_save derives.
//!
//! Per-field checks run on what the body sends, in PostHog's field order (the first failing
//! field is answered). Cross-field checks run on the survey as it will be stored, except those
//! that must not re-judge stored state nobody touched (a sampling start date in the past,
//! flags deleted since). Name uniqueness is the repository's (a claim item in the write).

mod appearance;
pub mod body;
mod conditions;
mod fields;
mod iterations;
pub mod languages;
mod questions;
mod sampling;
mod targeting;

#[cfg(test)]
mod tests;

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use common::error::ApiError;
use common::store::Store;
use feature_flags::model::FlagFilters;
use uuid::Uuid;

pub use body::{SurveyBody, Timestamp};
pub use fields::{MAX_ITERATION_COUNT, MAX_NAME_CHARS};
pub use sampling::python_datetime;

use crate::{Question, Survey};
use fields::{bounded, not_null, positive};

/// What to do with the survey's targeting flag.
#[derive(Debug, Clone, PartialEq)]
pub enum Targeting {
    /// Leave it as it is (or absent).
    Keep,
    /// Create it, or replace its filters, with these.
    Set(FlagFilters),
    /// Delete it (`remove_targeting_flag: true`).
    Remove,
}

/// A survey ready to store, and what its targeting flag must become.
#[derive(Debug, Clone)]
pub struct Checked {
    pub survey: Survey,
    pub targeting: Targeting,
}

/// A new survey from a POST body: `id`, `team_id` and `created_at` set, flag ids left for the
/// repository, derived fields (iterations, sampling limits, question ids) filled.
pub async fn create(
    store: &dyn Store,
    team_id: i64,
    body: SurveyBody,
    now: DateTime<Utc>,
) -> Result<Checked, ApiError> {
    let mut survey = Survey {
        id: Uuid::now_v7(),
        team_id,
        name: String::new(),
        description: String::new(),
        // Both are required on create: `apply` answers their absence in field order.
        kind: crate::SurveyType::Popover,
        schedule: Some("once".into()),
        linked_flag_id: None,
        linked_insight_id: None,
        targeting_flag_id: None,
        internal_targeting_flag_id: None,
        internal_response_sampling_flag_id: None,
        questions: Vec::new(),
        conditions: None,
        appearance: None,
        start_date: None,
        end_date: None,
        archived: false,
        responses_limit: None,
        iteration_count: None,
        iteration_frequency_days: None,
        iteration_start_dates: None,
        current_iteration: None,
        current_iteration_start_date: None,
        response_sampling_start_date: None,
        response_sampling_interval_type: Some("week".into()),
        response_sampling_interval: None,
        response_sampling_limit: None,
        response_sampling_daily_limits: None,
        enable_partial_responses: Some(false),
        enable_iframe_embedding: false,
        base_language: "en".into(),
        translations: None,
        form_content: None,
        headline_summary: None,
        headline_response_count: None,
        question_summaries: BTreeMap::new(),
        created_by: None,
        created_at: now,
        updated_at: None,
        version: 0,
    };
    let targeting = apply(store, &mut survey, None, body, now).await?;
    Ok(Checked { survey, targeting })
}

/// A field a create must send.
fn required<T>(attr: &str, creating: bool, field: &body::Field<T>) -> Result<(), ApiError> {
    if creating && field.is_none() {
        return Err(ApiError::required(attr));
    }
    Ok(())
}

/// `before` with the fields `body` sends, checked and derived again.
pub async fn update(
    store: &dyn Store,
    team_id: i64,
    before: &Survey,
    body: SurveyBody,
    now: DateTime<Utc>,
) -> Result<Checked, ApiError> {
    let mut survey = before.clone();
    survey.team_id = team_id;
    let targeting = apply(store, &mut survey, Some(before), body, now).await?;
    Ok(Checked { survey, targeting })
}

/// Applies and checks `body` on `survey` (`before` is the stored survey on a PATCH).
async fn apply(
    store: &dyn Store,
    survey: &mut Survey,
    before: Option<&Survey>,
    body: SurveyBody,
    now: DateTime<Utc>,
) -> Result<Targeting, ApiError> {
    let team_id = survey.team_id;
    let creating = before.is_none();
    let conditions_sent = body.conditions.is_some();

    // Field by field, in PostHog's order.
    required("name", creating, &body.name)?;
    if let Some(name) = not_null("name", body.name)? {
        survey.name = fields::text("name", name, MAX_NAME_CHARS)?;
    }
    if let Some(description) = not_null("description", body.description)? {
        survey.description = description;
    }
    required("type", creating, &body.kind)?;
    if let Some(kind) = not_null("type", body.kind)? {
        survey.kind = fields::survey_type(&kind)?;
    }
    if let Some(schedule) = body.schedule {
        survey.schedule = fields::schedule(schedule)?;
    }
    if let Some(id) = body.linked_flag_id {
        survey.linked_flag_id = id;
    }
    if let Some(id) = body.linked_insight_id {
        survey.linked_insight_id = id;
    }
    let targeting_flag_id = not_null("targeting_flag_id", body.targeting_flag_id)?;
    let targeting_filters = body.targeting_flag_filters.flatten();
    let remove_targeting = body.remove_targeting_flag.flatten().unwrap_or(false);

    // Languages first: question and survey translations are checked against them.
    if let Some(language) = not_null("base_language", body.base_language.clone())? {
        survey.base_language = languages::base_language(language)?;
    }
    let known = before.map(languages::known_keys).unwrap_or_default();
    let base_language = survey.base_language.clone();
    let keys = languages::Keys {
        base_language: &base_language,
        known: &known,
    };
    if let Some(questions) = body.questions {
        survey.questions = match questions {
            Some(questions) => self::questions::questions(questions, &keys)?,
            None => Vec::new(),
        };
    }
    if let Some(conditions) = body.conditions {
        survey.conditions = conditions
            .map(self::conditions::conditions)
            .transpose()?
            .flatten();
    }
    if let Some(appearance) = body.appearance {
        survey.appearance = appearance
            .map(self::appearance::appearance)
            .transpose()?
            .flatten();
    }
    if let Some(start) = body.start_date {
        survey.start_date = start.map(|t| t.0);
    }
    if let Some(end) = body.end_date {
        survey.end_date = end.map(|t| t.0);
    }
    if let Some(archived) = not_null("archived", body.archived)? {
        survey.archived = archived;
    }
    if let Some(limit) = body.responses_limit {
        survey.responses_limit = positive("responses_limit", limit)?;
    }
    let iteration_count = body.iteration_count;
    if let Some(count) = iteration_count {
        survey.iteration_count = count
            .map(|c| bounded("iteration_count", c, 0, MAX_ITERATION_COUNT))
            .transpose()?;
    }
    if let Some(days) = body.iteration_frequency_days {
        survey.iteration_frequency_days = positive("iteration_frequency_days", days)?;
    }
    if let Some(current) = body.current_iteration {
        survey.current_iteration = positive("current_iteration", current)?;
    }
    if let Some(start) = body.current_iteration_start_date {
        survey.current_iteration_start_date = start.map(|t| t.0);
    }
    let sampling_start = body.response_sampling_start_date;
    if let Some(start) = sampling_start {
        survey.response_sampling_start_date = start.map(|t| t.0);
    }
    if let Some(kind) = body.response_sampling_interval_type {
        survey.response_sampling_interval_type = fields::interval_type(kind)?;
    }
    if let Some(interval) = body.response_sampling_interval {
        survey.response_sampling_interval = positive("response_sampling_interval", interval)?;
    }
    if let Some(limit) = body.response_sampling_limit {
        survey.response_sampling_limit = positive("response_sampling_limit", limit)?;
    }
    if let Some(partial) = body.enable_partial_responses {
        survey.enable_partial_responses = partial;
    }
    if let Some(iframe) = body.enable_iframe_embedding {
        // Nullable in the serializer, not in the table: null is the default, false.
        survey.enable_iframe_embedding = iframe.unwrap_or(false);
    }
    if let Some(translations) = body.translations {
        survey.translations = match translations {
            Some(value) => languages::survey_translations(value, &keys)?,
            None => None,
        };
    }
    if let Some(form) = body.form_content {
        survey.form_content = form;
    }

    // The serializer's `validate`.
    let linked = match body.linked_flag_id.flatten() {
        Some(id) => Some(targeting::linked_flag(store, team_id, id).await?),
        None => None,
    };
    if let Some(id) = targeting_flag_id {
        targeting::targeting_flag(store, team_id, id).await?;
        // PostHog writes the id onto the survey; the repository decides what it owns.
        survey.targeting_flag_id = Some(id);
    }
    if let Some(id) = body.linked_insight_id.flatten() {
        targeting::linked_insight(id)?;
    }
    if conditions_sent || body.linked_flag_id.is_some() {
        let linked = match (&linked, survey.linked_flag_id) {
            (Some(flag), _) => Some(flag.clone()),
            (None, Some(id)) => feature_flags::repository::get_live(store, team_id, id).await?,
            (None, None) => None,
        };
        self::conditions::linked_flag_variant(survey, linked.as_ref())?;
    }
    let asks_targeting = targeting_filters.as_ref().is_some_and(targeting::asks);
    let targeting = match targeting_filters.filter(targeting::asks) {
        Some(sent) => {
            // After a removal the new filters start a new flag: nothing to merge into.
            let current = before.filter(|_| !remove_targeting);
            Targeting::Set(targeting::filters(store, team_id, sent, current).await?)
        }
        None if remove_targeting && before.is_some() => Targeting::Remove,
        None => Targeting::Keep,
    };
    if let Some(Some(start)) = sampling_start {
        sampling::start_date(start.0, now)?;
    }
    sampling::settings(survey)?;
    if appearance::shuffles_questions(survey.appearance.as_ref())
        && has_branching(&survey.questions)
    {
        return Err(ApiError::bad_request(
            "invalid_input",
            "Question shuffling and question branching cannot be used together. Please disable one of these features.",
        ));
    }
    self::conditions::external(survey, asks_targeting)?;

    // The serializer's `update`.
    if let Some(before) = before {
        iterations::recurrence(before, iteration_count.flatten())?;
    }

    // The model's pre_save.
    iterations::derive(survey);
    survey.response_sampling_daily_limits = sampling::daily_limits(survey);
    ensure_question_ids(&mut survey.questions);
    Ok(targeting)
}

fn has_branching(questions: &[Question]) -> bool {
    questions
        .iter()
        .any(|q| q.branching.as_ref().is_some_and(|b| !b.is_null()))
}

/// A question without an id gets a new one, so `$survey_response_<id>` keys stay attached.
pub fn ensure_question_ids(questions: &mut [Question]) {
    for question in questions {
        if question.id.is_empty() {
            question.id = Uuid::new_v4().to_string();
        }
    }
}
