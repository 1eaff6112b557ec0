//! `/api/projects/:project_id/dashboards/`: CRUD of dashboards and their tiles. A read renders
//! every tile, each insight tile answered with the dashboard's filters laid over its node in
//! the `refresh` mode asked (cache only by default), a few tiles at a time.

mod body;

use axum::extract::rejection::QueryRejection;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use common::activity::Actor;
use common::http::{Json, item_id};
use common::models::{Project, Scope};
use common::pagination::Pagination;
use common::repository::routes::HardDelete::Explained;
use common::repository::routes::{entity_routes, item_methods, query_string, refused_delete};
use common::repository::{WriteError, retry, team_pk, try_commit};
use common::routes::Routes;
use common::store::{self, Store};
use common::{ApiError, ApiResult, AppState, Authenticated};
use dashboard_core::repository::{TILE_COUNTER, dashboards, insights};
use dashboard_core::{Dashboard, Insight};
use serde::Deserialize;
use serde_json::Value;

use body::DashboardBody;

use crate::insights::outcomes;
use crate::refresh::{self, Refresh};
use crate::render::{self, Users};

const DASHBOARD_READ: Scope = Scope::read("dashboard");
const DASHBOARD_WRITE: Scope = Scope::write("dashboard");
/// Tries of a write that lost a race before it answers 409.
const WRITE_ATTEMPTS: u32 = 16;

/// The routes under `base`, with the activity log's; a hard delete is refused.
pub fn routes(base: &str) -> Routes {
    let item = item_methods(retrieve, update, refused_delete(DASHBOARD_WRITE, Explained));
    entity_routes::<Dashboard>(base, get(list).post(create), item)
}

fn write_error(error: WriteError) -> ApiError {
    error.answer_plain("dashboard")
}

/// A dashboard with every live tile rendered; insight tiles answered in `refresh`'s mode with
/// the dashboard's filters.
async fn render_full(
    state: &AppState,
    auth: &Authenticated,
    project: &Project,
    dashboard: &Dashboard,
    refresh: Refresh,
) -> ApiResult<Value> {
    let store = state.store.as_ref();
    let all = dashboards::list_live(store, project.id).await?;
    let ordered = render::ordered(&dashboard.tiles);
    let mut shown: Vec<Option<Insight>> = Vec::with_capacity(ordered.len());
    for tile in &ordered {
        shown.push(match tile.insight {
            Some(id) => insights::get_live(store, project.id, id).await?,
            None => None,
        });
    }
    let uuids = shown
        .iter()
        .flatten()
        .flat_map(|insight| [insight.created_by, insight.last_modified_by])
        .chain(
            ordered
                .iter()
                .filter_map(|tile| tile.text.as_ref())
                .flat_map(|text| [text.created_by, text.last_modified_by]),
        )
        .chain([dashboard.created_by])
        .collect();
    let users = Users::load(store, uuids).await?;
    // The insight tiles answer concurrently (a few at a time), then render in tile order.
    let answered: Vec<&Insight> = shown.iter().flatten().collect();
    let filters = Some(&dashboard.filters);
    let mut outcomes = outcomes(state, auth, project, &answered, filters, refresh)
        .await?
        .into_iter();
    let mut tiles = Vec::with_capacity(ordered.len());
    for (tile, insight) in ordered.into_iter().zip(&shown) {
        // A tile of a deleted insight is not shown (PostHog's tile queryset).
        if tile.insight.is_some() && insight.is_none() {
            continue;
        }
        let rendered = match insight {
            Some(insight) => {
                let outcome = outcomes.next().unwrap_or_default();
                let showing: Vec<&Dashboard> = all.iter().filter(|d| d.shows(insight.id)).collect();
                Some(render::insight(
                    insight,
                    &showing,
                    &outcome,
                    &users,
                    &project.timezone,
                ))
            }
            None => None,
        };
        tiles.push(render::tile(
            tile,
            tiles.len(),
            rendered,
            &users,
            project.id,
        ));
    }
    Ok(render::dashboard(dashboard, tiles, &users))
}

#[derive(Debug, Deserialize)]
pub struct ListParams {
    pinned: Option<String>,
    search: Option<String>,
}

/// `GET /dashboards/`: live dashboards, pinned first, then by name, without tiles.
pub async fn list(
    State(state): State<AppState>,
    auth: Authenticated,
    Path(project): Path<String>,
    pagination: Pagination,
    params: Result<Query<ListParams>, QueryRejection>,
) -> ApiResult<Response> {
    let store = state.store.as_ref();
    let project = auth.project(store, &project, DASHBOARD_READ).await?;
    let params = query_string(params)?;
    let pinned = params
        .pinned
        .as_deref()
        .map(|raw| matches!(raw, "true" | "1"));
    let search = params.search.map(|text| text.to_lowercase());
    let mut found = dashboards::list_live(store, project.id).await?;
    found.retain(|dashboard| {
        pinned.is_none_or(|pinned| dashboard.pinned == pinned)
            && search.as_ref().is_none_or(|needle| {
                dashboard
                    .name
                    .as_deref()
                    .unwrap_or("")
                    .to_lowercase()
                    .contains(needle)
                    || dashboard.description.to_lowercase().contains(needle)
            })
    });
    found.sort_by_key(|d| {
        (
            !d.pinned,
            d.name.clone().unwrap_or_default().to_lowercase(),
            d.id,
        )
    });
    let shown = pagination.window(&found);
    let creators = shown.iter().map(|d| d.created_by).collect();
    let users = Users::load(store, creators).await?;
    let rendered: Vec<Value> = shown
        .iter()
        .map(|d| render::dashboard_basic(d, &users))
        .collect();
    Ok(axum::Json(pagination.page_of(found.len(), &rendered)).into_response())
}

