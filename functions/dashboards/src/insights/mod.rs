//! `/api/projects/:project_id/insights/`: CRUD of saved insights. Every write is one Store
//! transaction with the dashboards whose tiles it moves and its activity entry (an update that
//! moves more than one transaction holds goes in parts: `dashboard_core::repository::Writes`);
//! a read answers the insight's `result` in the `refresh` mode asked (cache only by default).

mod body;

use std::sync::OnceLock;

use axum::extract::rejection::QueryRejection;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use common::activity::Actor;
use common::http::Json;
use common::models::{Project, Scope, user_id};
use common::pagination::Pagination;
use common::repository::routes::HardDelete::Explained;
use common::repository::routes::{entity_routes, item_methods, query_string, refused_delete};
use common::repository::{WriteError, retry, try_commit};
use common::routes::Routes;
use common::store::Store;
use common::{ApiError, ApiResult, AppState, Authenticated};
use dashboard_core::query;
use dashboard_core::repository::Retiling;
use dashboard_core::repository::dashboards::{self, list_live_stored};
use dashboard_core::repository::insights;
use dashboard_core::{Dashboard, DashboardFilters, Insight};
use futures::stream::{self, StreamExt, TryStreamExt};
use serde::Deserialize;
use serde_json::Value;

use body::InsightBody;
pub use body::present;

use crate::refresh::{self, Outcome, Refresh};
use crate::render::{self, Users};

const INSIGHT_READ: Scope = Scope::read("insight");
const INSIGHT_WRITE: Scope = Scope::write("insight");
/// Tries of a write that lost a race (another writer moved the insight or one of its
/// dashboards, or took the new short id) before it answers 409.
const WRITE_ATTEMPTS: u32 = 16;

/// The routes under `base`, with the activity log's; a hard delete is refused.
pub fn routes(base: &str) -> Routes {
    let item = item_methods(retrieve, update, refused_delete(INSIGHT_WRITE, Explained));
    entity_routes::<Insight>(base, get(list).post(create), item)
}

fn write_error(error: WriteError) -> ApiError {
    error.answer_plain("insight")
}

/// The insight a path names: an integer id, else a short id (PostHog's lookup).
async fn resolve(store: &dyn Store, team_id: i64, raw: &str) -> ApiResult<i64> {
    if let Ok(id) = raw.parse::<i64>()
        && insights::get(store, team_id, id).await?.is_some()
    {
        return Ok(id);
    }
    insights::id_of_short(store, team_id, raw)
        .await?
        .ok_or_else(ApiError::not_found)
}

/// The body's `query` upgraded and checked as `/query/` checks a node: `None` when not sent,
/// `Some(None)` when cleared.
async fn prepared_query(
    state: &AppState,
    project: &Project,
    given: &Option<Option<Value>>,
) -> ApiResult<Option<Option<Value>>> {
    match given {
        None => Ok(None),
        Some(None) => Ok(Some(None)),
        Some(Some(node)) => {
            let (stored, runnable) = query::prepare(node.clone())?;
            refresh::check(state, project, &runnable).await?;
            Ok(Some(Some(stored)))
        }
    }
}

/// Refuses dashboards that are not live dashboards of the project, as PostHog's related field.
fn check_dashboards(wanted: &[i64], live: &[dashboards::Stored]) -> ApiResult<()> {
    match wanted
        .iter()
        .find(|id| !live.iter().any(|stored| stored.dashboard.id == **id))
    {
        Some(id) => Err(ApiError::field(
            "dashboards",
            "does_not_exist",
            format!("Invalid pk \"{id}\" - object does not exist."),
        )),
        None => Ok(()),
    }
}

/// The live dashboards that show `insight`.
fn showing<'a>(insight: &Insight, dashboards: &'a [Dashboard]) -> Vec<&'a Dashboard> {
    dashboards
        .iter()
        .filter(|dashboard| !dashboard.deleted && dashboard.shows(insight.id))
        .collect()
}

/// An insight's answer in `refresh`'s mode, `filters` (a dashboard's) laid over its node; a
/// node that fails answers a failed status when `lenient` (lists, dashboards).
pub async fn outcome(
    state: &AppState,
    auth: &Authenticated,
    project: &Project,
    insight: &Insight,
    filters: Option<&DashboardFilters>,
    refresh: Refresh,
    lenient: bool,
) -> ApiResult<Outcome> {
    let runnable = match refresh::node_of(insight, filters) {
        Ok(Some(runnable)) => runnable,
        Ok(None) => return Ok(Outcome::default()),
        Err(error) if lenient => return Ok(Outcome::failed(&error)),
        Err(error) => return Err(error),
    };
    match lenient {
        true => refresh::tile_answer(state, auth, project, &runnable, refresh).await,
        false => refresh::answer(state, auth, project, &runnable, refresh).await,
    }
}

