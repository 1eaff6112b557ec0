//! Feature flags, shared by the `flags` family (CRUD, `/flags`, local evaluation), experiments
//! (a multivariate flag with `control`) and surveys (targeting flags): the model, its repository
//! in the Store with write validation, and evaluation with PostHog's hashing.

pub mod cache;
pub mod cohort_conditions;
pub mod evaluate;
pub mod hash;
pub mod matching;
pub mod model;
pub mod render;
pub mod repository;
pub mod validate;

pub use evaluate::{
    Evaluation, EvaluationError, PreparedFlags, Reason, ReasonCode, Subject, evaluate_all,
};
pub use model::{FeatureFlag, FlagFilters, FlagGroup, FlagKind, Operator, PropertyFilter};
