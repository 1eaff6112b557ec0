//! A project's prepared flags (with the cohorts their conditions name) and group types, cached
//! per process for the SDK path: a warm `/flags` request makes no Store call for them.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use chrono::Duration;
use common::AppState;
use common::models::GroupTypes;
use common::store::StoreError;

use crate::{FeatureFlag, PreparedFlags, cohort_conditions, repository};

/// How long another process's change may go unseen here.
pub const CACHE_FOR: Duration = Duration::seconds(5);
const KIND: &str = "feature_flags";

/// What the SDK routes need of a project, loaded together.
#[derive(Debug)]
pub struct ProjectFlags {
    /// The live (non-deleted) flags, in id order.
    pub flags: PreparedFlags,
    /// Group type index -> name (PostHog's group type mapping).
    pub group_types: BTreeMap<i64, String>,
    /// Flag key -> its place in `flags.flags()`.
    by_key: HashMap<String, usize>,
}

impl ProjectFlags {
    pub fn new(flags: PreparedFlags, group_types: BTreeMap<i64, String>) -> Self {
        let by_key = flags
            .flags()
            .iter()
            .enumerate()
            .map(|(index, flag)| (flag.key.clone(), index))
            .collect();
        Self {
            flags,
            group_types,
            by_key,
        }
    }

    /// A live flag by key.
    pub fn flag(&self, key: &str) -> Option<&FeatureFlag> {
        self.by_key
            .get(key)
            .and_then(|index| self.flags.flags().get(*index))
    }

    /// Whether any flag is active (`/decide`'s `hasFeatureFlags`).
    pub fn any_active(&self) -> bool {
        self.flags.flags().iter().any(|flag| flag.active)
    }

    /// Whether a survey runs (its internal targeting flag is active): the remote config's
    /// `surveys`, which tells posthog-js to fetch `/api/surveys/`.
    pub fn any_running_survey(&self) -> bool {
        self.flags
            .flags()
            .iter()
            .any(|flag| flag.active && flag.is_survey_internal_targeting())
    }
}

/// A project's flags as this process last loaded them (at most [`CACHE_FOR`] ago, or fresher
/// after a change made through this process).
pub async fn project_flags(
    state: &AppState,
    team_id: i64,
) -> Result<Arc<ProjectFlags>, StoreError> {
    let id = team_id.to_string();
    let now = state.clock.now();
    if let Some(hit) = state.cache.get::<ProjectFlags>(KIND, &id, now) {
        return Ok(hit);
    }
    let mark = state.cache.mark();
    let store = state.store.as_ref();
    let flags = repository::list_live(store, team_id).await?;
    // Cohorts are read only for a project whose flags name one.
    let names_cohorts = flags
        .iter()
        .any(|flag| !cohort_conditions::named_by(&flag.filters).is_empty());
    let cohorts = if names_cohorts {
        cohort_core::repository::list_live(store, team_id).await?
    } else {
        Vec::new()
    };
    let loaded = Arc::new(ProjectFlags::new(
        PreparedFlags::with_cohorts(flags, &cohorts),
        GroupTypes::load(store, team_id).await?.into_map(),
    ));
    state
        .cache
        .insert_loaded(mark, KIND, &id, Arc::clone(&loaded), CACHE_FOR, now);
    Ok(loaded)
}

/// Every write to a project's flags calls this (after the Store write), so this process serves
/// the change at once; other processes see it when their cached copy expires.
pub fn definitions_changed(state: &AppState, team_id: i64) {
    state.cache.remove(KIND, &team_id.to_string());
}

/// Every write to a project's cohort definitions (create, edit, delete) calls this after the
/// Store write: the prepared flags hold the definitions their conditions name. Membership
/// changes (static members, calculations) need no call: membership is read per request.
pub fn cohorts_changed(state: &AppState, team_id: i64) {
    definitions_changed(state, team_id);
}
