//! `/api/projects/:project_id/experiments/`: list, create, retrieve and update (reference
//! 2.2–2.4, 2.7 list filters); a hard delete is refused as PostHog's ForbidDestroyModel refuses
//! it (`common::repository::routes::refused_delete`).

use axum::extract::rejection::QueryRejection;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use common::activity::Actor;
use common::error::{ApiError, ApiResult};
use common::http::Json;
use common::http::item_id;
use common::models::User;
use common::pagination::Pagination;
use common::repository::routes::query_string;
use common::{AppState, Authenticated};
use experiment_core::repository::{self, FlagWrite};
use experiment_core::service::{self, FlagChoice};
use experiment_core::validate::{ExperimentBody, invalid};
use experiment_core::{Experiment, Status};
use feature_flags::FeatureFlag;
use feature_flags::repository as flags;
use serde::Deserialize;
use uuid::Uuid;

use crate::shared::{
    KnownLists, READ, WRITE, created_by_param, holdout_json, mutate, render, write_error,
};

#[derive(Debug, Deserialize)]
pub struct ListParams {
    status: Option<String>,
    archived: Option<String>,
    feature_flag_id: Option<String>,
    created_by_id: Option<String>,
    search: Option<String>,
    order: Option<String>,
}

const ORDER_FIELDS: &[&str] = &[
    "created_at",
    "created_by",
    "updated_at",
    "name",
    "start_date",
    "end_date",
    "duration",
    "status",
];

/// `GET /experiments/`: live experiments with PostHog's filters, `-created_at` first.
pub async fn list(
    State(state): State<AppState>,
    auth: Authenticated,
    Path(project): Path<String>,
    pagination: Pagination,
    params: Result<Query<ListParams>, QueryRejection>,
) -> ApiResult<Response> {
    let store = state.store.as_ref();
    let project = auth.project(store, &project, READ).await?;
    let params = query_string(params)?;
    let status = match params.status.as_deref() {
        None | Some("all") => None,
        Some("draft") => Some(Status::Draft),
        Some("running") => Some(Status::Running),
        Some("paused") => Some(Status::Paused),
        Some("stopped") | Some("complete") => Some(Status::Stopped),
        Some(other) => {
            return Err(ApiError::field(
                "status",
                "invalid_choice",
                format!("\"{other}\" is not a valid choice."),
            ));
        }
    };
    let archived = match params.archived.as_deref() {
        None | Some("false") | Some("False") | Some("0") => false,
        Some("true") | Some("True") | Some("1") => true,
        Some(other) => {
            return Err(ApiError::field(
                "archived",
                "invalid",
                format!("\"{other}\" is not a valid boolean."),
            ));
        }
    };
    let feature_flag_id = match params.feature_flag_id.as_deref() {
        None => None,
        Some(raw) => Some(raw.parse::<i64>().map_err(|_| {
            ApiError::field(
                "feature_flag_id",
                "invalid",
                "feature_flag_id must be an integer.",
            )
        })?),
    };
    let created_by = created_by_param(params.created_by_id.as_deref())?;
    let order = params.order.as_deref().unwrap_or("-created_at");
    let (descending, field) = match order.strip_prefix('-') {
        Some(field) => (true, field),
        None => (false, order),
    };
    if !ORDER_FIELDS.contains(&field) {
        return Err(invalid(format!("Invalid order field: '{order}'")));
    }
    let search = params.search.map(|text| text.to_lowercase());

    let flags_by_id: std::collections::HashMap<i64, FeatureFlag> =
        flags::list_live(store, project.id)
            .await?
            .into_iter()
            .map(|flag| (flag.id, flag))
            .collect();
    let mut rows: Vec<(Experiment, Option<&FeatureFlag>)> =
        repository::list_live(store, project.id)
            .await?
            .into_iter()
            .map(|experiment| {
                let flag = flags_by_id.get(&experiment.feature_flag_id);
                (experiment, flag)
            })
            .filter(|(experiment, flag)| {
                experiment.archived == archived
                    && status.is_none_or(|status| experiment.status(*flag) == status)
                    && feature_flag_id.is_none_or(|id| experiment.feature_flag_id == id)
                    && created_by.is_none_or(|key| {
                        experiment.created_by.is_some_and(|uuid| key.matches(uuid))
                    })
                    && search
                        .as_ref()
                        .is_none_or(|needle| experiment.name.to_lowercase().contains(needle))
            })
            .collect();
    let now = state.clock.now();
    rows.sort_by(|(a, flag_a), (b, flag_b)| {
        let ordering = match field {
            "created_by" => a.created_by.cmp(&b.created_by),
            "updated_at" => a.updated_at.cmp(&b.updated_at),
            "name" => a.name.to_lowercase().cmp(&b.name.to_lowercase()),
            "start_date" => a.start_date.cmp(&b.start_date),
            "end_date" => a.end_date.cmp(&b.end_date),
            "duration" => duration(a, now).cmp(&duration(b, now)),
            "status" => a.status(*flag_a).name().cmp(b.status(*flag_b).name()),
            _ => a.created_at.cmp(&b.created_at),
        };
        let ordering = ordering.then(a.id.cmp(&b.id));
        if descending {
            ordering.reverse()
        } else {
            ordering
        }
    });
    let mut holdouts: std::collections::HashMap<i64, Option<serde_json::Value>> =
        std::collections::HashMap::new();
    let mut creators: std::collections::HashMap<Uuid, Option<User>> =
        std::collections::HashMap::new();
    let mut rendered = Vec::new();
    for (experiment, flag) in pagination.window(&rows) {
        let creator = match experiment.created_by {
            Some(uuid) => {
                if let std::collections::hash_map::Entry::Vacant(slot) = creators.entry(uuid) {
                    slot.insert(User::load(store, uuid).await?);
                }
                creators.get(&uuid).and_then(Option::as_ref)
            }
            None => None,
        };
        // Holdouts are few and shared by many experiments: each is read once.
        let holdout = match experiment.holdout_id {
            Some(id) => {
                if let std::collections::hash_map::Entry::Vacant(slot) = holdouts.entry(id) {
                    slot.insert(holdout_json(store, project.id, Some(id)).await?);
                }
                holdouts.get(&id).cloned().flatten()
            }
            None => None,
        };
        rendered.push(experiment_core::render::basic(
            experiment, *flag, creator, holdout,
        ));
    }
    Ok(axum::Json(pagination.page_of(rows.len(), &rendered)).into_response())
}

