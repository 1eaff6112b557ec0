//! The handlers: plain async functions over the state.

use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use common::http::Json;
use common::models::{Project, Scope};
use common::{ApiError, ApiResult, AppState, Authenticated};
use serde::Deserialize;
use serde_json::{Value, json};

use query_service::runner::{self, Run};
use query_service::{Answer, Caller, QueryStatus, Request, SqlNode, api_error};

use crate::draft;
use crate::request::{Body, QueryRequest, upgraded_query};

const QUERY_READ: Scope = Scope::read("query");

async fn project(state: &AppState, auth: &Authenticated, raw_id: &str) -> ApiResult<Project> {
    auth.project(state.store.as_ref(), raw_id, QUERY_READ).await
}

/// `POST /api/projects/:id/query/`
pub async fn create(
    State(state): State<AppState>,
    auth: Authenticated,
    Path(project_id): Path<String>,
    Json(body): Json<Body>,
) -> ApiResult<Response> {
    let project = project(&state, &auth, &project_id).await?;
    let request = QueryRequest::from_body(body)?;
    execute(&state, &auth, &project, request).await
}

/// `POST /api/projects/:id/query/:Kind/`: the same, with the node kind in the path.
pub async fn create_with_kind(
    State(state): State<AppState>,
    auth: Authenticated,
    Path((project_id, kind)): Path<(String, String)>,
    Json(body): Json<Body>,
) -> ApiResult<Response> {
    let project = project(&state, &auth, &project_id).await?;
    let valid_kind = kind.chars().next().is_some_and(|c| c.is_ascii_uppercase())
        && kind.chars().all(|c| c.is_ascii_alphabetic());
    if !valid_kind {
        return Err(ApiError::method_not_allowed("POST"));
    }
    let body_kind = body
        .query
        .as_ref()
        .and_then(|query| query["kind"].as_str())
        .unwrap_or("")
        .to_owned();
    if body_kind != kind {
        return Err(ApiError::bad_request(
            "invalid_input",
            format!(
                "Query kind mismatch: path kind \"{kind}\" does not match body kind \"{body_kind}\"."
            ),
        ));
    }
    let request = QueryRequest::from_body(body)?;
    execute(&state, &auth, &project, request).await
}

async fn execute(
    state: &AppState,
    auth: &Authenticated,
    project: &Project,
    request: QueryRequest,
) -> ApiResult<Response> {
    let mode = request.mode;
    let query_id = request
        .client_query_id
        .clone()
        .unwrap_or_else(|| uuid::Uuid::now_v7().simple().to_string());
    let node = request.sql_node()?;
    let caller = Caller::of(auth);
    let answer = query_service::run(
        state,
        Request {
            project,
            query_id: &query_id,
            node: &node,
            caller: &caller,
            mode,
            endpoint: "",
        },
    )
    .await?;
    Ok(match answer {
        Answer::Done(response) => axum::Json(response).into_response(),
        Answer::Status(status) => status_response(state, &status).await,
    })
}

async fn status_response(state: &AppState, status: &QueryStatus) -> Response {
    let payload = status.payload(state).await;
    (
        status.http_status(),
        axum::Json(json!({"query_status": payload})),
    )
        .into_response()
}

async fn load_status(state: &AppState, project: &Project, id: &str) -> ApiResult<QueryStatus> {
    QueryStatus::load(state, project.id, id)
        .await?
        .ok_or_else(|| {
            ApiError::not_found_detail(format!("Query {id} not found for team {}", project.id))
        })
}

/// `GET /api/projects/:id/query/:query_id/`
pub async fn retrieve(
    State(state): State<AppState>,
    auth: Authenticated,
    Path((project_id, id)): Path<(String, String)>,
) -> ApiResult<Response> {
    let project = project(&state, &auth, &project_id).await?;
    let status = load_status(&state, &project, &id).await?;
    Ok(status_response(&state, &status).await)
}