/// Insights one read answers at once (a dashboard's tiles, a page of the list): at most this
/// many, and never more than the project's query slots, so that refreshing a dashboard does not
/// refuse itself with a 429 and leaves room for other queries sooner.
const CONCURRENT_OUTCOMES: usize = 4;

/// [`outcome`] of each insight, leniently (a failing node answers a failed status), a few at a
/// time, in the order given.
pub async fn outcomes(
    state: &AppState,
    auth: &Authenticated,
    project: &Project,
    insights: &[&Insight],
    filters: Option<&DashboardFilters>,
    refresh: Refresh,
) -> ApiResult<Vec<Outcome>> {
    let at_once = CONCURRENT_OUTCOMES.min(state.config.query.concurrency.max(1));
    // Made up front (each does nothing until polled): a closure in `StreamExt::map` would
    // leave the handler's future short of `Send` for every lifetime.
    let pending: Vec<_> = insights
        .iter()
        .map(|insight| outcome(state, auth, project, insight, filters, refresh, true))
        .collect();
    stream::iter(pending).buffered(at_once).try_collect().await
}

/// One insight rendered with its dashboards and answer.
async fn answer_with(
    state: &AppState,
    project: &Project,
    insight: &Insight,
    outcome: &Outcome,
) -> ApiResult<Value> {
    let store = state.store.as_ref();
    let dashboards = dashboards::list_live(store, project.id).await?;
    let users = Users::of_insights(store, &[insight]).await?;
    Ok(render::insight(
        insight,
        &showing(insight, &dashboards),
        outcome,
        &users,
        &project.timezone,
    ))
}

#[derive(Debug, Deserialize)]
pub struct ListParams {
    saved: Option<String>,
    search: Option<String>,
    created_by: Option<String>,
    favorited: Option<String>,
    short_id: Option<String>,
    dashboards: Option<String>,
    order: Option<String>,
    refresh: Option<String>,
    basic: Option<String>,
}

/// PostHog's `str_to_bool`.
fn truthy(value: &str) -> bool {
    matches!(
        value.trim().to_lowercase().as_str(),
        "y" | "yes" | "t" | "true" | "on" | "1"
    )
}

/// A list parameter holding a JSON array of ids (or one id), naming it when it does not.
fn ids(attr: &str, raw: &str) -> ApiResult<Vec<i64>> {
    match serde_json::from_str::<Value>(raw) {
        Ok(Value::Number(n)) if n.as_i64().is_some() => Ok(n.as_i64().into_iter().collect()),
        Ok(Value::Array(items)) => items
            .iter()
            .map(|item| item.as_i64().ok_or(()))
            .collect::<Result<_, _>>()
            .map_err(|()| {
                ApiError::validation(
                    attr,
                    format!("`{attr}` must be a JSON array of integer ids."),
                )
            }),
        _ => Err(ApiError::validation(
            attr,
            format!("`{attr}` must be a JSON array of integer ids."),
        )),
    }
}

/// Sorts by `?order=` (default: last modified first).
fn sort(insights: &mut [Insight], order: Option<&str>) -> ApiResult<()> {
    let (field, descending) = match order.unwrap_or("-last_modified_at") {
        text if text.starts_with('-') => (&text[1..], true),
        text => (text, false),
    };
    match field {
        "last_modified_at" => insights.sort_by_key(|i| (i.last_modified_at, i.id)),
        "created_at" => insights.sort_by_key(|i| (i.created_at, i.id)),
        "id" => insights.sort_by_key(|i| i.id),
        "name" => insights.sort_by_key(|i| (i.display_name().to_lowercase(), i.id)),
        other => {
            return Err(ApiError::field(
                "order",
                "invalid_choice",
                format!(
                    "\"{other}\" is not a valid order: last_modified_at, created_at, id or name (prefix - to reverse)."
                ),
            ));
        }
    }
    if descending {
        insights.reverse();
    }
    Ok(())
}

