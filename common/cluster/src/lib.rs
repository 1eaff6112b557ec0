//! Large queries on Apache DataFusion Ballista, over the same Delta tables: the query service
//! plans a query as always (one project's tables, our rules), and when its scan is large (or it
//! asks) sends the physical plan to a Ballista scheduler, whose executors run its stages.
//! This crate holds what that takes and nothing of Ballista's own: the codec every side shares
//! (`codec`), the scheduler and executor processes our binary starts (`processes`), the
//! lake's store as executors read it (`stores`) and the query service's client (`client`).

mod client;
mod codec;
#[cfg(feature = "processes")]
mod processes;
#[cfg(feature = "processes")]
mod stores;

pub use client::Client;
pub use codec::ClusterCodec;
#[cfg(feature = "processes")]
pub use processes::{ClusterError, ExecutorOptions, SchedulerOptions, run_executor, run_scheduler};
