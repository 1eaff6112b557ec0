//! Who is calling: a personal API key, or the console's session cookie (with a CSRF token on
//! writes); scopes and project access (PostHog's rules and messages).

use axum::extract::FromRequestParts;
use axum::http::{HeaderValue, Method, header, request::Parts};
use axum::response::{IntoResponse, Response};
use subtle::ConstantTimeEq;

use crate::error::{ApiError, ApiResult};
use crate::models::{Membership, PersonalApiKey, Project, Scope, Session, Stage, User};
use crate::query_params::QueryParams;
use crate::state::AppState;
use crate::store::Store;

/// The caller behind a valid personal API key or console session.
#[derive(Debug, Clone)]
pub struct Authenticated {
    pub user: User,
    /// The key of the request; `None` for the console's session, which has every scope.
    pub key: Option<PersonalApiKey>,
    pub session: Option<Session>,
}

/// The console's session cookie (Django's name, which PostHog keeps).
pub const SESSION_COOKIE: &str = "sessionid";
/// The cookie the console reads its CSRF token from (PostHog's `CSRF_COOKIE_NAME`).
pub const CSRF_COOKIE: &str = "posthog_csrftoken";
/// The header a cookie-authenticated write echoes the token in (Django's).
pub const CSRF_HEADER: &str = "x-csrftoken";

/// The value of the cookie `name` in the request's `Cookie` headers.
pub fn request_cookie(parts: &Parts, name: &str) -> Option<String> {
    parts
        .headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(cookie::Cookie::split_parse)
        .filter_map(Result::ok)
        .find(|cookie| cookie.name() == name)
        .map(|cookie| cookie.value().to_owned())
}

/// Where the presented key came from; PostHog names it in the 401 message.
#[derive(Debug, Clone, Copy)]
enum KeySource {
    Header,
    QueryString,
}

fn presented_key(parts: &Parts) -> Option<(String, KeySource)> {
    let from_header = parts
        .headers
        .get(header::AUTHORIZATION)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| {
            let (scheme, token) = value.trim().split_once(' ')?;
            let token = token.trim();
            // `pha_` tokens are OAuth access tokens, which this service does not issue.
            (scheme.eq_ignore_ascii_case("bearer")
                && !token.is_empty()
                && !token.starts_with("pha_"))
            .then(|| token.to_owned())
        });
    if let Some(key) = from_header {
        return Some((key, KeySource::Header));
    }
    let query = parts.uri.query()?;
    QueryParams::parse(Some(query))
        .get("personal_api_key")
        .map(|key| (key.to_owned(), KeySource::QueryString))
}

/// A 401 carries `WWW-Authenticate`, as PostHog's authenticators ask for.
pub struct Unauthorized(pub ApiError);

impl IntoResponse for Unauthorized {
    fn into_response(self) -> Response {
        let mut response = self.0.into_response();
        response
            .headers_mut()
            .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
        response
    }
}

impl FromRequestParts<AppState> for Authenticated {
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, Response> {
        authenticate(parts, state.store.as_ref())
            .await
            .map_err(|error| {
                if error.status == axum::http::StatusCode::UNAUTHORIZED {
                    Unauthorized(error).into_response()
                } else {
                    error.into_response()
                }
            })
    }
}

async fn authenticate(parts: &Parts, store: &dyn Store) -> ApiResult<Authenticated> {
    let Some((secret, source)) = presented_key(parts) else {
        return authenticate_session(parts, store).await;
    };
    let invalid = || {
        let place = match source {
            KeySource::Header => "Authorization header",
            KeySource::QueryString => "query string",
        };
        ApiError::authentication_failed(format!(
            "Personal API key found in request {place} is invalid."
        ))
    };
    let key = PersonalApiKey::find(store, &secret)
        .await?
        .ok_or_else(invalid)?;
    let user = User::load(store, key.user_uuid)
        .await?
        .filter(|user| user.is_active)
        .ok_or_else(invalid)?;
    if let Err(error) = key.touch(store).await {
        // Bookkeeping only: the request goes on.
        tracing::warn!(%error, "could not record personal API key use");
    }
    Ok(Authenticated {
        user,
        key: Some(key),
        session: None,
    })
}

/// The console's caller: a logged-in session of an active user; a write must also carry the
/// session's CSRF token, so another site's form cannot ride on the cookie.
async fn authenticate_session(parts: &Parts, store: &dyn Store) -> ApiResult<Authenticated> {
    let Some(secret) = request_cookie(parts, SESSION_COOKIE) else {
        return Err(ApiError::not_authenticated());
    };
    let session = Session::find(store, &secret)
        .await?
        .filter(|session| session.stage == Stage::LoggedIn)
        .ok_or_else(ApiError::not_authenticated)?;
    let safe = matches!(
        parts.method,
        Method::GET | Method::HEAD | Method::OPTIONS | Method::TRACE
    );
    if !safe {
        let presented = parts
            .headers
            .get(CSRF_HEADER)
            .and_then(|value| value.to_str().ok());
        match presented {
            None => {
                return Err(ApiError::permission_denied(
                    "CSRF Failed: CSRF token missing.",
                ));
            }
            Some(token) if !bool::from(token.as_bytes().ct_eq(session.csrf_token.as_bytes())) => {
                return Err(ApiError::permission_denied(
                    "CSRF Failed: CSRF token incorrect.",
                ));
            }
            Some(_) => {}
        }
    }
    let user = User::load(store, session.user_uuid)
        .await?
        .filter(|user| user.is_active)
        .ok_or_else(ApiError::not_authenticated)?;
    Ok(Authenticated {
        user,
        key: None,
        session: Some(session),
    })
}

impl Authenticated {
    /// 403 unless the key carries `scope`.
    pub fn require(&self, scope: Scope) -> ApiResult<()> {
        if self.key.as_ref().is_none_or(|key| key.allows(scope)) {
            Ok(())
        } else {
            Err(ApiError::permission_denied(format!(
                "API key missing required scope '{scope}'"
            )))
        }
    }

    /// Resolves `:project_id` (an integer or `@current`) to a project this caller may use with
    /// `scope`: the key must allow it and the user must belong to its organization, staff or not.
    pub async fn project(
        &self,
        store: &dyn Store,
        raw_id: &str,
        scope: Scope,
    ) -> ApiResult<Project> {
        self.require(scope)?;
        let not_found = || ApiError::not_found_detail("Project not found.");
        let id = if raw_id == "@current" {
            self.user.current_team_id.ok_or_else(not_found)?
        } else {
            raw_id.parse::<i64>().map_err(|_| not_found())?
        };
        let key = self.key.as_ref();
        if let Some(teams) = key.and_then(|key| key.scoped_teams.as_ref())
            && !teams.contains(&id)
        {
            return Err(ApiError::permission_denied(format!(
                "API key does not have access to the requested project: ID {id}."
            )));
        }
        let project = Project::load(store, id).await?.ok_or_else(not_found)?;
        if let Some(organizations) = key.and_then(|key| key.scoped_organizations.as_ref())
            && !organizations.contains(&project.organization_id)
        {
            return Err(ApiError::permission_denied(format!(
                "API key does not have access to the requested organization: ID {}.",
                project.organization_id
            )));
        }
        // Membership is the only way into a tenant: staff powers live on the user routes.
        let member = Membership::load(store, project.organization_id, self.user.uuid).await?;
        if member.is_none() {
            return Err(ApiError::permission_denied(
                "You don't have access to the project.",
            ));
        }
        Ok(project)
    }
}
