//! `POST /experiments/:id/<action>` (reference 2.5, 2.7): the lifecycle actions, `duplicate` and
//! `copy_to_project` (the exposure cohort is `exposure_cohort.rs`).

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use common::activity::Actor;
use common::error::{ApiError, ApiResult};
use common::http::Json;
use common::http::item_id;
use common::models::Project;
use common::store::Store;
use common::{AppState, Authenticated};
use experiment_core::Experiment;
use experiment_core::holdouts;
use experiment_core::repository::{self, FlagWrite};
use experiment_core::service::{self, Action, Archive, End, ShipVariant};
use experiment_core::validate::{self, invalid};
use feature_flags::model::EvaluationRuntime;
use feature_flags::repository::{self as flags, NewFlag};
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};
use uuid::Uuid;

use crate::shared::{Loaded, WRITE, load, mutate, render, write_error};

/// An optional JSON body: nothing (or only whitespace) reads as `T::default()`.
fn optional_body<T: DeserializeOwned + Default>(bytes: &Bytes) -> ApiResult<T> {
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Ok(T::default());
    }
    common::http::parse_json(bytes)
}

async fn act(
    state: AppState,
    auth: Authenticated,
    project: String,
    id: String,
    action: Action,
) -> ApiResult<Response> {
    let store = state.store.as_ref();
    let project = auth.project(store, &project, WRITE).await?;
    let id = item_id(&id)?;
    let at = state.clock.now();
    mutate(&state, &auth.user, project.id, id, false, |loaded| {
        service::lifecycle(action.clone(), &loaded.stored.experiment, loaded.flag(), at)
    })
    .await
}

/// `POST /:id/launch`
pub async fn launch(
    State(state): State<AppState>,
    auth: Authenticated,
    Path((project, id)): Path<(String, String)>,
) -> ApiResult<Response> {
    act(state, auth, project, id, Action::Launch).await
}

/// `POST /:id/pause`
pub async fn pause(
    State(state): State<AppState>,
    auth: Authenticated,
    Path((project, id)): Path<(String, String)>,
) -> ApiResult<Response> {
    act(state, auth, project, id, Action::Pause).await
}

/// `POST /:id/resume`
pub async fn resume(
    State(state): State<AppState>,
    auth: Authenticated,
    Path((project, id)): Path<(String, String)>,
) -> ApiResult<Response> {
    act(state, auth, project, id, Action::Resume).await
}

/// `POST /:id/end` with `{conclusion?, conclusion_comment?}`
pub async fn end(
    State(state): State<AppState>,
    auth: Authenticated,
    Path((project, id)): Path<(String, String)>,
    body: Bytes,
) -> ApiResult<Response> {
    let body: End = optional_body(&body)?;
    act(state, auth, project, id, Action::End(body)).await
}

/// `POST /:id/ship_variant` with `{variant_key, release_to_everyone?, conclusion?, ...}`
pub async fn ship_variant(
    State(state): State<AppState>,
    auth: Authenticated,
    Path((project, id)): Path<(String, String)>,
    body: Bytes,
) -> ApiResult<Response> {
    let body: ShipVariant = common::http::parse_json(&body)?;
    act(state, auth, project, id, Action::ShipVariant(body)).await
}

/// `POST /:id/reset`
pub async fn reset(
    State(state): State<AppState>,
    auth: Authenticated,
    Path((project, id)): Path<(String, String)>,
) -> ApiResult<Response> {
    act(state, auth, project, id, Action::Reset).await
}

/// `POST /:id/archive` with `{disable_feature_flag?}`
pub async fn archive(
    State(state): State<AppState>,
    auth: Authenticated,
    Path((project, id)): Path<(String, String)>,
    body: Bytes,
) -> ApiResult<Response> {
    let body: Archive = optional_body(&body)?;
    act(state, auth, project, id, Action::Archive(body)).await
}

