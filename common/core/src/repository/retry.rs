//! The retries of an optimistic write: read, decide, write under the conditions of what was read,
//! and when another writer got there first (a condition failed), read again and decide again.
//! The same loop serves a repository (a counter that moved under a creation) and a route (a
//! change whose entity changed under it).

use std::future::Future;

use super::WriteError;
use crate::store;

/// What one write came to: done (with its answer), or why not.
pub type Written<T, Refusal = super::Never> = Result<T, WriteError<Refusal>>;

/// Waits before try `attempt` (counted from 0) of a write that lost a race: nothing before the
/// first, [`store::conflict_backoff`] before the others.
pub async fn pause_before(attempt: u32) {
    if attempt > 0 {
        tokio::time::sleep(store::conflict_backoff(attempt)).await;
    }
}

/// Runs `attempt` until its write is done, at most `attempts` times, pausing before each retry
/// ([`pause_before`]).
///
/// Each try reads what it needs, decides and writes. An error of the try itself (`E`: a 404, a
/// refused body, a Store failure while reading) ends the tries at once; so does its write's
/// outcome ([`Written`]), unless the write lost a race ([`WriteError::Raced`]), which starts
/// another try. A write that failed otherwise, or still lost after the last try, is answered
/// as `answer` maps it (the identity in a repository, the family's 409 in a route).
///
/// `attempt` makes each try's future anew: it holds references (`|| async move { ... }` over
/// `&` bindings), not the closure's own state, so the future stays `Send` for a route.
pub async fn retry<T, Refusal, E, F, Fut>(
    attempts: u32,
    answer: impl Fn(WriteError<Refusal>) -> E,
    mut attempt: F,
) -> Result<T, E>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<Written<T, Refusal>, E>>,
{
    for n in 0..attempts {
        pause_before(n).await;
        match attempt().await? {
            Err(WriteError::Raced) => continue,
            written => return written.map_err(answer),
        }
    }
    Err(answer(WriteError::Raced))
}
