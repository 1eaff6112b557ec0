//! A survey as stored (reference 1.1–1.3). Fields PostHog derives (`feature_flag_keys`, the
//! minimal flags, the actions `conditions.actions` names) are computed when rendering.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use uuid::Uuid;

/// Where and how the survey is shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SurveyType {
    Popover,
    Widget,
    ExternalSurvey,
    Api,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum QuestionType {
    Open,
    Link,
    Rating,
    SingleChoice,
    MultipleChoice,
}

impl QuestionType {
    pub fn as_str(self) -> &'static str {
        match self {
            QuestionType::Open => "open",
            QuestionType::Link => "link",
            QuestionType::Rating => "rating",
            QuestionType::SingleChoice => "single_choice",
            QuestionType::MultipleChoice => "multiple_choice",
        }
    }
}

/// One question (reference 1.2), as validated and stored: every question has an `id` once
/// stored (the server generates a missing one), so `$survey_response_<id>` keys stay attached.
/// Optional fields that were not sent are not written back.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Question {
    #[serde(default)]
    pub id: String,
    #[serde(rename = "type")]
    pub kind: QuestionType,
    pub question: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description_content_type: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub optional: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub button_text: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub translations: Option<Value>,
    /// `{"type": "next_question" | "end" | "specific_question" | "response_based", ...}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub branching: Option<Value>,
    /// link: an `https://` or `mailto:` address.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub link: Option<String>,
    /// rating: `number` | `emoji`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub display: Option<String>,
    /// rating: the highest score (3, 5, 7 or 10 for NPS).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scale: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lower_bound_label: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub upper_bound_label: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub is_nps_question: Option<bool>,
    /// single_choice / multiple_choice.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub choices: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shuffle_options: Option<bool>,
    /// The last choice is the open "Other".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub has_open_choice: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skip_submit_button: Option<bool>,
    /// open: `[{type: min_length | max_length | email, value?}]`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub validation: Option<Value>,
}

/// A stored per-question summary (PostHog's `question_summaries[question_id]`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QuestionSummary {
    pub content: String,
    pub response_count: i64,
    pub generated_at: DateTime<Utc>,
    #[serde(default)]
    pub trace_id: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Survey {
    pub id: Uuid,
    pub team_id: i64,
    pub name: String,
    #[serde(default)]
    pub description: String,
    #[serde(rename = "type")]
    pub kind: SurveyType,
    /// `once` | `recurring` | `always`.
    #[serde(default)]
    pub schedule: Option<String>,

    #[serde(default)]
    pub linked_flag_id: Option<i64>,
    #[serde(default)]
    pub linked_insight_id: Option<i64>,
    /// Created from `targeting_flag_filters`; deleted with `remove_targeting_flag`.
    #[serde(default)]
    pub targeting_flag_id: Option<i64>,
    /// Always present once stored: hides the survey from whoever answered or dismissed it.
    #[serde(default)]
    pub internal_targeting_flag_id: Option<i64>,
    #[serde(default)]
    pub internal_response_sampling_flag_id: Option<i64>,

    #[serde(default)]
    pub questions: Vec<Question>,
    /// Validated object (reference 1.3), as sent; the actions `actions.values` names are shown
    /// in its place when rendering.
    #[serde(default)]
    pub conditions: Option<Value>,
    #[serde(default)]
    pub appearance: Option<Value>,

    #[serde(default)]
    pub start_date: Option<DateTime<Utc>>,
    #[serde(default)]
    pub end_date: Option<DateTime<Utc>>,
    #[serde(default)]
    pub archived: bool,
    #[serde(default)]
    pub responses_limit: Option<i64>,

    #[serde(default)]
    pub iteration_count: Option<i64>,
    #[serde(default)]
    pub iteration_frequency_days: Option<i64>,
    #[serde(default)]
    pub iteration_start_dates: Option<Vec<DateTime<Utc>>>,
    #[serde(default)]
    pub current_iteration: Option<i64>,
    #[serde(default)]
    pub current_iteration_start_date: Option<DateTime<Utc>>,

    #[serde(default)]
    pub response_sampling_start_date: Option<DateTime<Utc>>,
    #[serde(default)]
    pub response_sampling_interval_type: Option<String>,
    #[serde(default)]
    pub response_sampling_interval: Option<i64>,
    #[serde(default)]
    pub response_sampling_limit: Option<i64>,
    /// PostHog stores the daily limits as a JSON *string*:
    /// `[{date, daily_response_limit, rollout_percentage}]`.
    #[serde(default)]
    pub response_sampling_daily_limits: Option<String>,

    #[serde(default)]
    pub enable_partial_responses: Option<bool>,
    #[serde(default)]
    pub enable_iframe_embedding: bool,
    #[serde(default = "default_language")]
    pub base_language: String,
    #[serde(default)]
    pub translations: Option<Value>,
    #[serde(default)]
    pub form_content: Option<Value>,

    /// The stored headline (`summary_headline`) and how many responses it read.
    #[serde(default)]
    pub headline_summary: Option<String>,
    #[serde(default)]
    pub headline_response_count: Option<i64>,
    /// question id -> its stored summary (`summarize_responses`).
    #[serde(default)]
    pub question_summaries: std::collections::BTreeMap<String, QuestionSummary>,

    #[serde(default)]
    pub created_by: Option<Uuid>,
    pub created_at: DateTime<Utc>,
    #[serde(default)]
    pub updated_at: Option<DateTime<Utc>>,
    /// Optimistic-concurrency counter, bumped on every save.
    #[serde(default)]
    pub version: u64,
}

fn default_language() -> String {
    "en".into()
}

/// Where a survey is in its life, from its dates (reference 1.6); `archived` is apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    Draft,
    Running,
    Complete,
}

impl Survey {
    pub fn status(&self, now: DateTime<Utc>) -> Status {
        match (self.start_date, self.end_date) {
            (_, Some(_)) => Status::Complete,
            (Some(start), None) if start <= now => Status::Running,
            _ => Status::Draft,
        }
    }

    /// Whether its flags serve it: started, not ended, not archived (PostHog's flag activity).
    pub fn flags_active(&self) -> bool {
        self.start_date.is_some() && self.end_date.is_none() && !self.archived
    }

    /// The person-property key suffix: `<id>`, or `<id>/<iteration>` for a recurring survey.
    pub fn response_key(&self) -> String {
        match self.iteration_count {
            Some(count) if count > 0 => {
                format!("{}/{}", self.id, self.current_iteration.unwrap_or(1).max(1))
            }
            _ => self.id.to_string(),
        }
    }

    /// `linkedFlagVariant` of the conditions, if set.
    pub fn linked_flag_variant(&self) -> Option<&str> {
        self.conditions.as_ref()?.get("linkedFlagVariant")?.as_str()
    }
}
