//! Entities numbered by a counter of their project (actions, cohorts, experiments, flags,
//! dashboards, insights, holdouts, saved metrics): a new one takes the counter's next id, and the
//! counter's write joins the new entity's transaction, so two creations never share an id.

use chrono::{DateTime, Utc};

use super::retry::retry;
use super::write::{commit, plan_new};
use super::{Stamped, Stamps, WriteError, team_pk};
use crate::activity::Actor;
use crate::store::{self, Store, StoreError, WriteOp};

/// An entity whose id comes from its project's counter item (`COUNTER#<KIND>`).
pub trait Numbered: Stamped<Key = i64> + Clone {
    /// The sort key of the counter item, in the project's partition.
    const COUNTER: &'static str;

    /// Takes the id it was given (a holdout's groups name it too).
    fn take_id(&mut self, id: i64) {
        self.set_stamps(Stamps {
            id,
            ..self.stamps()
        });
    }
}

/// Gives `entity` its project's next id and answers the counter's write, which must join the
/// transaction that stores it: that transaction fails if another writer took the id meanwhile.
pub async fn number<E: Numbered>(
    store: &dyn Store,
    team_id: i64,
    entity: &mut E,
) -> Result<WriteOp, StoreError> {
    let (id, counter) = store::claim_next_id(store, &team_pk(team_id), E::COUNTER).await?;
    entity.take_id(id);
    Ok(counter)
}

/// [`plan_new`](super::plan_new) with the project's next id ([`number`]): the counter's write
/// comes first.
pub async fn plan_numbered<E: Numbered>(
    store: &dyn Store,
    entity: &mut E,
    team_id: i64,
    actor: &Actor,
    at: DateTime<Utc>,
) -> Result<Vec<WriteOp>, StoreError> {
    let mut ops = vec![number(store, team_id, entity).await?];
    ops.extend(plan_new(entity, team_id, actor, at)?);
    Ok(ops)
}

/// Stores `entity` with its project's next id and its `created` entry, in one transaction; a
/// lost race on the counter is retried. Answers the entity as stored.
pub async fn create_numbered<E: Numbered, Refusal>(
    store: &dyn Store,
    team_id: i64,
    entity: E,
    actor: &Actor,
    at: DateTime<Utc>,
) -> Result<E, WriteError<Refusal>> {
    create_linked(store, team_id, entity, actor, at, |_| Ok(Vec::new())).await
}

/// [`create_numbered`] with the writes `link` makes for the entity as it will be stored (its id
/// known) in the same transaction: an experiment naming a new cohort as its exposure cohort.
/// When the transaction fails with the counter where it was, an item `link` wrote changed:
/// [`WriteError::Raced`] at once, for the caller to read it again.
pub async fn create_linked<E, Refusal, L>(
    store: &dyn Store,
    team_id: i64,
    entity: E,
    actor: &Actor,
    at: DateTime<Utc>,
    link: L,
) -> Result<E, WriteError<Refusal>>
where
    E: Numbered,
    L: Fn(&E) -> Result<Vec<WriteOp>, StoreError> + Sync,
{
    let (entity, link) = (&entity, &link);
    retry(
        store::UPDATE_ATTEMPTS,
        std::convert::identity,
        || async move {
            let mut entity = entity.clone();
            let mut ops = plan_numbered(store, &mut entity, team_id, actor, at).await?;
            let linked = link(&entity)?;
            let links = !linked.is_empty();
            ops.extend(linked);
            if commit(store, ops).await? {
                return Ok(Ok(entity));
            }
            if links
                && store::claim_next_id(store, &team_pk(team_id), E::COUNTER)
                    .await?
                    .0
                    == *entity.key()
            {
                return Err(WriteError::Raced);
            }
            // Another creation took the id first: number again.
            Ok(Err(WriteError::Raced))
        },
    )
    .await
}
