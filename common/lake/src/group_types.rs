//! Group types seen in ingested events, recorded in the project's group type mapping
//! (`common::models::GroupTypes`): `$groups` keys of any event and `$groupidentify`'s
//! `$group_type`, in order of first appearance. The flags function reads the mapping through
//! its own cache, which expires in 5 s: a newly recorded type needs no invalidation from here
//! (and the engine does not link the flags crate).

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};

use common::models::GroupTypes;
use common::store::{Store, StoreError};
use serde::Deserialize;
use serde::de::IgnoredAny;
use serde_json::value::RawValue;

/// Distinct names a batch collects at most: only five types can ever be mapped, so a batch
/// naming more is noise (and must not grow memory).
const MAX_NAMES_PER_BATCH: usize = 64;

/// Only the group fields of an event's properties; the rest is skipped unparsed.
#[derive(Deserialize)]
struct GroupProbe<'a> {
    #[serde(rename = "$groups", borrow, default)]
    groups: Option<&'a RawValue>,
    #[serde(rename = "$group_type", borrow, default)]
    group_type: Option<&'a RawValue>,
}

/// `$groups`'s keys (an object; other values are ignored, as are its values).
#[derive(Deserialize)]
#[serde(transparent)]
struct GroupKeys<'a>(#[serde(borrow)] HashMap<Cow<'a, str>, IgnoredAny>);

/// Group type names of a batch, in order of first appearance.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct SeenGroupTypes {
    names: Vec<String>,
}

impl SeenGroupTypes {
    /// Looks at one event. Cheap for events without groups: a substring search of the
    /// properties text. Bad values (a non-object `$groups`, a non-string type) are ignored.
    pub fn observe(&mut self, event: &str, properties: &str) {
        if !properties.contains("\"$group") {
            return;
        }
        let Ok(probe) = serde_json::from_str::<GroupProbe>(properties) else {
            return;
        };
        if event == "$groupidentify"
            && let Some(raw) = probe.group_type
            && let Ok(name) = serde_json::from_str::<Cow<str>>(raw.get())
        {
            self.add(&name);
        }
        if let Some(raw) = probe.groups
            && let Ok(GroupKeys(keys)) = serde_json::from_str::<GroupKeys>(raw.get())
        {
            // A map has no order; sorting keeps one batch's result the same on every run.
            let mut keys: Vec<Cow<str>> = keys.into_keys().collect();
            keys.sort_unstable();
            for name in keys {
                self.add(&name);
            }
        }
    }

    fn add(&mut self, name: &str) {
        if !name.is_empty()
            && self.names.len() < MAX_NAMES_PER_BATCH
            && !self.names.iter().any(|known| known == name)
        {
            self.names.push(name.to_owned());
        }
    }

    /// Adds `other`'s names after these.
    pub fn append(&mut self, other: SeenGroupTypes) {
        for name in other.names {
            self.add(&name);
        }
    }

    pub fn names(&self) -> &[String] {
        &self.names
    }

    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }
}

/// Names already in each project's mapping, as this process last saw it: a batch whose names
/// are all known costs a set look-up and no Store call.
#[derive(Debug, Default)]
pub struct KnownGroupTypes {
    by_team: HashMap<i64, Known>,
}

#[derive(Debug, Default)]
struct Known {
    names: HashSet<String>,
    /// Five types are mapped: any other name is dropped without asking the Store again.
    full: bool,
}

impl KnownGroupTypes {
    /// Records the names of `seen` not yet in the project's mapping.
    pub async fn record(
        &mut self,
        store: &dyn Store,
        team_id: i64,
        seen: &SeenGroupTypes,
    ) -> Result<(), StoreError> {
        let known = self.by_team.entry(team_id).or_default();
        if known.full || seen.names().iter().all(|name| known.names.contains(name)) {
            return Ok(());
        }
        let ensured = GroupTypes::ensure(store, team_id, seen.names()).await?;
        if !ensured.added.is_empty() {
            tracing::info!(team_id, added = ?ensured.added, "new group types");
        }
        if !ensured.dropped.is_empty() {
            // PostHog drops them too; once per batch.
            tracing::warn!(
                team_id,
                dropped = ?ensured.dropped,
                "group types beyond the five a project may have are ignored"
            );
        }
        known.full = ensured.types.is_full();
        known.names = ensured
            .types
            .iter()
            .map(|(_, name)| name.to_owned())
            .collect();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seen(events: &[(&str, &str)]) -> Vec<String> {
        let mut seen = SeenGroupTypes::default();
        for (event, properties) in events {
            seen.observe(event, properties);
        }
        seen.names().to_vec()
    }

    #[test]
    fn names_in_first_appearance_order() {
        let names = seen(&[
            ("$pageview", r#"{"$current_url": "/"}"#),
            ("$pageview", r#"{"$groups": {"company": "acme"}}"#),
            (
                "$groupidentify",
                r#"{"$group_type": "project", "$group_key": "p1", "$group_set": {}}"#,
            ),
            ("click", r#"{"$groups": {"team": "a", "company": "b"}}"#),
        ]);
        assert_eq!(names, ["company", "project", "team"]);
    }

    #[test]
    fn bad_values_are_ignored() {
        let names = seen(&[
            ("e", r#"{"$groups": "company"}"#),
            ("e", r#"{"$groups": null}"#),
            ("e", r#"{"$groups": ["company"]}"#),
            ("$groupidentify", r#"{"$group_type": 3}"#),
            ("$groupidentify", r#"{"$group_type": ""}"#),
            // Only `$groupidentify` names a type with `$group_type`.
            ("other", r#"{"$group_type": "nope"}"#),
            ("e", r#"{"$groups": {"": "x", "ok\u00e9": 1}}"#),
        ]);
        assert_eq!(names, ["oké"]);
    }

    #[tokio::test]
    async fn known_names_skip_the_store() {
        let store = common::store::SqliteStore::in_memory().unwrap();
        let mut known = KnownGroupTypes::default();
        let mut batch = SeenGroupTypes::default();
        batch.observe("e", r#"{"$groups": {"company": "acme"}}"#);
        known.record(&store, 1, &batch).await.unwrap();
        let stored = GroupTypes::load(&store, 1).await.unwrap();
        assert_eq!(stored.index_of("company"), Some(0));
        // Someone else changed the mapping: a batch of known names does not look.
        store
            .delete(
                &common::models::group_types_pk(1),
                common::models::GROUP_TYPES_SK,
                common::store::Condition::None,
            )
            .await
            .unwrap();
        known.record(&store, 1, &batch).await.unwrap();
        assert!(GroupTypes::load(&store, 1).await.unwrap().is_empty());
        // A new name does.
        batch.observe("e", r#"{"$groups": {"team": "t"}}"#);
        known.record(&store, 1, &batch).await.unwrap();
        let stored = GroupTypes::load(&store, 1).await.unwrap();
        assert_eq!(stored.index_of("company"), Some(0));
        assert_eq!(stored.index_of("team"), Some(1));
    }
}
