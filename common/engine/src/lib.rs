//! The SQL dialect (HogQL-compatible, ClickHouse-flavoured) on DataFusion: parse, check and
//! rewrite the text, register only the project's own tables, run under memory and time limits.

mod action_expand;
mod aliases;
mod bindings;
mod cast_types;
mod clickhouse_defaults;
mod clickhouse_syntax;
mod cohort_expand;
mod cohort_syntax;
mod conditions;
mod constants;
mod date_trunc;
mod day_bounds;
mod dense_groups;
mod error;
mod event_names;
mod function_docs;
mod functions;
mod funnel;
mod grouped_rows;
mod in_frame;
mod limit_by;
pub mod materialize;
mod membership;
mod parse;
mod paths;
mod persons_table;
mod placeholders;
mod plain_scan;
mod portable_scan;
mod prepare;
mod progress;
pub mod remote;
mod results;
mod rewrite;
mod row_generators;
mod session;
pub(crate) mod shredded;
mod single_phase;
pub(crate) mod tables;
mod template;
mod top_level;
mod typing;
pub(crate) mod udfs;
mod uniq;
mod unnest_uniqueness;

pub use action_expand::{ActionRef, references as action_references};
pub use bindings::{Bindings, DEFAULT_LIMIT, MAX_LIMIT, Page, Window};
pub use cohort_syntax::{CohortRef, SUBJECT as COHORT_SUBJECT, references as cohort_references};
/// A materialization's result travels as Arrow from the engine to object storage.
pub use datafusion::arrow::array::RecordBatch as ArrowBatch;
pub use datafusion::arrow::datatypes::SchemaRef;
pub use dense_groups::DenseGroupsExec;
pub use error::{InternalCause, QueryError};
pub use function_docs::reference as function_reference;
/// What we were doing when a cause of ours failed (shared with the lake, which opens tables).
pub use lake_core::Context;
pub use portable_scan::portable;
pub use prepare::{Prepared, check_expression, prepare, prepare_window};
pub use progress::{Progress, Scanned};
pub use session::{Limits, Output, Session, open_session};
pub use tables::ALL as TABLES;
/// The engine's scalar functions for a session in time zone `zone` (benches register them).
pub use udfs::all as hogql_functions;
