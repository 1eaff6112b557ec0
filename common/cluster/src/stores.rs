//! The lake's object store, as every process of the cluster reads it: the same settings as the
//! query function (`ANALYTICS_BACKEND`, `ANALYTICS_BUCKET`, the AWS environment). A local folder
//! is read through `file://`, so it must be at the same path on every machine (one machine, or
//! a shared mount).

use std::sync::Arc;

use common::config::{Backend, Config};
use datafusion::execution::object_store::{
    DefaultObjectStoreRegistry, ObjectStoreRegistry, ObjectStoreUrl,
};

use crate::processes::ClusterError;

/// A registry holding the lake's bucket (`file://` is always there).
pub fn registry(config: &Config) -> Result<Arc<dyn ObjectStoreRegistry>, ClusterError> {
    let registry = DefaultObjectStoreRegistry::new();
    if config.backend == Backend::Dynamodb {
        let store = common::objects::s3(&config.bucket_name, config)?;
        let url = ObjectStoreUrl::parse(format!("s3://{}", config.bucket_name))?;
        registry.register_store(url.as_ref(), store);
    }
    Ok(Arc::new(registry))
}
