use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::store::{self, Condition, Index, Item, QueryOptions, Store, StoreError, WriteOp};

use super::random_token;

/// A project (PostHog's team): integer id, its own events and entities.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Project {
    pub id: i64,
    pub uuid: Uuid,
    pub organization_id: Uuid,
    pub name: String,
    /// IANA time zone name.
    pub timezone: String,
    /// The first day of a week in insights: 0 Sunday, 1 Monday (None: Sunday, PostHog's default).
    #[serde(default)]
    pub week_start_day: Option<u8>,
    /// Property filters (as in insights) that mark internal and test users; insights and
    /// experiments leave those out when asked to filter test accounts.
    #[serde(default)]
    pub test_account_filters: Vec<serde_json::Value>,
    /// Rules that rewrite URLs and screen names into one path item (PostHog's team
    /// `path_cleaning_filters`), applied by paths insights that ask for `pathReplacements`.
    #[serde(default)]
    pub path_cleaning_filters: Vec<PathCleaningRule>,
    /// `phc_...`: public, identifies the project to capture.
    pub api_token: String,
    pub created_at: DateTime<Utc>,
    #[serde(default)]
    pub updated_at: Option<DateTime<Utc>>,
}

/// Every match of `regex` in a path item is replaced by `alias`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PathCleaningRule {
    pub alias: String,
    pub regex: String,
}

pub struct NewProject<'a> {
    pub organization_id: Uuid,
    pub name: &'a str,
    pub timezone: &'a str,
}

/// What PostHog gives a new project to leave out as test traffic: events from a local host.
/// (PostHog also adds `email not_icontains @<domain>` from its creator's company domain; a
/// project here is made without one, so that filter is left for the project to add.)
pub fn default_test_account_filters() -> Vec<serde_json::Value> {
    vec![serde_json::json!({
        "key": "$host",
        "operator": "not_regex",
        "value": "^(localhost|127\\.0\\.0\\.1)($|:)",
        "type": "event",
    })]
}

const COUNTER_PK: &str = "COUNTER";
const COUNTER_SK: &str = "TEAM";

#[derive(Serialize, Deserialize)]
struct Counter {
    value: i64,
}

impl Project {
    pub fn pk(id: i64) -> String {
        format!("TEAM#{id}")
    }

    /// Allocates the next integer id (optimistic counter) and returns the project, not yet stored.
    pub async fn allocate(store: &dyn Store, new: NewProject<'_>) -> Result<Self, StoreError> {
        // The first writer creates the counter; losing that race just means updating it instead.
        let counter = Item::of(COUNTER_PK, COUNTER_SK, &Counter { value: 0 })?;
        match store.put(counter, Condition::NotExists).await {
            Ok(()) | Err(StoreError::ConditionFailed) => {}
            Err(other) => return Err(other),
        }
        let counter: Counter = store::update(store, COUNTER_PK, COUNTER_SK, |c: Counter| {
            Ok(Counter { value: c.value + 1 })
        })
        .await?;
        Ok(Self {
            id: counter.value,
            uuid: Uuid::now_v7(),
            organization_id: new.organization_id,
            name: new.name.to_owned(),
            timezone: new.timezone.to_owned(),
            week_start_day: None,
            test_account_filters: default_test_account_filters(),
            path_cleaning_filters: Vec::new(),
            api_token: random_token("phc_", 43),
            created_at: store.clock().now(),
            updated_at: None,
        })
    }

    fn item(&self) -> Result<Item, StoreError> {
        Ok(Item::of(Self::pk(self.id), "TEAM", self)?
            .with_gsi1(format!("TOKEN#{}", self.api_token), "TEAM"))
    }

    /// The project and its entry in the organization's project list.
    pub fn put_ops(&self) -> Result<Vec<WriteOp>, StoreError> {
        Ok(vec![
            WriteOp::Put {
                item: self.item()?,
                condition: Condition::NotExists,
            },
            WriteOp::Put {
                item: Item::new(
                    super::Organization::pk(self.organization_id),
                    Self::pk(self.id),
                    serde_json::json!({ "project_id": self.id }),
                ),
                condition: Condition::NotExists,
            },
        ])
    }

    pub async fn load(store: &dyn Store, id: i64) -> Result<Option<Self>, StoreError> {
        store
            .get(&Self::pk(id), "TEAM")
            .await?
            .map(|item| item.parse())
            .transpose()
    }

    /// The project a `phc_` token belongs to (capture's look-up).
    pub async fn by_api_token(store: &dyn Store, token: &str) -> Result<Option<Self>, StoreError> {
        let page = store
            .query(
                &format!("TOKEN#{token}"),
                QueryOptions {
                    index: Index::Gsi1,
                    limit: Some(1),
                    ..Default::default()
                },
            )
            .await?;
        page.items.first().map(Item::parse).transpose()
    }

    /// Ids of an organization's projects, in id order as text.
    pub async fn ids_of_organization(
        store: &dyn Store,
        organization_id: Uuid,
    ) -> Result<Vec<i64>, StoreError> {
        let page = store
            .query(
                &super::Organization::pk(organization_id),
                QueryOptions {
                    sk_prefix: "TEAM#".into(),
                    ..Default::default()
                },
            )
            .await?;
        Ok(page
            .items
            .iter()
            .filter_map(|item| item.data.get("project_id").and_then(|v| v.as_i64()))
            .collect())
    }

    /// Applies `change` under optimistic locking and returns the stored project.
    pub async fn update(
        store: &dyn Store,
        id: i64,
        mut change: impl FnMut(&mut Project),
    ) -> Result<Self, StoreError> {
        let now = store.clock().now();
        store::update(store, &Self::pk(id), "TEAM", |mut project: Project| {
            change(&mut project);
            project.updated_at = Some(now);
            Ok(project)
        })
        .await
    }
}
