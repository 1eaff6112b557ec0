//! Running a saved node through the query service: the check a node passes before it is saved
//! (it compiles and prepares, as `/query/` would run it), PostHog's `refresh` modes for
//! insights and dashboards, and one node's answer in such a mode.

use common::models::Project;
use common::{ApiError, ApiResult, AppState, Authenticated};
use dashboard_core::query::{self, Runnable, apply_dashboard_filters, relocate};
use dashboard_core::{DashboardFilters, Insight};
use insights::nodes::QueryNode;
use query_service::node::node_error;
use query_service::{Answer, Caller, Mode, Overrides, Request, SqlNode, api_error};
use serde_json::{Value, json};

/// PostHog's `refresh` on insight and dashboard reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refresh {
    /// `force_cache` (the default): a fresh cached answer or none; never computes.
    CacheOnly,
    /// Compute (or queue) as the query API does in this mode.
    Run(Mode),
}

impl Refresh {
    /// From `?refresh=`: PostHog's ExecutionMode values, `true` (force_blocking) and `false`.
    pub fn parse(raw: Option<&str>) -> ApiResult<Self> {
        Ok(match raw {
            None | Some("") | Some("force_cache") | Some("false") => Refresh::CacheOnly,
            Some("blocking") | Some("async_except_on_cache_miss") => Refresh::Run(Mode::Blocking),
            Some("force_blocking") | Some("true") => Refresh::Run(Mode::ForceBlocking),
            Some("async") | Some("lazy_async") => Refresh::Run(Mode::Async),
            Some("force_async") => Refresh::Run(Mode::ForceAsync),
            Some(other) => {
                return Err(ApiError::field(
                    "refresh",
                    "invalid_choice",
                    format!(
                        "\"{other}\" is not a valid choice: force_cache, blocking, async, lazy_async, force_blocking, force_async or async_except_on_cache_miss."
                    ),
                ));
            }
        })
    }
}

/// A node's answer: the query response (`None` on a cache miss or while queued), or the
/// status of the run it queued.
#[derive(Debug, Default)]
pub struct Outcome {
    pub response: Option<Value>,
    pub query_status: Option<Value>,
}

impl Outcome {
    /// A tile whose node failed: PostHog's failed query status, so one tile cannot break the
    /// dashboard.
    pub fn failed(error: &ApiError) -> Self {
        Outcome {
            response: None,
            query_status: Some(json!({
                "complete": true,
                "error": true,
                "error_message": error.body.detail,
            })),
        }
    }
}

fn sql_node(node: &Value, attr: &str) -> ApiResult<SqlNode> {
    let typed = QueryNode::from_value(node.clone()).map_err(|e| relocate(node_error(e), attr))?;
    SqlNode::from_node(typed, Overrides::default()).map_err(|e| relocate(e, attr))
}

/// Checks a node before it is saved: it compiles and its queries prepare, errors naming the
/// field where it sits (`query.series[0].math`, `query.source.query`).
pub async fn check(state: &AppState, project: &Project, runnable: &Runnable) -> ApiResult<()> {
    let node = SqlNode::from_node(runnable.node.clone(), Overrides::default())
        .map_err(|e| relocate(e, runnable.attr))?;
    query_service::runner::check(state, project, &node)
        .await
        .map_err(|error| relocate(api_error(&error), runnable.attr))
}

/// Checks a dashboard's filters as the compiler reads them: laid over a plain trend, whose
/// date range and properties they become (errors name `filters.date_from`,
/// `filters.properties[0]...`).
pub async fn check_filters(
    state: &AppState,
    project: &Project,
    filters: &DashboardFilters,
) -> ApiResult<()> {
    if filters.is_empty() {
        return Ok(());
    }
    let probe =
        json!({"kind": "TrendsQuery", "series": [{"kind": "EventsNode", "event": "$pageview"}]});
    let node = sql_node(&apply_dashboard_filters(&probe, filters), "query")?;
    query_service::runner::check(state, project, &node)
        .await
        .map_err(|error| {
            let mut error = api_error(&error);
            if let Some(attr) = &error.body.attr {
                let moved = attr
                    .strip_prefix("query.dateRange.")
                    .map(|rest| format!("filters.{rest}"))
                    .or_else(|| {
                        attr.strip_prefix("query.")
                            .map(|rest| format!("filters.{rest}"))
                    });
                error.body.attr = moved.or(Some("filters".into()));
            }
            error
        })
}

/// The runnable node of a saved insight with `filters` (a dashboard's) laid over it, or `None`
/// when it has no query.
pub fn node_of(
    insight: &Insight,
    filters: Option<&DashboardFilters>,
) -> ApiResult<Option<Runnable>> {
    let Some(stored) = &insight.query else {
        return Ok(None);
    };
    let mut runnable = query::runnable(stored)?;
    if let Some(filters) = filters.filter(|filters| !filters.is_empty()) {
        let (source, attr) = query::source(stored);
        let applied = apply_dashboard_filters(source, filters);
        runnable = Runnable {
            node: QueryNode::from_value(applied).map_err(|e| relocate(node_error(e), attr))?,
            attr,
        };
    }
    Ok(Some(runnable))
}

/// One node's answer in `refresh`'s mode, through the same pipeline as `POST /query/`.
pub async fn answer(
    state: &AppState,
    auth: &Authenticated,
    project: &Project,
    runnable: &Runnable,
    refresh: Refresh,
) -> ApiResult<Outcome> {
    let node = SqlNode::from_node(runnable.node.clone(), Overrides::default())
        .map_err(|e| relocate(e, runnable.attr))?;
    let relocated = |error: query_service::ServiceError| relocate(error.into(), runnable.attr);
    match refresh {
        Refresh::CacheOnly => Ok(Outcome {
            response: query_service::cached(state, project, &node)
                .await
                .map_err(relocated)?,
            query_status: None,
        }),
        Refresh::Run(mode) => {
            let query_id = uuid::Uuid::now_v7().simple().to_string();
            let caller = Caller::of(auth);
            let request = Request {
                project,
                query_id: &query_id,
                node: &node,
                caller: &caller,
                mode,
                endpoint: "",
            };
            Ok(
                match query_service::run(state, request)
                    .await
                    .map_err(relocated)?
                {
                    Answer::Done(response) => Outcome {
                        response: Some(response),
                        query_status: None,
                    },
                    Answer::Status(status) => Outcome {
                        response: None,
                        query_status: Some(status.payload(state).await),
                    },
                },
            )
        }
    }
}

/// A tile's answer: as [`answer`], but a node that fails (a 4xx) answers a failed status
/// instead of failing the dashboard; a busy project or a server fault still fails it.
pub async fn tile_answer(
    state: &AppState,
    auth: &Authenticated,
    project: &Project,
    runnable: &Runnable,
    refresh: Refresh,
) -> ApiResult<Outcome> {
    match answer(state, auth, project, runnable, refresh).await {
        Ok(outcome) => Ok(outcome),
        Err(error) if error.status.is_client_error() && error.status.as_u16() != 429 => {
            Ok(Outcome::failed(&error))
        }
        Err(error) => Err(error),
    }
}
