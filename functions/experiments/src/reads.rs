//! Reads beside the experiments themselves (reference 2.7, section 0): flags an experiment may
//! run on and velocity stats (the activity log is `common::activity::routes`).

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use common::error::{ApiError, ApiResult};
use common::query_params::QueryParams;
use common::{AppState, Authenticated};
use experiment_core::repository;
use feature_flags::FeatureFlag;
use feature_flags::model::EvaluationRuntime;
use feature_flags::render::Creators;
use feature_flags::repository as flags;
use serde_json::json;

use crate::shared::{FLAG_READ, READ, created_by_param};

const ELIGIBLE_DEFAULT_LIMIT: usize = 20;
const ELIGIBLE_MAX_LIMIT: usize = 100;

/// `GET /experiments/eligible_feature_flags`: multivariate flags with at least two variants,
/// `control` first; `{results, count}` without links. Filters: `search`, `active`,
/// `created_by_id`, `evaluation_runtime`, `has_evaluation_tags`.
pub async fn eligible_feature_flags(
    State(state): State<AppState>,
    auth: Authenticated,
    Path(project): Path<String>,
    params: QueryParams,
) -> ApiResult<Response> {
    let store = state.store.as_ref();
    let project = auth.project(store, &project, FLAG_READ).await?;
    // As sent, empty values included: PostHog reads `limit=` as a bad limit, `active=` as a bad
    // choice.
    let param = |name: &str| params.raw(name);
    let bad_paging = || {
        (
            StatusCode::BAD_REQUEST,
            axum::Json(json!({"error": "Invalid limit or offset"})),
        )
            .into_response()
    };
    let limit = match param("limit").map(str::parse::<usize>) {
        None => ELIGIBLE_DEFAULT_LIMIT,
        Some(Ok(limit)) if limit >= 1 => limit.min(ELIGIBLE_MAX_LIMIT),
        Some(_) => return Ok(bad_paging()),
    };
    let offset = match param("offset").map(str::parse::<usize>) {
        None => 0,
        Some(Ok(offset)) => offset,
        Some(Err(_)) => return Ok(bad_paging()),
    };
    let active = match param("active") {
        None => None,
        Some("true") => Some(true),
        Some("false") => Some(false),
        Some(other) => {
            return Err(ApiError::field(
                "active",
                "invalid_choice",
                format!("\"{other}\" is not a valid choice: true or false."),
            ));
        }
    };
    let runtime = match param("evaluation_runtime") {
        None => None,
        Some(raw) => Some(
            serde_json::from_value::<EvaluationRuntime>(json!(raw)).map_err(|_| {
                ApiError::field(
                    "evaluation_runtime",
                    "invalid_choice",
                    format!("\"{raw}\" is not a valid choice."),
                )
            })?,
        ),
    };
    let created_by = created_by_param(param("created_by_id"))?;
    // As PostHog reads it: `true`, `1` or `yes` (any case) keeps flags with at least one
    // evaluation tag, any other value keeps flags without.
    let has_tags = param("has_evaluation_tags")
        .map(|raw| ["true", "1", "yes"].contains(&raw.to_lowercase().as_str()));
    let search = param("search").map(str::to_lowercase);
    let order = param("order").unwrap_or("-created_at");
    let (descending, field) = match order.strip_prefix('-') {
        Some(field) => (true, field),
        None => (false, order),
    };
    if !["created_at", "key", "name"].contains(&field) {
        return Err(experiment_core::validate::invalid(format!(
            "Invalid order field: '{order}'"
        )));
    }
    let mut eligible: Vec<FeatureFlag> = flags::list_live(store, project.id)
        .await?
        .into_iter()
        .filter(|flag| {
            let keys: Vec<&str> = flag.variant_keys().collect();
            keys.len() >= 2
                && keys.first() == Some(&"control")
                && active.is_none_or(|active| flag.active == active)
                && runtime.is_none_or(|runtime| flag.evaluation_runtime == runtime)
                && created_by
                    .is_none_or(|key| flag.created_by.is_some_and(|uuid| key.matches(uuid)))
                && has_tags.is_none_or(|has| flag.evaluation_tags.is_empty() != has)
                && search.as_ref().is_none_or(|needle| {
                    flag.key.to_lowercase().contains(needle)
                        || flag.name.to_lowercase().contains(needle)
                })
        })
        .collect();
    eligible.sort_by(|a, b| {
        let ordering = match field {
            "key" => a.key.cmp(&b.key),
            "name" => a.name.cmp(&b.name),
            _ => a.created_at.cmp(&b.created_at),
        }
        .then(a.id.cmp(&b.id));
        if descending {
            ordering.reverse()
        } else {
            ordering
        }
    });
    let page: Vec<&FeatureFlag> = eligible.iter().skip(offset).take(limit).collect();
    let creators = Creators::of(store, &page).await?;
    let results: Vec<serde_json::Value> = page.iter().map(|flag| creators.render(flag)).collect();
    Ok(axum::Json(json!({"results": results, "count": eligible.len()})).into_response())
}

/// `GET /experiments/stats`: launch velocity in the project's time zone.
pub async fn stats(
    State(state): State<AppState>,
    auth: Authenticated,
    Path(project): Path<String>,
) -> ApiResult<Response> {
    let store = state.store.as_ref();
    let project = auth.project(store, &project, READ).await?;
    let experiments = repository::list_live(store, project.id).await?;
    let velocity =
        experiment_core::velocity::velocity(&experiments, &project.timezone, state.clock.now());
    Ok(axum::Json(velocity).into_response())
}
