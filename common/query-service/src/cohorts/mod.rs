//! Cohorts in the service: the cohorts a node's `cohort` filters name, read from the Store
//! (nested ones and static members included) only when the node names one, what of them goes
//! into the cache key, and the `cohort_calculation` job ([`calculation`]).

pub mod calculation;

use std::collections::BTreeSet;
use std::sync::Arc;

use chrono::{DateTime, Utc};
use common::AppState;
use common::models::Project;
use common::store::StoreError;
use engine::{Bindings, CohortRef, QueryError};
use insights::cohorts::{CohortSpec, Cohorts, MAX_INLINE_MEMBERS};
use serde_json::Value;
use uuid::Uuid;

use crate::SqlNode;
use crate::runner;

/// Persons read per query of a calculation (the engine's largest LIMIT).
const PAGE: u64 = engine::MAX_LIMIT;

/// Most cohorts one node may pull in, nested ones included.
const MAX_COHORTS: usize = 200;

/// The cohorts `node` names (its structured node and its HogQL filters), with the cohorts they
/// name in turn; nothing is read when it names none. An id that is not a live cohort is left
/// out: the compiler answers the 400 naming the field.
///
/// With `resolve_at`, each dynamic cohort the node names is resolved to its members as of that
/// instant (one query over `persons`), so the node's own queries test an inline list, which
/// the engine runs anywhere (an `IN (subquery)` only runs where rows are filtered, not in a
/// funnel step's `if(...)`). A cohort of more than `MAX_INLINE_MEMBERS` stays a subquery.
pub async fn for_node(
    state: &AppState,
    project: &Project,
    node: &SqlNode,
    resolve_at: Option<DateTime<Utc>>,
) -> Result<Arc<Cohorts>, QueryError> {
    let mut ids: BTreeSet<i64> = BTreeSet::new();
    let structured = node.structured.as_ref().map(|node| node.as_value());
    for part in [structured, node.filters.as_ref()].into_iter().flatten() {
        ids.extend(insights::cohorts::referenced(part));
    }
    if node.structured.is_none() {
        ids.extend(named_in_text(state, project.id, &node.text).await?);
    }
    if ids.is_empty() {
        return Ok(Arc::default());
    }
    let mut cohorts = load(state, project.id, ids.iter().copied())
        .await
        .map_err(QueryError::internal)?;
    if let Some(now) = resolve_at {
        for id in ids {
            if cohorts.get(&id).is_none_or(|spec| spec.members.is_some()) {
                continue;
            }
            let members =
                match members_of(state, project, &cohorts, id, now, Some(MAX_INLINE_MEMBERS)).await
                {
                    Ok(members) => members,
                    // A definition that does not compile (a cohort it names was deleted): the
                    // node's compile answers the 400, naming the node's field.
                    Err(QueryError::Invalid { .. }) => None,
                    Err(other) => return Err(other),
                };
            if let (Some(members), Some(spec)) = (members, cohorts.get_mut(&id)) {
                spec.members = Some(members.into_iter().collect());
            }
        }
    }
    Ok(Arc::new(cohorts))
}

/// The ids of the cohorts a SQL text tests with `IN COHORT <id>` or `IN COHORT 'name'` (a name
/// is the live cohort of that name, the newest when several share it).
async fn named_in_text(
    state: &AppState,
    team_id: i64,
    text: &str,
) -> Result<BTreeSet<i64>, QueryError> {
    let references = engine::cohort_references(text);
    let mut ids: BTreeSet<i64> = references
        .iter()
        .filter_map(|reference| match reference {
            CohortRef::Id(id) => Some(*id),
            CohortRef::Name(_) => None,
        })
        .collect();
    if references.iter().any(|r| matches!(r, CohortRef::Name(_))) {
        let live = cohort_core::repository::list_live(state.store.as_ref(), team_id)
            .await
            .map_err(QueryError::internal)?;
        for reference in &references {
            if let CohortRef::Name(name) = reference
                && let Some(cohort) = live.iter().filter(|c| c.name == *name).max_by_key(|c| c.id)
            {
                ids.insert(cohort.id);
            }
        }
    }
    Ok(ids)
}

/// The id a text's cohort reference names among the loaded `cohorts`.
pub fn resolve(cohorts: &Cohorts, reference: &CohortRef) -> Option<i64> {
    match reference {
        CohortRef::Id(id) => cohorts.contains_key(id).then_some(*id),
        CohortRef::Name(name) => cohorts
            .values()
            .filter(|spec| spec.cohort.name == *name && !spec.cohort.deleted)
            .map(|spec| spec.cohort.id)
            .max(),
    }
}

