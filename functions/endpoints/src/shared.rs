//! What every route of the family shares: scopes, where the request came in (prefix and site, for
//! the URLs an endpoint shows), loading an endpoint by name, and rendering it.

use axum::http::request::Parts;
use common::error::{ApiError, ApiResult};
use common::models::{Project, Scope, User};
use common::store::Store;
use common::{AppState, Authenticated};
use endpoint_core::{Endpoint, Version, render, repository};
use serde_json::Value;
use uuid::Uuid;

pub const READ: Scope = Scope::read("endpoint");
pub const WRITE: Scope = Scope::write("endpoint");

/// Where the request came in: `projects` or `environments`, and the site's origin.
pub struct Site {
    pub prefix: &'static str,
    pub base_url: String,
}

impl<S: Send + Sync> axum::extract::FromRequestParts<S> for Site {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, ApiError> {
        let prefix = match parts.uri.path().starts_with("/api/environments/") {
            true => "environments",
            false => "projects",
        };
        let header = |name: &str| {
            parts
                .headers
                .get(name)
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned)
        };
        let host = header("x-forwarded-host")
            .or_else(|| header("host"))
            .unwrap_or_else(|| "localhost".into());
        let scheme = header("x-forwarded-proto").unwrap_or_else(|| "http".into());
        Ok(Site {
            prefix,
            base_url: format!("{scheme}://{host}"),
        })
    }
}

/// The project of the path, for a read or a write.
pub async fn project(
    state: &AppState,
    auth: &Authenticated,
    raw: &str,
    scope: Scope,
) -> ApiResult<Project> {
    auth.project(state.store.as_ref(), raw, scope).await
}

/// The endpoint `name` of the project; 404 when there is none.
pub async fn load(store: &dyn Store, team_id: i64, name: &str) -> ApiResult<Endpoint> {
    Ok(repository::get(store, team_id, name)
        .await?
        .ok_or_else(|| ApiError::not_found_detail(format!("Endpoint '{name}' not found.")))?
        .endpoint)
}

/// The UserBasic JSON of `uuid`, or null.
pub async fn creator(store: &dyn Store, uuid: Option<Uuid>) -> ApiResult<Value> {
    let user = match uuid {
        Some(uuid) => User::load(store, uuid).await?,
        None => None,
    };
    Ok(user
        .as_ref()
        .map_or(Value::Null, feature_flags::render::user_basic))
}

/// The endpoint as the API shows it, with its current version, version count, materialization
/// and last execution.
pub async fn render(
    state: &AppState,
    site: &Site,
    project: &Project,
    endpoint: &Endpoint,
) -> ApiResult<Value> {
    let store = state.store.as_ref();
    let versions = repository::versions(store, endpoint.team_id, endpoint.id).await?;
    let current = versions
        .iter()
        .find(|v| v.version == endpoint.current_version)
        .ok_or_else(|| ApiError::internal("the endpoint's current version is missing"))?;
    let materialization = materialization(state, project, endpoint, current).await?;
    let last = repository::last_executions(
        store,
        endpoint.team_id,
        std::slice::from_ref(&endpoint.name),
    )
    .await?
    .into_iter()
    .next()
    .map(|run| run.last_executed_at);
    Ok(render::endpoint(
        endpoint,
        current,
        versions.len(),
        creator(store, endpoint.created_by).await?,
        &site.base_url,
        site.prefix,
        materialization,
        last,
    ))
}

/// The `materialization` object of a version (PostHog's materialization_status shape).
pub async fn materialization(
    state: &AppState,
    project: &Project,
    endpoint: &Endpoint,
    version: &Version,
) -> ApiResult<Value> {
    let item = repository::get_materialization(
        state.store.as_ref(),
        endpoint.team_id,
        endpoint.id,
        version.version,
    )
    .await?;
    let can = match version.is_materialized {
        true => Ok(()),
        false => query_service::endpoints::can_materialize(state, project, &version.query)
            .await
            .map(|_| ()),
    };
    Ok(render::materialization_status(version, item.as_ref(), can))
}
