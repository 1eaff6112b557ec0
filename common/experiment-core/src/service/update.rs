//! `PATCH /experiments/:id/` (reference 2.4): which keys may change, what a running experiment
//! keeps, launch by `start_date`, restore, and the flag rewritten from `parameters`.

use chrono::{DateTime, Utc};
use common::error::ApiError;
use feature_flags::FeatureFlag;

use super::create::baseline;
use super::{Known, flag_filters, holdout, launchable};
use crate::Experiment;
use crate::validate::{self, ExperimentBody};

/// Keys a PATCH may carry (besides an unchanged `feature_flag_key`).
const ALLOWED: &[&str] = &[
    "name",
    "description",
    "start_date",
    "end_date",
    "filters",
    "parameters",
    "running_time_calculation",
    "archived",
    "deleted",
    "secondary_metrics",
    "holdout",
    "exposure_criteria",
    "metrics",
    "metrics_secondary",
    "stats_config",
    "scheduling_config",
    "conclusion",
    "conclusion_comment",
    "primary_metrics_ordered_uuids",
    "secondary_metrics_ordered_uuids",
    "saved_metrics_ids",
    "only_count_matured_users",
];

/// The experiment after `body`, and the flag's new state when the update changes it. `flag` is
/// the linked flag as read (deleted or not; `None` if it is gone); `known` the project's
/// holdouts and saved metrics.
pub fn update(
    body: ExperimentBody,
    current: &Experiment,
    flag: Option<&FeatureFlag>,
    known: &Known,
    at: DateTime<Utc>,
) -> Result<(Experiment, Option<FeatureFlag>), ApiError> {
    let mut refused: Vec<&str> = body
        .written_fields()
        .into_iter()
        .filter(|field| match *field {
            "feature_flag_key" => {
                flag.map(|flag| flag.key.as_str()) != body.feature_flag_key.as_deref()
            }
            other => !ALLOWED.contains(&other),
        })
        .collect();
    if !refused.is_empty() {
        refused.sort_unstable();
        return Err(validate::invalid(format!(
            "Can't update keys: {} on Experiment",
            refused.join(", ")
        )));
    }
    if current.deleted && body.deleted == Some(false) && flag.is_none_or(|flag| flag.deleted) {
        return Err(validate::invalid(
            "Cannot restore experiment: the linked feature flag has been deleted. Restore the feature flag first.",
        ));
    }
    let parameters = match &body.parameters {
        Some(raw) => Some(validate::parameters(raw.as_ref())?),
        None => None,
    };
    if !current.is_draft() {
        if let Some(parameters) = &parameters
            && let Some(variants) = &parameters.variants
        {
            let given: Vec<&str> = variants
                .iter()
                .map(|variant| variant.key.as_str())
                .collect();
            let stored: Vec<&str> = flag
                .map(|flag| flag.variant_keys().collect())
                .unwrap_or_default();
            let mut given_sorted = given.clone();
            given_sorted.sort_unstable();
            let mut stored_sorted = stored.clone();
            stored_sorted.sort_unstable();
            if given_sorted != stored_sorted {
                return Err(validate::invalid(
                    "Can't update feature_flag_variants on Experiment",
                ));
            }
        }
        if let Some(holdout_id) = body.holdout_id
            && holdout_id != current.holdout_id
        {
            return Err(validate::invalid(
                "Can't update holdout on running Experiment",
            ));
        }
    }
    let holdout = holdout(&body, known)?;

    let mut next = current.clone();
    if let Some(holdout) = holdout {
        next.holdout_id = holdout.map(|holdout| holdout.id);
    }
    super::describe(&mut next, &body.name, &body.description, 3000)?;
    if let Some(start_date) = body.start_date {
        next.start_date = start_date;
    }
    if let Some(end_date) = body.end_date {
        next.end_date = end_date;
    }
    if let Some(filters) = &body.filters {
        validate::filters(filters.as_ref())?;
        next.filters = filters.clone().unwrap_or_else(|| serde_json::json!({}));
    }
    if let Some(parameters) = &parameters {
        next.parameters = parameters.value.clone();
    }
    if let Some(value) = &body.running_time_calculation {
        next.running_time_calculation = value.clone();
    }
    if let Some(archived) = body.archived {
        next.archived = archived;
    }
    if let Some(deleted) = body.deleted {
        next.deleted = deleted;
    }
    if let Some(value) = &body.secondary_metrics {
        next.secondary_metrics = value.clone().unwrap_or_default();
    }
    if let Some(value) = &body.exposure_criteria {
        validate::exposure_criteria(value.as_ref())?;
        next.exposure_criteria = value.clone();
    }
    if let Some(value) = &body.metrics {
        next.metrics = value.clone().unwrap_or_default();
    }
    if let Some(value) = &body.metrics_secondary {
        next.metrics_secondary = value.clone().unwrap_or_default();
    }
    if let Some(value) = &body.stats_config {
        next.stats_config = value.clone();
    }
    if let Some(value) = &body.scheduling_config {
        next.scheduling_config = value.clone();
    }
    if let Some(value) = body.conclusion {
        next.conclusion = value.map(|conclusion| conclusion.name().to_owned());
    }
    if let Some(value) = &body.conclusion_comment {
        next.conclusion_comment = value.clone();
    }
    if let Some(value) = &body.primary_metrics_ordered_uuids {
        next.primary_metrics_ordered_uuids = value.clone();
    }
    if let Some(value) = &body.secondary_metrics_ordered_uuids {
        next.secondary_metrics_ordered_uuids = value.clone();
    }
    if let Some(value) = body.only_count_matured_users {
        next.only_count_matured_users = value;
    }
    // PostHog replaces every link when a list is given (null changes nothing).
    if let Some(links) = validate::saved_metrics_ids(
        body.saved_metrics_ids.as_ref().and_then(Option::as_ref),
        known.saved_metrics,
        at,
    )? {
        next.saved_metrics = links;
    }

    validate::fill_uuids([&mut next.metrics, &mut next.metrics_secondary]);
    let variant_keys: Vec<String> = match parameters.as_ref().and_then(|p| p.variants.as_ref()) {
        Some(variants) => variants.iter().map(|variant| variant.key.clone()).collect(),
        None => flag
            .map(|flag| flag.variant_keys().map(str::to_owned).collect())
            .unwrap_or_default(),
    };
    let excluded = validate::parameters(next.parameters.as_ref())?.excluded_variants;
    let baseline = baseline(next.stats_config.as_ref(), &variant_keys);
    validate::excluded_variants(&excluded, &variant_keys, &baseline)?;
    validate::metrics(&next.metrics)?;
    validate::metrics(&next.metrics_secondary)?;
    validate::dates(next.start_date, next.end_date)?;
    validate::stats_config(next.stats_config.as_ref(), &variant_keys)?;

    let mut next_flag = flag.cloned();
    let sync = current.is_draft() || body.update_feature_flag_params == Some(true);
    if sync
        && let (Some(parameters), Some(flag)) = (&parameters, next_flag.as_mut())
        && parameters.value.is_some()
    {
        flag.filters = flag_filters(parameters, Some(&flag.filters))?;
        if let Some(continuity) = parameters.ensure_experience_continuity {
            flag.ensure_experience_continuity = continuity;
        }
    }
    // A draft's holdout is its flag's (a running one's cannot change, checked above).
    if let (Some(holdout), Some(flag), true) = (holdout, next_flag.as_mut(), sync) {
        flag.filters.holdout = holdout.and_then(|holdout| holdout.flag_holdout());
    }
    // Launch by PATCH: a draft given a start date.
    if current.is_draft() && next.start_date.is_some() {
        launchable(next_flag.as_ref())?;
        if let Some(flag) = next_flag.as_mut() {
            flag.active = true;
        }
    }
    validate::fingerprints(&mut next);
    validate::sync_ordering(
        &mut next,
        body.primary_metrics_ordered_uuids.is_some(),
        body.secondary_metrics_ordered_uuids.is_some(),
    )?;
    let changed_flag = next_flag.filter(|after| Some(after) != flag);
    Ok((next, changed_flag))
}
