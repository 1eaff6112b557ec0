//! Query nodes: the schema migrations that keep old ones readable, and the typed node a request
//! carries once they have run.
//!
//! PostHog stores query nodes (insights, endpoints, dashboards, shared URLs) for years while their
//! schema keeps moving, so every node carries an optional `version` and [`upgrade`] brings a whole
//! query to the current shape before anything validates it. Upgrading works on
//! `serde_json::Value` (it has to run on bodies that do not parse into the typed nodes yet);
//! [`QueryNode::from_value`] then reads the upgraded node into its kind's variant.

pub mod migrations;
mod query;
mod upgrade;

pub use query::{ENGINES, NodeError, QueryNode, SqlQuery, Structured, Variable, engine_modifier};
pub use upgrade::{
    Migration, Node, Registry, UpgradeError, latest_version, latest_versions, upgrade,
};
