//! Saved insights and dashboards (PostHog's `/insights/` and `/dashboards/`): their model,
//! validation and Store repositories. The HTTP lives in `functions/dashboards`, the SQL a saved
//! insight runs in `insights`.
