//! `/api/projects/:project_id/experiment_holdouts/` and `/experiment_saved_metrics/`: PostHog's
//! ExperimentHoldoutViewSet and ExperimentSavedMetricViewSet (list, create, retrieve, update,
//! hard delete) under the experiment scopes. The two viewsets differ only in their model, so one
//! set of handlers serves both, over what each [`Resource`] says: a change of a holdout's size
//! reaches the flags of the experiments that name it and its delete detaches it from them; a
//! saved metric's name is unique, its list searchable, and its delete drops the experiments'
//! links to it.

use std::future::Future;

use axum::extract::rejection::QueryRejection;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use chrono::{DateTime, Utc};
use common::activity::Actor;
use common::error::{ApiError, ApiResult};
use common::http::{Json, item_id};
use common::models::User;
use common::pagination::Pagination;
use common::repository::routes::query_string;
use common::repository::{self as entities, Numbered, VersionedRead, WriteError, retry};
use common::store::Store;
use common::{AppState, Authenticated};
use experiment_core::holdouts::{self, Holdout, HoldoutBody};
use experiment_core::saved_metrics::{self, SavedMetric, SavedMetricBody};
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::shared::{READ, WRITE, creator};

/// Tries of a change before it answers 409 (each try is one read and one transaction).
const ATTEMPTS: u32 = 8;

/// Where, by whom and when a resource is written.
#[derive(Clone, Copy)]
pub struct Context<'a> {
    pub store: &'a dyn Store,
    pub team_id: i64,
    pub actor: &'a Actor,
    pub at: DateTime<Utc>,
}

/// What a model of the experiments family kept by id and deleted for good says to the
/// handlers: its body, its list, how it is checked, written and shown.
pub trait Resource: Numbered {
    /// What a 409 names: "The holdout kept changing under this request; retry."
    const NOUN: &'static str;
    /// The body of create, PATCH and PUT.
    type Body: DeserializeOwned + Send + Sync + 'static;
    /// The list's query string.
    type ListParams: DeserializeOwned + Send + 'static;
    /// It as read, with the item version its writes must find.
    type Stored: VersionedRead<Self> + Send + Sync;

    /// The rows of a list, filtered and in its order.
    fn listed(rows: Vec<Self>, params: Self::ListParams) -> Vec<Self>;

    /// What `body` must pass among the project's others before it is written (`except`: the
    /// one it changes).
    fn check(
        _store: &dyn Store,
        _team_id: i64,
        _body: &Self::Body,
        _except: Option<i64>,
    ) -> impl Future<Output = ApiResult<()>> + Send {
        async { Ok(()) }
    }

    /// What `body` creates (its id given when it is stored), or PostHog's 400.
    fn build(body: &Self::Body, user: &User, team_id: i64, at: DateTime<Utc>) -> ApiResult<Self>;

    /// `current` after `body`, or PostHog's 400.
    fn changed(body: &Self::Body, current: &Self) -> ApiResult<Self>;

    /// Replaces `before` by `after`: answers it as written and whether flags changed with it.
    fn save(
        to: Context<'_>,
        before: &Self::Stored,
        after: Self,
    ) -> impl Future<Output = Saved<Self>> + Send;

