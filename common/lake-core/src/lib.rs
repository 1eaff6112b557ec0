//! What the lake's writer (crate `lake`) and the SQL dialect (crate `engine`) both need, so that
//! neither depends on the other: the events table's schema, paths and opening ([`table`]), the
//! shredding registry and which keys a snapshot's files hold ([`shred`]), the walk over JSON
//! properties whose answers the shredded columns and the query functions must agree on
//! ([`json`]), the query log's format ([`query_log`]), person overrides ([`person_overrides`]),
//! and the lake's one error type ([`LakeError`]).

pub mod error;
pub mod json;
pub mod person_overrides;
pub mod query_log;
pub mod shred;
pub mod table;

pub use error::{Context, LakeError};