/// Who is in cohort `id` as of `now`: `SELECT id FROM persons WHERE <membership>`, compiled with
/// `cohorts` (the cohort and those it names). With `cap`, one query and `None` when there are
/// more than `cap`; without, every member, page by page (the calculation).
pub async fn members_of(
    state: &AppState,
    project: &Project,
    cohorts: &Cohorts,
    id: i64,
    now: DateTime<Utc>,
    cap: Option<usize>,
) -> Result<Option<BTreeSet<Uuid>>, QueryError> {
    let mut ctx = runner::plain_context(project, now);
    ctx.cohorts = Arc::new(cohorts.clone());
    let condition =
        insights::cohorts::membership(id, "id", &ctx, "filters").map_err(|invalid| {
            QueryError::Invalid {
                attr: invalid.attr,
                detail: invalid.detail,
            }
        })?;
    let page = cap.map_or(PAGE, |cap| cap as u64 + 1);
    let query = |offset: u64| {
        let text = format!(
            "SELECT id FROM persons WHERE {condition} ORDER BY id LIMIT {page} OFFSET {offset}"
        );
        engine::prepare(&text, &Bindings::default()).map(engine::Prepared::with_sql_nulls)
    };
    // Straight to the engine (the service's own read: no cache, no log, no slot), one session
    // for every page, so the pages read one snapshot and the tables are registered once.
    let limits = runner::limits(state);
    let mut prepared = query(0)?;
    let session =
        engine::open_session(state, project.id, &project.timezone, &prepared, &limits).await?;
    let mut persons = BTreeSet::new();
    let mut offset = 0;
    loop {
        let rows = session.execute(&prepared, &limits).await?.results;
        let read = rows.len() as u64;
        persons.extend(
            rows.iter()
                .filter_map(|row| row.first().and_then(Value::as_str))
                .filter_map(|id| id.parse::<Uuid>().ok()),
        );
        if cap.is_some() {
            return Ok((read < page).then_some(persons));
        }
        if read < page {
            return Ok(Some(persons));
        }
        offset += page;
        prepared = query(offset)?;
    }
}

/// `ids` and every cohort they name, directly or not, with static cohorts' members.
pub async fn load(
    state: &AppState,
    team_id: i64,
    ids: impl IntoIterator<Item = i64>,
) -> Result<Cohorts, StoreError> {
    let store = state.store.as_ref();
    let mut cohorts = Cohorts::new();
    let mut seen = BTreeSet::new();
    let mut todo: Vec<i64> = ids.into_iter().collect();
    while let Some(id) = todo.pop() {
        if !seen.insert(id) || seen.len() > MAX_COHORTS {
            continue;
        }
        let Some(cohort) = cohort_core::repository::get_live(store, team_id, id).await? else {
            continue;
        };
        let members = match cohort.is_static {
            true => Some(cohort_core::members::list(store, team_id, id).await?),
            false => None,
        };
        todo.extend(
            cohort
                .filters
                .iter()
                .flat_map(cohort_core::Filters::cohort_ids),
        );
        cohorts.insert(id, CohortSpec { cohort, members });
    }
    Ok(cohorts)
}

/// What of the cohorts goes into a cache key: each one's version and member count (the SQL
/// holds the definitions and static members already; this keeps a changed cohort from ever
/// serving an old answer).
pub fn digest(cohorts: &Cohorts) -> String {
    cohorts
        .values()
        .map(|spec| {
            format!(
                "{}:{}:{}:{}",
                spec.cohort.id,
                spec.cohort.version,
                spec.cohort.count.unwrap_or(-1),
                spec.members
                    .as_ref()
                    .map_or(-1, |members| members.len() as i64)
            )
        })
        .collect::<Vec<_>>()
        .join(",")
}

#[cfg(test)]
mod tests {
    use cohort_core::Cohort;
    use common::activity::Actor;
    use common::testing::TestState;
    use serde_json::json;

    use super::*;

    async fn create(state: &AppState, fields: serde_json::Value) -> Cohort {
        let mut body = json!({"id": 0, "team_id": 0, "name": "c",
            "created_at": "2026-01-01T00:00:00Z"});
        if let (Value::Object(body), Value::Object(fields)) = (&mut body, fields) {
            body.extend(fields);
        }
        let cohort: Cohort = serde_json::from_value(body).expect("cohort");
        cohort_core::repository::create(
            state.store.as_ref(),
            1,
            cohort,
            &Actor::system(),
            state.clock.now(),
            |_| Ok(vec![]),
        )
        .await
        .expect("created")
    }

    #[tokio::test]
    async fn nested_cohorts_and_static_members_are_loaded_and_digested() {
        let state = TestState::embedded().await.state;
        let fixed = create(&state, json!({"is_static": true})).await;
        let person = Uuid::now_v7();
        cohort_core::members::add(state.store.as_ref(), 1, fixed.id, &[person])
            .await
            .expect("added");
        let filters = cohort_core::Filters::parse(
            &json!({"properties": {"type": "AND", "values": [
                {"type": "cohort", "key": "id", "value": fixed.id}]}}),
            "filters",
        )
        .expect("definition");
        let dynamic = create(&state, json!({"filters": filters})).await;

        let loaded = load(&state, 1, [dynamic.id, 999]).await.expect("loaded");
        assert_eq!(
            loaded.keys().copied().collect::<Vec<_>>(),
            vec![fixed.id, dynamic.id]
        );
        assert_eq!(loaded[&fixed.id].members, Some(vec![person]));
        assert_eq!(loaded[&dynamic.id].members, None);
        let before = digest(&loaded);
        cohort_core::members::add(state.store.as_ref(), 1, fixed.id, &[Uuid::now_v7()])
            .await
            .expect("added");
        let after = digest(&load(&state, 1, [dynamic.id]).await.expect("loaded"));
        assert_ne!(before, after);
    }
}
