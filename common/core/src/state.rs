//! What every handler gets: configuration, the entity store, object storage, secrets and mail.

use std::sync::Arc;

use object_store::ObjectStore;

use crate::config::{Backend, Config, MailerKind};
use crate::mailer::{Mailer, NoMailer, OutboxMailer};
use crate::secrets::Secrets;
use crate::store::{DynamoStore, SqliteStore, Store};

#[derive(Clone)]
pub struct AppState {
    pub config: Arc<Config>,
    pub store: Arc<dyn Store>,
    pub objects: Arc<dyn ObjectStore>,
    pub secrets: Arc<Secrets>,
    pub mailer: Arc<dyn Mailer>,
}

#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error(transparent)]
    Store(#[from] crate::store::StoreError),
    #[error(transparent)]
    Objects(#[from] crate::objects::ObjectsError),
    #[error(transparent)]
    Config(#[from] crate::config::ConfigError),
    #[error(transparent)]
    Secrets(#[from] crate::secrets::SecretsError),
    #[error("ANALYTICS_SECRET_KEY is required on the dynamodb backend")]
    MissingSecretKey,
}

impl AppState {
    /// Connects the backends the configuration names.
    pub async fn from_config(config: Config) -> Result<Self, StartError> {
        let store: Arc<dyn Store> = match config.backend {
            Backend::Sqlite => Arc::new(SqliteStore::open(&config.sqlite_path())?),
            Backend::Dynamodb => Arc::new(DynamoStore::from_env(&config.table_name).await),
        };
        let objects = crate::objects::from_config(&config)?;
        let secrets = match (&config.secret_key, config.backend) {
            (Some(key), _) => Secrets::from_base64(key)?,
            (None, Backend::Sqlite) => Secrets::from_key_file(&config.secret_key_path())?,
            (None, Backend::Dynamodb) => return Err(StartError::MissingSecretKey),
        };
        let mailer = mailer_for(&config).await;
        Ok(Self {
            config: Arc::new(config),
            store,
            objects,
            secrets: Arc::new(secrets),
            mailer,
        })
    }
}

async fn mailer_for(config: &Config) -> Arc<dyn Mailer> {
    match config.mailer {
        MailerKind::Outbox => Arc::new(OutboxMailer::new(&config.outbox_dir(), &config.mail_from)),
        #[cfg(feature = "ses")]
        MailerKind::Ses => Arc::new(crate::mailer::SesMailer::from_env(&config.mail_from).await),
        #[cfg(not(feature = "ses"))]
        MailerKind::Ses => Arc::new(NoMailer),
        MailerKind::None => Arc::new(NoMailer),
    }
}
