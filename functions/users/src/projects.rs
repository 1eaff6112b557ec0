use axum::extract::{Path, State};
use common::http::Json;
use common::models::{PathCleaningRule, Project, Scope};
use common::pagination::Pagination;
use common::provisioning::valid_timezone;
use common::{ApiError, ApiResult, AppState, Authenticated};
use serde::Deserialize;
use serde_json::Value;

use crate::payload;

const PROJECT_READ: Scope = Scope::read("project");
const PROJECT_WRITE: Scope = Scope::write("project");

/// `GET /api/projects/`: the projects of the caller's current organization this key may use.
pub async fn list(
    State(state): State<AppState>,
    auth: Authenticated,
    pagination: Pagination,
) -> ApiResult<axum::Json<Value>> {
    auth.require(PROJECT_READ)?;
    let store = state.store.as_ref();
    let mut projects = Vec::new();
    if let Some(organization_id) = auth.user.current_organization_id {
        for id in Project::ids_of_organization(store, organization_id).await? {
            // The same rules as a single project: scoped keys see only their projects.
            match auth.project(store, &id.to_string(), PROJECT_READ).await {
                Ok(project) => projects.push(payload::project(&project)),
                Err(error) if error.status.is_client_error() => continue,
                Err(error) => return Err(error),
            }
        }
    }
    projects.sort_by_key(|project| project["id"].as_i64());
    Ok(axum::Json(pagination.page(&projects)))
}

/// `GET /api/projects/:project_id/`
pub async fn retrieve(
    State(state): State<AppState>,
    auth: Authenticated,
    Path(project_id): Path<String>,
) -> ApiResult<axum::Json<Value>> {
    let project = auth
        .project(state.store.as_ref(), &project_id, PROJECT_READ)
        .await?;
    Ok(axum::Json(payload::project(&project)))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProjectChanges {
    name: Option<String>,
    timezone: Option<String>,
    week_start_day: Option<u8>,
    /// Property filters marking test accounts: objects, each with a `key`.
    test_account_filters: Option<Vec<serde_json::Map<String, Value>>>,
    /// `[{"alias", "regex"}]`: how paths insights clean URLs when they ask for replacements.
    path_cleaning_filters: Option<Vec<Value>>,
}

const MAX_NAME_CHARS: usize = 200;

/// `PATCH /api/projects/:project_id/` with `name`, `timezone`, `week_start_day`,
/// `test_account_filters` and/or `path_cleaning_filters`.
pub async fn update(
    State(state): State<AppState>,
    auth: Authenticated,
    Path(project_id): Path<String>,
    Json(changes): Json<ProjectChanges>,
) -> ApiResult<axum::Json<Value>> {
    let store = state.store.as_ref();
    let project = auth.project(store, &project_id, PROJECT_WRITE).await?;
    let name = changes.name.map(|name| name.trim().to_owned());
    if let Some(name) = &name {
        if name.is_empty() {
            return Err(ApiError::field(
                "name",
                "blank",
                "This field may not be blank.",
            ));
        }
        if name.chars().count() > MAX_NAME_CHARS {
            return Err(ApiError::field(
                "name",
                "max_length",
                format!("Ensure this field has no more than {MAX_NAME_CHARS} characters."),
            ));
        }
    }
    if let Some(timezone) = &changes.timezone
        && !valid_timezone(timezone)
    {
        return Err(ApiError::field(
            "timezone",
            "invalid_choice",
            format!("\"{timezone}\" is not a valid choice."),
        ));
    }
    if let Some(day) = changes.week_start_day
        && day > 1
    {
        return Err(ApiError::field(
            "week_start_day",
            "invalid_choice",
            format!("\"{day}\" is not a valid choice: 0 (Sunday) or 1 (Monday)."),
        ));
    }
    if let Some(filters) = &changes.test_account_filters
        && let Some(index) = filters
            .iter()
            .position(|filter| !filter.get("key").is_some_and(Value::is_string))
    {
        return Err(ApiError::field(
            "test_account_filters",
            "invalid_input",
            format!("Filter at index {index} must have a string 'key'."),
        ));
    }
    let path_cleaning_filters = changes
        .path_cleaning_filters
        .as_deref()
        .map(path_cleaning_rules)
        .transpose()?;
    let updated = Project::update(store, project.id, |project| {
        if let Some(name) = &name {
            project.name = name.clone();
        }
        if let Some(timezone) = &changes.timezone {
            project.timezone = timezone.clone();
        }
        if let Some(day) = changes.week_start_day {
            project.week_start_day = Some(day);
        }
        if let Some(filters) = &changes.test_account_filters {
            project.test_account_filters = filters.iter().cloned().map(Value::Object).collect();
        }
        if let Some(rules) = &path_cleaning_filters {
            project.path_cleaning_filters = rules.clone();
        }
    })
    .await?;
    Ok(axum::Json(payload::project(&updated)))
}

/// Path cleaning rules, each an object with a string `alias` and a `regex` that compiles.
fn path_cleaning_rules(rules: &[Value]) -> ApiResult<Vec<PathCleaningRule>> {
    rules
        .iter()
        .enumerate()
        .map(|(index, rule)| {
            let invalid =
                |detail: String| ApiError::field("path_cleaning_filters", "invalid_input", detail);
            let rule: PathCleaningRule = serde_json::from_value(rule.clone()).map_err(|_| {
                invalid(format!(
                    "Rule at index {index} must be an object with a string 'alias' and 'regex'."
                ))
            })?;
            regex::Regex::new(&rule.regex).map_err(|error| {
                invalid(format!(
                    "Rule at index {index} has an invalid regex: {error}"
                ))
            })?;
            Ok(rule)
        })
        .collect()
}
