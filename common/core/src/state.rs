//! What every handler gets: configuration, the entity store, object storage, secrets and mail.

use std::sync::Arc;

use object_store::ObjectStore;

use crate::cache::Cache;
use crate::clock::{Clock, SystemClock};
use crate::config::{Backend, Config, MailerKind};
use crate::jobs::Jobs;
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
    /// The AWS configuration (region, credentials, `AWS_ENDPOINT_URL`), loaded once at start and
    /// shared by every AWS client; `None` when nothing here talks to AWS (the embedded backend
    /// with no job queue and no SES).
    pub aws: Option<aws_config::SdkConfig>,
    /// The job queue's client, when `ANALYTICS_QUEUE_URL` names one; `None` runs jobs in-process.
    pub sqs: Option<aws_sdk_sqs::Client>,
    /// Outbound HTTP (the language model behind `draft_sql`): one connection pool per process.
    pub http: reqwest::Client,
    /// Where every "now" comes from (tests hold a clock they move by hand).
    pub clock: Arc<dyn Clock>,
    /// The background jobs this process can run, and how their runs are delivered.
    pub jobs: Arc<Jobs>,
    /// This process's short-lived copies of what the Store holds (token -> project, a project's
    /// flags), read with `clock`'s time.
    pub cache: Arc<Cache>,
    /// Capture's staging log on the embedded backend; `None` on S3, where each accepted request
    /// is one staged object.
    pub staging_log: Option<Arc<crate::staging::log::StagingLog>>,
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
    #[error("cannot build the outbound HTTP client")]
    Http(#[source] reqwest::Error),
}

impl AppState {
    /// Connects the backends the configuration names.
    pub async fn from_config(config: Config) -> Result<Self, StartError> {
        let aws = match uses_aws(&config) {
            true => Some(load_aws(&config).await),
            false => None,
        };
        let clock: Arc<dyn Clock> = Arc::new(SystemClock);
        // `uses_aws` holds for the dynamodb backend, so `aws` is there whenever it is asked for.
        let store: Arc<dyn Store> = match &aws {
            Some(aws) if config.backend == Backend::Dynamodb => Arc::new(
                DynamoStore::from_sdk_config(aws, &config.table_name).with_clock(clock.clone()),
            ),
            _ => Arc::new(SqliteStore::open(&config.sqlite_path())?.with_clock(clock.clone())),
        };
        let sqs = match (&aws, &config.query.job_queue_url) {
            (Some(aws), Some(_)) => Some(aws_sdk_sqs::Client::new(aws)),
            _ => None,
        };
        let http = reqwest::Client::builder()
            .connect_timeout(std::time::Duration::from_secs(10))
            .build()
            .map_err(StartError::Http)?;
        let objects = crate::objects::from_config(&config)?;
        let secrets = match (&config.secret_key, config.backend) {
            (Some(key), _) => Secrets::from_base64(key)?,
            (None, Backend::Sqlite) => Secrets::from_key_file(&config.secret_key_path())?,
            (None, Backend::Dynamodb) => return Err(StartError::MissingSecretKey),
        };
        let mailer = mailer_for(&config, aws.as_ref());
        let staging_log = (config.backend == Backend::Sqlite).then(|| {
            Arc::new(crate::staging::log::StagingLog::new(
                config.data_dir.join(crate::staging::log::LOG_DIR),
            ))
        });
        Ok(Self {
            config: Arc::new(config),
            store,
            objects,
            secrets: Arc::new(secrets),
            mailer,
            aws,
            sqs,
            http,
            clock,
            jobs: Arc::new(Jobs::default()),
            cache: Arc::new(Cache::default()),
            staging_log,
        })
    }
}

/// Whether anything configured talks to AWS: the DynamoDB backend, an SQS job queue, SES mail.
fn uses_aws(config: &Config) -> bool {
    config.backend == Backend::Dynamodb
        || config.query.job_queue_url.is_some()
        || config.mailer == MailerKind::Ses
}

/// The standard AWS chain (environment, profile, instance metadata for region and credentials),
/// with the configured emulator endpoint and `AWS_REGION` (default `us-east-1`) as the fallback
/// region.
pub async fn load_aws(config: &Config) -> aws_config::SdkConfig {
    let region = aws_config::meta::region::RegionProviderChain::default_provider()
        .or_else(aws_config::Region::new(config.aws_region.clone()));
    let mut loader = aws_config::defaults(aws_config::BehaviorVersion::latest()).region(region);
    if let Some(endpoint) = &config.aws_endpoint_url {
        loader = loader.endpoint_url(endpoint);
    }
    loader.load().await
}

fn mailer_for(config: &Config, aws: Option<&aws_config::SdkConfig>) -> Arc<dyn Mailer> {
    match (config.mailer, aws) {
        (MailerKind::Outbox, _) => {
            Arc::new(OutboxMailer::new(&config.outbox_dir(), &config.mail_from))
        }
        #[cfg(feature = "ses")]
        (MailerKind::Ses, Some(aws)) => {
            Arc::new(crate::mailer::SesMailer::new(aws, &config.mail_from))
        }
        (MailerKind::Ses | MailerKind::None, _) => Arc::new(NoMailer),
    }
}