/// `POST /dashboards/`: a new dashboard (its filters checked by the compiler).
pub async fn create(
    State(state): State<AppState>,
    auth: Authenticated,
    Path(project): Path<String>,
    Json(body): Json<DashboardBody>,
) -> ApiResult<Response> {
    let store = state.store.as_ref();
    let project = auth.project(store, &project, DASHBOARD_WRITE).await?;
    body.check()?;
    if let Some(filters) = body.new_filters() {
        refresh::check_filters(&state, &project, filters).await?;
    }
    let (team_id, user) = (project.id, auth.user.uuid);
    let (state, body, actor) = (&state, &body, &Actor::user(&auth.user));
    let dashboard = retry(WRITE_ATTEMPTS, write_error, || async move {
        let at = state.clock.now();
        let mut dashboard = body.new_dashboard(team_id, user, at)?;
        let ops = dashboards::plan_create(store, &mut dashboard, actor, at).await?;
        Ok(try_commit(store, ops).await.map(|()| dashboard))
    })
    .await?;
    let answer = render_full(state, &auth, &project, &dashboard, Refresh::CacheOnly).await?;
    Ok((StatusCode::CREATED, axum::Json(answer)).into_response())
}

#[derive(Debug, Deserialize)]
pub struct RetrieveParams {
    refresh: Option<String>,
}

/// `GET /dashboards/:id/`: the dashboard and its tiles; `refresh` computes each insight tile
/// with the dashboard's filters.
pub async fn retrieve(
    State(state): State<AppState>,
    auth: Authenticated,
    Path((project, id)): Path<(String, String)>,
    params: Result<Query<RetrieveParams>, QueryRejection>,
) -> ApiResult<Response> {
    let store = state.store.as_ref();
    let project = auth.project(store, &project, DASHBOARD_READ).await?;
    let params = query_string(params)?;
    let refresh = Refresh::parse(params.refresh.as_deref())?;
    let dashboard = dashboards::found(store, project.id, item_id(&id)?, false)
        .await?
        .dashboard;
    let answer = render_full(&state, &auth, &project, &dashboard, refresh).await?;
    Ok(axum::Json(answer).into_response())
}

/// The stored insights the tiles of `dashboard` name (deleted ones included), as read.
async fn insights_of(store: &dyn Store, dashboard: &Dashboard) -> ApiResult<Vec<insights::Stored>> {
    let mut found = Vec::new();
    for id in dashboard.tiles.iter().filter_map(|tile| tile.insight) {
        if found
            .iter()
            .any(|stored: &insights::Stored| stored.insight.id == id)
        {
            continue;
        }
        if let Some(stored) = insights::get(store, dashboard.team_id, id).await? {
            found.push(stored);
        }
    }
    Ok(found)
}

/// `PATCH` (and `PUT`) `/dashboards/:id/`: a partial update and tile edits. `deleted: true`
/// soft-deletes it with its tiles (and, with `delete_insights`, the insights only it shows);
/// `deleted: false` restores it with them.
pub async fn update(
    State(state): State<AppState>,
    auth: Authenticated,
    Path((project, id)): Path<(String, String)>,
    Json(body): Json<DashboardBody>,
) -> ApiResult<Response> {
    let store = state.store.as_ref();
    let project = auth.project(store, &project, DASHBOARD_WRITE).await?;
    let (team_id, id) = (project.id, item_id(&id)?);
    body.check()?;
    if let Some(filters) = body.new_filters() {
        refresh::check_filters(&state, &project, filters).await?;
    }
    let restoring = body.deleted == Some(false);
    let user = auth.user.uuid;
    let (state, body, actor) = (&state, &body, &Actor::user(&auth.user));
    let next = retry(WRITE_ATTEMPTS, write_error, || async move {
        let stored = dashboards::found(store, team_id, id, restoring).await?;
        let (first_tile, counter) = match body.new_text_tiles() {
            0 => (0, None),
            n => {
                let (first, op) =
                    store::claim_next_ids(store, &team_pk(team_id), TILE_COUNTER, n as i64).await?;
                (first, Some(op))
            }
        };
        let at = state.clock.now();
        let old = &stored.dashboard;
        let mut next = body.apply_to(old, first_tile, user, at)?;
        let cascaded = match (old.deleted, next.deleted) {
            (false, true) => {
                let others: Vec<Dashboard> = dashboards::list_live(store, team_id)
                    .await?
                    .into_iter()
                    .filter(|other| other.id != id)
                    .collect();
                let shown = insights_of(store, old).await?;
                dashboards::delete(&next, body.delete_insights, &shown, &others)
            }
            (true, false) => {
                let shown = insights_of(store, old).await?;
                dashboards::restore(&next, &shown)
            }
            _ => Vec::new(),
        };
        let writes = dashboards::plan_save(&stored, &mut next, &cascaded, counter, actor, at)?;
        Ok(writes.commit(store).await.map(|()| next))
    })
    .await?;
    let answer = render_full(state, &auth, &project, &next, Refresh::CacheOnly).await?;
    Ok(axum::Json(answer).into_response())
}