/// `GET /insights/`: live insights with PostHog's filters, paged; each with its cached
/// `result` (or as `refresh` asks; none with `basic`).
pub async fn list(
    State(state): State<AppState>,
    auth: Authenticated,
    Path(project): Path<String>,
    pagination: Pagination,
    params: Result<Query<ListParams>, QueryRejection>,
) -> ApiResult<Response> {
    let store = state.store.as_ref();
    let project = auth.project(store, &project, INSIGHT_READ).await?;
    let params = query_string(params)?;
    let refresh = Refresh::parse(params.refresh.as_deref())?;
    let basic = params.basic.as_deref().is_some_and(truthy);
    let created_by = match &params.created_by {
        Some(raw) if !raw.is_empty() => Some(ids("created_by", raw)?),
        _ => None,
    };
    let on_dashboards = match &params.dashboards {
        Some(raw) if !raw.is_empty() => ids("dashboards", raw)?,
        _ => Vec::new(),
    };
    let search = params.search.as_ref().map(|text| text.to_lowercase());
    let dashboards = dashboards::list_live(store, project.id).await?;
    let mut found = insights::list_live(store, project.id).await?;
    found.retain(|insight| {
        let shown_on = showing(insight, &dashboards);
        let saved = params.saved.as_deref().is_none_or(|raw| match truthy(raw) {
            true => insight.saved || !shown_on.is_empty(),
            false => !insight.saved,
        });
        saved
            && (params.favorited.is_none() || insight.favorited)
            && params
                .short_id
                .as_ref()
                .is_none_or(|id| &insight.short_id == id)
            && created_by.as_ref().is_none_or(|users| {
                insight
                    .created_by
                    .is_some_and(|uuid| users.contains(&user_id(uuid)))
            })
            && on_dashboards
                .iter()
                .all(|id| shown_on.iter().any(|dashboard| dashboard.id == *id))
            && search.as_ref().is_none_or(|needle| {
                let within = |text: &Option<String>| {
                    text.as_ref()
                        .is_some_and(|text| text.to_lowercase().contains(needle))
                };
                within(&insight.name)
                    || within(&insight.derived_name)
                    || within(&insight.description)
                    || insight.tags.iter().any(|tag| tag.contains(needle.as_str()))
            })
    });
    sort(&mut found, params.order.as_deref())?;
    let shown: Vec<&Insight> = pagination.window(&found).iter().collect();
    let users = Users::of_insights(store, &shown).await?;
    let outcomes = match basic {
        true => shown.iter().map(|_| Outcome::default()).collect(),
        false => outcomes(&state, &auth, &project, &shown, None, refresh).await?,
    };
    let rendered: Vec<Value> = shown
        .iter()
        .zip(&outcomes)
        .map(|(insight, outcome)| {
            render::insight(
                insight,
                &showing(insight, &dashboards),
                outcome,
                &users,
                &project.timezone,
            )
        })
        .collect();
    Ok(axum::Json(pagination.page_of(found.len(), &rendered)).into_response())
}

/// `POST /insights/`: the query is upgraded and checked, the insight numbered and given a
/// short id, and placed on `dashboards`.
pub async fn create(
    State(state): State<AppState>,
    auth: Authenticated,
    Path(project): Path<String>,
    Json(body): Json<InsightBody>,
) -> ApiResult<Response> {
    let store = state.store.as_ref();
    let project = auth.project(store, &project, INSIGHT_WRITE).await?;
    body.check()?;
    body.check_new_dashboards()?;
    let query = prepared_query(&state, &project, &body.query)
        .await?
        .flatten();
    let (team_id, user) = (project.id, auth.user.uuid);
    let wanted = &body.dashboards.clone().unwrap_or_default();
    let (state, body, query, actor) = (&state, &body, &query, &Actor::user(&auth.user));
    let insight = retry(WRITE_ATTEMPTS, write_error, || async move {
        let live = list_live_stored(store, team_id).await?;
        check_dashboards(wanted, &live)?;
        let at = state.clock.now();
        let mut insight = body.new_insight(team_id, query.clone(), user, at)?;
        let ops = insights::plan_create(store, &mut insight, wanted, &live, actor, at).await?;
        Ok(try_commit(store, ops).await.map(|()| insight))
    })
    .await?;
    let answer = answer_with(state, &project, &insight, &Outcome::default()).await?;
    Ok((StatusCode::CREATED, axum::Json(answer)).into_response())
}

#[derive(Debug, Deserialize)]
pub struct RetrieveParams {
    refresh: Option<String>,
    from_dashboard: Option<String>,
}

