//! Object storage through the `object_store` crate: a local folder embedded, S3 in the cloud.

mod durable;

use std::sync::Arc;

use object_store::ObjectStore;
use object_store::aws::AmazonS3Builder;
use object_store::local::LocalFileSystem;

use crate::config::{Backend, Config};

#[derive(Debug, thiserror::Error)]
#[error("object storage: {0}")]
pub struct ObjectsError(String);

/// The object store the configuration names.
pub fn from_config(config: &Config) -> Result<Arc<dyn ObjectStore>, ObjectsError> {
    match config.backend {
        Backend::Sqlite => local(&config.objects_dir()),
        Backend::Dynamodb => s3(&config.bucket_name, config),
    }
}

/// A local folder whose writes are on disk when they return.
pub fn local(dir: &std::path::Path) -> Result<Arc<dyn ObjectStore>, ObjectsError> {
    std::fs::create_dir_all(dir).map_err(|e| ObjectsError(format!("{}: {e}", dir.display())))?;
    let store = LocalFileSystem::new_with_prefix(dir).map_err(|e| ObjectsError(e.to_string()))?;
    Ok(Arc::new(durable::DurableFileSystem::new(store)))
}

/// The whole local file system (paths from `/`), written as durably as [`local`]: Delta tables
/// address their files by absolute path.
pub fn local_root() -> Arc<dyn ObjectStore> {
    Arc::new(durable::DurableFileSystem::new(LocalFileSystem::new()))
}

/// S3 with credentials and region from the standard AWS environment; an emulator endpoint
/// (`AWS_ENDPOINT_URL`) switches to path-style addressing over plain HTTP.
pub fn s3(bucket: &str, config: &Config) -> Result<Arc<dyn ObjectStore>, ObjectsError> {
    let mut builder = AmazonS3Builder::from_env()
        .with_bucket_name(bucket)
        .with_region(&config.aws_region);
    if let Some(endpoint) = &config.aws_endpoint_url {
        builder = builder
            .with_endpoint(endpoint)
            .with_allow_http(true)
            .with_virtual_hosted_style_request(false);
    }
    let store = builder.build().map_err(|e| ObjectsError(e.to_string()))?;
    Ok(Arc::new(store))
}
