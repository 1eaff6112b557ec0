//! Flags a survey names (reference 1.4): referenced ids must be live flags of the project, and
//! `targeting_flag_filters` become the filters of the survey's targeting flag, checked as any
//! flag's filters are, but never "everyone" (deleting the targeting says that).

use common::error::ApiError;
use common::store::Store;
use feature_flags::model::FlagFilters;
use feature_flags::{FeatureFlag, repository, validate};
use serde_json::{Map, Value};

use crate::Survey;

/// The linked flag named by `id`, else PostHog's 400.
pub async fn linked_flag(
    store: &dyn Store,
    team_id: i64,
    id: i64,
) -> Result<FeatureFlag, ApiError> {
    repository::get_live(store, team_id, id)
        .await?
        .ok_or_else(|| {
            ApiError::bad_request("invalid_input", "Feature Flag with this ID does not exist")
        })
}

pub async fn targeting_flag(store: &dyn Store, team_id: i64, id: i64) -> Result<(), ApiError> {
    match repository::get_live(store, team_id, id).await? {
        Some(_) => Ok(()),
        None => Err(ApiError::bad_request(
            "invalid_input",
            "Targeting Feature Flag with this ID does not exist",
        )),
    }
}

/// No insights are stored in this product, so no id can name one. PostHog raises this in the
/// serializer's `validate()`: a non-field error (no `attr`), like the flag ids'.
pub fn linked_insight(_id: i64) -> Result<(), ApiError> {
    Err(ApiError::bad_request(
        "invalid_input",
        "Insight with this ID does not exist",
    ))
}

/// Python's truthiness of the sent filters: `null`, `{}` and the like ask for nothing.
pub fn asks(filters: &Value) -> bool {
    match filters {
        Value::Null => false,
        Value::Object(map) => !map.is_empty(),
        Value::Array(items) => !items.is_empty(),
        Value::String(text) => !text.is_empty(),
        Value::Bool(b) => *b,
        Value::Number(_) => true,
    }
}

/// The new targeting filters: on a PATCH, merged over the current targeting flag's filters
/// (top-level keys, as PostHog merges), then parsed and checked.
pub async fn filters(
    store: &dyn Store,
    team_id: i64,
    sent: Value,
    current: Option<&Survey>,
) -> Result<FlagFilters, ApiError> {
    full_rollout(&sent)?;
    let mut merged = match current.and_then(|s| s.targeting_flag_id) {
        Some(id) => match repository::get_live(store, team_id, id).await? {
            Some(flag) => match serde_json::to_value(&flag.filters) {
                Ok(Value::Object(map)) => map,
                _ => Map::new(),
            },
            None => Map::new(),
        },
        None => Map::new(),
    };
    let Value::Object(sent) = sent else {
        return Err(ApiError::validation(
            "targeting_flag_filters",
            "Targeting flag filters must be an object",
        ));
    };
    merged.extend(sent);
    let mut filters: FlagFilters = serde_path_to_error::deserialize(Value::Object(merged))
        .map_err(|error| {
            let path = error.path().to_string();
            let detail = error.into_inner().to_string();
            ApiError::validation(
                "targeting_flag_filters",
                if path == "." {
                    detail
                } else {
                    format!("{path}: {detail}")
                },
            )
        })?;
    let flags = repository::list_live(store, team_id).await?;
    let cohorts = if validate::names_cohorts(&filters) {
        cohort_core::repository::list_live(store, team_id).await?
    } else {
        Vec::new()
    };
    let context = validate::Context {
        flags: &flags,
        id: None,
        key: "survey-targeting",
        creating: true,
        cohorts: &cohorts,
    };
    validate::filters(&mut filters, &context)?;
    Ok(filters)
}

/// A condition set at 100 % (or unset) without properties targets everyone.
fn full_rollout(sent: &Value) -> Result<(), ApiError> {
    let groups = sent.get("groups").and_then(Value::as_array);
    let everyone = groups.into_iter().flatten().any(|group| {
        let rollout = group.get("rollout_percentage");
        let full = match rollout {
            None | Some(Value::Null) => true,
            Some(value) => value.as_f64() == Some(100.0),
        };
        let no_properties = match group.get("properties") {
            None => true,
            Some(Value::Array(properties)) => properties.is_empty(),
            Some(_) => false,
        };
        full && no_properties
    });
    if everyone {
        // PostHog's code="invalid", which its exception handler answers as `invalid_input`.
        return Err(ApiError::bad_request(
            "invalid_input",
            "Invalid operation: User targeting rolls out to everyone. If you want to roll out to everyone, delete this targeting",
        ));
    }
    Ok(())
}
