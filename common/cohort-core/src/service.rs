//! What a create or an update of a cohort asks for, checked: the request body (typed, unknown
//! fields refused), the rules of static and dynamic cohorts, and queueing a dynamic cohort's
//! calculation. Both the cohorts family and the experiments family (exposure cohorts) use it.

use chrono::{DateTime, Utc};
use common::AppState;
use common::error::{ApiError, ApiResult};
use serde::Deserialize;
use serde::de::IgnoredAny;
use serde_json::Value;
use uuid::Uuid;

use crate::definition::DefinitionError;
use crate::repository::{self, ReferenceError};
use crate::{Cohort, Filters, calculation};

/// Attempts of a calculation run before it is recorded as failed.
pub const CALCULATION_ATTEMPTS: u32 = 3;
/// PostHog's `CharField(max_length=400)`.
const NAME_MAX: usize = 400;

/// A create or PATCH body. The serializer's read-only fields are accepted and ignored (clients
/// send back what they read); anything else is refused.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CohortBody {
    pub name: Option<String>,
    pub description: Option<String>,
    pub is_static: Option<bool>,
    pub filters: Option<Value>,
    pub deleted: Option<bool>,
    /// Legacy definitions; only an empty list is accepted.
    #[serde(default)]
    pub groups: Option<Vec<Value>>,
    /// HogQL-defined cohorts; only null is accepted.
    #[serde(default)]
    pub query: Option<Value>,
    #[serde(default, rename = "id")]
    _id: Option<IgnoredAny>,
    #[serde(default, rename = "is_calculating")]
    _is_calculating: Option<IgnoredAny>,
    #[serde(default, rename = "created_by")]
    _created_by: Option<IgnoredAny>,
    #[serde(default, rename = "created_at")]
    _created_at: Option<IgnoredAny>,
    #[serde(default, rename = "last_calculation")]
    _last_calculation: Option<IgnoredAny>,
    #[serde(default, rename = "errors_calculating")]
    _errors_calculating: Option<IgnoredAny>,
    #[serde(default, rename = "last_error_at")]
    _last_error_at: Option<IgnoredAny>,
    #[serde(default, rename = "count")]
    _count: Option<IgnoredAny>,
    #[serde(default, rename = "cohort_type")]
    _cohort_type: Option<IgnoredAny>,
    #[serde(default, rename = "experiment_set")]
    _experiment_set: Option<IgnoredAny>,
}

/// A new cohort from a create body (its id, version and times are the repository's to set).
pub async fn create(
    store: &dyn common::store::Store,
    team_id: i64,
    body: CohortBody,
    created_by: Option<Uuid>,
    at: DateTime<Utc>,
) -> ApiResult<Cohort> {
    unsupported_fields(&body)?;
    let name = body
        .name
        .as_deref()
        .ok_or_else(|| ApiError::required("name"))?;
    let name = valid_name(name)?;
    let is_static = body.is_static.unwrap_or(false);
    let filters = if is_static {
        no_filters(body.filters.as_ref())?;
        None
    } else {
        let raw = body
            .filters
            .as_ref()
            .filter(|value| !value.is_null())
            .ok_or_else(|| {
                ApiError::field(
                    "filters",
                    "required",
                    "A dynamic cohort needs filters: {\"properties\": {\"type\": \"AND\" or \"OR\", \"values\": [...]}}.",
                )
            })?;
        Some(definition(store, team_id, None, raw).await?)
    };
    Ok(Cohort {
        id: 0,
        team_id,
        name,
        description: body.description.unwrap_or_default(),
        is_static,
        filters,
        deleted: false,
        count: is_static.then_some(0),
        is_calculating: !is_static,
        last_calculation: None,
        errors_calculating: 0,
        last_error_at: None,
        experiment_ids: Vec::new(),
        created_by,
        created_at: at,
        updated_at: Some(at),
        version: 0,
    })
}

/// A PATCH applied to `before`; `recalculate` when a dynamic cohort's definition changed.
pub struct Updated {
    pub cohort: Cohort,
    pub recalculate: bool,
}

pub async fn update(
    store: &dyn common::store::Store,
    team_id: i64,
    body: &CohortBody,
    before: &Cohort,
) -> ApiResult<Updated> {
    unsupported_fields(body)?;
    let mut next = before.clone();
    let mut recalculate = false;
    if let Some(name) = &body.name {
        next.name = valid_name(name)?;
    }
    if let Some(description) = &body.description {
        next.description = description.clone();
    }
    if let Some(is_static) = body.is_static
        && is_static != before.is_static
    {
        return Err(ApiError::field(
            "is_static",
            "invalid",
            "A cohort cannot change between static and dynamic; create a new one.",
        ));
    }
    if before.is_static {
        no_filters(body.filters.as_ref())?;
    } else if let Some(raw) = body.filters.as_ref().filter(|value| !value.is_null()) {
        let filters = definition(store, team_id, Some(before.id), raw).await?;
        if before.filters.as_ref() != Some(&filters) {
            next.filters = Some(filters);
            next.is_calculating = true;
            recalculate = true;
        }
    }
    if let Some(deleted) = body.deleted {
        next.deleted = deleted;
    }
    Ok(Updated {
        cohort: next,
        recalculate,
    })
}

