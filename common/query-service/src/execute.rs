//! The one entry every family calls: a node, who asked and how (`refresh` / `async`), answered
//! now (computed or from the cache, under the project's slot bound) or queued as a job whose
//! status is polled.

use common::jobs::JobError;
use common::models::Project;
use common::store::StoreError;
use common::{ApiError, AppState};
use engine::QueryError;
use serde_json::Value;

use crate::errors::api_error;
use crate::jobs;
use crate::runner::{self, Run};
use crate::status::{Job, QueryStatus};
use crate::{Caller, SqlNode, slots};

/// PostHog's execution modes (`refresh`, or `async: true`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// A fresh cached result, else compute now.
    Blocking,
    /// Compute now.
    ForceBlocking,
    /// A fresh cached result, else enqueue.
    Async,
    /// Always enqueue.
    ForceAsync,
}

impl Mode {
    /// From a request's `refresh` and `async` fields (`async: true` wins); a bad value is a 400 on
    /// `refresh`.
    pub fn parse(refresh: Option<&Value>, run_async: Option<bool>) -> Result<Self, ApiError> {
        if run_async == Some(true) {
            return Ok(Mode::Async);
        }
        Ok(match refresh {
            None | Some(Value::Null) | Some(Value::Bool(false)) => Mode::Blocking,
            Some(Value::Bool(true)) => Mode::ForceBlocking,
            Some(Value::String(mode)) => match mode.as_str() {
                "blocking" | "force_cache" => Mode::Blocking,
                "force_blocking" => Mode::ForceBlocking,
                "async" | "lazy_async" | "async_except_on_cache_miss" => Mode::Async,
                "force_async" => Mode::ForceAsync,
                other => {
                    return Err(ApiError::field(
                        "refresh",
                        "invalid_choice",
                        format!("\"{other}\" is not a valid choice."),
                    ));
                }
            },
            Some(_) => {
                return Err(ApiError::field(
                    "refresh",
                    "invalid_choice",
                    "refresh must be one of blocking, async, lazy_async, force_blocking, force_async, force_cache, async_except_on_cache_miss.",
                ));
            }
        })
    }

    pub fn is_async(self) -> bool {
        matches!(self, Mode::Async | Mode::ForceAsync)
    }

    pub fn forced(self) -> bool {
        matches!(self, Mode::ForceBlocking | Mode::ForceAsync)
    }
}

/// One query to answer.
pub struct Request<'a> {
    pub project: &'a Project,
    /// The client's `client_query_id`, or a fresh id: names the log record and the async status.
    pub query_id: &'a str,
    pub node: &'a SqlNode,
    pub caller: &'a Caller,
    pub mode: Mode,
    /// The endpoint's name when an endpoint run makes the query, else empty.
    pub endpoint: &'a str,
}

/// What a request comes to.
#[derive(Debug)]
pub enum Answer {
    /// The response (PostHog's query response; `is_cached` says whether it was computed now).
    Done(Value),
    /// Queued, or already known under this id: the status to answer (see
    /// [`QueryStatus::http_status`]).
    Status(Box<QueryStatus>),
}

