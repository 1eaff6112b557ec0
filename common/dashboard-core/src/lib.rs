//! Saved insights and dashboards (PostHog's `/insights/` and `/dashboards/`): their model,
//! validation and Store repositories. The HTTP lives in `functions/dashboards`, the SQL a saved
//! insight runs in `insights`.
//!
//! A dashboard holds its tiles (insight tiles and text tiles); an insight's `dashboards` are
//! read off the tiles, so the two can never disagree. An insight's `query` is stored upgraded and
//! checked ([`query`]), and a dashboard's filters are laid over a tile's node when it refreshes
//! ([`query::apply_dashboard_filters`]).

pub mod model;
pub mod query;
pub mod repository;
pub mod validate;

pub use model::{Dashboard, DashboardFilters, Insight, Text, Tile};
