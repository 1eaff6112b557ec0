//! `POST /experiments/` (reference 2.3): validation in PostHog's order, the flag reused or
//! created, PostHog's defaults, metric uuids and fingerprints.

use chrono::{DateTime, Utc};
use common::error::ApiError;
use common::models::User;
use feature_flags::model::{EvaluationRuntime, FlagFilters};
use feature_flags::repository::{self as flags, NewFlag};
use serde_json::{Map, Value, json};

use super::{Known, flag_filters, holdout, text_field, variants_json};
use crate::Experiment;
use crate::repository::FlagWrite;
use crate::validate::{self, ExperimentBody, Kind};

/// The flag `feature_flag_key` names, as the caller found it.
pub enum FlagChoice {
    /// A live flag of the project holds the key: the experiment runs on it.
    Existing(Box<flags::Stored>),
    /// No live flag holds it: one is created.
    New,
}

/// The experiment to create and its flag write, or PostHog's 400.
pub fn create(
    body: ExperimentBody,
    flag: FlagChoice,
    known: &Known,
    user: &User,
    team_id: i64,
    at: DateTime<Utc>,
) -> Result<(Experiment, FlagWrite), ApiError> {
    let Some(Some(name)) = body.name.clone() else {
        return Err(ApiError::required("name"));
    };
    text_field(Some(&name), "name", 400, false)?;
    let description = body.description.clone().flatten();
    text_field(description.as_deref(), "description", 3000, true)?;
    let Some(key) = body.feature_flag_key.clone() else {
        return Err(ApiError::required("feature_flag_key"));
    };
    let holdout = holdout(&body, known)?.flatten();

    // 1. Metric uuids.
    let mut metrics = body.metrics.clone().flatten().unwrap_or_default();
    let mut metrics_secondary = body.metrics_secondary.clone().flatten().unwrap_or_default();
    validate::fill_uuids([&mut metrics, &mut metrics_secondary]);
    // 2–4. Variants.
    let mut parameters = validate::parameters(body.parameters.clone().flatten().as_ref())?;
    let variant_keys: Vec<String> = match &flag {
        FlagChoice::Existing(stored) => stored.flag.variant_keys().map(str::to_owned).collect(),
        FlagChoice::New => parameters
            .variants
            .clone()
            .unwrap_or_else(super::default_variants)
            .into_iter()
            .map(|variant| variant.key)
            .collect(),
    };
    let stats_config = body.stats_config.clone().flatten();
    // 5. Excluded variants.
    let baseline = baseline(stats_config.as_ref(), &variant_keys);
    validate::excluded_variants(&parameters.excluded_variants, &variant_keys, &baseline)?;
    // 6. Metrics.
    validate::metrics(&metrics)?;
    validate::metrics(&metrics_secondary)?;
    // 7. Saved metrics.
    let saved_metrics = validate::saved_metrics_ids(
        body.saved_metrics_ids.as_ref().and_then(Option::as_ref),
        known.saved_metrics,
        at,
    )?
    .unwrap_or_default();
    // 8. Dates.
    let start_date = body.start_date.flatten();
    let end_date = body.end_date.flatten();
    validate::dates(start_date, end_date)?;
    // 9. Stats config.
    validate::stats_config(stats_config.as_ref(), &variant_keys)?;
    let filters = body.filters.clone().flatten().unwrap_or_else(|| json!({}));
    validate::filters(Some(&filters))?;
    let exposure_criteria = body.exposure_criteria.clone().flatten();
    validate::exposure_criteria(exposure_criteria.as_ref())?;

    let is_draft = start_date.is_none();
    let flag_write = match &flag {
        FlagChoice::Existing(stored) => {
            let flag = &stored.flag;
            if flag.variant_keys().count() < 2 {
                return Err(validate::invalid(
                    "Feature flag must have at least 2 variants (control and at least one test variant)",
                ));
            }
            if !flag.variant_keys().any(|key| key == "control") {
                return Err(validate::invalid(
                    "Feature flag must have a variant with key 'control'",
                ));
            }
            // The experiment takes its variants from the flag.
            let mut object = parameters
                .value
                .take()
                .and_then(|value| value.as_object().cloned())
                .unwrap_or_default();
            object.insert("feature_flag_variants".into(), variants_json(flag));
            parameters.value = Some(Value::Object(object));
            // The holdout must reach the flag for its users to be held out.
            match holdout.and_then(|holdout| holdout.flag_holdout()) {
                Some(held) if flag.filters.holdout.as_ref() != Some(&held) => {
                    let mut after = flag.clone();
                    after.filters.holdout = Some(held);
                    FlagWrite::Save {
                        before: stored.clone(),
                        after: Box::new(after),
                    }
                }
                _ => FlagWrite::Keep,
            }
        }
        FlagChoice::New => {
            feature_flags::validate::key(&key)
                .map_err(|error| error.with_attr("feature_flag_key"))?;
            FlagWrite::Create(Box::new(NewFlag {
                key: key.clone(),
                name: format!("Feature Flag for Experiment {name}"),
                filters: FlagFilters {
                    holdout: holdout.and_then(|holdout| holdout.flag_holdout()),
                    ..flag_filters(&parameters, None)?
                },
                active: !is_draft,
                ensure_experience_continuity: parameters
                    .ensure_experience_continuity
                    .unwrap_or(false),
                evaluation_runtime: EvaluationRuntime::All,
                evaluation_tags: Vec::new(),
                created_by: Some(user.uuid),
            }))
        }
    };

    let mut stats_config = stats_config.unwrap_or_else(|| json!({}));
    if let Some(object) = stats_config.as_object_mut()
        && !object.get("method").is_some_and(Value::is_string)
    {
        object.insert("method".into(), json!("bayesian"));
    }
    let mut exposure_criteria = exposure_criteria.unwrap_or_else(|| json!({}));
    if let Some(object) = exposure_criteria.as_object_mut() {
        object
            .entry("filterTestAccounts")
            .or_insert(Value::Bool(true));
    }
    let kind = body.kind.flatten().unwrap_or(Kind::Product);
    let variants = (kind == Kind::Web).then(|| web_variants(&parameters, &flag));
    let mut experiment = Experiment {
        id: 0,
        team_id,
        name,
        description,
        feature_flag_id: match &flag {
            FlagChoice::Existing(stored) => stored.flag.id,
            FlagChoice::New => 0,
        },
        holdout_id: holdout.map(|holdout| holdout.id),
        exposure_cohort_id: None,
        start_date,
        end_date,
        archived: body.archived.unwrap_or(false),
        deleted: false,
        conclusion: body.conclusion.flatten().map(|c| c.name().to_owned()),
        conclusion_comment: body.conclusion_comment.flatten(),
        kind: kind.name().to_owned(),
        filters,
        parameters: parameters.value,
        secondary_metrics: body.secondary_metrics.flatten().unwrap_or_default(),
        variants,
        exposure_criteria: Some(exposure_criteria),
        metrics,
        metrics_secondary,
        stats_config: Some(stats_config),
        scheduling_config: body.scheduling_config.flatten(),
        primary_metrics_ordered_uuids: body.primary_metrics_ordered_uuids.flatten(),
        secondary_metrics_ordered_uuids: body.secondary_metrics_ordered_uuids.flatten(),
        saved_metrics,
        only_count_matured_users: body.only_count_matured_users.unwrap_or(false),
        running_time_calculation: body.running_time_calculation.flatten(),
        created_by: Some(user.uuid),
        created_at: at,
        updated_at: Some(at),
        version: 1,
    };
    validate::fingerprints(&mut experiment);
    validate::sync_ordering(&mut experiment, false, false)?;
    Ok((experiment, flag_write))
}

