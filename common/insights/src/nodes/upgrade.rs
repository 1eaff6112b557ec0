//! The migration framework: PostHog's `posthog/schema_migrations/` (`base.py`, `__init__.py`,
//! `upgrade.py`).
//!
//! A [`Migration`] moves the nodes of some kinds from one version to the next. The [`Registry`]
//! indexes an ordered list of them by `(kind, version)` and knows each kind's latest version;
//! [`upgrade`] walks a query and applies, to every node it knows, the migrations between the
//! node's version (missing or null means 1) and the latest one.

use std::collections::{BTreeMap, HashMap};
use std::sync::LazyLock;

use serde_json::{Map, Value};

use super::migrations;

/// One query node: a JSON object with a string `kind`.
pub type Node = Map<String, Value>;

/// A schema migration (PostHog's `SchemaMigration`): bumps the nodes of its target kinds by one
/// version.
pub trait Migration: Send + Sync {
    /// `(kind, version before the migration)`; a node leaves at that version + 1.
    fn targets(&self) -> &'static [(&'static str, u32)];

    /// Rewrites one node of a target kind. New clients send unversioned nodes that are already in
    /// the new shape, so this must be a no-op on them; it must tolerate missing and null fields,
    /// and it must not change `kind`. The caller stamps `version`.
    fn transform(&self, node: Node) -> Node;

    /// PostHog's `SchemaMigration.__call__`: transforms the node and stamps the new `version` if
    /// its kind is a target and its version is the one the migration starts from; otherwise
    /// returns it untouched.
    fn apply(&self, node: Node) -> Node {
        let from = node
            .get("kind")
            .and_then(Value::as_str)
            .and_then(|kind| target(self.targets(), kind));
        match from {
            Some(from) if node_version(&node) == Some(u64::from(from)) => {
                stamp(self.transform(node), from)
            }
            _ => node,
        }
    }
}

/// Why a query could not be upgraded. The first is the client's doing (the API answers it with a
/// 400 on attr `version`); the second is a hole in the migration chain.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum UpgradeError {
    /// A known node whose `version` is neither missing, null nor a positive integer.
    #[error("Invalid version {version} for {kind}: expected a positive integer")]
    InvalidVersion { kind: String, version: Value },
    /// The chain from the node's version to the latest one has a hole.
    #[error("Missing migration handler for {kind} version {version}")]
    MissingHandler { kind: String, version: u64 },
}

impl UpgradeError {
    /// The request attribute to blame in a validation error, if any.
    pub fn attr(&self) -> Option<&'static str> {
        match self {
            UpgradeError::InvalidVersion { .. } => Some("version"),
            UpgradeError::MissingHandler { .. } => None,
        }
    }
}

/// `MIGRATIONS[kind][version]` and `LATEST_VERSIONS[kind]`, built from an ordered list.
pub struct Registry {
    handlers: HashMap<&'static str, BTreeMap<u32, &'static dyn Migration>>,
    latest: BTreeMap<&'static str, u32>,
}

impl Registry {
    /// Indexes `migrations`. Panics on a duplicate `(kind, version)` or a version below 1: both
    /// are programming errors, caught by the first test that touches the registry.
    pub fn new(migrations: &[&'static dyn Migration]) -> Self {
        let mut handlers: HashMap<&'static str, BTreeMap<u32, &'static dyn Migration>> =
            HashMap::new();
        let mut latest: BTreeMap<&'static str, u32> = BTreeMap::new();
        for &migration in migrations {
            for &(kind, from) in migration.targets() {
                assert!(
                    from >= 1,
                    "schema migration for {kind} starts at version {from}; versions start at 1"
                );
                let to = from.checked_add(1).unwrap_or_else(|| {
                    panic!("schema migration for {kind} version {from} overflows")
                });
                if handlers
                    .entry(kind)
                    .or_default()
                    .insert(from, migration)
                    .is_some()
                {
                    panic!("duplicate schema migration for {kind} version {from}");
                }
                let entry = latest.entry(kind).or_insert(to);
                *entry = (*entry).max(to);
            }
        }
        Registry { handlers, latest }
    }

    /// The version new nodes of `kind` are written at, if any migration targets it.
    pub fn latest_version(&self, kind: &str) -> Option<u32> {
        self.latest.get(kind).copied()
    }

    /// Every migrated kind with its latest version (PostHog's `latest-versions.json`).
    pub fn latest_versions(&self) -> BTreeMap<&'static str, u32> {
        self.latest.clone()
    }

