//! Creating organizations, projects, users and keys: first-start bootstrap and `analytics admin`.

use uuid::Uuid;

use crate::models::{
    Membership, MembershipLevel, NewProject, NewUser, Organization, PersonalApiKey, Project, User,
};
use crate::store::{Condition, Item, Store, StoreError, WriteOp};

#[derive(Debug, thiserror::Error)]
pub enum ProvisionError {
    #[error("{0}")]
    Invalid(String),
    #[error("a user with e-mail {0} already exists")]
    EmailTaken(String),
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// What a first start creates; `key_secret` is shown once and never stored.
#[derive(Debug, Clone)]
pub struct Bootstrap {
    pub organization: Organization,
    pub project: Project,
    pub user: User,
    pub key: PersonalApiKey,
    pub key_secret: String,
}

pub const DEFAULT_TIMEZONE: &str = "UTC";

/// Validates an IANA time zone name.
pub fn valid_timezone(name: &str) -> bool {
    name.parse::<chrono_tz::Tz>().is_ok()
}

fn validate_email(email: &str) -> Result<(), ProvisionError> {
    let valid = email.len() <= 254
        && email.split_once('@').is_some_and(|(local, domain)| {
            !local.is_empty() && !domain.is_empty() && !email.contains(char::is_whitespace)
        });
    if valid {
        Ok(())
    } else {
        Err(ProvisionError::Invalid(format!(
            "`{email}` is not a valid e-mail address"
        )))
    }
}

/// On an empty store: an organization, a project, a user and a full-scope key, created once
/// even when several processes start together. `None` when the store was already set up.
pub async fn bootstrap_if_empty(store: &dyn Store) -> Result<Option<Bootstrap>, ProvisionError> {
    if store.get("META", "BOOTSTRAP").await?.is_some() {
        return Ok(None);
    }
    let now = store.clock().now();
    let organization = Organization::new("Default organization", now);
    let project = Project::allocate(
        store,
        NewProject {
            organization_id: organization.id,
            name: "Default project",
            timezone: DEFAULT_TIMEZONE,
        },
    )
    .await?;
    let mut user = User::new(
        NewUser {
            email: "admin@localhost",
            first_name: "Admin",
            last_name: "",
            password: None,
            is_staff: true,
        },
        now,
    )?;
    user.current_organization_id = Some(organization.id);
    user.current_team_id = Some(project.id);
    let (key, key_secret) = PersonalApiKey::create(
        user.uuid,
        "Bootstrap key",
        vec!["*".into()],
        None,
        None,
        now,
    );

    let mut ops = vec![
        WriteOp::Put {
            item: Item::new(
                "META",
                "BOOTSTRAP",
                serde_json::json!({ "user_uuid": user.uuid }),
            ),
            condition: Condition::NotExists,
        },
        organization.put_op()?,
        Membership::new(organization.id, user.uuid, MembershipLevel::Owner, now).put_op()?,
        key.put_op()?,
    ];
    ops.extend(project.put_ops()?);
    ops.extend(user.put_ops()?);
    match store.transact_write(ops).await {
        Ok(()) => Ok(Some(Bootstrap {
            organization,
            project,
            user,
            key,
            key_secret,
        })),
        // Another process bootstrapped first.
        Err(StoreError::ConditionFailed) => Ok(None),
        Err(other) => Err(other.into()),
    }
}

pub async fn create_organization(
    store: &dyn Store,
    name: &str,
) -> Result<Organization, ProvisionError> {
    let name = name.trim();
    if name.is_empty() || name.chars().count() > 64 {
        return Err(ProvisionError::Invalid(
            "an organization name has 1 to 64 characters".into(),
        ));
    }
    let organization = Organization::new(name, store.clock().now());
    store.transact_write(vec![organization.put_op()?]).await?;
    Ok(organization)
}

pub async fn create_project(
    store: &dyn Store,
    organization_id: Uuid,
    name: &str,
    timezone: &str,
) -> Result<Project, ProvisionError> {
    let name = name.trim();
    if name.is_empty() || name.chars().count() > 200 {
        return Err(ProvisionError::Invalid(
            "a project name has 1 to 200 characters".into(),
        ));
    }
    if !valid_timezone(timezone) {
        return Err(ProvisionError::Invalid(format!(
            "`{timezone}` is not an IANA time zone"
        )));
    }
    if Organization::load(store, organization_id).await?.is_none() {
        return Err(ProvisionError::Invalid(format!(
            "no organization {organization_id}"
        )));
    }
    let project = Project::allocate(
        store,
        NewProject {
            organization_id,
            name,
            timezone,
        },
    )
    .await?;
    store.transact_write(project.put_ops()?).await?;
    Ok(project)
}

/// A user who belongs to `organization_id`, with its first project as their current one.
pub async fn create_user(
    store: &dyn Store,
    new: NewUser<'_>,
    organization_id: Uuid,
    level: MembershipLevel,
) -> Result<User, ProvisionError> {
    validate_email(new.email)?;
    if Organization::load(store, organization_id).await?.is_none() {
        return Err(ProvisionError::Invalid(format!(
            "no organization {organization_id}"
        )));
    }
    let email = new.email.to_owned();
    let now = store.clock().now();
    let mut user = User::new(new, now)?;
    user.current_organization_id = Some(organization_id);
    user.current_team_id = Project::ids_of_organization(store, organization_id)
        .await?
        .into_iter()
        .min();
    let mut ops = user.put_ops()?;
    ops.push(Membership::new(organization_id, user.uuid, level, now).put_op()?);
    match store.transact_write(ops).await {
        Ok(()) => Ok(user),
        Err(StoreError::ConditionFailed) => Err(ProvisionError::EmailTaken(email)),
        Err(other) => Err(other.into()),
    }
}

/// A key for `user_uuid`; returns the key and its secret (shown once).
pub async fn create_key(
    store: &dyn Store,
    user_uuid: Uuid,
    label: &str,
    scopes: Vec<String>,
    scoped_teams: Option<Vec<i64>>,
    scoped_organizations: Option<Vec<Uuid>>,
) -> Result<(PersonalApiKey, String), ProvisionError> {
    if label.trim().is_empty() || label.chars().count() > crate::models::MAX_LABEL_CHARS {
        return Err(ProvisionError::Invalid(format!(
            "a key label has 1 to {} characters",
            crate::models::MAX_LABEL_CHARS
        )));
    }
    for scope in &scopes {
        let valid = scope == "*"
            || scope.split_once(':').is_some_and(|(object, action)| {
                !object.is_empty()
                    && object.chars().all(|c| c.is_ascii_lowercase() || c == '_')
                    && (action == "read" || action == "write")
            });
        if !valid {
            return Err(ProvisionError::Invalid(format!(
                "`{scope}` is not a scope (`object:read`, `object:write` or `*`)"
            )));
        }
    }
    if User::load(store, user_uuid).await?.is_none() {
        return Err(ProvisionError::Invalid(format!("no user {user_uuid}")));
    }
    let (key, secret) = PersonalApiKey::create(
        user_uuid,
        label.trim(),
        scopes,
        scoped_teams,
        scoped_organizations,
        store.clock().now(),
    );
    store.transact_write(vec![key.put_op()?]).await?;
    Ok((key, secret))
}
