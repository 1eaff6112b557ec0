//! Shared by every function: configuration, errors, auth, models, storage and HTTP helpers.

pub mod activity;
pub mod auth;
pub mod backoff;
pub mod cache;
pub mod client;
pub mod clock;
pub mod config;
pub mod cors;
pub mod dates;
pub mod error;
pub mod http;
pub mod jobs;
pub mod lambda;
pub mod mailer;
pub mod models;
pub mod objects;
pub mod pagination;
pub mod project_tokens;
pub mod provisioning;
pub mod query_params;
pub mod repository;
pub mod routes;
pub mod sdk_body;
pub mod secrets;
pub mod staging;
pub mod state;
pub mod store;
pub mod telemetry;
#[cfg(feature = "testing")]
pub mod testing;
pub mod throttle;

pub use auth::Authenticated;
pub use error::{ApiError, ApiResult};
pub use state::AppState;
