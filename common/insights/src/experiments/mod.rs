//! Experiments' metrics: what is computed about them besides their queries.

pub mod fingerprint;
pub mod python_json;
