//! `GET /:id/timeseries_results` and `POST /:id/recalculate_timeseries` (reference 2.7): daily
//! cumulative results from the stored `ExperimentMetricResult` items, and a recalculation run by
//! the job queue.

use axum::extract::{Path, State};
use axum::response::Response;
use common::error::{ApiError, ApiResult};
use common::{AppState, Authenticated};

/// `GET /experiments/:id/timeseries_results?metric_uuid&fingerprint`
pub async fn results(
    State(state): State<AppState>,
    auth: Authenticated,
    Path((project, id)): Path<(String, String)>,
) -> ApiResult<Response> {
    let _ = (state, auth, project, id);
    Err(ApiError::not_found())
}

/// `POST /experiments/:id/recalculate_timeseries` with `{metric, fingerprint}`
pub async fn recalculate(
    State(state): State<AppState>,
    auth: Authenticated,
    Path((project, id)): Path<(String, String)>,
) -> ApiResult<Response> {
    let _ = (state, auth, project, id);
    Err(ApiError::not_found())
}
