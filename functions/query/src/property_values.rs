//! `GET /api/projects/:id/events/values/?key=&value=&event_name=`: the HTTP side of
//! `query_service::property_values` (it reads the event lake, so it is served here).

use axum::extract::{Path, RawQuery, State};
use common::models::Scope;
use common::{ApiResult, AppState, Authenticated};
use query_service::Caller;
use query_service::property_values::{self, Request};
use serde_json::Value;

const READ: Scope = Scope::read("query");

pub async fn values(
    State(state): State<AppState>,
    auth: Authenticated,
    Path(project): Path<String>,
    RawQuery(query): RawQuery,
) -> ApiResult<axum::Json<Vec<Value>>> {
    let project = auth.project(state.store.as_ref(), &project, READ).await?;
    let pairs: Vec<(String, String)> =
        form_urlencoded::parse(query.as_deref().unwrap_or("").as_bytes())
            .into_owned()
            .collect();
    let get = |name: &str| {
        pairs
            .iter()
            .find(|(key, _)| key == name)
            .map(|(_, value)| value.as_str())
    };
    // `event_name` repeated, as PostHog's frontend sends it.
    let event_names = pairs
        .iter()
        .filter(|(key, value)| key == "event_name" && !value.is_empty())
        .map(|(_, value)| value.clone())
        .collect();
    let request = Request {
        key: get("key"),
        value: get("value"),
        event_names,
    };
    let values = property_values::values(&state, &project, &Caller::of(&auth), &request).await?;
    Ok(axum::Json(values))
}
