//! The activity log shared by the families (flags, experiments, surveys, endpoints, cohorts,
//! actions, insights, dashboards, persons): who changed what, when, with a field-level diff
//! (PostHog's `ActivityLog`, reference section 0).
//!
//! An entry is written in the same Store transaction as the entity it describes ([`Entry::put_op`]
//! beside the entity's own write), so neither exists without the other. Entries live in the
//! team's partition under `ACTIVITY#<scope>#<uuid v7>` (a scope's history is one prefix query, in
//! time order) and carry a GSI1 key per (team, scope, item) so one item's history is one query.

pub mod routes;

use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use uuid::Uuid;

use crate::error::ApiError;
use crate::models::User;
use crate::query_params::QueryParams;
use crate::store::{Condition, Index, Item, QueryOptions, Store, StoreError, WriteOp};

/// What happened to the item (PostHog's `activity`).
pub const CREATED: &str = "created";
pub const UPDATED: &str = "updated";
pub const DELETED: &str = "deleted";

/// Who did it, as PostHog shows it: `{first_name, email}`, or the system.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Actor {
    pub first_name: String,
    pub email: Option<String>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub is_system: bool,
}

impl Actor {
    pub fn user(user: &User) -> Self {
        Self {
            first_name: user.first_name.clone(),
            email: Some(user.email.clone()),
            is_system: false,
        }
    }

    pub fn system() -> Self {
        Self {
            first_name: "System".into(),
            email: None,
            is_system: true,
        }
    }
}

/// One changed top-level field.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Change {
    #[serde(rename = "type")]
    pub kind: String,
    /// `created` (was absent or null), `deleted` (is now absent or null) or `changed`.
    pub action: String,
    pub field: String,
    pub before: Value,
    pub after: Value,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Detail {
    pub id: String,
    /// None for a creation, as PostHog logs it.
    pub changes: Option<Vec<Change>>,
    pub merge: Option<Value>,
    pub trigger: Option<Value>,
    pub name: Option<String>,
    pub short_id: Option<String>,
    #[serde(rename = "type")]
    pub kind: Option<String>,
}

/// One entry, stored and answered in this shape.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Entry {
    pub id: Uuid,
    pub user: Actor,
    pub activity: String,
    /// `FeatureFlag`, `Experiment`, `Survey`, `Endpoint`, ...
    pub scope: String,
    pub item_id: String,
    pub detail: Detail,
    pub created_at: DateTime<Utc>,
}

/// What a family says about one change.
pub struct Record<'a> {
    pub team_id: i64,
    pub actor: Actor,
    pub activity: &'a str,
    pub scope: &'a str,
    pub item_id: String,
    /// The item's display name (a flag's key, a survey's name).
    pub name: Option<String>,
    /// The item serialized before the change (None when it is created).
    pub before: Option<&'a Value>,
    pub after: &'a Value,
    /// Top-level fields that are bookkeeping, not changes (`version`, `updated_at`, ...).
    pub ignored_fields: &'a [&'a str],
    pub at: DateTime<Utc>,
}

impl Record<'_> {
    pub fn entry(&self) -> Entry {
        let changes = self
            .before
            .map(|before| changes_between(self.scope, before, self.after, self.ignored_fields));
        Entry {
            id: Uuid::now_v7(),
            user: self.actor.clone(),
            activity: self.activity.to_owned(),
            scope: self.scope.to_owned(),
            item_id: self.item_id.clone(),
            detail: Detail {
                id: self.item_id.clone(),
                changes,
                merge: None,
                trigger: None,
                name: self.name.clone(),
                short_id: None,
                kind: None,
            },
            created_at: self.at,
        }
    }

    /// The entry's write, to put in the same transaction as the item's.
    pub fn put_op(&self) -> Result<WriteOp, StoreError> {
        self.entry().put_op(self.team_id)
    }
}

impl Entry {
    pub fn put_op(&self, team_id: i64) -> Result<WriteOp, StoreError> {
        let item = Item::of(
            team_pk(team_id),
            format!("{}{}", scope_prefix(&self.scope), self.id),
            self,
        )?
        .with_gsi1(
            item_partition(team_id, &self.scope, &self.item_id),
            self.id.to_string(),
        );
        Ok(WriteOp::Put {
            item,
            condition: Condition::NotExists,
        })
    }
}

