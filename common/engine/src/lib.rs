//! The events lake: one Delta Lake table per project, persons, and the committer that moves
//! staged capture batches into the tables exactly once.

pub mod clustered;
pub mod committer;
pub mod compaction;
pub mod dedupe;
pub mod group_types;
pub mod import;
pub mod jobs;
pub mod lake;
pub mod persons;
pub mod rewrite;
pub mod rows;
pub mod shred;
pub mod squash;

pub use committer::{CommitReport, commit_all, commit_team, run_committer};
pub mod sql;
