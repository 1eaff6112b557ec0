//! Entities of the control plane and where they live in the store (single-table keys).

mod api_key;
pub mod definitions;
mod group_types;
mod organization;
pub mod person;
mod project;
mod session;
mod user;

pub use api_key::{MAX_LABEL_CHARS, PersonalApiKey, Scope, ScopeAction};
pub use group_types::{Ensured, GROUP_TYPES_SK, GroupTypes, MAX_GROUP_TYPES, group_types_pk};
pub use organization::{Membership, MembershipLevel, Organization};
pub use project::{
    NewProject, PathCleaningRule, Project,
    default_test_account_filters as project_default_test_account_filters,
};
pub use session::{SECOND_FACTOR_WINDOW, SESSION_AGE, Session, Stage};
pub use user::{
    NewUser, PasswordError, User, UserKey, check_against_no_user, hash_password, user_id,
};

use rand::Rng;
use rand::distributions::Alphanumeric;

/// `prefix` followed by `length` random base62 characters (the shape of PostHog's tokens).
pub fn random_token(prefix: &str, length: usize) -> String {
    let body: String = rand::thread_rng()
        .sample_iter(&Alphanumeric)
        .take(length)
        .map(char::from)
        .collect();
    format!("{prefix}{body}")
}