fn team_pk(team_id: i64) -> String {
    format!("TEAM#{team_id}")
}

fn scope_prefix(scope: &str) -> String {
    format!("ACTIVITY#{scope}#")
}

fn item_partition(team_id: i64, scope: &str, item_id: &str) -> String {
    format!("ACTIVITY#{team_id}#{scope}#{item_id}")
}

/// Top-level fields whose values differ between two serialized objects, in `after`'s field order
/// (serde_json's, alphabetical) then the fields only `before` has. Non-objects compare as one field named `value`.
pub fn changes_between(
    scope: &str,
    before: &Value,
    after: &Value,
    ignored: &[&str],
) -> Vec<Change> {
    let (before_fields, after_fields) = match (before, after) {
        (Value::Object(b), Value::Object(a)) => (b, a),
        _ if before == after => return Vec::new(),
        _ => {
            return vec![change(scope, "value", before.clone(), after.clone())];
        }
    };
    let mut changes = Vec::new();
    for (field, after_value) in after_fields {
        if ignored.contains(&field.as_str()) {
            continue;
        }
        let before_value = before_fields.get(field).cloned().unwrap_or(Value::Null);
        if &before_value != after_value {
            changes.push(change(scope, field, before_value, after_value.clone()));
        }
    }
    for (field, before_value) in before_fields {
        if ignored.contains(&field.as_str()) || after_fields.contains_key(field) {
            continue;
        }
        if !before_value.is_null() {
            changes.push(change(scope, field, before_value.clone(), Value::Null));
        }
    }
    changes
}

fn change(scope: &str, field: &str, before: Value, after: Value) -> Change {
    let action = match (before.is_null(), after.is_null()) {
        (true, false) => "created",
        (false, true) => "deleted",
        _ => "changed",
    };
    Change {
        kind: scope.to_owned(),
        action: action.to_owned(),
        field: field.to_owned(),
        before,
        after,
    }
}

/// `?limit=&page=` of an activity route (PostHog: limit 10, page 1).
#[derive(Debug, Clone)]
pub struct ActivityPage {
    pub limit: usize,
    pub page: usize,
    /// scheme://host/path
    base: String,
}

pub const DEFAULT_LIMIT: usize = 10;
pub const MAX_LIMIT: usize = 1000;

impl<S: Send + Sync> FromRequestParts<S> for ActivityPage {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, ApiError> {
        let params = QueryParams::parse(parts.uri.query());
        Ok(Self {
            limit: params
                .integer("limit", 1..=MAX_LIMIT)?
                .unwrap_or(DEFAULT_LIMIT),
            page: params.integer("page", 1..=usize::MAX)?.unwrap_or(1),
            base: crate::pagination::absolute_path(parts),
        })
    }
}

impl ActivityPage {
    pub fn new(limit: usize, page: usize, base: impl Into<String>) -> Self {
        Self {
            limit: limit.max(1),
            page: page.max(1),
            base: base.into(),
        }
    }

    fn link(&self, page: usize) -> String {
        format!("{}?page={page}&limit={}", self.base, self.limit)
    }

    /// `{results, next, previous, total_count}` for entries newest first.
    pub fn answer(&self, entries: &[Entry]) -> Value {
        let skip = (self.page - 1).saturating_mul(self.limit);
        let results: Vec<&Entry> = entries.iter().skip(skip).take(self.limit).collect();
        let total = entries.len();
        let next = (skip.saturating_add(self.limit) < total).then(|| self.link(self.page + 1));
        let previous = (self.page > 1).then(|| self.link(self.page - 1));
        serde_json::json!({
            "results": results,
            "next": next,
            "previous": previous,
            "total_count": total,
        })
    }
}