    /// Deletes it for good: answers whether flags changed with it.
    fn delete(to: Context<'_>, before: &Self::Stored) -> impl Future<Output = Deleted> + Send;

    /// PostHog's serializer, with its creator.
    fn render(&self, creator: Option<&User>) -> Value;
}

/// A resource as written, and whether flags changed with it.
type Saved<R> = Result<(R, bool), WriteError>;
/// Whether flags changed with a delete.
type Deleted = Result<bool, WriteError>;

/// The resource `id` names, as read; 404 when there is none.
async fn found<R: Resource>(store: &dyn Store, team_id: i64, id: i64) -> ApiResult<R::Stored> {
    let (resource, item_version) = entities::get::<R>(store, team_id, &id)
        .await?
        .ok_or_else(ApiError::not_found)?;
    Ok(R::Stored::from_read(resource, item_version))
}

fn write_error<R: Resource>(error: WriteError) -> ApiError {
    error.answer_plain(R::NOUN)
}

async fn render<R: Resource>(state: &AppState, resource: &R) -> ApiResult<Value> {
    let creator = creator(state.store.as_ref(), resource.stamps().created_by).await?;
    Ok(resource.render(creator.as_ref()))
}

/// The flags' definitions changed with a write: the SDK cache hears of it.
fn after_write(state: &AppState, team_id: i64, flags_changed: bool) {
    if flags_changed {
        feature_flags::cache::definitions_changed(state, team_id);
    }
}

/// `GET /<resources>/`: in the resource's order, filtered by its query string.
pub async fn list<R: Resource>(
    State(state): State<AppState>,
    auth: Authenticated,
    Path(project): Path<String>,
    pagination: Pagination,
    params: Result<Query<R::ListParams>, QueryRejection>,
) -> ApiResult<Response> {
    let store = state.store.as_ref();
    let project = auth.project(store, &project, READ).await?;
    let params = query_string(params)?;
    let rows = R::listed(entities::list_all::<R>(store, project.id).await?, params);
    let mut rendered = Vec::new();
    for resource in pagination.window(&rows) {
        rendered.push(render(&state, resource).await?);
    }
    Ok(axum::Json(pagination.page_of(rows.len(), &rendered)).into_response())
}

/// `POST /<resources>/`: 201 with the new one.
pub async fn create<R: Resource>(
    State(state): State<AppState>,
    auth: Authenticated,
    Path(project): Path<String>,
    Json(body): Json<R::Body>,
) -> ApiResult<Response> {
    let store = state.store.as_ref();
    let project = auth.project(store, &project, WRITE).await?;
    R::check(store, project.id, &body, None).await?;
    let at = state.clock.now();
    let new = R::build(&body, &auth.user, project.id, at)?;
    let actor = Actor::user(&auth.user);
    let created = entities::create_numbered(store, project.id, new, &actor, at)
        .await
        .map_err(write_error::<R>)?;
    let answer = render(&state, &created).await?;
    Ok((StatusCode::CREATED, axum::Json(answer)).into_response())
}

/// `GET /<resources>/:id/`
pub async fn retrieve<R: Resource>(
    State(state): State<AppState>,
    auth: Authenticated,
    Path((project, id)): Path<(String, String)>,
) -> ApiResult<Response> {
    let store = state.store.as_ref();
    let project = auth.project(store, &project, READ).await?;
    let stored = found::<R>(store, project.id, item_id(&id)?).await?;
    Ok(axum::Json(render(&state, stored.entity()).await?).into_response())
}

/// `PATCH` (and `PUT`) `/<resources>/:id/`: a partial update, read again when it raced.
pub async fn update<R: Resource>(
    State(state): State<AppState>,
    auth: Authenticated,
    Path((project, id)): Path<(String, String)>,
    Json(body): Json<R::Body>,
) -> ApiResult<Response> {
    let store = state.store.as_ref();
    let team_id = auth.project(store, &project, WRITE).await?.id;
    let id = item_id(&id)?;
    let (state, body, actor) = (&state, &body, &Actor::user(&auth.user));
    let (written, flags_changed) = retry(ATTEMPTS, write_error::<R>, || async move {
        let stored = found::<R>(store, team_id, id).await?;
        R::check(store, team_id, body, Some(id)).await?;
        let next = R::changed(body, stored.entity())?;
        let at = state.clock.now();
        let to = Context {
            store,
            team_id,
            actor,
            at,
        };
        Ok(R::save(to, &stored, next).await)
    })
    .await?;
    after_write(state, team_id, flags_changed);
    Ok(axum::Json(render(state, &written).await?).into_response())
}

/// `DELETE /<resources>/:id/`: 204, gone for good, with what it was linked to.
pub async fn destroy<R: Resource>(
    State(state): State<AppState>,
    auth: Authenticated,
    Path((project, id)): Path<(String, String)>,
) -> ApiResult<Response> {
    let store = state.store.as_ref();
    let team_id = auth.project(store, &project, WRITE).await?.id;
    let id = item_id(&id)?;
    let (state, actor) = (&state, &Actor::user(&auth.user));
    let flags_changed = retry(ATTEMPTS, write_error::<R>, || async move {
        let stored = found::<R>(store, team_id, id).await?;
        let at = state.clock.now();
        Ok(R::delete(
            Context {
                store,
                team_id,
                actor,
                at,
            },
            &stored,
        )
        .await)
    })
    .await?;
    after_write(state, team_id, flags_changed);
    Ok(StatusCode::NO_CONTENT.into_response())
}

/// Holdouts list newest first and take no query string.
#[derive(Debug, Deserialize)]
pub struct NoParams {}

impl Resource for Holdout {
    const NOUN: &'static str = "holdout";
    type Body = HoldoutBody;
    type ListParams = NoParams;
    type Stored = holdouts::repository::Stored;