#[derive(Debug, thiserror::Error)]
pub enum ServiceError {
    /// The query is wrong, or failed, or ran out of time or memory.
    #[error(transparent)]
    Query(#[from] QueryError),
    /// Every slot of the project is taken (answer 429 and let the client retry).
    #[error("too many queries are running for this project at once")]
    Busy,
    /// A `client_query_id` whose status vanished while it was being reused.
    #[error("the query id {0} is being reused")]
    Reused(String),
    #[error("cannot read or write the query's status or slot")]
    Store(#[from] StoreError),
    #[error("cannot queue the query")]
    Enqueue(#[source] JobError),
}

impl From<ServiceError> for ApiError {
    fn from(error: ServiceError) -> Self {
        match error {
            ServiceError::Query(error) => api_error(&error),
            ServiceError::Busy => {
                let mut busy = ApiError::throttled(1);
                busy.body.detail =
                    "Too many queries are running for this project at once. Try again in a moment."
                        .into();
                busy
            }
            ServiceError::Reused(_) => ApiError::conflict("That query id is being reused."),
            ServiceError::Store(error) => error.into(),
            ServiceError::Enqueue(error) => ApiError::internal(error),
        }
    }
}

/// The fresh cached answer of `node`, never computed (PostHog's `force_cache` on saved insights
/// and dashboards): `None` on a miss, or when the node's result is not cached.
pub async fn cached(
    state: &AppState,
    project: &Project,
    node: &SqlNode,
) -> Result<Option<Value>, ServiceError> {
    let plan = runner::Plan::new(state, project, node, runner::Cohorts::Members).await?;
    Ok(runner::cached(state, plan.cache_key()).await)
}

/// Answers a request: async modes answer a fresh cached result or queue a job (a bad node is
/// refused before anything is queued); blocking modes run now in one of the project's slots.
pub async fn run(state: &AppState, request: Request<'_>) -> Result<Answer, ServiceError> {
    let Request {
        project,
        query_id,
        node,
        caller,
        mode,
        endpoint,
    } = request;
    if mode.is_async() {
        // The node's one compilation here: it checks the node (a 400 now, not a failed job),
        // and `async` (not `force_async`) answers a fresh cached result at once.
        let cohorts = match mode.forced() {
            true => runner::Cohorts::Definitions,
            false => runner::Cohorts::Members,
        };
        let plan = runner::Plan::new(state, project, node, cohorts).await?;
        if !mode.forced()
            && let Some(cached) = runner::cached(state, plan.cache_key()).await
        {
            return Ok(Answer::Done(cached));
        }
        let longest = chrono::Duration::from_std(state.config.query.timeout)
            .unwrap_or(chrono::Duration::minutes(10));
        let status = QueryStatus::new(
            project.id,
            query_id,
            Job::new(node, caller, mode.forced()),
            state.clock.now(),
            longest,
        );
        return match status.create(state).await {
            Ok(()) => {
                if let Err(error) = jobs::enqueue(state, project.id, query_id).await {
                    // Nothing will run it: the status ends now rather than at its expiry.
                    let ended = QueryStatus::update(state, project.id, query_id, |mut status| {
                        status.complete = true;
                        status.error = true;
                        status.end_time = Some(state.clock.now());
                        Ok(status)
                    })
                    .await;
                    if let Err(store) = ended {
                        tracing::warn!(error = %store, "cannot end the status of a query that was not queued");
                    }
                    return Err(ServiceError::Enqueue(error));
                }
                Ok(Answer::Status(Box::new(status)))
            }
            // This client_query_id is known: answer with its status.
            Err(StoreError::ConditionFailed) => QueryStatus::load(state, project.id, query_id)
                .await?
                .map(|status| Answer::Status(Box::new(status)))
                .ok_or_else(|| ServiceError::Reused(query_id.to_owned())),
            Err(other) => Err(other.into()),
        };
    }
    let Some(slot) = slots::acquire(state, project.id).await? else {
        return Err(ServiceError::Busy);
    };
    let outcome = runner::run(
        Run {
            state,
            project,
            query_id,
            node,
            caller,
            force: mode == Mode::ForceBlocking,
            endpoint,
            log: true,
        },
        std::future::pending(),
    )
    .await;
    slot.release().await;
    Ok(Answer::Done(outcome?))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn refresh_and_async_choose_the_mode() {
        let mode = |refresh: Value, run_async: Option<bool>| {
            Mode::parse(Some(&refresh), run_async).map_err(|e| e.body.attr)
        };
        assert_eq!(Mode::parse(None, None).unwrap(), Mode::Blocking);
        assert_eq!(mode(json!(true), None), Ok(Mode::ForceBlocking));
        assert_eq!(mode(json!(false), Some(true)), Ok(Mode::Async));
        assert_eq!(mode(json!("force_cache"), None), Ok(Mode::Blocking));
        assert_eq!(mode(json!("lazy_async"), None), Ok(Mode::Async));
        assert_eq!(mode(json!("force_async"), None), Ok(Mode::ForceAsync));
        assert_eq!(mode(json!("soon"), None), Err(Some("refresh".into())));
        assert_eq!(mode(json!(3), None), Err(Some("refresh".into())));
        assert!(Mode::ForceAsync.is_async() && Mode::ForceAsync.forced());
        assert!(!Mode::Async.forced() && !Mode::ForceBlocking.is_async());
    }
}