/// A scope's entries of a team (or one item's, with `item_id`), newest first.
pub async fn list(
    store: &dyn Store,
    team_id: i64,
    scope: &str,
    item_id: Option<&str>,
) -> Result<Vec<Entry>, StoreError> {
    let (partition, options) = match item_id {
        Some(item_id) => (
            item_partition(team_id, scope, item_id),
            QueryOptions {
                index: Index::Gsi1,
                ..Default::default()
            },
        ),
        None => (
            team_pk(team_id),
            QueryOptions {
                sk_prefix: scope_prefix(scope),
                ..Default::default()
            },
        ),
    };
    let options = QueryOptions {
        descending: true,
        ..options
    };
    crate::store::query_pages(store, &partition, options)
        .await?
        .iter()
        .map(|item| item.parse::<Entry>())
        .collect()
}

/// The newest entry of one item, if any (e.g. to name who changed it last).
pub async fn latest(
    store: &dyn Store,
    team_id: i64,
    scope: &str,
    item_id: &str,
) -> Result<Option<Entry>, StoreError> {
    let page = store
        .query(
            &item_partition(team_id, scope, item_id),
            QueryOptions {
                index: Index::Gsi1,
                limit: Some(1),
                descending: true,
                ..Default::default()
            },
        )
        .await?;
    page.items.first().map(Item::parse).transpose()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn diffs_name_each_changed_top_level_field() {
        let before = json!({"name": "a", "active": true, "filters": {"groups": []}, "version": 1, "gone": 3});
        let after = json!({"name": "b", "active": true, "filters": {"groups": [{}]}, "version": 2, "new": "x"});
        let changes = changes_between("FeatureFlag", &before, &after, &["version"]);
        let summary: Vec<(&str, &str)> = changes
            .iter()
            .map(|c| (c.field.as_str(), c.action.as_str()))
            .collect();
        assert_eq!(
            summary,
            [
                ("filters", "changed"),
                ("name", "changed"),
                ("new", "created"),
                ("gone", "deleted")
            ]
        );
        assert_eq!(changes[1].before, "a");
        assert_eq!(changes[1].after, "b");
        assert_eq!(changes[0].kind, "FeatureFlag");
        assert!(changes_between("X", &after, &after, &[]).is_empty());
    }

    #[tokio::test]
    async fn entries_list_per_scope_and_per_item_newest_first() {
        let store = crate::testing::memory_store();
        let at = Utc::now();
        let record = |item: &str, activity: &'static str, scope: &'static str| Record {
            team_id: 7,
            actor: Actor::system(),
            activity,
            scope,
            item_id: item.to_owned(),
            name: Some(format!("n{item}")),
            before: None,
            after: &Value::Null,
            ignored_fields: &[],
            at,
        };
        for (item, activity, scope) in [
            ("1", CREATED, "FeatureFlag"),
            ("2", CREATED, "FeatureFlag"),
            ("1", UPDATED, "FeatureFlag"),
            ("1", CREATED, "Survey"),
        ] {
            let op = record(item, activity, scope).put_op().unwrap();
            store.transact_write(vec![op]).await.unwrap();
        }
        let all = list(&store, 7, "FeatureFlag", None).await.unwrap();
        let seen: Vec<(&str, &str)> = all
            .iter()
            .map(|e| (e.item_id.as_str(), e.activity.as_str()))
            .collect();
        assert_eq!(seen, [("1", "updated"), ("2", "created"), ("1", "created")]);
        let one = list(&store, 7, "FeatureFlag", Some("1")).await.unwrap();
        assert_eq!(one.len(), 2);
        assert_eq!(one[0].activity, "updated");
        let newest = latest(&store, 7, "FeatureFlag", "1")
            .await
            .unwrap()
            .unwrap();
        assert_eq!(newest.id, one[0].id);
        assert!(
            list(&store, 8, "FeatureFlag", None)
                .await
                .unwrap()
                .is_empty()
        );

        let page = ActivityPage::new(2, 1, "http://h/x").answer(&all);
        assert_eq!(page["total_count"], 3);
        assert_eq!(page["next"], "http://h/x?page=2&limit=2");
        assert_eq!(page["previous"], Value::Null);
        let second = ActivityPage::new(2, 2, "http://h/x").answer(&all);
        assert_eq!(second["results"].as_array().unwrap().len(), 1);
        assert_eq!(second["next"], Value::Null);
        assert_eq!(second["previous"], "http://h/x?page=1&limit=2");
        assert_eq!(
            page["results"][0]["user"],
            json!({"first_name": "System", "email": null, "is_system": true})
        );
    }
}
