//! `GET` and `POST endpoints/:name/run/` (reference 2.5): a version's query, answered from its
//! materialized result while that is fresh, else run through the query service (slots, limits,
//! cache, query log under the endpoint's name and path).

use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use common::error::{ApiError, ApiResult, ErrorType};
use common::models::Project;
use common::{AppState, Authenticated};
use endpoint_core::{Endpoint, Materialization, Version, render, repository};
use engine::materialize::{self, Slice};
use engine::{MAX_LIMIT, Page, QueryError, Window};
use query_service::{Answer, Caller, Mode, Overrides, Request, ServiceError, SqlNode};
use serde::Deserialize;
use serde_json::{Map, Value, json};

use crate::recent::{self, Asked};
use crate::shared::{READ, Site, load, project};
use crate::variables;

/// `EndpointRunRequest`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunBody {
    client_query_id: Option<String>,
    refresh: Option<String>,
    variables: Option<Map<String, Value>>,
    version: Option<Value>,
    #[serde(default)]
    debug: bool,
    query_override: Option<Value>,
    filters_override: Option<Value>,
    limit: Option<u64>,
    offset: Option<u64>,
}

#[derive(Debug, Deserialize)]
pub struct RunParams {
    version: Option<String>,
}

/// Keys a run's response leaves out unless `debug`.
const DEBUG_KEYS: [&str; 7] = [
    "calculation_trigger",
    "cache_key",
    "explain",
    "modifiers",
    "resolved_date_range",
    "timings",
    "hogql",
];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Refresh {
    Cache,
    Force,
    Direct,
}

pub async fn get(
    State(state): State<AppState>,
    auth: Authenticated,
    site: Site,
    Path((project_id, name)): Path<(String, String)>,
    Query(params): Query<RunParams>,
) -> ApiResult<Response> {
    let asked = (project_id.as_str(), name.as_str());
    run(&state, &auth, &site, asked, RunBody::default(), params).await
}

pub async fn post(
    State(state): State<AppState>,
    auth: Authenticated,
    site: Site,
    Path((project_id, name)): Path<(String, String)>,
    Query(params): Query<RunParams>,
    body: Bytes,
) -> ApiResult<Response> {
    let body: RunBody = match body.iter().all(u8::is_ascii_whitespace) {
        true => RunBody::default(),
        false => common::http::parse_json(&body)?,
    };
    let asked = (project_id.as_str(), name.as_str());
    run(&state, &auth, &site, asked, body, params).await
}

async fn run(
    state: &AppState,
    auth: &Authenticated,
    site: &Site,
    (project_id, name): (&str, &str),
    body: RunBody,
    params: RunParams,
) -> ApiResult<Response> {
    let project = project(state, auth, project_id, READ).await?;
    let store = state.store.as_ref();
    let endpoint = load(store, project.id, name).await?;
    if !endpoint.is_active {
        return Err(ApiError::not_found_detail(format!(
            "Endpoint '{name}' not found."
        )));
    }
    if body.query_override.is_some() {
        return Err(ApiError::validation(
            "query_override",
            "query_override is not allowed. Use variables instead.",
        ));
    }
    if body.filters_override.is_some() {
        return Err(ApiError::validation(
            "filters_override",
            "filters_override is not allowed. Use variables instead.",
        ));
    }
    let refresh = match body.refresh.as_deref() {
        None | Some("cache") => Refresh::Cache,
        Some("force") => Refresh::Force,
        Some("direct") => Refresh::Direct,
        Some(other) => {
            return Err(ApiError::field(
                "refresh",
                "invalid_choice",
                format!(
                    "\"{other}\" is not a valid choice. Only sync modes are supported (refresh param): cache, force or direct."
                ),
            ));
        }
    };
    let version = version(store, &endpoint, &body, &params).await?;
    let given = body.variables.clone().unwrap_or_default();
    let page = page(&body, variables::is_sql(&version.query))?;
    if refresh == Refresh::Direct && !version.is_materialized {
        return Err(ApiError::validation(
            "refresh",
            "refresh 'direct' is only for materialized endpoints.",
        ));
    }
    let materialization = match version.is_materialized {
        true => {
            repository::get_materialization(store, project.id, endpoint.id, version.version).await?
        }
        false => None,
    };
    if let Some(item) = &materialization
        && let Some(variable) = &item.variable
        && !given.contains_key(variable)
    {
        return Err(ApiError::validation(
            "variables",
            format!("Required variable '{variable}' not provided"),
        ));
    }
    let query_id = body
        .client_query_id
        .clone()
        .unwrap_or_else(|| uuid::Uuid::now_v7().simple().to_string());
    // Kept as the query log's `endpoint`.
    let path = render::endpoint_path(site.prefix, project.id, &endpoint.name);
    let mut response = None;
    if refresh != Refresh::Direct
        && let Some(item) = &materialization
        && item.is_fresh(state.clock.now())
    {
        // Checked as an inline run checks them, so both paths refuse the same variables.
        if variables::is_sql(&version.query) {
            variables::sql_overrides(&version.query, &given)?;
        }
        let logged = Logged {
            caller: Caller::of(auth),
            query_id: &query_id,
            name: &endpoint.name,
            path: &path,
        };
        response =
            from_materialization(state, &project, &version, item, &given, page, &logged).await;
    }
    let response = match response {
        Some(response) => response,
        None => {
            let inline = Inline {
                endpoint: &endpoint,
                version: &version,
                given: &given,
                page,
                refresh,
                query_id: &query_id,
                path: &path,
            };
            inline.run(state, auth, &project).await?
        }
    };
    let at = state.clock.now();
    if let Err(error) = repository::record_execution(store, project.id, &endpoint.name, at).await {
        tracing::warn!(%error, "could not record the endpoint's execution");
    }
    Ok(shape(response, &endpoint, &version, &query_id, body.debug))
}

