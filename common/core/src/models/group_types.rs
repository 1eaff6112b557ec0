//! A project's group types: PostHog's group type mapping `{index: name}` (`{"0": "company"}`).
//! The committer fills it from ingested events (`$groups` keys, `$groupidentify`'s
//! `$group_type`) in order of first appearance; flags and the `groups_types` route read it.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::store::{Condition, Item, Store, StoreError, UPDATE_ATTEMPTS, conflict_backoff};

/// Sort key of a project's group type mapping (its partition key is [`group_types_pk`]).
pub const GROUP_TYPES_SK: &str = "GROUPTYPES";
/// PostHog keeps at most five group types per project (indexes 0 to 4).
pub const MAX_GROUP_TYPES: usize = 5;

pub fn group_types_pk(team_id: i64) -> String {
    format!("TEAM#{team_id}")
}

/// Group type index -> name. Stored as a JSON object keyed by the index as text.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct GroupTypes(BTreeMap<i64, String>);

/// What [`GroupTypes::ensure`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Ensured {
    /// The mapping as stored after the call.
    pub types: GroupTypes,
    /// Names this call mapped, in the order given.
    pub added: Vec<String>,
    /// Names left out because the project already had [`MAX_GROUP_TYPES`] types.
    pub dropped: Vec<String>,
}

impl GroupTypes {
    /// A project's mapping; empty when nothing recorded any group type.
    pub async fn load(store: &dyn Store, team_id: i64) -> Result<Self, StoreError> {
        match store.get(&group_types_pk(team_id), GROUP_TYPES_SK).await? {
            Some(item) => item.parse(),
            None => Ok(Self::default()),
        }
    }

    pub fn index_of(&self, name: &str) -> Option<i64> {
        self.0
            .iter()
            .find_map(|(index, known)| (known == name).then_some(*index))
    }

    pub fn is_full(&self) -> bool {
        self.0.len() >= MAX_GROUP_TYPES
    }

    /// `(index, name)` in index order.
    pub fn iter(&self) -> impl Iterator<Item = (i64, &str)> {
        self.0.iter().map(|(index, name)| (*index, name.as_str()))
    }

