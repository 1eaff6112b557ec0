//! Personal API key authentication, scopes and project access (PostHog's rules and messages).

use axum::extract::FromRequestParts;
use axum::http::{HeaderValue, header, request::Parts};
use axum::response::{IntoResponse, Response};

use crate::error::{ApiError, ApiResult};
use crate::models::{Membership, PersonalApiKey, Project, Scope, User};
use crate::query_params::QueryParams;
use crate::state::AppState;
use crate::store::Store;

/// The caller behind a valid personal API key.
#[derive(Debug, Clone)]
pub struct Authenticated {
    pub user: User,
    pub key: PersonalApiKey,
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
        return Err(ApiError::not_authenticated());
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
    Ok(Authenticated { user, key })
}

impl Authenticated {
    /// 403 unless the key carries `scope`.
    pub fn require(&self, scope: Scope) -> ApiResult<()> {
        if self.key.allows(scope) {
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
        if let Some(teams) = &self.key.scoped_teams
            && !teams.contains(&id)
        {
            return Err(ApiError::permission_denied(format!(
                "API key does not have access to the requested project: ID {id}."
            )));
        }
        let project = Project::load(store, id).await?.ok_or_else(not_found)?;
        if let Some(organizations) = &self.key.scoped_organizations
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
