//! Route tables: what every family's `router()` returns. A family writes each route once; a route
//! under `/api/projects` is mounted under `/api/environments` too, with the same handlers and the
//! same path parameters (PostHog serves `/api/environments/*` as the equivalent `/api/projects/*`,
//! its project and primary environment sharing one id), so no family can forget the second
//! prefix. The table keeps every path it mounted, so tests walk the same list the router serves.

use axum::Router;
use axum::routing::MethodRouter;

use crate::state::AppState;

/// The prefix every project route is written under.
pub const PROJECTS: &str = "/api/projects";
/// The prefix PostHog serves the same routes under, by environment (team).
pub const ENVIRONMENTS: &str = "/api/environments";

/// A family's routes: an axum router plus the path of every route it mounted.
#[derive(Default)]
pub struct Routes {
    router: Router<AppState>,
    paths: Vec<String>,
}

impl Routes {
    pub fn new() -> Self {
        Self::default()
    }

    /// Mounts `methods` at `path`; a path under `/api/projects` (the collection, a project,
    /// anything under one) is mounted under `/api/environments` as well.
    pub fn route(mut self, path: &str, methods: MethodRouter<AppState>) -> Self {
        let twin = environments_twin(path);
        if let Some(twin) = &twin {
            self.router = self.router.route(twin, methods.clone());
        }
        self.router = self.router.route(path, methods);
        self.paths.push(path.to_owned());
        self.paths.extend(twin);
        self
    }

    /// Both tables in one (`analytics serve` mounts every family this way); a path in both is a
    /// conflict, and panics as axum's `merge` does.
    pub fn merge(mut self, other: Routes) -> Self {
        self.router = self.router.merge(other.router);
        self.paths.extend(other.paths);
        self
    }

    /// Every mounted path, as axum writes it (`/api/projects/{project_id}/cohorts/{id}`), both
    /// prefixes of a project route included, in the order they were mounted.
    pub fn paths(&self) -> &[String] {
        &self.paths
    }

    pub fn into_router(self) -> Router<AppState> {
        self.router
    }
}

impl From<Routes> for Router<AppState> {
    fn from(routes: Routes) -> Self {
        routes.into_router()
    }
}

/// `/api/environments{rest}` for `/api/projects{rest}`; `None` for any other path.
pub fn environments_twin(path: &str) -> Option<String> {
    let rest = path.strip_prefix(PROJECTS)?;
    (rest.is_empty() || rest.starts_with('/')).then(|| format!("{ENVIRONMENTS}{rest}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::routing::get;

    #[test]
    fn project_routes_are_mounted_under_both_prefixes() {
        let routes = Routes::new()
            .route("/api/projects", get(|| async {}))
            .route("/api/projects/{project_id}/cohorts", get(|| async {}))
            .route("/api/projectsish", get(|| async {}))
            .route("/flags", get(|| async {}));
        assert_eq!(
            routes.paths(),
            [
                "/api/projects",
                "/api/environments",
                "/api/projects/{project_id}/cohorts",
                "/api/environments/{project_id}/cohorts",
                "/api/projectsish",
                "/flags",
            ]
        );
        let merged = routes.merge(Routes::new().route("/decide", get(|| async {})));
        assert_eq!(merged.paths().last().map(String::as_str), Some("/decide"));
    }
}