/// How long it ran (or has been running); never-started ones sort first.
fn duration(experiment: &Experiment, now: chrono::DateTime<chrono::Utc>) -> Option<i64> {
    experiment
        .start_date
        .map(|start| (experiment.end_date.unwrap_or(now) - start).num_seconds())
}

/// `POST /experiments/`: 201 with the experiment; its flag reused or created in the same write.
pub async fn create(
    State(state): State<AppState>,
    auth: Authenticated,
    Path(project): Path<String>,
    Json(body): Json<ExperimentBody>,
) -> ApiResult<Response> {
    let store = state.store.as_ref();
    let project = auth.project(store, &project, WRITE).await?;
    crate::action_refs::check(store, project.id, &body).await?;
    let choice = match &body.feature_flag_key {
        Some(key) => match flags::key_holder(store, project.id, key).await? {
            Some(id) => match flags::get(store, project.id, id).await? {
                Some(stored) if !stored.flag.deleted => FlagChoice::Existing(Box::new(stored)),
                _ => FlagChoice::New,
            },
            None => FlagChoice::New,
        },
        None => FlagChoice::New,
    };
    let lists = KnownLists::load(store, project.id).await?;
    let at = state.clock.now();
    let (experiment, flag_write) =
        service::create(body, choice, &lists.known(), &auth.user, project.id, at)?;
    let existing = match &flag_write {
        FlagWrite::Keep => flags::get_live(store, project.id, experiment.feature_flag_id).await?,
        _ => None,
    };
    let flag_changed = !matches!(flag_write, FlagWrite::Keep);
    let written = repository::create(
        store,
        project.id,
        experiment,
        flag_write,
        &Actor::user(&auth.user),
        at,
    )
    .await
    .map_err(write_error)?;
    if flag_changed {
        feature_flags::cache::definitions_changed(&state, project.id);
    }
    let flag = written.flag.or(existing);
    let answer = render(store, &written.experiment, flag.as_ref()).await?;
    Ok((StatusCode::CREATED, axum::Json(answer)).into_response())
}

/// `GET /experiments/:id/`: 404 for a deleted or unknown experiment.
pub async fn retrieve(
    State(state): State<AppState>,
    auth: Authenticated,
    Path((project, id)): Path<(String, String)>,
) -> ApiResult<Response> {
    let store = state.store.as_ref();
    let project = auth.project(store, &project, READ).await?;
    let experiment = repository::found(store, project.id, item_id(&id)?, false)
        .await?
        .experiment;
    let flag = flags::get(store, project.id, experiment.feature_flag_id)
        .await?
        .map(|stored| stored.flag);
    Ok(axum::Json(render(store, &experiment, flag.as_ref()).await?).into_response())
}

/// `PATCH` (and `PUT`) `/experiments/:id/`: a partial update (2.4); `deleted: true`
/// soft-deletes, and `deleted: false` restores a deleted one.
pub async fn update(
    State(state): State<AppState>,
    auth: Authenticated,
    Path((project, id)): Path<(String, String)>,
    Json(body): Json<ExperimentBody>,
) -> ApiResult<Response> {
    let store = state.store.as_ref();
    let project = auth.project(store, &project, WRITE).await?;
    let id = item_id(&id)?;
    crate::action_refs::check(store, project.id, &body).await?;
    let restoring = body.deleted == Some(false);
    let lists = KnownLists::load(store, project.id).await?;
    let at = state.clock.now();
    mutate(&state, &auth.user, project.id, id, restoring, |loaded| {
        service::update(
            body.clone(),
            &loaded.stored.experiment,
            loaded.flag(),
            &lists.known(),
            at,
        )
    })
    .await
}
