use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::store::{Condition, Item, Store, StoreError, WriteOp};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Organization {
    pub id: Uuid,
    pub name: String,
    pub created_at: DateTime<Utc>,
}

/// PostHog's organization membership levels.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MembershipLevel {
    Member,
    Admin,
    Owner,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Membership {
    pub organization_id: Uuid,
    pub user_uuid: Uuid,
    pub level: MembershipLevel,
    pub joined_at: DateTime<Utc>,
}

impl Organization {
    pub fn new(name: &str, now: DateTime<Utc>) -> Self {
        Self {
            id: Uuid::now_v7(),
            name: name.to_owned(),
            created_at: now,
        }
    }

    pub fn pk(id: Uuid) -> String {
        format!("ORG#{id}")
    }

    pub fn put_op(&self) -> Result<WriteOp, StoreError> {
        Ok(WriteOp::Put {
            item: Item::of(Self::pk(self.id), "ORG", self)?,
            condition: Condition::NotExists,
        })
    }

    pub async fn load(store: &dyn Store, id: Uuid) -> Result<Option<Self>, StoreError> {
        store
            .get(&Self::pk(id), "ORG")
            .await?
            .map(|item| item.parse())
            .transpose()
    }
}

impl Membership {
    pub fn new(
        organization_id: Uuid,
        user_uuid: Uuid,
        level: MembershipLevel,
        now: DateTime<Utc>,
    ) -> Self {
        Self {
            organization_id,
            user_uuid,
            level,
            joined_at: now,
        }
    }

    fn sk(user_uuid: Uuid) -> String {
        format!("MEMBER#{user_uuid}")
    }

    /// Stored under the organization; GSI1 lists a user's organizations.
    pub fn put_op(&self) -> Result<WriteOp, StoreError> {
        let item = Item::of(
            Organization::pk(self.organization_id),
            Self::sk(self.user_uuid),
            self,
        )?
        .with_gsi1(
            format!("USER#{}", self.user_uuid),
            Organization::pk(self.organization_id),
        );
        Ok(WriteOp::Put {
            item,
            condition: Condition::NotExists,
        })
    }

    pub async fn load(
        store: &dyn Store,
        organization_id: Uuid,
        user_uuid: Uuid,
    ) -> Result<Option<Self>, StoreError> {
        store
            .get(&Organization::pk(organization_id), &Self::sk(user_uuid))
            .await?
            .map(|item| item.parse())
            .transpose()
    }

    /// Every membership of one user.
    pub async fn of_user(store: &dyn Store, user_uuid: Uuid) -> Result<Vec<Self>, StoreError> {
        let page = store
            .query(
                &format!("USER#{user_uuid}"),
                crate::store::QueryOptions {
                    index: crate::store::Index::Gsi1,
                    sk_prefix: "ORG#".into(),
                    ..Default::default()
                },
            )
            .await?;
        page.items.iter().map(Item::parse).collect()
    }
}
