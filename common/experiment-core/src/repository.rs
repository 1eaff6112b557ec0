//! Experiments in the Store. A project's experiments live in its partition (`TEAM#<id>`) under
//! `EXPERIMENT#<zero-padded id>`, so one prefix query lists them in id order; ids come from the
//! project's `COUNTER#EXPERIMENT` item. An experiment, the flag it creates or rewrites, the
//! counter and the activity entries are written in one transaction.

use chrono::{DateTime, Utc};
use common::activity::Actor;
use common::repository::{self as entities, Entity, Numbered, retry};
use common::store::{self, Store, StoreError, WriteOp};
use feature_flags::FeatureFlag;
use feature_flags::repository::{self as flags, NewFlag};

use crate::Experiment;

/// The activity log's scope for experiments (PostHog's model name).
pub const SCOPE: &str = "Experiment";

/// Ids of the links to saved metrics (PostHog numbers its through-table rows).
const LINK_COUNTER_SK: &str = "COUNTER#EXPERIMENT_SAVED_METRIC_LINK";

impl Entity for Experiment {
    const PREFIX: &'static str = "EXPERIMENT#";
    const SCOPE: &'static str = SCOPE;

    fn display_name(&self) -> String {
        self.name.clone()
    }
}

impl Numbered for Experiment {
    const COUNTER: &'static str = "COUNTER#EXPERIMENT";
}

common::stamped!(Experiment, i64, soft_deleted);
common::entity_reads! { Experiment, i64, Stored { experiment, item_version }, live }

/// Zero-padded so sort-key order is id order.
pub fn experiment_sk(id: i64) -> String {
    Experiment::sort_key(&id)
}

/// What happens to the experiment's flag in the experiment's transaction.
#[derive(Debug)]
pub enum FlagWrite {
    /// The flag stays as it is.
    Keep,
    /// A new flag, created with the experiment (its id becomes `feature_flag_id`).
    Create(Box<NewFlag>),
    /// The flag as read, and what it becomes.
    /// Boxed: a flag is large beside the other variants.
    Save {
        before: Box<flags::Stored>,
        after: Box<FeatureFlag>,
    },
}

/// Why an experiment's write was refused: the new flag's key is held by another live flag.
#[derive(Debug, thiserror::Error)]
#[error("another flag holds this key")]
pub struct FlagKeyTaken;

/// Why a write did not happen: [`FlagKeyTaken`], or the experiment or its flag changed since
/// they were read ([`entities::WriteError::Raced`]: read them again), or the Store failed.
pub type WriteError = entities::WriteError<FlagKeyTaken>;

/// An experiment as written, with its flag when the write touched it.
#[derive(Debug, Clone)]
pub struct Written {
    pub experiment: Experiment,
    pub flag: Option<FeatureFlag>,
}

/// Stores `experiment` with the project's next id, its `created` entry and the flag write, in one
/// transaction. A lost race on either counter is retried; a taken flag key is [`FlagKeyTaken`].
pub async fn create(
    store: &dyn Store,
    team_id: i64,
    experiment: Experiment,
    flag: FlagWrite,
    actor: &Actor,
    at: DateTime<Utc>,
) -> Result<Written, WriteError> {
    let (experiment, flag) = (&experiment, &flag);
    retry(
        store::UPDATE_ATTEMPTS,
        std::convert::identity,
        || async move {
            let mut experiment = experiment.clone();
            let (mut ops, written_flag) = plan_flag(store, team_id, flag, actor, at).await?;
            if let (FlagWrite::Create(_), Some(flag)) = (flag, &written_flag) {
                experiment.feature_flag_id = flag.id;
            }
            ops.extend(number_links(store, team_id, &mut experiment).await?);
            ops.extend(entities::plan_numbered(store, &mut experiment, team_id, actor, at).await?);
            if entities::commit(store, ops).await? {
                return Ok(Ok(Written {
                    experiment,
                    flag: written_flag,
                }));
            }
            if let FlagWrite::Create(new) = flag
                && flags::create_failure(store, team_id, &new.key)
                    .await?
                    .is_some()
            {
                return Err(WriteError::Refused(FlagKeyTaken));
            }
            if let FlagWrite::Save { before, .. } = flag
                && !matches!(
                    flags::save_failure(store, team_id, before).await,
                    flags::WriteError::Refused(flags::Refusal::KeyTaken)
                )
            {
                return Err(WriteError::Raced);
            }
            // A counter moved under this write: count again.
            Ok(Err(WriteError::Raced))
        },
    )
    .await
}

