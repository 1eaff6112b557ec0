//! Backends for tests: embedded in a temp dir, or DynamoDB + S3 on an emulator (`moto_server`).
//!
//! `ANALYTICS_TEST_AWS_ENDPOINT` names the emulator and `ANALYTICS_TEST_BUCKET` a bucket on it.
//! Unset, emulator tests are skipped locally but fail under CI (`CI` set): they must never pass
//! silently where the emulator is expected.

use std::sync::Arc;

use aws_sdk_dynamodb::config::{BehaviorVersion, Credentials, Region};
use object_store::ObjectStore;
use object_store::prefix::PrefixStore;

use crate::config::Config;
use crate::state::AppState;
use crate::store::{DynamoStore, SqliteStore};

/// The emulator endpoint, after checking it answers; `None` only when no emulator is expected.
pub fn emulator_endpoint() -> Option<String> {
    let endpoint = std::env::var("ANALYTICS_TEST_AWS_ENDPOINT")
        .ok()
        .filter(|value| !value.is_empty());
    let Some(endpoint) = endpoint else {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI is set but ANALYTICS_TEST_AWS_ENDPOINT is not: the DynamoDB/S3 tests cannot run"
        );
        eprintln!("ANALYTICS_TEST_AWS_ENDPOINT unset: skipping the DynamoDB/S3 half of this test");
        return None;
    };
    let authority = endpoint
        .trim_start_matches("http://")
        .trim_start_matches("https://")
        .trim_end_matches('/');
    let reachable = std::net::TcpStream::connect(authority).is_ok();
    assert!(
        reachable,
        "the emulator at {endpoint} is expected but unreachable"
    );
    Some(endpoint)
}

fn unique(prefix: &str) -> String {
    format!("{prefix}-{}", uuid::Uuid::new_v4().simple())
}

/// A DynamoDB client for the emulator with dummy credentials.
pub fn dynamo_client(endpoint: &str) -> aws_sdk_dynamodb::Client {
    let config = aws_sdk_dynamodb::Config::builder()
        .behavior_version(BehaviorVersion::latest())
        .endpoint_url(endpoint)
        .region(Region::new("us-east-1"))
        .credentials_provider(Credentials::new("test", "test", None, None, "tests"))
        .build();
    aws_sdk_dynamodb::Client::from_conf(config)
}

/// A store on a fresh table of its own.
pub async fn dynamo_store() -> Option<DynamoStore> {
    let endpoint = emulator_endpoint()?;
    let store = DynamoStore::new(dynamo_client(&endpoint), unique("test"));
    store
        .create_table_if_missing()
        .await
        .expect("create a test table on the emulator");
    Some(store)
}

/// The AWS configuration of the emulator, with dummy credentials.
pub async fn emulator_aws(endpoint: &str) -> aws_config::SdkConfig {
    aws_config::defaults(aws_config::BehaviorVersion::latest())
        .endpoint_url(endpoint)
        .region(Region::new("us-east-1"))
        .credentials_provider(Credentials::new("test", "test", None, None, "tests"))
        .load()
        .await
}

fn emulator_config(endpoint: &str) -> Config {
    let bucket = std::env::var("ANALYTICS_TEST_BUCKET").unwrap_or_else(|_| "analytics-test".into());
    Config::from_lookup(|name| match name {
        "ANALYTICS_BACKEND" => Some("dynamodb".into()),
        "ANALYTICS_BUCKET" => Some(bucket.clone()),
        "AWS_ENDPOINT_URL" => Some(endpoint.to_owned()),
        _ => None,
    })
    .expect("emulator configuration")
}

/// S3 on the emulator, under a prefix of its own in the shared test bucket.
pub fn s3_objects() -> Option<Arc<dyn ObjectStore>> {
    let endpoint = emulator_endpoint()?;
    let config = emulator_config(&endpoint);
    // The emulator accepts any credentials; fixed ones keep the test independent of the environment.
    let store = object_store::aws::AmazonS3Builder::new()
        .with_bucket_name(&config.bucket_name)
        .with_region("us-east-1")
        .with_endpoint(&endpoint)
        .with_allow_http(true)
        .with_virtual_hosted_style_request(false)
        .with_access_key_id("test")
        .with_secret_access_key("test")
        .build()
        .expect("S3 client for the emulator");
    Some(Arc::new(PrefixStore::new(store, unique("test").as_str())))
}

/// Which backends a test runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TestBackend {
    Embedded,
    Cloud,
}

