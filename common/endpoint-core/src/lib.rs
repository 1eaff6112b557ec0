//! Endpoints: a project's named, versioned saved queries, run by name through
//! `/api/projects/:id/endpoints/:name/run` (reference section 2). This crate holds the model,
//! request validation, the Store repository (endpoint, versions and activity entry in one
//! transaction; materialization state and last executions beside them) and rendering. It links
//! no query engine: running and materializing the queries is the query service's.

pub mod model;
pub mod render;
pub mod repository;
pub mod validate;

pub use model::{
    Column, Endpoint, LastExecution, Materialization, MaterializationStatus, SyncFrequency, Version,
};