/// The version a run asks for (body, else `?version=`, else the current one), which must exist
/// and be active.
async fn version(
    store: &dyn common::store::Store,
    endpoint: &Endpoint,
    body: &RunBody,
    params: &RunParams,
) -> ApiResult<Version> {
    let invalid =
        |raw: &str| ApiError::validation("version", format!("Invalid version parameter: {raw}"));
    let number = match (&body.version, params.version.as_deref()) {
        (Some(Value::Null), _) | (None, None) => endpoint.current_version,
        (Some(Value::Number(n)), _) => n
            .as_u64()
            .and_then(|n| u32::try_from(n).ok())
            .ok_or_else(|| invalid(&n.to_string()))?,
        (Some(other), _) => return Err(invalid(&other.to_string())),
        (None, Some(raw)) => raw.trim().parse().map_err(|_| invalid(raw))?,
    };
    let version = repository::version(store, endpoint.team_id, endpoint.id, number)
        .await?
        .ok_or_else(|| {
            ApiError::not_found_detail(format!(
                "Version {number} not found for endpoint '{}'",
                endpoint.name
            ))
        })?;
    if !version.is_active {
        return Err(ApiError::validation(
            "version",
            format!("Version {number} is inactive and cannot be executed."),
        ));
    }
    Ok(version)
}

/// A caller's page (`limit`, `offset`: SQL endpoints only, and `offset` needs `limit`).
fn page(body: &RunBody, is_sql: bool) -> ApiResult<Option<Page>> {
    if body.limit.is_none() && body.offset.is_none() {
        return Ok(None);
    }
    if !is_sql {
        let attr = if body.limit.is_some() {
            "limit"
        } else {
            "offset"
        };
        return Err(ApiError::validation(
            attr,
            "limit and offset are only supported for SQL endpoints.",
        ));
    }
    let Some(limit) = body.limit else {
        return Err(ApiError::validation("offset", "offset requires limit."));
    };
    if limit == 0 || limit > MAX_LIMIT {
        return Err(ApiError::validation(
            "limit",
            format!("limit must be between 1 and {MAX_LIMIT}."),
        ));
    }
    Ok(Some(Page {
        limit,
        offset: body.offset.unwrap_or(0),
    }))
}

/// Who ran what, for the query log of a run answered from a materialized result.
struct Logged<'a> {
    caller: Caller,
    query_id: &'a str,
    name: &'a str,
    path: &'a str,
}

/// The run answered from the stored result, or `None` when it cannot be (the variable's value
/// is not a constant, the stored object went with a newer run, or nothing matched: a query that
/// aggregates without grouping answers one row even then, so the query itself answers that).
async fn from_materialization(
    state: &AppState,
    project: &Project,
    version: &Version,
    item: &Materialization,
    given: &Map<String, Value>,
    page: Option<Page>,
    logged: &Logged<'_>,
) -> Option<Value> {
    let started_at = state.clock.now();
    let value = match &item.variable {
        Some(variable) => {
            let value = given.get(variable)?;
            if !materialize::filterable(value) {
                return None;
            }
            Some(value)
        }
        None => None,
    };
    let slice = match page {
        Some(page) => Slice::from(page),
        None => materialize::slice(version.query["query"].as_str()?).ok()?,
    };
    let served =
        query_service::endpoints::materialization::serve(state, project, item, value, slice).await;
    let output = match served {
        Ok(output) => output,
        Err(error) => {
            tracing::warn!(%error, "a materialized result could not be read; running the query");
            return None;
        }
    };
    if value.is_some() && output.results.is_empty() {
        return None;
    }
    let node = SqlNode {
        text: version.query["query"]
            .as_str()
            .unwrap_or_default()
            .to_owned(),
        name: Some(logged.name.to_owned()),
        ..SqlNode::default()
    };
    let run = query_service::runner::Run {
        state,
        project,
        query_id: logged.query_id,
        node: &node,
        caller: &logged.caller,
        force: false,
        endpoint: logged.path,
        log: true,
    };
    query_service::runner::log_served(&run, &output, started_at).await;
    let now = state.clock.now();
    Some(json!({
        "results": output.results,
        "columns": output.columns,
        "types": output.types.iter().map(|(name, kind)| json!([name, kind])).collect::<Vec<_>>(),
        "hasMore": output.has_more,
        "limit": output.limit,
        "offset": output.offset,
        "query": version.query["query"],
        "timings": output.timings.iter().map(|(k, t)| json!({"k": k, "t": t})).collect::<Vec<_>>(),
        "error": null,
        "is_cached": false,
        "last_refresh": render::iso(now),
        "timezone": project.timezone,
        "query_status": null,
        "endpoint_materialized": true,
        "endpoint_materialized_at": item.last_materialized_at.map(render::iso),
    }))
}

