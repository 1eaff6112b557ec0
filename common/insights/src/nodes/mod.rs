//! Query nodes as plain JSON, and the schema migrations that keep old ones readable.
//!
//! PostHog stores query nodes (insights, endpoints, dashboards, shared URLs) for years while their
//! schema keeps moving, so every node carries an optional `version` and [`upgrade`] brings a whole
//! query to the current shape before anything validates it. The module works on
//! `serde_json::Value` only: it has to run on bodies that do not parse into the typed nodes yet.

pub mod migrations;
mod upgrade;

pub use upgrade::{
    Migration, Node, Registry, UpgradeError, latest_version, latest_versions, upgrade,
};
