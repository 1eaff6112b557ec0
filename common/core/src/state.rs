//! What every handler gets: configuration, the entity store and object storage.

use std::sync::Arc;

use object_store::ObjectStore;

use crate::config::{Backend, Config};
use crate::store::{DynamoStore, SqliteStore, Store};

#[derive(Clone)]
pub struct AppState {
    pub config: Arc<Config>,
    pub store: Arc<dyn Store>,
    pub objects: Arc<dyn ObjectStore>,
}

#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error(transparent)]
    Store(#[from] crate::store::StoreError),
    #[error(transparent)]
    Objects(#[from] crate::objects::ObjectsError),
    #[error(transparent)]
    Config(#[from] crate::config::ConfigError),
}

impl AppState {
    pub fn new(config: Config, store: Arc<dyn Store>, objects: Arc<dyn ObjectStore>) -> Self {
        Self {
            config: Arc::new(config),
            store,
            objects,
        }
    }

    /// Connects the backends the configuration names.
    pub async fn from_config(config: Config) -> Result<Self, StartError> {
        let store: Arc<dyn Store> = match config.backend {
            Backend::Sqlite => Arc::new(SqliteStore::open(&config.sqlite_path())?),
            Backend::Dynamodb => Arc::new(DynamoStore::from_env(&config.table_name).await),
        };
        let objects = crate::objects::from_config(&config)?;
        Ok(Self::new(config, store, objects))
    }
}
