//! `GET`/`PATCH /api/users/:uuid/`: the user payload, and the fields a user may change.

use axum::extract::{Path, State};
use common::error::{ApiError, ApiResult};
use common::http::Json;
use common::models::{Membership, Organization, Project, Scope, Session, User, hash_password};
use common::store::{Store, StoreError};
use common::throttle::Throttle;
use common::{AppState, Authenticated};
use serde::{Deserialize, Deserializer};
use serde_json::{Map, Value};
use uuid::Uuid;

use crate::{email, payload, two_factor};

const USER_READ: Scope = Scope::read("user");
const USER_WRITE: Scope = Scope::write("user");

/// PostHog's UserAuthenticationThrottle: 5 a minute for requests carrying `current_password`.
const PASSWORD_ATTEMPTS: Throttle = Throttle::new("user-authentication", 5, 60);

/// The user `:uuid` names for a caller holding `scope`: `@me`, the caller's own uuid, or, for
/// staff only, anyone's.
pub async fn target_user(
    state: &AppState,
    auth: &Authenticated,
    uuid: &str,
    scope: Scope,
) -> ApiResult<User> {
    auth.require(scope)?;
    if uuid == "@me" || uuid == auth.user.uuid.to_string() {
        return Ok(auth.user.clone());
    }
    if !auth.user.is_staff {
        return Err(ApiError::permission_denied(
            "As a non-staff user you're only allowed to access the `@me` user instance.",
        ));
    }
    let uuid = Uuid::parse_str(uuid).map_err(|_| ApiError::not_found())?;
    User::load(state.store.as_ref(), uuid)
        .await?
        .ok_or_else(ApiError::not_found)
}

/// The full payload of `user` as the API shows it.
pub async fn render(state: &AppState, user: &User) -> ApiResult<Value> {
    let store = state.store.as_ref();
    // The three reads do not depend on each other: side by side, a DynamoDB store pays for
    // the longest of them rather than their sum (every `@me` renders this).
    let current_team = async {
        match user.current_team_id {
            Some(id) => Project::load(store, id).await,
            None => Ok(None),
        }
    };
    let (organizations, team, two_factor) = tokio::join!(
        organizations_of(store, user),
        current_team,
        two_factor::device(store, user),
    );
    let organizations = organizations?;
    // A current team left over from a lost membership is not shown (the payload carries its
    // token): like the organization, it must be one of the user's.
    let team = team?.filter(|team| organizations.iter().any(|o| o.id == team.organization_id));
    let organization = user
        .current_organization_id
        .and_then(|id| organizations.iter().find(|o| o.id == id));
    let two_factor = two_factor?.is_some();
    Ok(payload::user(
        user,
        team.as_ref(),
        organization,
        &organizations,
        two_factor,
    ))
}

/// The organizations `user` belongs to.
async fn organizations_of(store: &dyn Store, user: &User) -> Result<Vec<Organization>, StoreError> {
    let mut organizations = Vec::new();
    for membership in Membership::of_user(store, user.uuid).await? {
        organizations.extend(Organization::load(store, membership.organization_id).await?);
    }
    Ok(organizations)
}

/// `GET /api/users/:uuid/`
pub async fn retrieve(
    State(state): State<AppState>,
    auth: Authenticated,
    Path(uuid): Path<String>,
) -> ApiResult<axum::Json<Value>> {
    let user = target_user(&state, &auth, &uuid, USER_READ).await?;
    Ok(axum::Json(render(&state, &user).await?))
}

/// Distinguishes a field sent as `null` (`Some(None)`) from one not sent (`None`).
fn nullable<'de, D: Deserializer<'de>, T: Deserialize<'de>>(
    deserializer: D,
) -> Result<Option<Option<T>>, D::Error> {
    Option::<T>::deserialize(deserializer).map(Some)
}

/// The writable fields of the user payload; read-only ones a client echoes back are ignored.
#[derive(Debug, Default, Deserialize)]
pub struct UserChanges {
    first_name: Option<String>,
    last_name: Option<String>,
    email: Option<String>,
    password: Option<String>,
    current_password: Option<String>,
    notification_settings: Option<Map<String, Value>>,
    anonymize_data: Option<bool>,
    #[serde(default, deserialize_with = "nullable")]
    toolbar_mode: Option<Option<String>>,
    is_staff: Option<bool>,
    set_current_organization: Option<Uuid>,
    set_current_team: Option<i64>,
    events_column_config: Option<Map<String, Value>>,
    has_seen_product_intro_for: Option<Map<String, Value>>,
    #[serde(default, deserialize_with = "nullable")]
    theme_mode: Option<Option<String>>,
    #[serde(default, deserialize_with = "nullable", alias = "hedgehog_config")]
    mascot_config: Option<Option<Map<String, Value>>>,
    #[serde(default, deserialize_with = "nullable")]
    allow_sidebar_suggestions: Option<Option<bool>>,
    #[serde(default, deserialize_with = "nullable")]
    shortcut_position: Option<Option<String>>,
    #[serde(default, deserialize_with = "nullable")]
    role_at_organization: Option<Option<String>>,
}

