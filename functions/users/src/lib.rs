//! Route family `users`: the console's login (`/api/login/`, `/api/logout/`), the caller
//! (`/api/users/...`: payload, two-factor, e-mail verification) and their projects
//! (`/api/projects/`).

mod email;
mod group_types;
mod login;
mod payload;
mod personal_api_keys;
mod projects;
mod two_factor;
mod users;

use axum::routing::{get, patch, post};
use common::routes::Routes;

/// Every route of the family; entry points add fallbacks and layers with `common::http::finish`.
pub fn router() -> Routes {
    Routes::new()
        .route("/api/login", post(login::login))
        .route("/api/login/token", post(login::second_factor))
        .route("/api/logout", post(login::logout))
        .route(
            "/api/users/{uuid}",
            get(users::retrieve).patch(users::update),
        )
        .route(
            "/api/users/{uuid}/two_factor_start_setup",
            get(two_factor::start_setup),
        )
        .route(
            "/api/users/{uuid}/start_2fa_setup",
            get(two_factor::start_setup),
        )
        .route(
            "/api/users/{uuid}/two_factor_validate",
            post(two_factor::validate),
        )
        .route("/api/users/{uuid}/validate_2fa", post(two_factor::validate))
        .route(
            "/api/users/{uuid}/two_factor_status",
            get(two_factor::status),
        )
        .route(
            "/api/users/{uuid}/two_factor_backup_codes",
            post(two_factor::regenerate_backup_codes),
        )
        .route(
            "/api/users/{uuid}/two_factor_disable",
            post(two_factor::disable),
        )
        .route(
            "/api/users/request_email_verification",
            post(email::request_verification),
        )
        .route("/api/users/verify_email", post(email::verify))
        .route(
            "/api/users/cancel_email_change_request",
            patch(email::cancel_change),
        )
        .route(
            "/api/personal_api_keys",
            get(personal_api_keys::list).post(personal_api_keys::create),
        )
        .route(
            "/api/personal_api_keys/{id}",
            get(personal_api_keys::retrieve)
                .patch(personal_api_keys::update)
                .put(personal_api_keys::replace)
                .delete(personal_api_keys::delete),
        )
        .route(
            "/api/personal_api_keys/{id}/roll",
            post(personal_api_keys::roll),
        )
        .route("/api/projects", get(projects::list))
        .route(
            "/api/projects/{project_id}",
            get(projects::retrieve).patch(projects::update),
        )
        .route(
            "/api/projects/{project_id}/groups_types",
            get(group_types::list),
        )
        // The project's background job runs (compaction, and what families enqueue).
        .route(
            "/api/projects/{project_id}/jobs",
            get(common::jobs::http::list),
        )
        .route(
            "/api/projects/{project_id}/jobs/{job}/{run_id}",
            get(common::jobs::http::retrieve),
        )
}