/// Queues the calculation of a dynamic cohort's members. When it cannot be queued the cohort is
/// marked as not calculating, with the error counted, and answered as it now is.
pub async fn queue_calculation(state: &AppState, cohort: Cohort) -> Cohort {
    let payload = calculation::Request {
        team_id: cohort.team_id,
        cohort_id: cohort.id,
    };
    let payload = match serde_json::to_value(payload) {
        Ok(payload) => payload,
        Err(error) => return calculation_failed(state, cohort, &error.to_string()).await,
    };
    let queued = state
        .jobs
        .enqueue_named(
            state,
            calculation::JOB,
            CALCULATION_ATTEMPTS,
            Some(cohort.team_id),
            payload,
        )
        .await;
    match queued {
        Ok(_) => cohort,
        Err(error) => calculation_failed(state, cohort, &error.to_string()).await,
    }
}

async fn calculation_failed(state: &AppState, cohort: Cohort, message: &str) -> Cohort {
    tracing::warn!(
        cohort = cohort.id,
        team = cohort.team_id,
        error = message,
        "cannot queue a cohort calculation"
    );
    let at = state.clock.now();
    let marked = repository::update_bookkeeping(
        state.store.as_ref(),
        cohort.team_id,
        cohort.id,
        |mut stored| {
            stored.is_calculating = false;
            stored.errors_calculating += 1;
            stored.last_error_at = Some(at);
            Ok(stored)
        },
    )
    .await;
    match marked {
        Ok(marked) => marked,
        Err(error) => {
            tracing::warn!(cohort = cohort.id, error = %error, "cannot mark an unqueued calculation");
            cohort
        }
    }
}

fn unsupported_fields(body: &CohortBody) -> ApiResult<()> {
    if body
        .groups
        .as_ref()
        .is_some_and(|groups| !groups.is_empty())
    {
        return Err(ApiError::field(
            "groups",
            "invalid",
            "Legacy cohort groups are not supported; define the cohort with filters.",
        ));
    }
    if body.query.as_ref().is_some_and(|query| !query.is_null()) {
        return Err(ApiError::field(
            "query",
            "invalid",
            "Cohorts defined by a query are not supported; define the cohort with filters.",
        ));
    }
    Ok(())
}

fn valid_name(name: &str) -> ApiResult<String> {
    if name.trim().is_empty() {
        return Err(ApiError::field(
            "name",
            "blank",
            "This field may not be blank.",
        ));
    }
    if name.chars().count() > NAME_MAX {
        return Err(ApiError::field(
            "name",
            "max_length",
            format!("Ensure this field has no more than {NAME_MAX} characters."),
        ));
    }
    Ok(name.to_owned())
}

/// A static cohort takes no definition; an empty one (what PostHog's app sends) is let through.
fn no_filters(filters: Option<&Value>) -> ApiResult<()> {
    let empty = match filters {
        None | Some(Value::Null) => true,
        Some(value) => match value.get("properties") {
            None => value.as_object().is_some_and(|object| object.is_empty()),
            Some(properties) => {
                properties
                    .as_object()
                    .is_some_and(|object| object.is_empty())
                    || properties
                        .get("values")
                        .and_then(Value::as_array)
                        .is_some_and(|values| values.is_empty())
            }
        },
    };
    if empty {
        return Ok(());
    }
    Err(ApiError::field(
        "filters",
        "invalid",
        "A static cohort takes no filters: its members are added by person id.",
    ))
}

/// `filters` parsed, with the cohorts it names checked to be live and not to lead back to
/// `own_id`.
pub async fn definition(
    store: &dyn common::store::Store,
    team_id: i64,
    own_id: Option<i64>,
    raw: &Value,
) -> ApiResult<Filters> {
    let filters = Filters::parse(raw, "filters").map_err(invalid)?;
    match repository::check_references(store, team_id, own_id, &filters, "filters").await {
        Ok(()) => Ok(filters),
        Err(ReferenceError::Invalid(error)) => Err(invalid(error)),
        Err(ReferenceError::Store(error)) => Err(error.into()),
    }
}

fn invalid(error: DefinitionError) -> ApiError {
    ApiError::validation(error.attr, error.detail)
}
