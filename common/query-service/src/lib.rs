//! The query service: what the query, endpoints, experiments and surveys families and the worker
//! call to run a query node for a project. One pipeline, walked once per request: the node
//! ([`SqlNode`], from a typed `insights::nodes::QueryNode`) is compiled and prepared once
//! ([`runner::Plan`]), served from the cache when fresh (the key needs no engine session), else
//! run under the project's slot bound and the configured limits, logged (`query_log`), and
//! shaped as PostHog answers it. Async runs are jobs ([`jobs`]) with their status in the Store
//! ([`QueryStatus`]), so any instance answers a poll or a cancel.
//!
//! - [`run`]: a request in any execution [`Mode`], answered now or queued;
//! - [`runner::run`]: one execution, no slot, no queue (the worker, the service's own reads);
//! - [`jobs::enqueue`] / [`jobs::run_job`]: an async run, queued and picked up;
//! - [`api_error`]: an engine error as PostHog answers it;
//! - [`experiments`]: `ExperimentQuery`'s experiment from the Store, one day's run, the
//!   `experiment_timeseries` job, and whether an experiment's flag still needs implementing;
//! - [`cohorts`]: the cohorts a node's filters name, from the Store, and the
//!   `cohort_calculation` job;
//! - [`surveys`]: a survey's stats, per-question stats, responses count and responses list.

mod actions;
mod cache;
mod caller;
pub mod cohorts;
pub mod endpoints;
pub mod errors;
mod execute;
pub mod experiments;
pub mod jobs;
pub mod node;
pub mod property_values;
pub mod runner;
pub mod slots;
pub mod status;
pub mod surveys;

pub use caller::Caller;
pub use errors::api_error;
pub use execute::{Answer, Mode, Request, ServiceError, cached, run};
pub use node::{Overrides, SqlNode};
pub use status::QueryStatus;
