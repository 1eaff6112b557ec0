//! The `persons` table: a project's persons, read from the Store into one batch. Reading and
//! decoding every person is most of a lifecycle query's time on a large project (100,000
//! persons), so a process keeps the batch while it is current: persons change through
//! ingestion, written before the Delta commit of their events (the events table's version then
//! moves), and through the persons API, which rewrites the project's persons revision in the
//! same transaction. The batch is reused while both are as they were when it was read.

use std::collections::HashMap;
use std::sync::{Arc, LazyLock, Mutex, Weak};

use common::AppState;
use common::models::person::{self, Person};
use common::store::{self, Index, Store};
use datafusion::arrow::array::{
    ArrayRef, BooleanArray, Int64Array, RecordBatch, StringArray, TimestampMicrosecondArray,
};
use datafusion::arrow::datatypes::{DataType, Field, Schema};
use datafusion::catalog::MemTable;
use datafusion::prelude::SessionContext;
use lake_core::person_overrides::persons_index;
use uuid::Uuid;

use crate::QueryError;
use crate::tables::{PERSONS, utc_micros};

/// Projects whose batch a process keeps at once.
const KEPT_PROJECTS: usize = 8;
/// A batch larger than this is read for each query instead (a process's memory is bounded).
const KEPT_BATCH_BYTES: usize = 128 * 1024 * 1024;

/// What a batch was read at: the events table's version and the persons revision.
type ReadAt = (u64, Option<Uuid>);

struct Kept {
    /// The Store it was read from (a process can hold several: tests, the bench).
    store: Weak<dyn Store>,
    read_at: ReadAt,
    batch: RecordBatch,
    /// When it was last used, in uses of the cache (the least recent is dropped first).
    used: u64,
}

/// A project in one Store: the Store's address (alive, as `Kept::store` confirms) and the id.
type Project = (usize, i64);

#[derive(Default)]
struct Cache {
    projects: HashMap<Project, Kept>,
    uses: u64,
}

fn project(state: &AppState, team_id: i64) -> Project {
    (Arc::as_ptr(&state.store) as *const () as usize, team_id)
}

static CACHE: LazyLock<Mutex<Cache>> = LazyLock::new(Default::default);

/// Registers `persons` for `team_id`; `events_version` is the events table's version the query
/// reads (`None` when the project has no table yet: then nothing is kept).
pub(crate) async fn register(
    ctx: &SessionContext,
    state: &AppState,
    team_id: i64,
    events_version: Option<u64>,
) -> Result<(), QueryError> {
    // The revision is read before the persons: a batch is never newer-labelled than its rows.
    let revision = person::revision(state.store.as_ref(), team_id)
        .await
        .map_err(QueryError::internal)?;
    let read_at = events_version.map(|version| (version, revision));
    let batch = match read_at.and_then(|read_at| kept(state, team_id, read_at)) {
        Some(batch) => batch,
        None => {
            let batch = read(state, team_id).await?;
            if let Some(read_at) = read_at {
                keep(state, team_id, read_at, &batch);
            }
            batch
        }
    };
    let table =
        MemTable::try_new(batch.schema(), vec![vec![batch]]).map_err(QueryError::internal)?;
    ctx.register_table(PERSONS, Arc::new(table))
        .map_err(QueryError::internal)?;
    Ok(())
}

fn kept(state: &AppState, team_id: i64, read_at: ReadAt) -> Option<RecordBatch> {
    let mut cache = CACHE
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    cache.uses += 1;
    let uses = cache.uses;
    let kept = cache.projects.get_mut(&project(state, team_id))?;
    let same_store = kept
        .store
        .upgrade()
        .is_some_and(|store| Arc::ptr_eq(&store, &state.store));
    if !same_store || kept.read_at != read_at {
        return None;
    }
    kept.used = uses;
    Some(kept.batch.clone())
}

fn keep(state: &AppState, team_id: i64, read_at: ReadAt, batch: &RecordBatch) {
    if batch.get_array_memory_size() > KEPT_BATCH_BYTES {
        return;
    }
    let key = project(state, team_id);
    let mut cache = CACHE
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    cache
        .projects
        .retain(|_, kept| kept.store.strong_count() > 0);
    // A query that read an older state never replaces a newer one.
    if let Some(current) = cache.projects.get(&key)
        && current.read_at.0 > read_at.0
    {
        return;
    }
    if !cache.projects.contains_key(&key) && cache.projects.len() >= KEPT_PROJECTS {
        let least_recent = cache
            .projects
            .iter()
            .min_by_key(|(_, kept)| kept.used)
            .map(|(project, _)| *project);
        if let Some(project) = least_recent {
            cache.projects.remove(&project);
        }
    }
    cache.uses += 1;
    let used = cache.uses;
    cache.projects.insert(
        key,
        Kept {
            store: Arc::downgrade(&state.store),
            read_at,
            batch: batch.clone(),
            used,
        },
    );
}