/// `POST /:id/unarchive`
pub async fn unarchive(
    State(state): State<AppState>,
    auth: Authenticated,
    Path((project, id)): Path<(String, String)>,
) -> ApiResult<Response> {
    act(state, auth, project, id, Action::Unarchive).await
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DuplicateBody {
    feature_flag_key: Option<String>,
    name: Option<String>,
}

/// `POST /:id/duplicate` (2.7): a new draft, by default on the same flag; 201.
pub async fn duplicate(
    State(state): State<AppState>,
    auth: Authenticated,
    Path((project, id)): Path<(String, String)>,
    body: Bytes,
) -> ApiResult<Response> {
    let body: DuplicateBody = optional_body(&body)?;
    let store = state.store.as_ref();
    let project = auth.project(store, &project, WRITE).await?;
    let loaded = load(store, project.id, item_id(&id)?, false).await?;
    let name = match body.name {
        Some(name) => name,
        None => {
            let live = repository::list_live(store, project.id).await?;
            let taken: Vec<&str> = live.iter().map(|e| e.name.as_str()).collect();
            service::duplicate_name(&loaded.stored.experiment.name, &taken)
        }
    };
    copy_into(
        &state,
        &auth,
        &loaded,
        project.id,
        body.feature_flag_key,
        name,
    )
    .await
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CopyBody {
    target_team_id: i64,
    feature_flag_key: Option<String>,
    name: Option<String>,
}

/// `POST /:id/copy_to_project` (2.7): a draft copy in another project the caller may write
/// to, on that project's flag of the same key (or a new one); 201.
pub async fn copy_to_project(
    State(state): State<AppState>,
    auth: Authenticated,
    Path((project, id)): Path<(String, String)>,
    Json(body): Json<CopyBody>,
) -> ApiResult<Response> {
    let store = state.store.as_ref();
    let project = auth.project(store, &project, WRITE).await?;
    let loaded = load(store, project.id, item_id(&id)?, false).await?;
    let target_not_found = || ApiError::not_found_detail("Target team not found.");
    if Project::load(store, body.target_team_id).await?.is_none() {
        return Err(target_not_found());
    }
    let target = match auth
        .project(store, &body.target_team_id.to_string(), WRITE)
        .await
    {
        Ok(target) => target,
        Err(error) if error.status == StatusCode::NOT_FOUND => return Err(target_not_found()),
        Err(_) => {
            return Err(ApiError::permission_denied(
                "You do not have write access to the target project.",
            ));
        }
    };
    let name = body
        .name
        .unwrap_or_else(|| loaded.stored.experiment.name.clone());
    copy_into(
        &state,
        &auth,
        &loaded,
        target.id,
        body.feature_flag_key,
        name,
    )
    .await
}

/// A draft copy of `loaded` in project `team_id` (2.7): new metric uuids with the ordering
/// remapped; the flag of `key` (default: the source's) reused with its variants, or created.
async fn copy_into(
    state: &AppState,
    auth: &Authenticated,
    loaded: &Loaded,
    team_id: i64,
    key: Option<String>,
    name: String,
) -> ApiResult<Response> {
    let store = state.store.as_ref();
    let source = &loaded.stored.experiment;
    let key = match key {
        Some(key) => key,
        None => loaded
            .flag()
            .map(|flag| flag.key.clone())
            .ok_or_else(|| invalid("The experiment's feature flag no longer exists."))?,
    };
    let mut copy: Experiment = source.clone();
    copy.team_id = team_id;
    copy.name = name;
    copy.start_date = None;
    copy.end_date = None;
    copy.archived = false;
    copy.deleted = false;
    copy.conclusion = None;
    copy.conclusion_comment = None;
    copy.exposure_cohort_id = None;
    copy.created_by = Some(auth.user.uuid);
    if team_id == source.team_id {
        // A duplicate links the same saved metrics, through links of its own.
        for link in &mut copy.saved_metrics {
            link.id = 0;
            link.created_at = state.clock.now();
        }
    } else {
        // Holdouts and saved metrics belong to the source project (PostHog copies neither).
        copy.holdout_id = None;
        copy.saved_metrics.clear();
    }
    copy.metrics = fresh_uuids(&copy.metrics, &mut copy.primary_metrics_ordered_uuids);
    copy.metrics_secondary = fresh_uuids(
        &copy.metrics_secondary,
        &mut copy.secondary_metrics_ordered_uuids,
    );
    let parameters = validate::parameters(copy.parameters.as_ref())?;
    let flag_write = match flags::key_holder(store, team_id, &key).await? {
        Some(flag_id) => match flags::get_live(store, team_id, flag_id).await? {
            Some(flag) => {
                // The copy takes the existing flag's variants.
                let mut object: Map<String, Value> = copy
                    .parameters
                    .as_ref()
                    .and_then(Value::as_object)
                    .cloned()
                    .unwrap_or_default();
                object.insert(
                    "feature_flag_variants".into(),
                    service::variants_json(&flag),
                );
                copy.parameters = Some(Value::Object(object));
                copy.feature_flag_id = flag.id;
                FlagWrite::Keep
            }
            None => new_flag(store, &key, &copy, &parameters, auth).await?,
        },
        None => new_flag(store, &key, &copy, &parameters, auth).await?,
    };
    validate::fingerprints(&mut copy);
    validate::sync_ordering(&mut copy, false, false)?;
    let existing = match &flag_write {
        FlagWrite::Keep => flags::get_live(store, team_id, copy.feature_flag_id).await?,
        _ => None,
    };
    let created_flag = matches!(flag_write, FlagWrite::Create(_));
    let at = state.clock.now();
    let written = repository::create(
        store,
        team_id,
        copy,
        flag_write,
        &Actor::user(&auth.user),
        at,
    )
    .await
    .map_err(write_error)?;
    if created_flag {
        feature_flags::cache::definitions_changed(state, team_id);
    }
    let flag = written.flag.or(existing);
    let answer = render(store, &written.experiment, flag.as_ref()).await?;
    Ok((StatusCode::CREATED, axum::Json(answer)).into_response())
}

/// The copy's new flag, holding out the copy's holdout.
async fn new_flag(
    store: &dyn Store,
    key: &str,
    copy: &Experiment,
    parameters: &validate::Parameters,
    auth: &Authenticated,
) -> ApiResult<FlagWrite> {
    feature_flags::validate::key(key).map_err(|error| error.with_attr("feature_flag_key"))?;
    let mut filters = service::flag_filters(parameters, None)?;
    if let Some(id) = copy.holdout_id {
        filters.holdout = holdouts::repository::get(store, copy.team_id, id)
            .await?
            .and_then(|stored| stored.holdout.flag_holdout());
    }
    Ok(FlagWrite::Create(Box::new(NewFlag {
        key: key.to_owned(),
        name: format!("Feature Flag for Experiment {}", copy.name),
        filters,
        active: false,
        ensure_experience_continuity: parameters.ensure_experience_continuity.unwrap_or(false),
        evaluation_runtime: EvaluationRuntime::All,
        evaluation_tags: Vec::new(),
        created_by: Some(auth.user.uuid),
    })))
}

/// New uuids for copied metrics, with the ordering remapped to them.
fn fresh_uuids(metrics: &[Value], ordering: &mut Option<Vec<String>>) -> Vec<Value> {
    let mut copies = Vec::with_capacity(metrics.len());
    for metric in metrics {
        let mut metric = metric.clone();
        if let Some(object) = metric.as_object_mut() {
            let fresh = Uuid::new_v4().to_string();
            let old = object.insert("uuid".into(), Value::String(fresh.clone()));
            if let (Some(Value::String(old)), Some(ordering)) = (old, ordering.as_mut()) {
                for uuid in ordering.iter_mut().filter(|uuid| **uuid == old) {
                    *uuid = fresh.clone();
                }
            }
        }
        copies.push(metric);
    }
    copies
}
