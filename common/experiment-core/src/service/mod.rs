//! What each write does to an experiment and its flag (reference 2.3–2.5, 2.7): pure decisions
//! over what was read, returning the new experiment and the flag write for
//! [`crate::repository`] to commit in one transaction.

mod create;
mod lifecycle;
mod update;

use common::error::ApiError;
use feature_flags::FeatureFlag;
use feature_flags::model::{FlagFilters, FlagGroup, Multivariate, Variant};
use serde_json::{Map, Value, json};

pub use create::{FlagChoice, create, duplicate_name};
pub use lifecycle::{Action, Archive, End, ShipVariant, apply as lifecycle};
pub use update::update;

use crate::holdouts::Holdout;
use crate::saved_metrics::SavedMetric;
use crate::validate::{self, ExperimentBody, Parameters};

/// The project's holdouts and saved metrics, which `holdout_id` and `saved_metrics_ids` must
/// name.
#[derive(Debug, Clone, Copy, Default)]
pub struct Known<'a> {
    pub holdouts: &'a [Holdout],
    pub saved_metrics: &'a [SavedMetric],
}

/// `holdout_id` (DRF's team-scoped PrimaryKeyRelatedField): `None` when absent, `Some(None)` for
/// null, else the holdout of the project it names (a 400 on `holdout_id` if none).
pub(crate) fn holdout<'a>(
    body: &ExperimentBody,
    known: &Known<'a>,
) -> Result<Option<Option<&'a Holdout>>, ApiError> {
    match body.holdout_id {
        None => Ok(None),
        Some(None) => Ok(Some(None)),
        Some(Some(id)) => match known.holdouts.iter().find(|holdout| holdout.id == id) {
            Some(holdout) => Ok(Some(Some(holdout))),
            None => Err(ApiError::field(
                "holdout_id",
                "does_not_exist",
                format!("Invalid pk \"{id}\" - object does not exist."),
            )),
        },
    }
}

/// PostHog's variants of a flag it creates without any given.
pub fn default_variants() -> Vec<Variant> {
    vec![
        Variant {
            key: "control".into(),
            name: Some("Control Group".into()),
            rollout_percentage: 50.0,
        },
        Variant {
            key: "test".into(),
            name: Some("Test Variant".into()),
            rollout_percentage: 50.0,
        },
    ]
}

/// The filters of an experiment's flag from its parameters (2.3 flag resolution).
/// Refused as the flag's own validation refuses it (PostHog creates the flag through its flag
/// serializer): variants that do not sum to 100, a blank or repeated key.
pub fn flag_filters(
    parameters: &Parameters,
    base: Option<&FlagFilters>,
) -> Result<FlagFilters, ApiError> {
    let variants = parameters.variants.clone().unwrap_or_else(default_variants);
    let mut filters = base.cloned().unwrap_or_default();
    let rollout = parameters.rollout_percentage.unwrap_or(100.0);
    match filters.groups.first_mut() {
        Some(first) if base.is_some() => first.rollout_percentage = Some(rollout),
        _ => {
            filters.groups = vec![FlagGroup {
                rollout_percentage: Some(rollout),
                ..FlagGroup::default()
            }]
        }
    }
    filters.multivariate = Some(Multivariate { variants });
    filters.aggregation_group_type_index = parameters.aggregation_group_type_index;
    if let Some(payloads) = &parameters.payloads {
        filters.payloads = payloads.clone();
    }
    feature_flags::validate::variants(&filters)?;
    Ok(filters)
}

/// The launch checks on the flag (2.5 `launch`).
pub fn launchable(flag: Option<&FeatureFlag>) -> Result<(), ApiError> {
    let Some(flag) = flag.filter(|flag| !flag.deleted) else {
        return Err(validate::invalid(
            "Experiment cannot be launched because its feature flag has been deleted.",
        ));
    };
    let keys: Vec<&str> = flag.variant_keys().collect();
    if keys.len() < 2 {
        return Err(validate::invalid(
            "Feature flag must have at least 2 variants (control and at least one test variant)",
        ));
    }
    if !keys.contains(&"control") {
        return Err(validate::invalid(
            "Feature flag must have a variant with key 'control'",
        ));
    }
    Ok(())
}

/// The flag's variants as `parameters.feature_flag_variants` (stored with `rollout_percentage`).
pub fn variants_json(flag: &FeatureFlag) -> Value {
    let variants: Vec<Value> = flag
        .filters
        .multivariate
        .iter()
        .flat_map(|multivariate| multivariate.variants.iter())
        .map(|variant| {
            let mut object = Map::new();
            object.insert("key".into(), json!(variant.key));
            if let Some(name) = &variant.name {
                object.insert("name".into(), json!(name));
            }
            object.insert(
                "rollout_percentage".into(),
                json!(variant.rollout_percentage),
            );
            Value::Object(object)
        })
        .collect();
    Value::Array(variants)
}

/// DRF's CharField checks: required, not blank, at most `max` characters.
pub(crate) fn text_field(
    value: Option<&str>,
    attr: &str,
    max: usize,
    allow_blank: bool,
) -> Result<(), ApiError> {
    let Some(value) = value else {
        return Ok(());
    };
    if !allow_blank && value.trim().is_empty() {
        return Err(ApiError::field(
            attr,
            "blank",
            "This field may not be blank.",
        ));
    }
    if value.chars().count() > max {
        return Err(ApiError::field(
            attr,
            "max_length",
            format!("Ensure this field has no more than {max} characters."),
        ));
    }
    Ok(())
}

/// A model whose `name` and `description` a body sets: an experiment, a holdout, a saved
/// metric.
pub(crate) trait Described {
    fn name_and_description(&mut self) -> (&mut String, &mut Option<String>);
}

/// Sets on `next` the `name` and `description` a body gives: a name may not be null or blank
/// and holds at most 400 characters, a description at most `description_max`.
pub(crate) fn describe(
    next: &mut impl Described,
    name: &validate::Present<String>,
    description: &validate::Present<String>,
    description_max: usize,
) -> Result<(), ApiError> {
    let (next_name, next_description) = next.name_and_description();
    if let Some(name) = name {
        let Some(name) = name else {
            return Err(ApiError::field(
                "name",
                "null",
                "This field may not be null.",
            ));
        };
        text_field(Some(name), "name", 400, false)?;
        next_name.clone_from(name);
    }
    if let Some(description) = description {
        text_field(description.as_deref(), "description", description_max, true)?;
        next_description.clone_from(description);
    }
    Ok(())
}

impl Described for crate::Experiment {
    fn name_and_description(&mut self) -> (&mut String, &mut Option<String>) {
        (&mut self.name, &mut self.description)
    }
}
