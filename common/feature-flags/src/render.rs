//! A flag as PostHog's FeatureFlagSerializer shows it (shared by the flags and experiments
//! families): the fields this service really has, plus
//! the fixed answers of features it does not have (no tags, no dashboards, no access control).

use std::collections::HashMap;

use crate::FeatureFlag;
use common::models::User;
use common::store::{Store, StoreError};
use serde_json::{Value, json};
use uuid::Uuid;

/// PostHog's UserBasicSerializer, from what the users family keeps (the integer `id` is derived
/// from the uuid: `common::models::user_id`).
pub fn user_basic(user: &User) -> Value {
    json!({
        "id": user.id(),
        "uuid": user.uuid,
        "distinct_id": user.distinct_id,
        "first_name": user.first_name,
        "last_name": user.last_name,
        "email": user.email,
        "is_email_verified": user.is_email_verified,
        "hedgehog_config": user.mascot_config,
        "role_at_organization": user.role_at_organization,
    })
}

/// A simple flag: one condition set, no properties, aggregated by person.
fn is_simple(flag: &FeatureFlag) -> bool {
    flag.filters.groups.len() == 1
        && flag.filters.groups.iter().all(|g| g.properties.is_empty())
        && flag.filters.aggregation_group_type_index.is_none()
}

/// FeatureFlagSerializer's JSON of a flag.
pub fn flag(flag: &FeatureFlag, creator: Option<&User>) -> Value {
    let simple = is_simple(flag);
    let rollout = if simple {
        flag.filters
            .groups
            .first()
            .and_then(|group| group.rollout_percentage)
    } else {
        None
    };
    json!({
        "id": flag.id,
        "name": flag.name,
        "key": flag.key,
        "filters": flag.filters,
        "deleted": flag.deleted,
        "active": flag.active,
        "created_by": creator.map(user_basic),
        "created_at": flag.created_at,
        "updated_at": flag.updated_at.unwrap_or(flag.created_at),
        "version": flag.version,
        "ensure_experience_continuity": flag.ensure_experience_continuity,
        "evaluation_runtime": flag.evaluation_runtime,
        "evaluation_tags": flag.evaluation_tags,
        "is_simple_flag": simple,
        "rollout_percentage": rollout,
        "tags": [],
        "can_edit": true,
        "is_remote_configuration": false,
        "has_encrypted_payloads": false,
        "bucketing_identifier": "distinct_id",
    })
}

/// Loads each creator once for a page of flags.
pub struct Creators {
    users: HashMap<Uuid, Option<User>>,
}

impl Creators {
    pub async fn of(store: &dyn Store, flags: &[&FeatureFlag]) -> Result<Self, StoreError> {
        let mut users = HashMap::new();
        for uuid in flags.iter().filter_map(|flag| flag.created_by) {
            if let std::collections::hash_map::Entry::Vacant(slot) = users.entry(uuid) {
                slot.insert(User::load(store, uuid).await?);
            }
        }
        Ok(Self { users })
    }

    pub fn render(&self, flag: &FeatureFlag) -> Value {
        let creator = flag
            .created_by
            .and_then(|uuid| self.users.get(&uuid))
            .and_then(Option::as_ref);
        self::flag(flag, creator)
    }
}

/// MinimalFeatureFlagSerializer: the flag an experiment shows under `feature_flag`.
pub fn minimal(flag: &FeatureFlag) -> Value {
    json!({
        "id": flag.id,
        "team_id": flag.team_id,
        "name": flag.name,
        "key": flag.key,
        "filters": flag.filters,
        "deleted": flag.deleted,
        "active": flag.active,
        "ensure_experience_continuity": flag.ensure_experience_continuity,
        "has_encrypted_payloads": false,
        "version": flag.version,
        "evaluation_runtime": flag.evaluation_runtime,
        "bucketing_identifier": "distinct_id",
        "evaluation_tags": flag.evaluation_tags,
    })
}
