//! `analytics admin`: provisioning from the command line. Every command prints one JSON object.

use std::path::PathBuf;

use anyhow::{Context, bail};
use clap::Subcommand;
use common::config::Backend;
use common::models::{MembershipLevel, NewUser, User};
use common::provisioning::{self, DEFAULT_TIMEZONE, bootstrap_if_empty};
use common::store::DynamoStore;
use lake::shred;
use serde_json::json;
use uuid::Uuid;

#[derive(Debug, Subcommand)]
pub enum AdminCommand {
    /// Prepare the backend (creates the DynamoDB table on an emulator) and bootstrap an empty store.
    Init,
    CreateOrganization {
        #[arg(long)]
        name: String,
    },
    CreateProject {
        #[arg(long)]
        organization: Uuid,
        #[arg(long)]
        name: String,
        #[arg(long, default_value = DEFAULT_TIMEZONE)]
        timezone: String,
    },
    CreateUser {
        #[arg(long)]
        email: String,
        #[arg(long)]
        organization: Uuid,
        #[arg(long, env = "ANALYTICS_NEW_USER_PASSWORD")]
        password: Option<String>,
        #[arg(long, default_value = "")]
        first_name: String,
        #[arg(long, default_value = "")]
        last_name: String,
        #[arg(long)]
        staff: bool,
        #[arg(long, value_enum, default_value = "member")]
        level: Level,
    },
    /// A personal API key; the key is printed once.
    CreateKey {
        /// The owner's uuid or e-mail.
        #[arg(long)]
        user: String,
        #[arg(long)]
        label: String,
        /// Comma-separated `object:read|write` scopes, or `*`.
        #[arg(long, value_delimiter = ',', default_value = "*")]
        scopes: Vec<String>,
        /// Comma-separated project ids the key is limited to.
        #[arg(long, value_delimiter = ',')]
        projects: Option<Vec<i64>>,
        /// Comma-separated organization ids the key is limited to.
        #[arg(long, value_delimiter = ',')]
        organizations: Option<Vec<Uuid>>,
    },
    /// The project's shredded property keys (columns of their own in the events table).
    #[command(subcommand)]
    Shredded(ShreddedCommand),
}

#[derive(Debug, Subcommand)]
pub enum ShreddedCommand {
    /// Every key, active or dropped, with its column, type and slot.
    List {
        #[arg(long)]
        project: i64,
    },
    /// Shred a key from now on; compaction backfills older files.
    Add {
        #[arg(long)]
        project: i64,
        #[arg(long)]
        key: String,
        #[arg(long, value_enum, default_value = "string")]
        r#type: ShreddedType,
        /// A person property (`person.properties.<key>`) instead of an event property.
        #[arg(long)]
        person: bool,
    },
    /// Stop writing a key's column; queries read it from the JSON where files lack it.
    Drop {
        #[arg(long)]
        project: i64,
        #[arg(long)]
        key: String,
        #[arg(long)]
        person: bool,
    },
}

#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum ShreddedType {
    String,
    Int64,
    Float64,
    Boolean,
}

impl From<ShreddedType> for shred::ColumnType {
    fn from(kind: ShreddedType) -> Self {
        match kind {
            ShreddedType::String => shred::ColumnType::String,
            ShreddedType::Int64 => shred::ColumnType::Int64,
            ShreddedType::Float64 => shred::ColumnType::Float64,
            ShreddedType::Boolean => shred::ColumnType::Boolean,
        }
    }
}

fn source(person: bool) -> shred::Source {
    if person {
        shred::Source::PersonProperties
    } else {
        shred::Source::Properties
    }
}

#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum Level {
    Member,
    Admin,
    Owner,
}

impl From<Level> for MembershipLevel {
    fn from(level: Level) -> Self {
        match level {
            Level::Member => MembershipLevel::Member,
            Level::Admin => MembershipLevel::Admin,
            Level::Owner => MembershipLevel::Owner,
        }
    }
}

pub async fn run(command: AdminCommand, data_dir: PathBuf) -> anyhow::Result<()> {
    let state = crate::serve::state_for(data_dir).await?;
    let store = state.store.as_ref();
    let output = match command {
        AdminCommand::Init => {
            if let (Backend::Dynamodb, Some(aws)) = (state.config.backend, &state.aws) {
                DynamoStore::from_sdk_config(aws, &state.config.table_name)
                    .create_table_if_missing()
                    .await?;
            }
            match bootstrap_if_empty(store).await? {
                Some(bootstrap) => json!({
                    "user": bootstrap.user.uuid,
                    "email": bootstrap.user.email,
                    "password": crate::serve::first_password(store, &bootstrap).await?,
                    "organization": bootstrap.organization.id,
                    "project": bootstrap.project.id,
                    "personal_api_key": bootstrap.key_secret,
                }),
                None => json!({ "already_initialized": true }),
            }
        }
        AdminCommand::CreateOrganization { name } => {
            let organization = provisioning::create_organization(store, &name).await?;
            json!({ "id": organization.id, "name": organization.name })
        }
        AdminCommand::CreateProject {
            organization,
            name,
            timezone,
        } => {
            let project =
                provisioning::create_project(store, organization, &name, &timezone).await?;
            json!({ "id": project.id, "name": project.name, "api_token": project.api_token })
        }
        AdminCommand::CreateUser {
            email,
            organization,
            password,
            first_name,
            last_name,
            staff,
            level,
        } => {
            let user = provisioning::create_user(
                store,
                NewUser {
                    email: &email,
                    first_name: &first_name,
                    last_name: &last_name,
                    password: password.as_deref(),
                    is_staff: staff,
                },
                organization,
                level.into(),
            )
            .await?;
            json!({ "uuid": user.uuid, "email": user.email, "current_project": user.current_team_id })
        }
        AdminCommand::CreateKey {
            user,
            label,
            scopes,
            projects,
            organizations,
        } => {
            let owner = match Uuid::parse_str(&user) {
                Ok(uuid) => User::load(store, uuid).await?,
                Err(_) => User::by_email(store, &user).await?,
            };
            let Some(owner) = owner else {
                bail!("no user {user}");
            };
            let (key, secret) = provisioning::create_key(
                store,
                owner.uuid,
                &label,
                scopes,
                projects,
                organizations,
            )
            .await
            .context("cannot create the key")?;
            json!({
                "id": key.id,
                "label": key.label,
                "mask_value": key.mask_value,
                "scopes": key.scopes,
                "scoped_teams": key.scoped_teams,
                "scoped_organizations": key.scoped_organizations,
                "personal_api_key": secret,
            })
        }
        AdminCommand::Shredded(command) => {
            let registry = match command {
                ShreddedCommand::List { project } => shred::registry::load(store, project).await?,
                ShreddedCommand::Add {
                    project,
                    key,
                    r#type,
                    person,
                } => shred::registry::add(
                    store,
                    project,
                    source(person),
                    &key,
                    r#type.into(),
                    shred::Origin::Admin,
                    state.clock.now(),
                )
                .await
                .map_err(|error| anyhow::anyhow!("{error}"))?,
                ShreddedCommand::Drop {
                    project,
                    key,
                    person,
                } => shred::registry::drop_key(store, project, source(person), &key)
                    .await
                    .map_err(|error| anyhow::anyhow!("{error}"))?,
            };
            serde_json::to_value(&registry)?
        }
    };
    println!("{output}");
    Ok(())
}
