//! What an `ExperimentQuery` needs of its experiment ([`insights::experiments::ExperimentSpec`]),
//! built from the stored experiment, its flag and its project. The flag is the truth for the
//! variants, their split, the holdout and the aggregation: that is what users were bucketed by.

use common::models::Project;
use feature_flags::FeatureFlag;
use insights::experiments::{ExperimentSpec, VariantSpec};
use serde::Deserialize;
use serde_json::Value;

use crate::Experiment;

/// The part of `parameters` a query reads (the rest is the UI's and the flag's).
#[derive(Debug, Default, Deserialize)]
struct Parameters {
    #[serde(default)]
    excluded_variants: Vec<String>,
}

/// The spec of `experiment` on `flag` in `project`, computed as of now (`as_of` unset).
pub fn spec_of(experiment: &Experiment, flag: &FeatureFlag, project: &Project) -> ExperimentSpec {
    let variants = flag
        .filters
        .multivariate
        .iter()
        .flat_map(|multivariate| multivariate.variants.iter())
        .map(|variant| VariantSpec {
            key: variant.key.clone(),
            rollout_percentage: variant.rollout_percentage,
        })
        .collect();
    ExperimentSpec {
        id: experiment.id,
        flag_key: flag.key.clone(),
        variants,
        holdout_id: flag.filters.holdout.as_ref().map(|holdout| holdout.id),
        // Group type indexes are 0-4; anything else cannot name a `$group_<n>` column.
        aggregation_group_type_index: flag
            .filters
            .aggregation_group_type_index
            .and_then(|index| u8::try_from(index).ok()),
        start: experiment.start_date,
        end: experiment.end_date,
        as_of: None,
        exposure_criteria: experiment.exposure_criteria.clone(),
        stats_config: experiment.stats_config.clone(),
        only_count_matured_users: experiment.only_count_matured_users,
        excluded_variants: excluded_variants(experiment.parameters.as_ref()),
        test_account_filters: project.test_account_filters.clone(),
    }
}

/// `parameters.excluded_variants`; a malformed value excludes nothing (validation refuses it on
/// write, so only hand-made items get here).
fn excluded_variants(parameters: Option<&Value>) -> Vec<String> {
    parameters
        .and_then(|parameters| Parameters::deserialize(parameters).ok())
        .unwrap_or_default()
        .excluded_variants
}

#[cfg(test)]
mod tests {
    use chrono::{TimeZone, Utc};
    use feature_flags::model::{FlagFilters, Holdout, Multivariate, Variant};
    use serde_json::json;

    use super::*;

    fn experiment() -> Experiment {
        serde_json::from_value(json!({
            "id": 7, "team_id": 1, "name": "x", "feature_flag_id": 3,
            "start_date": "2026-01-01T00:00:00Z",
            "parameters": {"excluded_variants": ["b"], "feature_flag_variants": []},
            "stats_config": {"method": "frequentist"},
            "exposure_criteria": {"filterTestAccounts": true},
            "created_at": "2026-01-01T00:00:00Z",
        }))
        .expect("experiment")
    }

    #[test]
    fn takes_variants_holdout_and_aggregation_from_the_flag() {
        let at = Utc
            .with_ymd_and_hms(2026, 1, 1, 0, 0, 0)
            .single()
            .expect("date");
        let flag = FeatureFlag {
            id: 3,
            team_id: 1,
            key: "exp".into(),
            name: String::new(),
            filters: FlagFilters {
                multivariate: Some(Multivariate {
                    variants: ["control", "a", "b"]
                        .iter()
                        .map(|key| Variant {
                            key: (*key).into(),
                            name: None,
                            rollout_percentage: 33.0,
                        })
                        .collect(),
                }),
                aggregation_group_type_index: Some(2),
                holdout: Some(Holdout {
                    id: 9,
                    exclusion_percentage: 10.0,
                }),
                ..Default::default()
            },
            active: true,
            deleted: false,
            ensure_experience_continuity: false,
            evaluation_runtime: Default::default(),
            evaluation_tags: vec![],
            version: 1,
            created_by: None,
            created_at: at,
            updated_at: None,
        };
        let project: Project = serde_json::from_value(json!({
            "id": 1, "uuid": "018f0000-0000-7000-8000-000000000001",
            "organization_id": "018f0000-0000-7000-8000-000000000002", "name": "p",
            "timezone": "UTC", "api_token": "phc_x", "created_at": "2026-01-01T00:00:00Z",
            "test_account_filters": [{"key": "email", "value": "@x.com", "operator": "not_icontains", "type": "person"}],
        }))
        .expect("project");
        let spec = spec_of(&experiment(), &flag, &project);
        assert_eq!(spec.flag_key, "exp");
        assert_eq!(
            spec.variants
                .iter()
                .map(|v| v.key.as_str())
                .collect::<Vec<_>>(),
            ["control", "a", "b"]
        );
        assert_eq!(spec.holdout_id, Some(9));
        assert_eq!(spec.aggregation_group_type_index, Some(2));
        assert_eq!(spec.excluded_variants, ["b"]);
        assert_eq!(spec.start, Some(at));
        assert_eq!(spec.as_of, None);
        assert_eq!(spec.test_account_filters.len(), 1);
        assert_eq!(spec.stats_config, Some(json!({"method": "frequentist"})));
    }
}
