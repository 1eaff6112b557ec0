//! Experience continuity: a flag with `ensure_experience_continuity` keeps answering an identified
//! user as it answered them while anonymous. When a request carries `$anon_distinct_id` (posthog-js
//! sends it on the first `/flags` after `identify`), the anonymous id is recorded as the hash key of
//! every such flag for the distinct id, the first one recorded winning (PostHog's hash-key
//! overrides); later requests hash that key instead of the distinct id.
//!
//! PostHog keys overrides by person; here they are keyed by distinct id, so they hold from the
//! first request even when the person is not ingested yet. Other distinct ids of the same person
//! do not share them.

use std::collections::HashMap;

use common::AppState;
use common::store::{self, Condition, Index, Item, StoreError};
use feature_flags::cache::ProjectFlags;
use serde::{Deserialize, Serialize};

#[derive(Debug, Serialize, Deserialize)]
struct HashKey {
    hash_key: String,
}

fn overrides_pk(team_id: i64, distinct_id: &str) -> String {
    format!("FLAGHASHKEY#{team_id}#{distinct_id}")
}

/// The hash keys to use for `distinct_id` (flag key -> identifier), after recording the anonymous
/// id's; `None` when no active flag asks for continuity (then no Store call is made).
pub async fn overrides(
    state: &AppState,
    team_id: i64,
    project: &ProjectFlags,
    distinct_id: &str,
    anon_distinct_id: Option<&str>,
) -> Result<Option<HashMap<String, String>>, StoreError> {
    let keys: Vec<&str> = project
        .flags
        .flags()
        .iter()
        .filter(|flag| flag.active && flag.ensure_experience_continuity)
        .map(|flag| flag.key.as_str())
        .collect();
    if keys.is_empty() {
        return Ok(None);
    }
    let store = state.store.as_ref();
    let pk = overrides_pk(team_id, distinct_id);
    if let Some(anon) = anon_distinct_id.filter(|anon| !anon.is_empty() && *anon != distinct_id) {
        for key in &keys {
            let item = Item::of(
                pk.clone(),
                *key,
                &HashKey {
                    hash_key: anon.to_owned(),
                },
            )?;
            match store.put(item, Condition::NotExists).await {
                // An earlier anonymous id keeps its place.
                Ok(()) | Err(StoreError::ConditionFailed) => {}
                Err(other) => return Err(other),
            }
        }
    }
    let overrides = store::query_all(store, &pk, Index::Primary)
        .await?
        .iter()
        .map(|item| Ok((item.sk.clone(), item.parse::<HashKey>()?.hash_key)))
        .collect::<Result<HashMap<_, _>, StoreError>>()?;
    Ok(Some(overrides))
}