/// A run of the version's query through the query service.
struct Inline<'a> {
    endpoint: &'a Endpoint,
    version: &'a Version,
    given: &'a Map<String, Value>,
    page: Option<Page>,
    refresh: Refresh,
    query_id: &'a str,
    /// The run path, kept as the query log's `endpoint`.
    path: &'a str,
}

impl Inline<'_> {
    async fn run(
        &self,
        state: &AppState,
        auth: &Authenticated,
        project: &Project,
    ) -> ApiResult<Value> {
        let query = &self.version.query;
        let (node, overrides) = match variables::is_sql(query) {
            true => (query.clone(), variables::sql_overrides(query, self.given)?),
            false => (variables::insight(query, self.given)?, Map::new()),
        };
        let mut node = SqlNode::from_query(
            &node,
            Overrides {
                name: Some(&self.endpoint.name),
                variables: Some(&overrides),
                filters: None,
            },
        )?;
        if let Some(page) = self.page {
            node.window = Window::Page(page);
        }
        let asked = Asked {
            team_id: project.id,
            endpoint_id: self.endpoint.id,
            version: self.version.version,
            variables: self.given,
            limit: self.page.map(|p| p.limit),
            offset: self.page.map(|p| p.offset),
        };
        if self.refresh == Refresh::Cache
            && let Some(age) = self.version.cache_age_seconds
            && let Some(mut cached) = recent::load(state, &asked, age).await
        {
            cached["is_cached"] = Value::Bool(true);
            return Ok(cached);
        }
        let caller = Caller::of(auth);
        let answer = query_service::run(
            state,
            Request {
                project,
                query_id: self.query_id,
                node: &node,
                caller: &caller,
                mode: match self.refresh {
                    Refresh::Cache => Mode::Blocking,
                    Refresh::Force | Refresh::Direct => Mode::ForceBlocking,
                },
                endpoint: self.path,
            },
        )
        .await
        .map_err(run_error)?;
        let response = match answer {
            Answer::Done(response) => response,
            Answer::Status(_) => {
                return Err(ApiError::internal("a blocking endpoint run was queued"));
            }
        };
        if self.version.cache_age_seconds.is_some() {
            recent::store(state, &asked, &response).await;
        }
        Ok(response)
    }
}

/// The query service's errors as an endpoint run answers them.
fn run_error(error: ServiceError) -> ApiError {
    match error {
        ServiceError::Busy => {
            let mut busy = ApiError::throttled(1);
            busy.body.detail = "Too many concurrent requests. Please try again later.".into();
            busy
        }
        ServiceError::Query(error @ (QueryError::Syntax(_) | QueryError::Query(_))) => {
            ApiError::new(
                StatusCode::BAD_REQUEST,
                ErrorType::ValidationError,
                error.code(),
                format!("Query execution failed: {error}"),
            )
        }
        ServiceError::Query(QueryError::Invalid { detail, .. }) => ApiError::new(
            StatusCode::BAD_REQUEST,
            ErrorType::ValidationError,
            "hogql_query_error",
            format!("Query resolution failed: {detail}"),
        ),
        other => other.into(),
    }
}

/// The response as a run answers it: the debugging keys gone unless `debug`, and the version
/// and execution named.
fn shape(
    mut response: Value,
    endpoint: &Endpoint,
    version: &Version,
    query_id: &str,
    debug: bool,
) -> Response {
    if let Value::Object(fields) = &mut response {
        if !debug {
            for key in DEBUG_KEYS {
                fields.remove(key);
            }
        }
        fields.insert("endpoint_version".into(), json!(version.version));
        fields.insert(
            "endpoint_version_created_at".into(),
            json!(render::iso(version.created_at)),
        );
        fields.insert("execution_id".into(), json!(query_id));
        fields.insert("name".into(), json!(endpoint.name));
        fields
            .entry("endpoint_materialized")
            .or_insert(Value::Bool(false));
    }
    axum::Json(response).into_response()
}
