//! `POST /surveys/:id/duplicate_to_projects` (reference 1.11): copies of a survey into other
//! projects of the caller's organization, all in one Store transaction, so one inaccessible
//! target writes nothing. Copies are drafts without flags (PostHog's bulk create skips the flag
//! side effects; launching a copy creates them).

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use common::activity::Actor;
use common::error::{ApiError, ApiResult};
use common::http::Json;
use common::store::{MAX_TRANSACTION_ITEMS, StoreError};
use common::{AppState, Authenticated};
use serde::Deserialize;
use serde_json::{Value, json};
use survey_core::Survey;
use survey_core::repository;

use crate::shared::{WRITE, load};

/// Writes per copy: the survey, its name claim and its `created` entry.
const WRITES_PER_COPY: usize = 3;
pub const MAX_TARGETS: usize = MAX_TRANSACTION_ITEMS / WRITES_PER_COPY;

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DuplicateBody {
    #[serde(default)]
    target_team_ids: Option<Value>,
}

pub async fn to_projects(
    State(state): State<AppState>,
    auth: Authenticated,
    Path((project, id)): Path<(String, String)>,
    Json(body): Json<DuplicateBody>,
) -> ApiResult<Response> {
    let store = state.store.as_ref();
    let project = auth.project(store, &project, WRITE).await?;
    let source = load(store, project.id, &id).await?.survey;
    let targets = target_ids(body.target_team_ids.as_ref())?;
    if targets.len() > MAX_TARGETS {
        return Err(ApiError::validation(
            "target_team_ids",
            format!(
                "At most {MAX_TARGETS} target teams can be duplicated to at once (all copies are written in one transaction)."
            ),
        ));
    }
    // Every target is checked before anything is written.
    for target in &targets {
        match auth.project(store, &target.to_string(), WRITE).await {
            Ok(_) => {}
            Err(error) if error.status.is_client_error() => {
                return Err(ApiError::validation(
                    "target_team_ids",
                    "One or more target teams not found or you don't have access to them",
                ));
            }
            Err(error) => return Err(error),
        }
    }
    let at = state.clock.now();
    let actor = Actor::user(&auth.user);
    let suffix = format!(" (duplicated at {})", at.format("%Y-%m-%d %H:%M:%S"));
    let mut ops = Vec::new();
    let mut created = Vec::new();
    for target in &targets {
        let mut copy = copy_of(&source, *target, &suffix, auth.user.uuid, at);
        ops.extend(repository::plan_create(&mut copy, &actor)?);
        created.push(json!({"team_id": target, "survey_id": copy.id, "name": copy.name}));
    }
    match store.transact_write(ops).await {
        Ok(()) => {}
        Err(StoreError::ConditionFailed) => {
            return Err(ApiError::validation(
                "target_team_ids",
                "A survey with the copy's name already exists in one of the target teams; nothing was copied.",
            ));
        }
        Err(other) => return Err(other.into()),
    }
    let count = created.len();
    Ok((
        StatusCode::CREATED,
        axum::Json(json!({"created_surveys": created, "count": count})),
    )
        .into_response())
}

/// The distinct team ids of the body; PostHog's 400 for anything but a non-empty list of ints.
fn target_ids(raw: Option<&Value>) -> ApiResult<Vec<i64>> {
    let invalid = || {
        ApiError::validation(
            "target_team_ids",
            "target_team_ids must be a non-empty list of team IDs",
        )
    };
    let Some(Value::Array(items)) = raw else {
        return Err(invalid());
    };
    if items.is_empty() {
        return Err(invalid());
    }
    let mut ids = Vec::with_capacity(items.len());
    for item in items {
        let id = match item {
            Value::Number(n) => n.as_i64(),
            Value::String(s) => s.trim().parse::<i64>().ok(),
            _ => None,
        }
        .ok_or_else(invalid)?;
        if !ids.contains(&id) {
            ids.push(id);
        }
    }
    Ok(ids)
}

/// The copy PostHog makes: same content, new question ids, conditions without the parts that
/// name the source project's flags, actions and events; a draft, unarchived, without flags.
fn copy_of(
    source: &Survey,
    team_id: i64,
    suffix: &str,
    user: uuid::Uuid,
    at: chrono::DateTime<chrono::Utc>,
) -> Survey {
    let mut copy = source.clone();
    copy.id = uuid::Uuid::now_v7();
    copy.team_id = team_id;
    copy.name = format!("{}{suffix}", source.name);
    for question in &mut copy.questions {
        question.id = uuid::Uuid::new_v4().to_string();
    }
    if let Some(Value::Object(conditions)) = &mut copy.conditions {
        for key in ["linkedFlagVariant", "actions", "events"] {
            conditions.remove(key);
        }
    }
    copy.linked_flag_id = None;
    copy.linked_insight_id = None;
    copy.targeting_flag_id = None;
    copy.internal_targeting_flag_id = None;
    copy.internal_response_sampling_flag_id = None;
    copy.archived = false;
    copy.start_date = None;
    copy.end_date = None;
    copy.iteration_start_dates = None;
    copy.current_iteration = None;
    copy.current_iteration_start_date = None;
    copy.response_sampling_start_date = None;
    copy.response_sampling_interval_type = None;
    copy.response_sampling_interval = None;
    copy.response_sampling_limit = None;
    copy.response_sampling_daily_limits = None;
    copy.headline_summary = None;
    copy.headline_response_count = None;
    copy.question_summaries.clear();
    copy.created_by = Some(user);
    copy.created_at = at;
    copy.updated_at = None;
    copy.version = 0;
    copy
}
