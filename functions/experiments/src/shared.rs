//! What every route of the family shares: scopes, ids, loading an experiment with its flag,
//! rendering with its creator, and committing a change with retries.

use axum::response::{IntoResponse, Response};
use common::AppState;
use common::activity::Actor;
use common::error::{ApiError, ApiResult};
use common::models::{Scope, User, UserKey};
use common::repository::retry;
use common::store::Store;
use experiment_core::Experiment;
use experiment_core::holdouts::{self, Holdout};
use experiment_core::render::Related;
use experiment_core::repository::{self, FlagKeyTaken, FlagWrite, WriteError};
use experiment_core::saved_metrics::{self, SavedMetric};
use experiment_core::service::Known;
use feature_flags::FeatureFlag;
use feature_flags::repository as flags;
use uuid::Uuid;

pub const READ: Scope = Scope::read("experiment");
pub const WRITE: Scope = Scope::write("experiment");
pub const FLAG_READ: Scope = Scope::read("feature_flag");

/// `created_by_id`: a user's integer id (as PostHog's clients send it) or uuid; empty is no
/// filter, as in PostHog; anything else is a 400.
pub fn created_by_param(raw: Option<&str>) -> ApiResult<Option<UserKey>> {
    match raw.map(str::trim) {
        None | Some("") => Ok(None),
        Some(raw) => UserKey::parse(raw).map(Some).ok_or_else(|| {
            ApiError::field(
                "created_by_id",
                "invalid",
                "created_by_id must be a user's id.",
            )
        }),
    }
}

/// Tries of a change before it answers 409 (each try is one read and one transaction).
const UPDATE_ATTEMPTS: u32 = 16;

pub fn write_error(error: WriteError) -> ApiError {
    error.answer("experiment", |FlagKeyTaken| {
        ApiError::field(
            "feature_flag_key",
            "unique",
            "There is already a feature flag with this key.",
        )
    })
}

/// An experiment as read with its flag as read (deleted or not; None if gone).
pub struct Loaded {
    pub stored: repository::Stored,
    pub flag: Option<flags::Stored>,
}

impl Loaded {
    pub fn flag(&self) -> Option<&FeatureFlag> {
        self.flag.as_ref().map(|stored| &stored.flag)
    }
}

/// The experiment `id` with its flag; 404 when it does not exist or is deleted (unless
/// `deleted_too`, for a restore).
pub async fn load(
    store: &dyn Store,
    team_id: i64,
    id: i64,
    deleted_too: bool,
) -> ApiResult<Loaded> {
    let stored = repository::found(store, team_id, id, deleted_too).await?;
    let flag = flags::get(store, team_id, stored.experiment.feature_flag_id).await?;
    Ok(Loaded { stored, flag })
}

/// The user `uuid` names, if any and if they still exist.
pub async fn creator(store: &dyn Store, uuid: Option<Uuid>) -> ApiResult<Option<User>> {
    Ok(match uuid {
        Some(uuid) => User::load(store, uuid).await?,
        None => None,
    })
}

/// The project's holdouts and saved metrics, which an experiment's body may name.
pub struct KnownLists {
    pub holdouts: Vec<Holdout>,
    pub saved_metrics: Vec<SavedMetric>,
}

impl KnownLists {
    pub async fn load(store: &dyn Store, team_id: i64) -> ApiResult<Self> {
        Ok(Self {
            holdouts: holdouts::repository::list_all(store, team_id).await?,
            saved_metrics: saved_metrics::repository::list_all(store, team_id).await?,
        })
    }

    pub fn known(&self) -> Known<'_> {
        Known {
            holdouts: &self.holdouts,
            saved_metrics: &self.saved_metrics,
        }
    }
}

/// The experiment's holdout as ExperimentHoldoutSerializer shows it (None if it has none).
pub async fn holdout_json(
    store: &dyn Store,
    team_id: i64,
    holdout_id: Option<i64>,
) -> ApiResult<Option<serde_json::Value>> {
    let Some(id) = holdout_id else {
        return Ok(None);
    };
    let Some(stored) = holdouts::repository::get(store, team_id, id).await? else {
        return Ok(None);
    };
    let creator = creator(store, stored.holdout.created_by).await?;
    Ok(Some(holdouts::render(&stored.holdout, creator.as_ref())))
}

/// ExperimentSerializer's JSON, with the creator, holdout and saved metrics read from the
/// Store.
pub async fn render(
    store: &dyn Store,
    experiment: &Experiment,
    flag: Option<&FeatureFlag>,
) -> ApiResult<serde_json::Value> {
    let creator = creator(store, experiment.created_by).await?;
    let holdout = holdout_json(store, experiment.team_id, experiment.holdout_id).await?;
    let saved = if experiment.saved_metrics.is_empty() {
        Vec::new()
    } else {
        saved_metrics::repository::list_all(store, experiment.team_id).await?
    };
    let related = Related {
        holdout,
        saved_metrics: &saved,
    };
    Ok(experiment_core::render::experiment(
        experiment,
        flag,
        creator.as_ref(),
        &related,
    ))
}

/// Reads the experiment, lets `change` decide the new experiment and flag, and commits both;
/// a concurrent writer makes it read and decide again. Answers the rendered experiment.
pub async fn mutate<F>(
    state: &AppState,
    user: &User,
    team_id: i64,
    id: i64,
    deleted_too: bool,
    change: F,
) -> ApiResult<Response>
where
    F: Fn(&Loaded) -> ApiResult<(Experiment, Option<FeatureFlag>)> + Sync,
{
    let store = state.store.as_ref();
    let (actor, change) = (&Actor::user(user), &change);
    let (written, loaded_flag) = retry(UPDATE_ATTEMPTS, write_error, || async move {
        let loaded = load(store, team_id, id, deleted_too).await?;
        let (next, next_flag) = change(&loaded)?;
        let flag_write = match (next_flag, &loaded.flag) {
            (Some(after), Some(before)) => FlagWrite::Save {
                before: Box::new(before.clone()),
                after: Box::new(after),
            },
            _ => FlagWrite::Keep,
        };
        let at = state.clock.now();
        let saved = repository::save(store, team_id, &loaded.stored, next, flag_write, actor, at);
        Ok(saved.await.map(|written| (written, loaded.flag)))
    })
    .await?;
    // A flag the write saved: the SDKs' definitions changed.
    if written.flag.is_some() {
        feature_flags::cache::definitions_changed(state, team_id);
    }
    let flag = written
        .flag
        .or_else(|| loaded_flag.map(|stored| stored.flag));
    let body = render(store, &written.experiment, flag.as_ref()).await?;
    Ok(axum::Json(body).into_response())
}