/// The baseline: the configured key, else `control`, else the first variant.
pub(crate) fn baseline(stats_config: Option<&Value>, variant_keys: &[String]) -> String {
    stats_config
        .and_then(|config| config.get("baseline_variant_key"))
        .and_then(Value::as_str)
        .map(str::to_owned)
        .or_else(|| {
            variant_keys
                .iter()
                .find(|key| *key == "control")
                .or_else(|| variant_keys.first())
                .cloned()
        })
        .unwrap_or_else(|| "control".into())
}

/// Web experiments keep `variants = {key: {rollout_percentage}}`.
fn web_variants(parameters: &validate::Parameters, flag: &FlagChoice) -> Value {
    let variants = match flag {
        FlagChoice::Existing(stored) => stored
            .flag
            .filters
            .multivariate
            .clone()
            .map(|multivariate| multivariate.variants)
            .unwrap_or_default(),
        FlagChoice::New => parameters
            .variants
            .clone()
            .unwrap_or_else(super::default_variants),
    };
    let mut object = Map::new();
    for variant in variants {
        object.insert(
            variant.key,
            json!({"rollout_percentage": variant.rollout_percentage}),
        );
    }
    Value::Object(object)
}

/// `"<name> (Copy)"`, then `(Copy) 1`, `2`… unique among `taken` (2.7 duplicate).
pub fn duplicate_name(name: &str, taken: &[&str]) -> String {
    let first = format!("{name} (Copy)");
    if !taken.contains(&first.as_str()) {
        return first;
    }
    (1..)
        .map(|n| format!("{name} (Copy) {n}"))
        .find(|candidate| !taken.contains(&candidate.as_str()))
        .unwrap_or(first)
}
