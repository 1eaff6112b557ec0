//! `/api/personal_api_keys/`: the caller's personal API keys (PostHog's `personal_api_key.py`):
//! list, create (the secret shown once), retrieve (`@current` is the request's own key), update,
//! delete and roll. A key may read them with `personal_api_key:read`; only the console's session
//! changes them, and must have logged in recently (PostHog's TimeSensitiveActionPermission).

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use chrono::{DateTime, Duration, Utc};
use common::error::{ApiError, ApiResult};
use common::http::Json;
use common::models::{MAX_LABEL_CHARS, Membership, PersonalApiKey, Project, Scope, User, user_id};
use common::store::Store;
use common::{AppState, Authenticated};
use serde::{Deserialize, Deserializer, Serialize};
use uuid::Uuid;

const KEY_READ: Scope = Scope::read("personal_api_key");

/// How old a console session may be and still change keys (PostHog's
/// `SESSION_SENSITIVE_ACTIONS_AGE`).
const RECENT_LOGIN: Duration = Duration::hours(2);

/// A key as the API shows it; `value` (the secret) only in the answer that made it.
#[derive(Debug, Serialize)]
struct KeyView<'a> {
    id: Uuid,
    label: &'a str,
    value: Option<&'a str>,
    mask_value: &'a str,
    created_at: DateTime<Utc>,
    last_used_at: Option<DateTime<Utc>>,
    last_rolled_at: Option<DateTime<Utc>>,
    user_id: i64,
    /// No scopes is a legacy full-access key, shown as PostHog shows it.
    scopes: Vec<&'a str>,
    scoped_teams: Option<&'a [i64]>,
    scoped_organizations: Option<&'a [Uuid]>,
}

fn view<'a>(key: &'a PersonalApiKey, secret: Option<&'a str>) -> KeyView<'a> {
    let scopes = if key.scopes.is_empty() {
        vec!["*"]
    } else {
        key.scopes.iter().map(String::as_str).collect()
    };
    KeyView {
        id: key.id,
        label: &key.label,
        value: secret,
        mask_value: &key.mask_value,
        created_at: key.created_at,
        last_used_at: key.last_used_at,
        last_rolled_at: key.last_rolled_at,
        user_id: user_id(key.user_uuid),
        scopes,
        scoped_teams: key.scoped_teams.as_deref(),
        scoped_organizations: key.scoped_organizations.as_deref(),
    }
}

/// Distinguishes a field sent as `null` (`Some(None)`) from one not sent (`None`).
fn nullable<'de, D: Deserializer<'de>, T: Deserialize<'de>>(
    deserializer: D,
) -> Result<Option<Option<T>>, D::Error> {
    Option::<T>::deserialize(deserializer).map(Some)
}

/// The writable fields; the read-only ones a client echoes back are ignored.
#[derive(Debug, Default, Deserialize)]
pub struct KeyFields {
    #[serde(default, deserialize_with = "nullable")]
    label: Option<Option<String>>,
    #[serde(default, deserialize_with = "nullable")]
    scopes: Option<Option<Vec<String>>>,
    /// `null` and `[]` both mean every project.
    #[serde(default, deserialize_with = "nullable")]
    scoped_teams: Option<Option<Vec<i64>>>,
    /// Organization uuids as text, so a malformed one gets PostHog's message.
    #[serde(default, deserialize_with = "nullable")]
    scoped_organizations: Option<Option<Vec<String>>>,
}

/// Validated fields; `None` leaves a field as it is (a partial update).
#[derive(Debug, Default)]
struct Changes {
    label: Option<String>,
    scopes: Option<Vec<String>>,
    scoped_teams: Option<Option<Vec<i64>>>,
    scoped_organizations: Option<Option<Vec<Uuid>>>,
}

impl Changes {
    fn apply(&self, key: &mut PersonalApiKey) {
        if let Some(label) = &self.label {
            key.label = label.clone();
        }
        if let Some(scopes) = &self.scopes {
            key.scopes = scopes.clone();
        }
        if let Some(teams) = &self.scoped_teams {
            key.scoped_teams = teams.clone();
        }
        if let Some(organizations) = &self.scoped_organizations {
            key.scoped_organizations = organizations.clone();
        }
    }
}

fn not_null<T>(attr: &str, value: Option<T>) -> ApiResult<T> {
    value.ok_or_else(|| ApiError::field(attr, "null", "This field may not be null."))
}

/// DRF's `CharField`: trimmed, not blank, at most [`MAX_LABEL_CHARS`].
fn label(value: String) -> ApiResult<String> {
    let label = value.trim();
    if label.is_empty() {
        return Err(ApiError::field(
            "label",
            "blank",
            "This field may not be blank.",
        ));
    }
    if label.chars().count() > MAX_LABEL_CHARS {
        return Err(ApiError::field(
            "label",
            "max_length",
            format!("Ensure this field has no more than {MAX_LABEL_CHARS} characters."),
        ));
    }
    Ok(label.to_owned())
}

