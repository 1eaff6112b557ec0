//! A cohort as PostHog's CohortSerializer shows it. The creator comes rendered (`user_basic`, as
//! the experiments and flags families render it) so this crate links no flag code.

use serde_json::{Value, json};

use crate::Cohort;

/// PostHog's `cohort_type`: how membership is decided.
pub fn cohort_type(cohort: &Cohort) -> &'static str {
    if cohort.is_static {
        "static"
    } else if cohort.is_behavioral() {
        "behavioral"
    } else {
        "person_property"
    }
}

/// CohortSerializer's JSON; `created_by` is the creator's `user_basic` (or null).
pub fn cohort(cohort: &Cohort, created_by: Value) -> Value {
    json!({
        "id": cohort.id,
        "name": cohort.name,
        "description": cohort.description,
        "groups": [],
        "deleted": cohort.deleted,
        "filters": cohort.filters,
        "query": Value::Null,
        "is_calculating": cohort.is_calculating,
        "created_by": created_by,
        "created_at": cohort.created_at,
        "last_calculation": cohort.last_calculation,
        "errors_calculating": cohort.errors_calculating,
        "last_error_at": cohort.last_error_at,
        "count": cohort.count,
        "is_static": cohort.is_static,
        "cohort_type": cohort_type(cohort),
        "experiment_set": cohort.experiment_ids,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn types_follow_the_definition() {
        let mut value: Cohort = serde_json::from_value(json!({
            "id": 3, "team_id": 1, "name": "Pro", "created_at": "2025-01-01T00:00:00Z",
            "filters": {"properties": {"type": "AND", "values": [
                {"type": "person", "key": "plan", "value": "pro"}]}}}))
        .unwrap();
        assert_eq!(cohort_type(&value), "person_property");
        let rendered = cohort(&value, Value::Null);
        assert_eq!(rendered["groups"], json!([]));
        assert_eq!(rendered["experiment_set"], json!([]));
        assert_eq!(
            rendered["filters"]["properties"]["values"][0]["key"],
            "plan"
        );
        value.filters = None;
        value.is_static = true;
        assert_eq!(cohort_type(&value), "static");
    }
}
