//! An experiment as PostHog's ExperimentSerializer shows it (reference 2.2), and the lighter
//! ExperimentBasicSerializer of the list. Features this product does not have answer their
//! empty value (no exposure cohort object, no access control).

use common::models::User;
use feature_flags::FeatureFlag;
use feature_flags::render::{minimal, user_basic};
use serde_json::{Map, Value, json};

use crate::Experiment;
use crate::saved_metrics::SavedMetric;

/// What an experiment's render shows of other entities, read by the caller.
#[derive(Debug, Clone, Default)]
pub struct Related<'a> {
    /// The holdout as [`crate::holdouts::render`] shows it, if the experiment has one.
    pub holdout: Option<Value>,
    /// The project's saved metrics (the experiment's links name some of them).
    pub saved_metrics: &'a [SavedMetric],
}

/// `saved_metrics`: PostHog's ExperimentToSavedMetricSerializer of each link whose saved metric
/// still exists.
fn saved_metric_links(experiment: &Experiment, saved_metrics: &[SavedMetric]) -> Value {
    let links: Vec<Value> = experiment
        .saved_metrics
        .iter()
        .filter_map(|link| {
            let saved = saved_metrics
                .iter()
                .find(|saved| saved.id == link.saved_metric_id)?;
            Some(json!({
                "id": link.id,
                "experiment": experiment.id,
                "saved_metric": saved.id,
                "metadata": link.metadata,
                "created_at": link.created_at,
                "query": saved.query,
                "name": saved.name,
            }))
        })
        .collect();
    Value::Array(links)
}

/// `parameters` on the wire: each variant also shows `split_percent` (= `rollout_percentage`).
pub fn parameters(parameters: Option<&Value>) -> Value {
    let Some(mut parameters) = parameters.cloned() else {
        return Value::Null;
    };
    if let Some(variants) = parameters
        .get_mut("feature_flag_variants")
        .and_then(Value::as_array_mut)
    {
        for variant in variants.iter_mut().filter_map(Value::as_object_mut) {
            if let Some(pct) = variant.get("rollout_percentage").cloned() {
                variant.insert("split_percent".into(), pct);
            }
        }
    }
    parameters
}

/// ExperimentSerializer. `flag` is the linked flag (None if it is gone).
pub fn experiment(
    experiment: &Experiment,
    flag: Option<&FeatureFlag>,
    creator: Option<&User>,
    related: &Related,
) -> Value {
    let mut object = basic_fields(experiment, flag, creator, related.holdout.clone());
    let extra = json!({
        "secondary_metrics": experiment.secondary_metrics,
        "saved_metrics": saved_metric_links(experiment, related.saved_metrics),
        "filters": experiment.filters,
        "exposure_criteria": experiment.exposure_criteria,
        "metrics": experiment.metrics,
        "metrics_secondary": experiment.metrics_secondary,
        "stats_config": experiment.stats_config,
        "scheduling_config": experiment.scheduling_config,
        "primary_metrics_ordered_uuids": experiment.primary_metrics_ordered_uuids,
        "secondary_metrics_ordered_uuids": experiment.secondary_metrics_ordered_uuids,
        "only_count_matured_users": experiment.only_count_matured_users,
        "running_time_calculation": experiment.running_time_calculation,
        "variants": experiment.variants,
    });
    if let Value::Object(extra) = extra {
        object.extend(extra);
    }
    Value::Object(object)
}

/// ExperimentBasicSerializer (the list): no metrics fields.
pub fn basic(
    experiment: &Experiment,
    flag: Option<&FeatureFlag>,
    creator: Option<&User>,
    holdout: Option<Value>,
) -> Value {
    Value::Object(basic_fields(experiment, flag, creator, holdout))
}

fn basic_fields(
    experiment: &Experiment,
    flag: Option<&FeatureFlag>,
    creator: Option<&User>,
    holdout: Option<Value>,
) -> Map<String, Value> {
    let fields = json!({
        "id": experiment.id,
        "name": experiment.name,
        "description": experiment.description,
        "start_date": experiment.start_date,
        "end_date": experiment.end_date,
        "feature_flag_key": flag.map(|flag| flag.key.clone()),
        "feature_flag": flag.map(minimal),
        "holdout": holdout,
        "holdout_id": experiment.holdout_id,
        "exposure_cohort": experiment.exposure_cohort_id,
        "parameters": parameters(experiment.parameters.as_ref()),
        "archived": experiment.archived,
        "deleted": experiment.deleted,
        "created_by": creator.map(user_basic),
        "created_at": experiment.created_at,
        "updated_at": experiment.updated_at.unwrap_or(experiment.created_at),
        "type": experiment.kind,
        "conclusion": experiment.conclusion,
        "conclusion_comment": experiment.conclusion_comment,
        "status": experiment.status(flag).name(),
        "user_access_level": "editor",
    });
    match fields {
        Value::Object(object) => object,
        _ => Map::new(),
    }
}