/// `DELETE /api/projects/:id/query/:query_id/`: 204; the running query stops.
pub async fn cancel(
    State(state): State<AppState>,
    auth: Authenticated,
    Path((project_id, id)): Path<(String, String)>,
) -> ApiResult<StatusCode> {
    let project = project(&state, &auth, &project_id).await?;
    load_status(&state, &project, &id).await?;
    QueryStatus::update(&state, project.id, &id, |mut status| {
        if !status.complete {
            status.cancelled = true;
        }
        Ok(status)
    })
    .await?;
    Ok(StatusCode::NO_CONTENT)
}

/// `GET /api/projects/:id/query/:query_id/log/`: that id's log records of the last day.
pub async fn log(
    State(state): State<AppState>,
    auth: Authenticated,
    Path((project_id, id)): Path<(String, String)>,
) -> ApiResult<axum::Json<Value>> {
    let project = project(&state, &auth, &project_id).await?;
    let mut values = serde_json::Map::new();
    values.insert("client_query_id".into(), Value::String(id.clone()));
    let node = SqlNode::sql(
        "select * from query_log where query_id = {client_query_id} and event_date >= yesterday() order by query_start_time",
        engine::Bindings {
            values,
            ..Default::default()
        },
    );
    let caller = Caller::of(&auth);
    let mut response = runner::run(
        Run {
            state: &state,
            project: &project,
            query_id: &id,
            node: &node,
            caller: &caller,
            force: true,
            endpoint: "",
            log: false,
        },
        std::future::pending(),
    )
    .await
    .map_err(|e| api_error(&e))?;
    if let Value::Object(map) = &mut response {
        for cache_field in [
            "is_cached",
            "cache_key",
            "last_refresh",
            "next_allowed_client_refresh",
            "cache_target_age",
            "timezone",
            "query_status",
        ] {
            map.remove(cache_field);
        }
    }
    Ok(axum::Json(response))
}

/// `POST /api/projects/:id/query/check_auth_for_async/`
pub async fn check_auth_for_async(
    State(state): State<AppState>,
    auth: Authenticated,
    Path(project_id): Path<String>,
) -> ApiResult<axum::Json<Value>> {
    project(&state, &auth, &project_id).await?;
    Ok(axum::Json(json!({"user": "ok"})))
}

#[derive(Debug, Deserialize)]
pub struct DraftParams {
    prompt: Option<String>,
    current_query: Option<String>,
}

/// `GET /api/projects/:id/query/draft_sql/?prompt=...`
pub async fn draft_sql(
    State(state): State<AppState>,
    auth: Authenticated,
    Path(project_id): Path<String>,
    Query(params): Query<DraftParams>,
) -> ApiResult<axum::Json<Value>> {
    let project = project(&state, &auth, &project_id).await?;
    let prompt = params.prompt.unwrap_or_default();
    if prompt.trim().is_empty() {
        return Err(ApiError::required("prompt"));
    }
    if prompt.chars().count() > draft::MAX_PROMPT_CHARS {
        return Err(ApiError::field(
            "prompt",
            "too_long",
            format!(
                "Ensure this field has no more than {} characters.",
                draft::MAX_PROMPT_CHARS
            ),
        ));
    }
    let sql = draft::draft(&state, &project, &prompt, params.current_query.as_deref()).await?;
    Ok(axum::Json(json!({"sql": sql})))
}

/// `POST /api/projects/:id/query/upgrade/`: `{"query"}` with every node at its latest version.
pub async fn upgrade(
    State(state): State<AppState>,
    auth: Authenticated,
    Path(project_id): Path<String>,
    Json(body): Json<Value>,
) -> ApiResult<axum::Json<Value>> {
    project(&state, &auth, &project_id).await?;
    let query = match body {
        Value::Object(mut body) => body.remove("query"),
        _ => None,
    };
    let upgraded = upgraded_query(query)?;
    Ok(axum::Json(json!({"query": upgraded})))
}
