//! An action as stored, and its steps as PostHog's `ActionStepJSON` has them.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use uuid::Uuid;

/// The event PostHog's autocapture sends: only its steps test the element chain.
pub const AUTOCAPTURE: &str = "$autocapture";

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Action {
    pub id: i64,
    pub team_id: i64,
    pub name: String,
    #[serde(default)]
    pub description: String,
    #[serde(default)]
    pub tags: Vec<String>,
    #[serde(default)]
    pub post_to_slack: bool,
    #[serde(default)]
    pub slack_message_format: String,
    /// An event matches the action when it matches any step (none: every event, as PostHog).
    #[serde(default)]
    pub steps: Vec<Step>,
    #[serde(default)]
    pub deleted: bool,
    #[serde(default)]
    pub pinned_at: Option<DateTime<Utc>>,
    /// PostHog stamps it at creation and never recalculates here: it only orders the list.
    #[serde(default)]
    pub last_calculated_at: Option<DateTime<Utc>>,
    #[serde(default)]
    pub created_by: Option<Uuid>,
    pub created_at: DateTime<Utc>,
    #[serde(default)]
    pub updated_at: Option<DateTime<Utc>>,
    /// Optimistic-concurrency counter, bumped on every save.
    #[serde(default)]
    pub version: u64,
}

/// How a step's `url`, `text` or `href` is compared.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Matching {
    #[default]
    Contains,
    Exact,
    Regex,
}

/// One way to match an event: every field it sets must hold (an AND).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Step {
    #[serde(default)]
    pub event: Option<String>,
    /// Property filters, as nodes take them.
    #[serde(default)]
    pub properties: Option<Vec<Value>>,
    /// A CSS selector the clicked element (and its ancestors) must match.
    #[serde(default)]
    pub selector: Option<String>,
    #[serde(default)]
    pub tag_name: Option<String>,
    #[serde(default)]
    pub text: Option<String>,
    #[serde(default)]
    pub text_matching: Option<Matching>,
    #[serde(default)]
    pub href: Option<String>,
    #[serde(default)]
    pub href_matching: Option<Matching>,
    /// Tested against `properties.$current_url`.
    #[serde(default)]
    pub url: Option<String>,
    #[serde(default)]
    pub url_matching: Option<Matching>,
}

impl Step {
    /// Whether the element fields apply: PostHog tests them on autocapture steps only.
    pub fn is_autocapture(&self) -> bool {
        self.event.as_deref() == Some(AUTOCAPTURE)
    }
}
