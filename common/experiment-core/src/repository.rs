//! Experiments in the Store. A project's experiments live in its partition (`TEAM#<id>`) under
//! `EXPERIMENT#<zero-padded id>`, so one prefix query lists them in id order; ids come from the
//! project's `COUNTER#EXPERIMENT` item. An experiment, the flag it creates or rewrites, the
//! counter and the activity entries are written in one transaction.

use common::store::{QueryOptions, Store, StoreError};

use crate::Experiment;

/// The activity log's scope for experiments (PostHog's model name).
pub const SCOPE: &str = "Experiment";

const EXPERIMENT_PREFIX: &str = "EXPERIMENT#";
pub(crate) const COUNTER_SK: &str = "COUNTER#EXPERIMENT";

pub(crate) fn team_pk(team_id: i64) -> String {
    format!("TEAM#{team_id}")
}

/// Zero-padded so sort-key order is id order.
pub fn experiment_sk(id: i64) -> String {
    format!("{EXPERIMENT_PREFIX}{id:019}")
}

/// An experiment as read, with the Store item's version that a write must still find.
#[derive(Debug, Clone, PartialEq)]
pub struct Stored {
    pub experiment: Experiment,
    pub item_version: u64,
}

/// Every experiment of a project, deleted ones included, in id order.
pub async fn list_all(store: &dyn Store, team_id: i64) -> Result<Vec<Experiment>, StoreError> {
    let pk = team_pk(team_id);
    let mut experiments = Vec::new();
    let mut cursor = None;
    loop {
        let page = store
            .query(
                &pk,
                QueryOptions {
                    sk_prefix: EXPERIMENT_PREFIX.into(),
                    limit: Some(1000),
                    cursor: cursor.take(),
                    ..Default::default()
                },
            )
            .await?;
        for item in &page.items {
            experiments.push(item.parse::<Experiment>()?);
        }
        match page.cursor {
            Some(next) => cursor = Some(next),
            None => return Ok(experiments),
        }
    }
}

/// Every experiment of a project that is not deleted, in id order.
pub async fn list_live(store: &dyn Store, team_id: i64) -> Result<Vec<Experiment>, StoreError> {
    let mut experiments = list_all(store, team_id).await?;
    experiments.retain(|experiment| !experiment.deleted);
    Ok(experiments)
}

/// One experiment, deleted or not.
pub async fn get(store: &dyn Store, team_id: i64, id: i64) -> Result<Option<Stored>, StoreError> {
    let Some(item) = store.get(&team_pk(team_id), &experiment_sk(id)).await? else {
        return Ok(None);
    };
    Ok(Some(Stored {
        experiment: item.parse()?,
        item_version: item.version,
    }))
}

/// One experiment unless it is deleted (what every read shows; deleted experiments vanish).
pub async fn get_live(
    store: &dyn Store,
    team_id: i64,
    id: i64,
) -> Result<Option<Experiment>, StoreError> {
    Ok(get(store, team_id, id)
        .await?
        .map(|stored| stored.experiment)
        .filter(|experiment| !experiment.deleted))
}