const NAME_CHARS: usize = 150;
const TOOLBAR_MODES: &[&str] = &["disabled", "toolbar"];
const THEME_MODES: &[&str] = &["light", "dark", "system"];
const SHORTCUT_POSITIONS: &[&str] = &["above", "below", "hidden"];
const ROLES: &[&str] = &[
    "engineering",
    "data",
    "product",
    "founder",
    "leadership",
    "marketing",
    "sales",
    "other",
];

fn max_length(attr: &str, value: &str, limit: usize) -> ApiResult<()> {
    if value.chars().count() > limit {
        return Err(ApiError::field(
            attr,
            "max_length",
            format!("Ensure this field has no more than {limit} characters."),
        ));
    }
    Ok(())
}

/// `null` and `""` clear a choice field; anything else must be one of `choices`.
fn choice(attr: &str, value: &Option<Option<String>>, choices: &[&str]) -> ApiResult<()> {
    if let Some(Some(text)) = value
        && !text.is_empty()
        && !choices.contains(&text.as_str())
    {
        return Err(ApiError::field(
            attr,
            "invalid_choice",
            format!("\"{text}\" is not a valid choice."),
        ));
    }
    Ok(())
}

pub fn valid_email(email: &str) -> bool {
    let Some((local, domain)) = email.rsplit_once('@') else {
        return false;
    };
    email.len() <= 254
        && !local.is_empty()
        && local.len() <= 64
        // Django's validator allows `localhost` besides dotted domains.
        && (domain.contains('.') || domain.eq_ignore_ascii_case("localhost"))
        && !domain.starts_with('.')
        && !domain.ends_with('.')
        && !email.chars().any(|c| c.is_whitespace() || c.is_control())
        && !domain.contains("..")
}

/// Django's default validators, in short: long enough, not only digits, not the e-mail address.
fn validate_password(password: &str, user: &User) -> ApiResult<()> {
    if password.chars().count() < 8 {
        return Err(ApiError::field(
            "password",
            "password_too_short",
            "This password is too short. It must contain at least 8 characters.",
        ));
    }
    if password.chars().count() > 128 {
        return Err(ApiError::field(
            "password",
            "max_length",
            "Ensure this field has no more than 128 characters.",
        ));
    }
    if password.chars().all(|c| c.is_ascii_digit()) {
        return Err(ApiError::field(
            "password",
            "password_entirely_numeric",
            "This password is entirely numeric.",
        ));
    }
    if password.eq_ignore_ascii_case(&user.email) {
        return Err(ApiError::field(
            "password",
            "password_too_similar",
            "The password is too similar to the email address.",
        ));
    }
    Ok(())
}

/// `PATCH /api/users/:uuid/`: validates everything first, then applies it in one update.
pub async fn update(
    State(state): State<AppState>,
    auth: Authenticated,
    Path(uuid): Path<String>,
    Json(changes): Json<UserChanges>,
) -> ApiResult<axum::Json<Value>> {
    let user = target_user(&state, &auth, &uuid, USER_WRITE).await?;
    let store = state.store.as_ref();

    for (attr, value) in [
        ("first_name", &changes.first_name),
        ("last_name", &changes.last_name),
    ] {
        if let Some(value) = value {
            max_length(attr, value, NAME_CHARS)?;
        }
    }
    choice("toolbar_mode", &changes.toolbar_mode, TOOLBAR_MODES)?;
    choice("theme_mode", &changes.theme_mode, THEME_MODES)?;
    choice(
        "shortcut_position",
        &changes.shortcut_position,
        SHORTCUT_POSITIONS,
    )?;
    choice("role_at_organization", &changes.role_at_organization, ROLES)?;
    if changes.is_staff.is_some_and(|staff| staff != user.is_staff) && !auth.user.is_staff {
        return Err(ApiError::permission_denied(
            "Only staff can change is_staff.",
        ));
    }

    let new_email = changes
        .email
        .as_deref()
        .map(str::trim)
        .filter(|email| !email.eq_ignore_ascii_case(&user.email));
    if let Some(email) = new_email
        && !valid_email(email)
    {
        return Err(ApiError::field(
            "email",
            "invalid_input",
            "Enter a valid email address.",
        ));
    }
    if let Some(password) = &changes.password {
        validate_password(password, &user)?;
    }
    if new_email.is_some() || changes.password.is_some() {
        let Some(current_password) = &changes.current_password else {
            return Err(ApiError::field(
                "current_password",
                "required",
                "This field is required when updating your password or email.",
            ));
        };
        PASSWORD_ATTEMPTS.hit(store, &user.uuid.to_string()).await?;
        if !user.password_matches(current_password).await? {
            return Err(ApiError::field(
                "current_password",
                "invalid_input",
                "Your current password is incorrect.",
            ));
        }
    }
    if let Some(email) = new_email
        && User::by_email(store, email)
            .await?
            .is_some_and(|other| other.uuid != user.uuid)
    {
        return Err(ApiError::field(
            "email",
            "unique",
            "There is already an account with this email address.",
        ));
    }

    let (organization, team) = current_context(&state, &user, &changes).await?;
    // Hashed once, off the executor, and outside the update that may run several times.
    let password_hash = match &changes.password {
        Some(password) => Some(hash_password(password).await?),
        None => None,
    };
    let updated = User::update(store, user.uuid, |stored| {
        apply(
            stored,
            &changes,
            password_hash.as_deref(),
            organization,
            team,
        );
        if let Some(email) = new_email {
            stored.pending_email = Some(email.to_owned());
        }
        Ok(())
    })
    .await?;
    if changes.password.is_some() {
        // A new password logs out every other browser (Django keeps only the one that changed it).
        let keep = auth.session.as_ref().map(|session| session.id);
        Session::end_all_of(store, updated.uuid, keep).await?;
    }
    if let Some(email) = new_email {
        email::send_code(&state, &updated, email).await?;
    }
    Ok(axum::Json(render(&state, &updated).await?))
}