/// An app state on a fresh, empty backend; the temp dir lives as long as the state is used.
pub struct TestState {
    pub state: AppState,
    pub backend: TestBackend,
    _dir: Option<tempfile::TempDir>,
}

impl TestState {
    pub async fn embedded() -> Self {
        let dir = tempfile::tempdir().expect("temp dir");
        let config = Config::from_lookup(|name| {
            (name == "ANALYTICS_DATA_DIR").then(|| dir.path().display().to_string())
        })
        .expect("embedded configuration");
        let state = AppState::from_config(config).await.expect("embedded state");
        Self {
            state,
            backend: TestBackend::Embedded,
            _dir: Some(dir),
        }
    }

    /// `None` when no emulator is expected (see the module docs).
    pub async fn cloud() -> Option<Self> {
        let store = dynamo_store().await?;
        let objects = s3_objects()?;
        let endpoint = emulator_endpoint()?;
        let mut config = emulator_config(&endpoint);
        config.table_name = store.table().to_owned();
        // Mail still lands in a local outbox, where tests read it.
        let dir = tempfile::tempdir().expect("temp dir");
        config.data_dir = dir.path().to_owned();
        config.mailer = crate::config::MailerKind::Outbox;
        let mailer = Arc::new(crate::mailer::OutboxMailer::new(
            &config.outbox_dir(),
            &config.mail_from,
        ));
        Some(Self {
            state: AppState {
                config: Arc::new(config),
                store: Arc::new(store),
                objects,
                secrets: Arc::new(crate::secrets::Secrets::random()),
                mailer,
                aws: Some(emulator_aws(&endpoint).await),
                // Tests that queue through SQS create their queue and set the client.
                sqs: None,
                http: reqwest::Client::new(),
                clock: Arc::new(crate::clock::SystemClock),
                jobs: Arc::new(crate::jobs::Jobs::default()),
                cache: Arc::new(crate::cache::Cache::default()),
                staging_log: None,
            },
            backend: TestBackend::Cloud,
            _dir: Some(dir),
        })
    }

    /// The embedded backend, then the cloud one when an emulator is expected.
    pub async fn all() -> Vec<Self> {
        let mut states = vec![Self::embedded().await];
        states.extend(Self::cloud().await);
        states
    }
}

impl TestState {
    /// The messages in this state's outbox, oldest first, as text.
    pub fn outbox(&self) -> Vec<String> {
        let Ok(entries) = std::fs::read_dir(self.state.config.outbox_dir()) else {
            return Vec::new();
        };
        let mut files: Vec<_> = entries
            .filter_map(Result::ok)
            .map(|entry| entry.path())
            .filter(|path| path.extension().is_some_and(|ext| ext == "eml"))
            .collect();
        // uuidv7 names sort by creation time.
        files.sort();
        files
            .iter()
            .map(|path| std::fs::read_to_string(path).expect("readable outbox message"))
            .collect()
    }
}

/// An in-memory SQLite store, for unit tests that need no files.
pub fn memory_store() -> SqliteStore {
    SqliteStore::in_memory().expect("in-memory sqlite")
}

/// A job, named as a test says, whose runs never end: a run of it stands for one whose
/// process is killed while it runs.
pub struct Hanging(pub &'static str);

#[async_trait::async_trait]
impl crate::jobs::Job for Hanging {
    fn name(&self) -> &'static str {
        self.0
    }

    async fn run(
        &self,
        _: &AppState,
        _: &crate::jobs::JobContext,
    ) -> Result<serde_json::Value, crate::jobs::JobError> {
        std::future::pending().await
    }
}

/// How often a background task got to run: a test reads it to tell whether some work left the
/// executor free for other tasks. Clones share one count.
#[derive(Debug, Clone, Default)]
pub struct Ticks(Arc<std::sync::atomic::AtomicUsize>);

impl Ticks {
    pub fn get(&self) -> usize {
        self.0.load(std::sync::atomic::Ordering::Relaxed)
    }
}

/// A task that counts its turns on the executor, yielding after each; stopped when dropped.
pub struct Ticker {
    pub ticks: Ticks,
    task: tokio::task::JoinHandle<()>,
}

impl Ticker {
    pub fn start() -> Self {
        let ticks = Ticks::default();
        let counter = ticks.0.clone();
        let task = tokio::spawn(async move {
            loop {
                counter.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                tokio::task::yield_now().await;
            }
        });
        Self { ticks, task }
    }
}

impl Drop for Ticker {
    fn drop(&mut self) {
        self.task.abort();
    }
}