    /// Upgrades every node in `value`: objects and arrays are walked at any depth (so
    /// `InsightVizNode.source`, `series` items and the like are reached), a node is brought to
    /// its latest version before its own values are visited, and anything else is left alone.
    /// The walk uses an explicit stack so no input can exhaust the call stack.
    pub fn upgrade(&self, mut value: Value) -> Result<Value, UpgradeError> {
        let mut stack: Vec<&mut Value> = vec![&mut value];
        while let Some(current) = stack.pop() {
            match current {
                Value::Object(node) => {
                    self.upgrade_node(node)?;
                    // Reversed so nodes are visited in document order, as PostHog's recursion does.
                    stack.extend(node.values_mut().rev());
                }
                Value::Array(items) => stack.extend(items.iter_mut().rev()),
                _ => {}
            }
        }
        Ok(value)
    }

    /// Brings one node to its latest version. Nodes of unknown kinds, non-string kinds and
    /// versions beyond the latest (written by a newer client) are left as they are.
    fn upgrade_node(&self, node: &mut Node) -> Result<(), UpgradeError> {
        loop {
            let Some((&kind, &latest)) = node
                .get("kind")
                .and_then(Value::as_str)
                .and_then(|kind| self.latest.get_key_value(kind))
            else {
                return Ok(());
            };
            let Some(version) = node_version(node) else {
                return Err(UpgradeError::InvalidVersion {
                    kind: kind.to_owned(),
                    version: node.get("version").cloned().unwrap_or(Value::Null),
                });
            };
            if version >= u64::from(latest) {
                return Ok(());
            }
            // `version < latest <= u32::MAX`, so the conversion cannot fail.
            let from = u32::try_from(version).unwrap_or(u32::MAX);
            let Some(migration) = self
                .handlers
                .get(kind)
                .and_then(|by_version| by_version.get(&from))
            else {
                return Err(UpgradeError::MissingHandler {
                    kind: kind.to_owned(),
                    version,
                });
            };
            // Each pass raises the version by one, so the loop ends.
            *node = stamp(migration.transform(std::mem::take(node)), from);
        }
    }
}

/// The migrations in `migrations::ALL`, indexed once.
static REGISTRY: LazyLock<Registry> = LazyLock::new(|| Registry::new(migrations::ALL));

/// Brings every query node in `value` to its latest version (PostHog's `upgrade`).
pub fn upgrade(value: Value) -> Result<Value, UpgradeError> {
    REGISTRY.upgrade(value)
}

/// The version new nodes of `kind` are written at; `None` for kinds no migration targets (they
/// are at version 1).
pub fn latest_version(kind: &str) -> Option<u32> {
    REGISTRY.latest_version(kind)
}

/// Every migrated kind with its latest version, for stamping new nodes.
pub fn latest_versions() -> BTreeMap<&'static str, u32> {
    REGISTRY.latest_versions()
}

fn target(targets: &[(&str, u32)], kind: &str) -> Option<u32> {
    targets
        .iter()
        .find_map(|&(target, from)| (target == kind).then_some(from))
}

fn stamp(mut node: Node, from: u32) -> Node {
    node.insert("version".to_owned(), Value::from(u64::from(from) + 1));
    node
}

/// The node's version: missing or null means 1; otherwise a positive integer (an integral float
/// such as `2.0` counts, as it does in Python). `None` for anything else.
fn node_version(node: &Node) -> Option<u64> {
    match node.get("version") {
        None | Some(Value::Null) => Some(1),
        Some(Value::Number(number)) => {
            if let Some(version) = number.as_u64() {
                return (version >= 1).then_some(version);
            }
            let float = number.as_f64()?;
            // `as` saturates, and every float from 2^53 up is integral anyway.
            (float.is_finite() && float >= 1.0 && float.fract() == 0.0).then_some(float as u64)
        }
        Some(_) => None,
    }
}