/// Replaces `before` (as read) by `after` with the flag write, in one attempt: bumps `version`
/// and `updated_at` and logs `updated`. [`WriteError::Raced`] when the experiment or the flag
/// changed since they were read.
pub async fn save(
    store: &dyn Store,
    team_id: i64,
    before: &Stored,
    mut after: Experiment,
    flag: FlagWrite,
    actor: &Actor,
    at: DateTime<Utc>,
) -> Result<Written, WriteError> {
    let (mut ops, written_flag) = plan_flag(store, team_id, &flag, actor, at).await?;
    if let (FlagWrite::Create(_), Some(flag)) = (&flag, &written_flag) {
        after.feature_flag_id = flag.id;
    }
    ops.extend(number_links(store, team_id, &mut after).await?);
    let (old, item_version) = (&before.experiment, before.item_version);
    ops.extend(entities::plan_edit(
        team_id,
        old,
        item_version,
        &mut after,
        actor,
        at,
    )?);
    if entities::commit(store, ops).await? {
        return Ok(Written {
            experiment: after,
            flag: written_flag,
        });
    }
    match &flag {
        FlagWrite::Create(new)
            if flags::create_failure(store, team_id, &new.key)
                .await?
                .is_some() =>
        {
            Err(WriteError::Refused(FlagKeyTaken))
        }
        _ => Err(WriteError::Raced),
    }
}

/// Numbers the links to saved metrics that have no id yet; the counter's write, if any, joins
/// the experiment's transaction (a lost race there is the experiment's).
async fn number_links(
    store: &dyn Store,
    team_id: i64,
    experiment: &mut Experiment,
) -> Result<Option<WriteOp>, StoreError> {
    let fresh = experiment
        .saved_metrics
        .iter()
        .filter(|link| link.id == 0)
        .count() as i64;
    if fresh == 0 {
        return Ok(None);
    }
    let (first, counter) =
        store::claim_next_ids(store, &entities::team_pk(team_id), LINK_COUNTER_SK, fresh).await?;
    let fresh_links = experiment
        .saved_metrics
        .iter_mut()
        .filter(|link| link.id == 0);
    for (id, link) in (first..).zip(fresh_links) {
        link.id = id;
    }
    Ok(Some(counter))
}

async fn plan_flag(
    store: &dyn Store,
    team_id: i64,
    flag: &FlagWrite,
    actor: &Actor,
    at: DateTime<Utc>,
) -> Result<(Vec<WriteOp>, Option<FeatureFlag>), StoreError> {
    Ok(match flag {
        FlagWrite::Keep => (Vec::new(), None),
        FlagWrite::Create(new) => {
            let planned = flags::plan_create(store, team_id, (**new).clone(), actor, at).await?;
            (planned.ops, Some(planned.flag))
        }
        FlagWrite::Save { before, after } => {
            let planned = flags::plan_save(team_id, before, (**after).clone(), actor, at)?;
            (planned.ops, Some(planned.flag))
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;
    use common::activity;
    use feature_flags::model::{EvaluationRuntime, FlagFilters};

    fn draft(name: &str) -> Experiment {
        serde_json::from_value(serde_json::json!({
            "id": 0, "team_id": 0, "name": name, "feature_flag_id": 0,
            "created_at": "2025-01-01T00:00:00Z"}))
        .unwrap()
    }

    fn new_flag(key: &str) -> FlagWrite {
        FlagWrite::Create(Box::new(NewFlag {
            key: key.into(),
            name: String::new(),
            filters: FlagFilters::default(),
            active: false,
            ensure_experience_continuity: false,
            evaluation_runtime: EvaluationRuntime::All,
            evaluation_tags: Vec::new(),
            created_by: None,
        }))
    }

    #[tokio::test]
    async fn concurrent_creates_count_up_and_keys_and_versions_are_guarded() {
        let store = common::testing::memory_store();
        let actor = Actor::system();
        let at = Utc.with_ymd_and_hms(2025, 1, 2, 3, 4, 5).unwrap();
        let (a, b) = tokio::join!(
            create(&store, 1, draft("a"), new_flag("a"), &actor, at),
            create(&store, 1, draft("b"), new_flag("b"), &actor, at),
        );
        let (a, b) = (a.unwrap(), b.unwrap());
        let mut ids = [a.experiment.id, b.experiment.id];
        ids.sort_unstable();
        assert_eq!(ids, [1, 2]);
        // Each experiment points at the flag made with it.
        assert_eq!(a.experiment.feature_flag_id, a.flag.as_ref().unwrap().id);
        assert_eq!(b.experiment.feature_flag_id, b.flag.as_ref().unwrap().id);
        assert!(matches!(
            create(&store, 1, draft("c"), new_flag("a"), &actor, at).await,
            Err(WriteError::Refused(FlagKeyTaken))
        ));
        assert_eq!(list_all(&store, 1).await.unwrap().len(), 2);

        // A stale read races; a fresh one saves and bumps the version.
        let stored = get(&store, 1, a.experiment.id).await.unwrap().unwrap();
        let mut renamed = stored.experiment.clone();
        renamed.name = "a2".into();
        let saved = save(
            &store,
            1,
            &stored,
            renamed.clone(),
            FlagWrite::Keep,
            &actor,
            at,
        )
        .await
        .unwrap();
        assert_eq!(saved.experiment.version, 2);
        assert!(matches!(
            save(&store, 1, &stored, renamed, FlagWrite::Keep, &actor, at).await,
            Err(WriteError::Raced)
        ));
        let history = activity::list(&store, 1, SCOPE, Some(&a.experiment.id.to_string()))
            .await
            .unwrap();
        let kinds: Vec<&str> = history.iter().map(|e| e.activity.as_str()).collect();
        assert_eq!(kinds, ["updated", "created"]);
    }
}
