//! The events lake's writer: one Delta Lake table per project, persons, and the committer that
//! moves staged capture batches into the tables exactly once; import, compaction and shredding's
//! writer side. What the SQL dialect also reads (the table's schema and paths, the shredding
//! registry, the query log's format, person overrides, the error type) is in `lake-core`.

pub mod backfill;
pub mod clustered;
pub mod committer;
pub mod compaction;
mod day_file;
mod day_sort;
pub mod dedupe;
pub mod definitions;
pub mod erase;
mod file_stats;
pub mod group_types;
pub mod import;
pub mod jobs;
pub mod persons;
pub mod rewrite;
pub mod rows;
pub mod shred;
pub mod squash;
pub mod table;

pub use committer::{CommitReport, commit_all, commit_team, run_committer};
pub use lake_core::LakeError;
