//! Who is in a cohort, as stored: one item per person under the cohort's own partition
//! (`COHORTPEOPLE#<team>#<cohort>` / `PERSON#<uuid>`), so a flag request checks one person with
//! one read and a query lists the members with one partition read. A static cohort's members are
//! added by hand; a behavioural cohort's are replaced by each calculation.

use std::collections::BTreeSet;

use common::store::{self, Condition, Item, Store, StoreError, WriteOp};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// Items written per transaction when members are added or removed in bulk.
const BATCH: usize = 25;
const PERSON_PREFIX: &str = "PERSON#";

#[derive(Debug, Clone, Serialize, Deserialize)]
struct Member {
    person: Uuid,
}

pub fn members_pk(team_id: i64, cohort_id: i64) -> String {
    format!("COHORTPEOPLE#{team_id}#{cohort_id}")
}

fn member_sk(person: Uuid) -> String {
    format!("{PERSON_PREFIX}{person}")
}

/// Whether `person` is a stored member of the cohort.
pub async fn contains(
    store: &dyn Store,
    team_id: i64,
    cohort_id: i64,
    person: Uuid,
) -> Result<bool, StoreError> {
    Ok(store
        .get(&members_pk(team_id, cohort_id), &member_sk(person))
        .await?
        .is_some())
}

/// Every stored member, in id order.
pub async fn list(
    store: &dyn Store,
    team_id: i64,
    cohort_id: i64,
) -> Result<Vec<Uuid>, StoreError> {
    let members: Vec<Member> =
        store::list_prefix(store, &members_pk(team_id, cohort_id), PERSON_PREFIX).await?;
    Ok(members.into_iter().map(|member| member.person).collect())
}

/// Adds `persons` (already-members are kept as they are); the number of members afterwards.
pub async fn add(
    store: &dyn Store,
    team_id: i64,
    cohort_id: i64,
    persons: &[Uuid],
) -> Result<usize, StoreError> {
    let pk = members_pk(team_id, cohort_id);
    let unique: BTreeSet<Uuid> = persons.iter().copied().collect();
    let puts = unique
        .into_iter()
        .map(|person| {
            Ok(WriteOp::Put {
                item: Item::of(pk.clone(), member_sk(person), &Member { person })?,
                condition: Condition::None,
            })
        })
        .collect::<Result<Vec<_>, StoreError>>()?;
    write_in_batches(store, puts).await?;
    Ok(list(store, team_id, cohort_id).await?.len())
}

/// Removes `person`; whether it was a member.
pub async fn remove(
    store: &dyn Store,
    team_id: i64,
    cohort_id: i64,
    person: Uuid,
) -> Result<bool, StoreError> {
    match store
        .delete(
            &members_pk(team_id, cohort_id),
            &member_sk(person),
            Condition::Exists,
        )
        .await
    {
        Ok(()) => Ok(true),
        Err(StoreError::ConditionFailed) => Ok(false),
        Err(other) => Err(other),
    }
}

/// Makes the stored members exactly `persons` (a calculation's answer): adds the new ones,
/// removes those who left.
pub async fn replace(
    store: &dyn Store,
    team_id: i64,
    cohort_id: i64,
    persons: &BTreeSet<Uuid>,
) -> Result<(), StoreError> {
    let pk = members_pk(team_id, cohort_id);
    let current: BTreeSet<Uuid> = list(store, team_id, cohort_id).await?.into_iter().collect();
    let mut ops = Vec::new();
    for person in persons.difference(&current) {
        ops.push(WriteOp::Put {
            item: Item::of(pk.clone(), member_sk(*person), &Member { person: *person })?,
            condition: Condition::None,
        });
    }
    for person in current.difference(persons) {
        ops.push(WriteOp::Delete {
            pk: pk.clone(),
            sk: member_sk(*person),
            condition: Condition::None,
        });
    }
    write_in_batches(store, ops).await
}

async fn write_in_batches(store: &dyn Store, ops: Vec<WriteOp>) -> Result<(), StoreError> {
    let groups: Vec<Vec<WriteOp>> = ops.chunks(BATCH).map(<[WriteOp]>::to_vec).collect();
    if groups.is_empty() {
        return Ok(());
    }
    store.transact_write_each(groups).await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn add_remove_replace() {
        let store = common::testing::memory_store();
        let people: Vec<Uuid> = (0..60).map(|_| Uuid::new_v4()).collect();
        assert_eq!(add(&store, 1, 7, &people[..40]).await.unwrap(), 40);
        assert_eq!(add(&store, 1, 7, &people[30..50]).await.unwrap(), 50);
        assert!(contains(&store, 1, 7, people[45]).await.unwrap());
        assert!(!contains(&store, 1, 8, people[45]).await.unwrap());
        assert!(!contains(&store, 2, 7, people[45]).await.unwrap());
        assert!(remove(&store, 1, 7, people[45]).await.unwrap());
        assert!(!remove(&store, 1, 7, people[45]).await.unwrap());
        let wanted: BTreeSet<Uuid> = people[20..60].iter().copied().collect();
        replace(&store, 1, 7, &wanted).await.unwrap();
        let now: BTreeSet<Uuid> = list(&store, 1, 7).await.unwrap().into_iter().collect();
        assert_eq!(now, wanted);
    }
}