fn scopes(scopes: Vec<String>) -> ApiResult<Vec<String>> {
    if let Some(invalid) = scopes
        .iter()
        .find(|scope| !PersonalApiKey::valid_scope(scope))
    {
        return Err(ApiError::validation(
            "scopes",
            format!("Invalid scope: {invalid}"),
        ));
    }
    Ok(scopes)
}

/// Every project must exist and belong to one of the user's organizations.
async fn scoped_teams(store: &dyn Store, user: &User, teams: Vec<i64>) -> ApiResult<Vec<i64>> {
    let refused = || {
        ApiError::validation(
            "scoped_teams",
            "You must be a member of all teams that you are scoping the key to.",
        )
    };
    for &id in &teams {
        let project = Project::load(store, id).await?.ok_or_else(refused)?;
        Membership::load(store, project.organization_id, user.uuid)
            .await?
            .ok_or_else(refused)?;
    }
    Ok(teams)
}

/// Every entry must be a uuid (all are parsed first, as PostHog does) of one of the user's
/// organizations.
async fn scoped_organizations(
    store: &dyn Store,
    user: &User,
    organizations: Vec<String>,
) -> ApiResult<Vec<Uuid>> {
    const ATTR: &str = "scoped_organizations";
    let ids = organizations
        .iter()
        .map(|text| Uuid::parse_str(text.trim()))
        .collect::<Result<Vec<Uuid>, _>>()
        .map_err(|_| ApiError::validation(ATTR, "Invalid organization UUID"))?;
    let mine: Vec<Uuid> = Membership::of_user(store, user.uuid)
        .await?
        .into_iter()
        .map(|membership| membership.organization_id)
        .collect();
    if ids.iter().any(|id| !mine.contains(id)) {
        return Err(ApiError::validation(
            ATTR,
            "You must be a member of all organizations that you are scoping the key to.",
        ));
    }
    Ok(ids)
}

/// Checks the fields in PostHog's order (label, scopes, teams, organizations); `complete` asks
/// for `label` and `scopes` (create, PUT). An empty scoping list is stored as no scoping.
async fn validate(
    store: &dyn Store,
    user: &User,
    fields: KeyFields,
    complete: bool,
) -> ApiResult<Changes> {
    if complete {
        if fields.label.is_none() {
            return Err(ApiError::required("label"));
        }
        if fields.scopes.is_none() {
            return Err(ApiError::required("scopes"));
        }
    }
    let mut changes = Changes::default();
    if let Some(value) = fields.label {
        changes.label = Some(label(not_null("label", value)?)?);
    }
    if let Some(value) = fields.scopes {
        changes.scopes = Some(scopes(not_null("scopes", value)?)?);
    }
    if let Some(value) = fields.scoped_teams {
        let teams = match value {
            Some(teams) => scoped_teams(store, user, teams).await?,
            None => Vec::new(),
        };
        changes.scoped_teams = Some((!teams.is_empty()).then_some(teams));
    }
    if let Some(value) = fields.scoped_organizations {
        let organizations = match value {
            Some(organizations) => scoped_organizations(store, user, organizations).await?,
            None => Vec::new(),
        };
        changes.scoped_organizations = Some((!organizations.is_empty()).then_some(organizations));
    }
    Ok(changes)
}

/// 403 for a console session older than [`RECENT_LOGIN`]; keys are not asked.
fn require_recent_login(state: &AppState, auth: &Authenticated) -> ApiResult<()> {
    match &auth.session {
        Some(session) if state.clock.now() - session.created_at > RECENT_LOGIN => Err(
            ApiError::permission_denied("This action requires you to be recently authenticated."),
        ),
        _ => Ok(()),
    }
}

/// The caller's key `raw_id` names: a uuid, or `@current` for the key of this request (a
/// session has none). Anything else, another user's key included, is a 404.
async fn target(state: &AppState, auth: &Authenticated, raw_id: &str) -> ApiResult<PersonalApiKey> {
    let id = if raw_id == "@current" {
        auth.key.as_ref().map(|key| key.id)
    } else {
        Uuid::parse_str(raw_id).ok()
    }
    .ok_or_else(ApiError::not_found)?;
    PersonalApiKey::load_of_user(state.store.as_ref(), auth.user.uuid, id)
        .await?
        .ok_or_else(ApiError::not_found)
}

/// Checks a write's permissions: keys are managed from the console only (PostHog's answer to a
/// key: a key limited to one project must not make itself an unlimited one), and the session's
/// login must be recent.
fn may_write(state: &AppState, auth: &Authenticated) -> ApiResult<()> {
    if auth.key.is_some() {
        return Err(ApiError::permission_denied(
            "This action does not support Personal API Key access",
        ));
    }
    require_recent_login(state, auth)
}

