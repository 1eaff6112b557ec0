//! `GET /api/projects/:id/events/values/?key=&value=&event_name=`: the HTTP side of
//! `query_service::property_values` (it reads the event lake, so it is served here).

use axum::extract::{Path, State};
use common::models::Scope;
use common::query_params::QueryParams;
use common::{ApiResult, AppState, Authenticated};
use query_service::Caller;
use query_service::property_values::{self, Request};
use serde_json::Value;

const READ: Scope = Scope::read("query");

pub async fn values(
    State(state): State<AppState>,
    auth: Authenticated,
    Path(project): Path<String>,
    params: QueryParams,
) -> ApiResult<axum::Json<Vec<Value>>> {
    let project = auth.project(state.store.as_ref(), &project, READ).await?;
    let request = Request {
        key: params.get("key"),
        value: params.get("value"),
        // `event_name` repeated, as PostHog's frontend sends it.
        event_names: params.all("event_name").map(str::to_owned).collect(),
    };
    let values = property_values::values(&state, &project, &Caller::of(&auth), &request).await?;
    Ok(axum::Json(values))
}