/// Resolves `set_current_organization` / `set_current_team` to ones the user belongs to.
async fn current_context(
    state: &AppState,
    user: &User,
    changes: &UserChanges,
) -> ApiResult<(Option<Uuid>, Option<i64>)> {
    let store = state.store.as_ref();
    let does_not_exist = |attr: &str, id: String| {
        ApiError::field(
            attr,
            "does_not_exist",
            format!("Object with id={id} does not exist."),
        )
    };
    let mut organization = None;
    let mut team = None;
    if let Some(id) = changes.set_current_organization {
        if Membership::load(store, id, user.uuid).await?.is_none() {
            return Err(does_not_exist("set_current_organization", id.to_string()));
        }
        organization = Some(id);
        team = Project::ids_of_organization(store, id)
            .await?
            .into_iter()
            .min();
    }
    if let Some(id) = changes.set_current_team {
        let project = Project::load(store, id).await?;
        let member = match &project {
            Some(project) => Membership::load(store, project.organization_id, user.uuid)
                .await?
                .is_some(),
            None => false,
        };
        let Some(project) = project.filter(|_| member) else {
            return Err(does_not_exist("set_current_team", id.to_string()));
        };
        organization = Some(project.organization_id);
        team = Some(project.id);
    }
    Ok((organization, team))
}

fn merge(target: &mut Value, changes: &Map<String, Value>) {
    if !target.is_object() {
        *target = Value::Object(Map::new());
    }
    if let Value::Object(map) = target {
        map.extend(changes.clone());
    }
}

fn empty_is_none(value: &Option<String>) -> Option<String> {
    value.clone().filter(|text| !text.is_empty())
}

fn apply(
    user: &mut User,
    changes: &UserChanges,
    password_hash: Option<&str>,
    organization: Option<Uuid>,
    team: Option<i64>,
) {
    if let Some(value) = &changes.first_name {
        user.first_name = value.trim().to_owned();
    }
    if let Some(value) = &changes.last_name {
        user.last_name = value.trim().to_owned();
    }
    if let Some(hash) = password_hash {
        user.password_hash = Some(hash.to_owned());
    }
    if let Some(settings) = &changes.notification_settings {
        merge(&mut user.notification_settings, settings);
    }
    if let Some(value) = changes.anonymize_data {
        user.anonymize_data = value;
    }
    if let Some(value) = &changes.toolbar_mode {
        user.toolbar_mode = empty_is_none(value);
    }
    if let Some(value) = changes.is_staff {
        user.is_staff = value;
    }
    if organization.is_some() {
        user.current_organization_id = organization;
        user.current_team_id = team;
    }
    if let Some(config) = &changes.events_column_config {
        user.events_column_config = Value::Object(config.clone());
    }
    if let Some(seen) = &changes.has_seen_product_intro_for {
        merge(&mut user.has_seen_product_intro_for, seen);
    }
    if let Some(value) = &changes.theme_mode {
        user.theme_mode = empty_is_none(value);
    }
    if let Some(value) = &changes.mascot_config {
        user.mascot_config = value.clone().map(Value::Object);
    }
    if let Some(value) = changes.allow_sidebar_suggestions {
        user.allow_sidebar_suggestions = value;
    }
    if let Some(value) = &changes.shortcut_position {
        user.shortcut_position = empty_is_none(value);
    }
    if let Some(value) = &changes.role_at_organization {
        user.role_at_organization = empty_is_none(value);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn email_addresses_are_checked() {
        for good in ["a@b.co", "first.last+tag@example.com"] {
            assert!(valid_email(good), "{good}");
        }
        for bad in [
            "", "a", "a@", "@b.co", "a@b", "a b@c.co", "a@.co", "a@b..co", "a@b.co.",
        ] {
            assert!(!valid_email(bad), "{bad}");
        }
    }
}