/// `GET /insights/:id/` (an id or a short id): 404 for a deleted one. `refresh` computes its
/// result; `from_dashboard` lays that dashboard's filters over it.
pub async fn retrieve(
    State(state): State<AppState>,
    auth: Authenticated,
    Path((project, id)): Path<(String, String)>,
    params: Result<Query<RetrieveParams>, QueryRejection>,
) -> ApiResult<Response> {
    let store = state.store.as_ref();
    let project = auth.project(store, &project, INSIGHT_READ).await?;
    let params = query_string(params)?;
    let refresh = Refresh::parse(params.refresh.as_deref())?;
    let id = resolve(store, project.id, &id).await?;
    let insight = insights::found(store, project.id, id, false).await?.insight;
    let dashboard = match params.from_dashboard.as_deref() {
        Some(raw) => {
            let dashboard_id = raw.trim().parse::<i64>().map_err(|_| {
                ApiError::validation("from_dashboard", "`from_dashboard` must be a dashboard id.")
            })?;
            dashboards::get_live(store, project.id, dashboard_id)
                .await?
                .filter(|dashboard| dashboard.shows(insight.id))
        }
        None => None,
    };
    let filters = dashboard.as_ref().map(|dashboard| &dashboard.filters);
    let outcome = outcome(&state, &auth, &project, &insight, filters, refresh, false).await?;
    let mut answer = answer_with(&state, &project, &insight, &outcome).await?;
    if let Some(dashboard) = &dashboard
        && let Some(tile) = dashboard
            .live_tiles()
            .find(|tile| tile.insight == Some(insight.id))
    {
        answer["color"] = serde_json::json!(tile.color);
        answer["layouts"] = Value::Object(tile.layouts.clone());
    }
    let status = match &outcome.query_status {
        Some(status) if status["complete"] == Value::Bool(false) => StatusCode::ACCEPTED,
        _ => StatusCode::OK,
    };
    Ok((status, axum::Json(answer)).into_response())
}

/// `PATCH` (and `PUT`) `/insights/:id/`: a partial update. `deleted: true` soft-deletes it
/// (its tiles go), `deleted: false` restores a deleted one, `dashboards` places it on exactly
/// those dashboards.
pub async fn update(
    State(state): State<AppState>,
    auth: Authenticated,
    Path((project, id)): Path<(String, String)>,
    Json(body): Json<InsightBody>,
) -> ApiResult<Response> {
    let store = state.store.as_ref();
    let project = auth.project(store, &project, INSIGHT_WRITE).await?;
    body.check()?;
    let (team_id, user) = (project.id, auth.user.uuid);
    let id = resolve(store, team_id, &id).await?;
    let query = &prepared_query(&state, &project, &body.query).await?;
    // Only a restore may name a deleted insight (PostHog's queryset for `deleted: false`).
    let restoring = body.deleted == Some(false);
    // The dashboards it was on when a write too large for one transaction began: a later try
    // (after a lost race) reads some of them moved already, and the log names them all.
    let began_on: &OnceLock<Vec<i64>> = &OnceLock::new();
    let (state, body, actor) = (&state, &body, &Actor::user(&auth.user));
    let next = retry(WRITE_ATTEMPTS, write_error, || async move {
        let stored = insights::found(store, team_id, id, restoring).await?;
        let live = list_live_stored(store, team_id).await?;
        if let Some(wanted) = &body.dashboards {
            check_dashboards(wanted, &live)?;
        }
        let at = state.clock.now();
        let mut next = body.apply_to(&stored.insight, query.clone(), user, at)?;
        // A deleted insight leaves every dashboard.
        let wanted = match next.deleted {
            true => Some(&[][..]),
            false => body.dashboards.as_deref(),
        };
        let mut retiling = Retiling::plan(store, team_id, id, wanted, &live).await?;
        if let Some(before) = began_on.get() {
            retiling.before = before.clone();
        }
        let writes = insights::plan_save(&stored, &mut next, &retiling, actor, at)?;
        if writes.is_split() {
            began_on.get_or_init(|| retiling.before.clone());
        }
        Ok(writes.commit(store).await.map(|()| next))
    })
    .await?;
    let outcome = outcome(
        state,
        &auth,
        &project,
        &next,
        None,
        Refresh::CacheOnly,
        true,
    )
    .await?;
    let answer = answer_with(state, &project, &next, &outcome).await?;
    Ok(axum::Json(answer).into_response())
}