    fn listed(mut rows: Vec<Self>, _: NoParams) -> Vec<Self> {
        rows.sort_by(|a, b| b.created_at.cmp(&a.created_at).then(b.id.cmp(&a.id)));
        rows
    }

    fn build(body: &HoldoutBody, user: &User, team_id: i64, at: DateTime<Utc>) -> ApiResult<Self> {
        holdouts::create(body, user, team_id, at)
    }

    fn changed(body: &HoldoutBody, current: &Self) -> ApiResult<Self> {
        holdouts::update(body, current)
    }

    /// New filters reach the linked experiments' flags.
    async fn save(to: Context<'_>, before: &Self::Stored, after: Self) -> Saved<Self> {
        holdouts::repository::save(to.store, to.team_id, before, after, to.actor, to.at).await
    }

    /// The holdout leaves its experiments and their flags.
    async fn delete(to: Context<'_>, before: &Self::Stored) -> Deleted {
        holdouts::repository::delete(to.store, to.team_id, before, to.actor, to.at).await
    }

    fn render(&self, creator: Option<&User>) -> Value {
        holdouts::render(self, creator)
    }
}

#[derive(Debug, Deserialize)]
pub struct SearchParams {
    search: Option<String>,
}

impl Resource for SavedMetric {
    const NOUN: &'static str = "saved metric";
    type Body = SavedMetricBody;
    type ListParams = SearchParams;
    type Stored = saved_metrics::repository::Stored;

    /// By name, case-insensitively; `search` looks in the name, the description and the tags
    /// (DRF's SearchFilter).
    fn listed(rows: Vec<Self>, params: SearchParams) -> Vec<Self> {
        let terms: Vec<String> = params
            .search
            .unwrap_or_default()
            .split_whitespace()
            .map(str::to_lowercase)
            .collect();
        let mut rows: Vec<Self> = rows
            .into_iter()
            .filter(|saved| {
                terms.iter().all(|term| {
                    saved.name.to_lowercase().contains(term)
                        || saved
                            .description
                            .as_deref()
                            .is_some_and(|text| text.to_lowercase().contains(term))
                        || saved.tags.iter().any(|tag| tag.contains(term))
                })
            })
            .collect();
        rows.sort_by(|a, b| {
            a.name
                .to_lowercase()
                .cmp(&b.name.to_lowercase())
                .then(a.id.cmp(&b.id))
        });
        rows
    }

    /// A name is the project's one saved metric of that name.
    async fn check(
        store: &dyn Store,
        team_id: i64,
        body: &SavedMetricBody,
        except: Option<i64>,
    ) -> ApiResult<()> {
        if let Some(Some(name)) = &body.name {
            let others = saved_metrics::repository::list_all(store, team_id).await?;
            saved_metrics::name_taken(name, &others, except)?;
        }
        Ok(())
    }

    /// Its query given a `uuid`.
    fn build(
        body: &SavedMetricBody,
        user: &User,
        team_id: i64,
        at: DateTime<Utc>,
    ) -> ApiResult<Self> {
        saved_metrics::create(body, user, team_id, at)
    }

    /// The query keeps its `uuid`.
    fn changed(body: &SavedMetricBody, current: &Self) -> ApiResult<Self> {
        saved_metrics::update(body, current)
    }

    async fn save(to: Context<'_>, before: &Self::Stored, after: Self) -> Saved<Self> {
        let saved =
            saved_metrics::repository::save(to.store, to.team_id, before, after, to.actor, to.at);
        Ok((saved.await?, false))
    }

    /// The experiments' links to it go with it.
    async fn delete(to: Context<'_>, before: &Self::Stored) -> Deleted {
        saved_metrics::repository::delete(to.store, to.team_id, before, to.actor, to.at).await?;
        Ok(false)
    }

    fn render(&self, creator: Option<&User>) -> Value {
        saved_metrics::render(self, creator)
    }
}
