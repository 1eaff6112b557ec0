//! Endpoints' queries: a saved query checked before it is stored (upgraded, parsed, planned, its
//! columns), whether it can be materialized, the `endpoint_materialization` job that stores a
//! version's whole result as Parquet, and a run served from it.

mod checks;
pub mod materialization;

pub use checks::{Checked, can_materialize, check};
