//! `POST /experiments/:id/create_exposure_cohort_for_experiment` (reference 2.7): a dynamic
//! cohort of the persons exposed to the experiment since its start, linked on the experiment in
//! the same transaction that creates it, its calculation queued; 201 `{"cohort": ...}`.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use chrono::{DateTime, Utc};
use cohort_core::repository as cohort_store;
use cohort_core::{Cohort, Filters};
use common::activity::Actor;
use common::error::{ApiError, ApiResult};
use common::http::item_id;
use common::repository::{WriteError, retry};
use common::store::{Condition, Item, WriteOp};
use common::{AppState, Authenticated};
use experiment_core::Experiment;
use experiment_core::repository::experiment_sk;
use experiment_core::validate::invalid;
use feature_flags::FeatureFlag;
use serde_json::{Value, json};

use crate::shared::{WRITE, load};

/// Tries before a 409 when the experiment keeps changing under the request.
const ATTEMPTS: u32 = 16;
/// Event property filter types PostHog keeps from a custom exposure's properties.
const EVENT_FILTER_TYPES: &[&str] = &["event", "feature", "element", "hogql"];

pub async fn create(
    State(state): State<AppState>,
    auth: Authenticated,
    Path((project, id)): Path<(String, String)>,
) -> ApiResult<Response> {
    let store = state.store.as_ref();
    let project = auth.project(store, &project, WRITE).await?;
    let (team_id, id) = (project.id, item_id(&id)?);
    let (state, auth) = (&state, &auth);
    let actor = &Actor::user(&auth.user);
    let failure = |error: WriteError| error.answer_plain("experiment");
    let created = retry(ATTEMPTS, failure, || async move {
        let loaded = load(store, team_id, id, false).await?;
        let experiment = &loaded.stored.experiment;
        let flag = loaded
            .flag()
            .filter(|flag| !flag.deleted)
            .ok_or_else(|| invalid("Experiment does not have a feature flag"))?;
        let start = experiment
            .start_date
            .ok_or_else(|| invalid("Experiment does not have a start date"))?;
        if experiment.exposure_cohort_id.is_some() {
            return Err(invalid("Experiment already has an exposure cohort"));
        }
        let filters = Filters::parse(&definition(experiment, flag, start)?, "filters")
            .map_err(|error| ApiError::validation(error.attr, error.detail))?;
        let at = state.clock.now();
        let cohort = Cohort {
            id: 0,
            team_id,
            name: format!("Users exposed to experiment \"{}\"", experiment.name),
            description: String::new(),
            is_static: false,
            filters: Some(filters),
            deleted: false,
            count: None,
            is_calculating: true,
            last_calculation: None,
            errors_calculating: 0,
            last_error_at: None,
            experiment_ids: vec![experiment.id],
            created_by: Some(auth.user.uuid),
            created_at: at,
            updated_at: Some(at),
            version: 0,
        };
        let stored = &loaded.stored;
        // The experiment names its cohort in the cohort's transaction, under the version read.
        let link = |cohort: &Cohort| {
            let mut next = stored.experiment.clone();
            next.exposure_cohort_id = Some(cohort.id);
            next.version += 1;
            next.updated_at = Some(at);
            let mut item = Item::of(
                common::repository::team_pk(team_id),
                experiment_sk(next.id),
                &next,
            )?;
            item.version = stored.item_version + 1;
            Ok(vec![WriteOp::Put {
                item,
                condition: Condition::VersionEquals(stored.item_version),
            }])
        };
        Ok(cohort_store::create(store, team_id, cohort, actor, at, link).await)
    })
    .await?;
    feature_flags::cache::cohorts_changed(state, team_id);
    let created = cohort_core::service::queue_calculation(state, created).await;
    let rendered =
        cohort_core::render::cohort(&created, feature_flags::render::user_basic(&auth.user));
    Ok((StatusCode::CREATED, axum::Json(json!({"cohort": rendered}))).into_response())
}

/// PostHog's exposure definition: anyone who performed the exposure event since the start.
/// The event is `$feature_flag_called` for this flag, or the experiment's custom exposure event
/// (`exposure_criteria.exposure_config`) with its event-level properties.
fn definition(
    experiment: &Experiment,
    flag: &FeatureFlag,
    start: DateTime<Utc>,
) -> ApiResult<Value> {
    let config = experiment
        .exposure_criteria
        .as_ref()
        .and_then(|criteria| criteria.get("exposure_config"))
        .filter(|config| !config.is_null());
    let (event, event_filters) = match config {
        None => (
            Value::String("$feature_flag_called".into()),
            json!([{"key": "$feature_flag", "value": [flag.key], "operator": "exact",
                "type": "event"}]),
        ),
        Some(config) => {
            if config.get("kind").and_then(Value::as_str) == Some("ActionsNode") {
                return Err(invalid(
                    "Exposure cohorts of action-based exposure criteria are not supported: actions are not kept by this service.",
                ));
            }
            let event = config
                .get("event")
                .filter(|event| event.as_str().is_some_and(|name| !name.is_empty()))
                .cloned()
                .ok_or_else(|| invalid("The experiment's exposure_config names no event."))?;
            let properties: Vec<Value> = config
                .get("properties")
                .and_then(Value::as_array)
                .map(|properties| {
                    properties
                        .iter()
                        .filter(|property| {
                            property
                                .get("type")
                                .and_then(Value::as_str)
                                .is_some_and(|kind| EVENT_FILTER_TYPES.contains(&kind))
                        })
                        .cloned()
                        .collect()
                })
                .unwrap_or_default();
            (event, Value::Array(properties))
        }
    };
    Ok(
        json!({"properties": {"type": "OR", "values": [{"type": "OR", "values": [{
            "type": "behavioral",
            "value": "performed_event",
            "key": event,
            "negation": false,
            "event_type": "events",
            "event_filters": event_filters,
            "explicit_datetime": start.to_rfc3339(),
        }]}]}}),
    )
}
