//! JSON shapes of users and projects, as PostHog's serializers render them.

use common::models::{Organization, Project, User};
use serde_json::{Value, json};

pub fn project(project: &Project) -> Value {
    json!({
        "id": project.id,
        "uuid": project.uuid,
        "project_id": project.id,
        "organization": project.organization_id,
        "api_token": project.api_token,
        "name": project.name,
        "timezone": project.timezone,
        "week_start_day": project.week_start_day,
        "test_account_filters": project.test_account_filters,
        "path_cleaning_filters": project.path_cleaning_filters,
        "created_at": project.created_at,
        "updated_at": project.updated_at.unwrap_or(project.created_at),
    })
}

fn team_basic(project: &Project) -> Value {
    json!({
        "id": project.id,
        "uuid": project.uuid,
        "organization": project.organization_id,
        "project_id": project.id,
        "api_token": project.api_token,
        "name": project.name,
        "timezone": project.timezone,
    })
}

fn organization_basic(organization: &Organization) -> Value {
    json!({
        "id": organization.id,
        "name": organization.name,
        "created_at": organization.created_at,
    })
}

/// The user payload; `team` and `organization` are the current ones, when they still exist.
pub fn user(
    user: &User,
    team: Option<&Project>,
    organization: Option<&Organization>,
    organizations: &[Organization],
    two_factor_enabled: bool,
) -> Value {
    json!({
        "id": user.id(),
        "uuid": user.uuid,
        "distinct_id": user.distinct_id,
        "date_joined": user.date_joined,
        "first_name": user.first_name,
        "last_name": user.last_name,
        "email": user.email,
        "pending_email": user.pending_email,
        "is_email_verified": user.is_email_verified,
        "notification_settings": user.notification_settings,
        "anonymize_data": user.anonymize_data,
        "toolbar_mode": user.toolbar_mode,
        "has_password": user.password_hash.is_some(),
        "is_staff": user.is_staff,
        "is_impersonated": false,
        "is_2fa_enabled": two_factor_enabled,
        "has_social_auth": false,
        "events_column_config": user.events_column_config,
        "has_seen_product_intro_for": user.has_seen_product_intro_for,
        "theme_mode": user.theme_mode,
        "mascot_config": user.mascot_config,
        "hedgehog_config": user.mascot_config,
        "allow_sidebar_suggestions": user.allow_sidebar_suggestions,
        "shortcut_position": user.shortcut_position,
        "role_at_organization": user.role_at_organization,
        "team": team.map(team_basic),
        "organization": organization.map(organization_basic),
        "organizations": organizations.iter().map(organization_basic).collect::<Vec<_>>(),
    })
}
