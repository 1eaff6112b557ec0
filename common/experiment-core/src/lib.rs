//! Experiments (reference `posthog_surveys_experiments.md` section 2): an experiment runs on a
//! multivariate feature flag with a `control` variant. This crate holds the model, the Store
//! repository (the experiment and its flag change in one transaction), PostHog's create/update
//! validation and lifecycle, and the stored per-day metric results and their recalculations.
//! Holdouts ([`holdouts`]) and saved metrics ([`saved_metrics`]) are the experiments' own
//! entities and live here too. It links no query engine: results are computed by `query-service` from the
//! `ExperimentQuery` node that `insights` compiles.

pub mod holdouts;
pub mod model;
pub mod render;
pub mod repository;
pub mod results;
pub mod saved_metrics;
pub mod service;
pub mod spec;
pub mod validate;
pub mod velocity;

pub use model::{Experiment, SavedMetricLink, Status};
