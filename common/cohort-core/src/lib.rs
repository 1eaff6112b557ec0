//! Cohorts: named sets of persons, either static (members added by id) or dynamic (a definition
//! over person properties, events a person performed and other cohorts). Query nodes and feature
//! flags filter on them (`{"type": "cohort", "value": <id>}`); an experiment's exposure cohort is
//! one of them. This crate holds the model, the typed definition, the Store repository and the
//! membership items; it links no query engine (`insights` compiles definitions to SQL).

pub mod definition;
pub mod members;
pub mod model;
pub mod render;
pub mod repository;
pub mod service;

pub use definition::{Filters, Node};
pub use model::Cohort;
pub mod calculation;
