//! Why a write of an entity did not happen, for every family: it lost a race, the Store
//! failed, or the family refused it for a reason of its own (a flag's key or a survey's name
//! held by another), which is the error's parameter.

use crate::error::ApiError;
use crate::store::StoreError;

/// The reason of a family that refuses no write of its own.
pub type Never = std::convert::Infallible;

/// Why a write did not happen; `Refusal` is the family's own reason to refuse it, if it has
/// any.
#[derive(Debug, thiserror::Error)]
pub enum WriteError<Refusal = Never> {
    /// Something the write read changed before it committed: read again and try again.
    #[error("an item changed since it was read")]
    Raced,
    #[error(transparent)]
    Refused(Refusal),
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl<Refusal> WriteError<Refusal> {
    /// How the API answers it: a race lost on every try is a 409 naming what kept changing
    /// (`noun`: "feature flag"), a Store failure as every Store failure is answered, and the
    /// family's own refusal as `refused` words it.
    pub fn answer(self, noun: &str, refused: impl FnOnce(Refusal) -> ApiError) -> ApiError {
        match self {
            WriteError::Raced => ApiError::conflict(format!(
                "The {noun} kept changing under this request; retry."
            )),
            WriteError::Refused(reason) => refused(reason),
            WriteError::Store(error) => error.into(),
        }
    }
}

impl WriteError {
    /// [`WriteError::answer`] for a family that refuses nothing of its own.
    pub fn answer_plain(self, noun: &str) -> ApiError {
        self.answer(noun, |never| match never {})
    }
}
