//! The job that computes a dynamic cohort's members from the event lake (run by `query-service`,
//! queued by the cohorts family when a dynamic cohort is created or its definition changes).
//! Feature flags read the stored members of behavioural cohorts, which they cannot evaluate per
//! request; `count` comes from the same run.

use serde::{Deserialize, Serialize};

/// The job's name in `common::jobs`.
pub const JOB: &str = "cohort_calculation";

/// The job's payload.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Request {
    pub team_id: i64,
    pub cohort_id: i64,
}