async fn read(state: &AppState, team_id: i64) -> Result<RecordBatch, QueryError> {
    let persons = store::query_all(state.store.as_ref(), &persons_index(team_id), Index::Gsi1)
        .await
        .map_err(QueryError::internal)?
        .iter()
        .map(|item| item.parse::<Person>().map_err(QueryError::internal))
        .collect::<Result<Vec<_>, _>>()?;
    let schema = Arc::new(Schema::new(vec![
        Field::new("id", DataType::Utf8, false),
        Field::new("created_at", utc_micros(), false),
        Field::new("team_id", DataType::Int64, false),
        Field::new("properties", DataType::Utf8, false),
        Field::new("is_identified", DataType::Boolean, false),
    ]));
    let columns: Vec<ArrayRef> = vec![
        Arc::new(StringArray::from_iter_values(
            persons.iter().map(|p| p.uuid.to_string()),
        )),
        Arc::new(
            TimestampMicrosecondArray::from_iter_values(
                persons.iter().map(|p| p.created_at.timestamp_micros()),
            )
            .with_timezone("UTC"),
        ),
        Arc::new(Int64Array::from_iter_values(
            persons.iter().map(|_| team_id),
        )),
        Arc::new(StringArray::from_iter_values(persons.iter().map(|p| {
            serde_json::to_string(&p.properties).unwrap_or_else(|_| "{}".into())
        }))),
        Arc::new(BooleanArray::from_iter(
            persons.iter().map(|p| Some(p.is_identified)),
        )),
    ];
    RecordBatch::try_new(schema, columns).map_err(QueryError::internal)
}

#[cfg(test)]
mod tests {
    use chrono::TimeZone;
    use common::models::person::{PERSON_SK, person_pk};
    use common::store::{Condition, Item};
    use serde_json::{Map, json};

    use super::*;

    const TEAM: i64 = 4242;

    async fn add_person(state: &AppState, uuid: Uuid) {
        let person = Person {
            uuid,
            team_id: TEAM,
            properties: Map::new(),
            is_identified: false,
            created_at: chrono::Utc.with_ymd_and_hms(2024, 3, 1, 0, 0, 0).unwrap(),
        };
        let item = Item::of(person_pk(TEAM, uuid), PERSON_SK, &person)
            .unwrap()
            .with_gsi1(persons_index(TEAM), uuid.to_string());
        state.store.put(item, Condition::None).await.unwrap();
    }

    /// `(persons, properties of the first)` as a query sees them at `version`.
    async fn seen(state: &AppState, version: u64) -> (usize, String) {
        let ctx = SessionContext::new();
        register(&ctx, state, TEAM, Some(version)).await.unwrap();
        let batches = ctx
            .sql("SELECT properties FROM persons ORDER BY id")
            .await
            .unwrap()
            .collect()
            .await
            .unwrap();
        let rows: usize = batches.iter().map(RecordBatch::num_rows).sum();
        let first = batches
            .iter()
            .find(|batch| batch.num_rows() > 0)
            .map(|batch| {
                let column = batch.column(0).as_any().downcast_ref::<StringArray>();
                column.unwrap().value(0).to_owned()
            })
            .unwrap_or_default();
        (rows, first)
    }

    #[tokio::test]
    async fn the_batch_is_kept_until_the_events_version_or_the_persons_revision_moves() {
        let test = common::testing::TestState::embedded().await;
        let state = &test.state;
        let first = Uuid::from_u128(1);
        add_person(state, first).await;
        assert_eq!(seen(state, 7).await, (1, "{}".into()));
        // Ingestion writes persons before the commit that moves the version: until then the
        // kept batch is what the query reads (its events are not visible either).
        add_person(state, Uuid::from_u128(2)).await;
        assert_eq!(seen(state, 7).await.0, 1);
        assert_eq!(seen(state, 8).await.0, 2);
        // An edit through the persons API moves the revision.
        let set = Map::from_iter([("plan".to_owned(), json!("pro"))]);
        person::update_properties(state.store.as_ref(), TEAM, first, &set, &[], |_, _| {
            Ok(vec![])
        })
        .await
        .unwrap()
        .unwrap();
        assert_eq!(seen(state, 8).await, (2, r#"{"plan":"pro"}"#.into()));
        person::delete(state.store.as_ref(), TEAM, first, vec![])
            .await
            .unwrap();
        assert_eq!(seen(state, 8).await.0, 1);
    }

    #[tokio::test]
    async fn two_stores_never_share_a_batch() {
        let one = common::testing::TestState::embedded().await;
        let other = common::testing::TestState::embedded().await;
        add_person(&one.state, Uuid::from_u128(1)).await;
        assert_eq!(seen(&one.state, 1).await.0, 1);
        assert_eq!(seen(&other.state, 1).await.0, 0);
    }
}