/// `GET /api/personal_api_keys/`: a bare array, newest first.
pub async fn list(State(state): State<AppState>, auth: Authenticated) -> ApiResult<Response> {
    auth.require(KEY_READ)?;
    let keys = PersonalApiKey::list_of_user(state.store.as_ref(), auth.user.uuid).await?;
    let views: Vec<KeyView<'_>> = keys.iter().map(|key| view(key, None)).collect();
    Ok(axum::Json(views).into_response())
}

/// `POST /api/personal_api_keys/`: 201 with the secret in `value`, the only time it is shown.
pub async fn create(
    State(state): State<AppState>,
    auth: Authenticated,
    body: Result<Json<KeyFields>, ApiError>,
) -> ApiResult<Response> {
    may_write(&state, &auth)?;
    let Json(fields) = body?;
    let store = state.store.as_ref();
    let changes = validate(store, &auth.user, fields, true).await?;
    let held = PersonalApiKey::list_of_user(store, auth.user.uuid)
        .await?
        .len();
    if held >= PersonalApiKey::MAX_PER_USER {
        return Err(ApiError::bad_request(
            "invalid_input",
            format!(
                "You can only have {} personal API keys. Remove an existing key before creating \
                 a new one.",
                PersonalApiKey::MAX_PER_USER
            ),
        ));
    }
    // `validate` asked for both: a complete body has a label and scopes.
    let (key, secret) = PersonalApiKey::create(
        auth.user.uuid,
        changes.label.as_deref().unwrap_or_default(),
        changes.scopes.unwrap_or_default(),
        changes.scoped_teams.flatten(),
        changes.scoped_organizations.flatten(),
        state.clock.now(),
    );
    store.transact_write(vec![key.put_op()?]).await?;
    Ok((StatusCode::CREATED, axum::Json(view(&key, Some(&secret)))).into_response())
}

/// `GET /api/personal_api_keys/:id/`
pub async fn retrieve(
    State(state): State<AppState>,
    auth: Authenticated,
    Path(id): Path<String>,
) -> ApiResult<Response> {
    auth.require(KEY_READ)?;
    let key = target(&state, &auth, &id).await?;
    Ok(axum::Json(view(&key, None)).into_response())
}

async fn change(
    state: AppState,
    auth: Authenticated,
    id: String,
    body: Result<Json<KeyFields>, ApiError>,
    complete: bool,
) -> ApiResult<Response> {
    may_write(&state, &auth)?;
    let key = target(&state, &auth, &id).await?;
    let Json(fields) = body?;
    let store = state.store.as_ref();
    let changes = validate(store, &auth.user, fields, complete).await?;
    let updated = key
        .update(store, |key| changes.apply(key))
        .await?
        .ok_or_else(ApiError::not_found)?;
    Ok(axum::Json(view(&updated, None)).into_response())
}

/// `PATCH /api/personal_api_keys/:id/`: `label`, `scopes`, `scoped_teams`,
/// `scoped_organizations`, each optional.
pub async fn update(
    State(state): State<AppState>,
    auth: Authenticated,
    Path(id): Path<String>,
    body: Result<Json<KeyFields>, ApiError>,
) -> ApiResult<Response> {
    change(state, auth, id, body, false).await
}

/// `PUT /api/personal_api_keys/:id/`: as PATCH, with `label` and `scopes` required.
pub async fn replace(
    State(state): State<AppState>,
    auth: Authenticated,
    Path(id): Path<String>,
    body: Result<Json<KeyFields>, ApiError>,
) -> ApiResult<Response> {
    change(state, auth, id, body, true).await
}

/// `DELETE /api/personal_api_keys/:id/`: 204; the secret stops working at once.
pub async fn delete(
    State(state): State<AppState>,
    auth: Authenticated,
    Path(id): Path<String>,
) -> ApiResult<Response> {
    may_write(&state, &auth)?;
    let key = target(&state, &auth, &id).await?;
    if !key.delete(state.store.as_ref()).await? {
        return Err(ApiError::not_found());
    }
    Ok(StatusCode::NO_CONTENT.into_response())
}

/// `POST /api/personal_api_keys/:id/roll/`: a new secret (shown in `value`), the old one
/// refused from now on; id, label, scopes and scoping stay.
pub async fn roll(
    State(state): State<AppState>,
    auth: Authenticated,
    Path(id): Path<String>,
) -> ApiResult<Response> {
    may_write(&state, &auth)?;
    let key = target(&state, &auth, &id).await?;
    let (rolled, secret) = key
        .roll(state.store.as_ref(), state.clock.now())
        .await?
        .ok_or_else(ApiError::not_found)?;
    Ok(axum::Json(view(&rolled, Some(&secret))).into_response())
}
