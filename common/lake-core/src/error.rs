//! The lake's one error type, shared by every module that reads or writes the tables, and
//! [`Context`], what we were doing when a cause of ours failed.

use std::error::Error;

use deltalake_core::DeltaTableError;

use crate::shred::registry::RegistryError;

/// A failure reading or writing the lake: object storage, the Delta log, the Store, Arrow.
#[derive(Debug, thiserror::Error)]
pub enum LakeError {
    #[error("object storage: {0}")]
    Objects(#[from] object_store::Error),
    #[error("delta: {0}")]
    Delta(#[from] DeltaTableError),
    #[error("store: {0}")]
    Store(#[from] common::store::StoreError),
    #[error("arrow: {0}")]
    Arrow(#[from] deltalake_core::arrow::error::ArrowError),
}

impl From<RegistryError> for LakeError {
    /// The Store's failures stay typed; an invalid registry change is a Delta-side failure.
    fn from(error: RegistryError) -> Self {
        match error {
            RegistryError::Store(store) => LakeError::Store(store),
            invalid => LakeError::Delta(DeltaTableError::Generic(invalid.to_string())),
        }
    }
}

/// What we were doing when a cause of ours failed (`template x: <parser error>`).
#[derive(Debug, thiserror::Error)]
#[error("{context}")]
pub struct Context {
    context: String,
    #[source]
    source: Box<dyn Error + Send + Sync>,
}

impl Context {
    pub fn new(
        context: impl Into<String>,
        source: impl Into<Box<dyn Error + Send + Sync>>,
    ) -> Self {
        Self {
            context: context.into(),
            source: source.into(),
        }
    }
}