    pub fn into_map(self) -> BTreeMap<i64, String> {
        self.0
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Maps `names` not yet mapped to the next free indexes (in the order given; empty names
    /// are skipped). Returns what changed. Pure: [`GroupTypes::ensure`] stores the result.
    fn with_names<'a>(
        &self,
        names: impl IntoIterator<Item = &'a str>,
    ) -> (Self, Vec<String>, Vec<String>) {
        let mut next = self.clone();
        let (mut added, mut dropped) = (Vec::new(), Vec::new());
        for name in names {
            if name.is_empty() || next.index_of(name).is_some() {
                continue;
            }
            if next.is_full() {
                if !dropped.iter().any(|known| known == name) {
                    dropped.push(name.to_owned());
                }
                continue;
            }
            // Indexes are never reused: the next one follows the largest.
            let index = next.0.keys().next_back().map_or(0, |last| last + 1);
            if index >= MAX_GROUP_TYPES as i64 {
                dropped.push(name.to_owned());
                continue;
            }
            next.0.insert(index, name.to_owned());
            added.push(name.to_owned());
        }
        (next, added, dropped)
    }

    /// Records `names` in the project's mapping, each with the next free index. Optimistic
    /// concurrency (a create-only put for the first write, a version check after): two callers
    /// racing never give one name two indexes nor two names one index; the loser re-reads and
    /// maps only what is still missing.
    pub async fn ensure(
        store: &dyn Store,
        team_id: i64,
        names: &[impl AsRef<str>],
    ) -> Result<Ensured, StoreError> {
        let pk = group_types_pk(team_id);
        for attempt in 0..UPDATE_ATTEMPTS {
            if attempt > 0 {
                tokio::time::sleep(conflict_backoff(attempt)).await;
            }
            let current = store.get(&pk, GROUP_TYPES_SK).await?;
            let stored: Self = match &current {
                Some(item) => item.parse()?,
                None => Self::default(),
            };
            let (types, added, dropped) = stored.with_names(names.iter().map(AsRef::as_ref));
            if added.is_empty() {
                return Ok(Ensured {
                    types,
                    added,
                    dropped,
                });
            }
            let (item, condition) = match current {
                Some(mut item) => {
                    let version = item.version;
                    item.set_data(&types)?;
                    item.version = version + 1;
                    (item, Condition::VersionEquals(version))
                }
                None => (
                    Item::of(pk.clone(), GROUP_TYPES_SK, &types)?,
                    Condition::NotExists,
                ),
            };
            match store.put(item, condition).await {
                Ok(()) => {
                    return Ok(Ensured {
                        types,
                        added,
                        dropped,
                    });
                }
                Err(StoreError::ConditionFailed) => continue,
                Err(other) => return Err(other),
            }
        }
        Err(StoreError::ConditionFailed)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::store::SqliteStore;

    fn names(types: &GroupTypes) -> Vec<(i64, String)> {
        types
            .iter()
            .map(|(index, name)| (index, name.to_owned()))
            .collect()
    }

    #[test]
    fn stored_as_an_object_keyed_by_index_text() {
        let (types, added, _) = GroupTypes::default().with_names(["company", "project"]);
        assert_eq!(added, ["company", "project"]);
        let json = serde_json::to_value(&types).unwrap();
        assert_eq!(json, serde_json::json!({"0": "company", "1": "project"}));
        let back: GroupTypes = serde_json::from_value(json).unwrap();
        assert_eq!(back, types);
    }

    #[test]
    fn first_appearance_order_at_most_five() {
        let given = ["a", "b", "a", "", "c", "d", "e", "f", "g", "f"];
        let (types, added, dropped) = GroupTypes::default().with_names(given);
        assert_eq!(added, ["a", "b", "c", "d", "e"]);
        assert_eq!(dropped, ["f", "g"]);
        assert_eq!(types.index_of("e"), Some(4));
        assert_eq!(types.index_of("f"), None);
    }

    #[tokio::test]
    async fn ensure_adds_only_missing_names() {
        let store = SqliteStore::in_memory().unwrap();
        let first = GroupTypes::ensure(&store, 7, &["company"]).await.unwrap();
        assert_eq!(first.added, ["company"]);
        let again = GroupTypes::ensure(&store, 7, &["company", "team"])
            .await
            .unwrap();
        assert_eq!(again.added, ["team"]);
        let loaded = GroupTypes::load(&store, 7).await.unwrap();
        assert_eq!(names(&loaded), [(0, "company".into()), (1, "team".into())]);
        // Another project has its own mapping.
        assert!(GroupTypes::load(&store, 8).await.unwrap().is_empty());
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn racing_ensures_never_share_or_split_an_index() {
        let store: Arc<dyn Store> = Arc::new(SqliteStore::in_memory().unwrap());
        // Six distinct names for five places: one is left out, whichever call comes last.
        let lists: [&[&str]; 6] = [
            &["company", "team"],
            &["team", "company"],
            &["project", "company"],
            &["team", "project", "org"],
            &["org"],
            &["company", "extra", "more"],
        ];
        let calls = lists.iter().map(|list| {
            let store = Arc::clone(&store);
            let list: Vec<String> = list.iter().map(|name| (*name).to_owned()).collect();
            tokio::spawn(async move { GroupTypes::ensure(store.as_ref(), 3, &list).await })
        });
        let mut added = Vec::new();
        for call in calls {
            added.extend(call.await.unwrap().unwrap().added);
        }
        let stored = GroupTypes::load(store.as_ref(), 3).await.unwrap();
        // Every name mapped once, by exactly one caller, on indexes 0..n without gaps.
        let mut stored_names: Vec<String> = stored.iter().map(|(_, n)| n.to_owned()).collect();
        let indexes: Vec<i64> = stored.iter().map(|(index, _)| index).collect();
        assert_eq!(indexes, (0..stored.len() as i64).collect::<Vec<_>>());
        assert_eq!(stored.len(), MAX_GROUP_TYPES);
        added.sort();
        stored_names.sort();
        assert_eq!(added, stored_names);
    }
}
