//! The endpoint repository on the Store, on every backend the test environment has: a name is
//! held by one endpoint, lists read only endpoints, a query change makes a version (two
//! concurrent ones make two), a delete frees the name, and materializations and last executions
//! are kept apart.

use chrono::{Duration, Utc};
use common::activity::{self, Actor};
use common::store::Store;
use common::testing::TestState;
use endpoint_core::repository::{self, Change, CreateError, UpdateError};
use endpoint_core::{Endpoint, Materialization, MaterializationStatus, SyncFrequency, Version};
use serde_json::{Value, json};
use uuid::Uuid;

const TEAM: i64 = 1;

fn hogql(sql: &str) -> Value {
    json!({"kind": "HogQLQuery", "query": sql})
}

fn new_endpoint(name: &str, query: Value) -> (Endpoint, Version) {
    let now = Utc::now();
    let endpoint = Endpoint {
        id: Uuid::now_v7(),
        team_id: TEAM,
        name: name.into(),
        is_active: true,
        current_version: 1,
        derived_from_insight: None,
        created_by: None,
        created_at: now,
        updated_at: now,
    };
    let version = Version {
        id: Uuid::now_v7(),
        endpoint_id: endpoint.id,
        version: 1,
        query,
        description: String::new(),
        cache_age_seconds: None,
        is_active: true,
        is_materialized: false,
        sync_frequency: None,
        columns: Vec::new(),
        created_at: now,
        created_by: None,
        updated_at: now,
    };
    (endpoint, version)
}

async fn create(store: &dyn Store, name: &str, query: Value) -> Endpoint {
    let (endpoint, version) = new_endpoint(name, query);
    repository::create(store, &endpoint, &version, &Actor::system())
        .await
        .expect("created");
    endpoint
}

/// The update route's query rule: a new version only when the query differs.
fn set_query(query: Value) -> impl FnMut(&Endpoint, &Version) -> Result<Change, common::ApiError> {
    move |endpoint, current| {
        let now = Utc::now();
        let mut endpoint = endpoint.clone();
        endpoint.updated_at = now;
        let mut new_version = None;
        if !endpoint_core::validate::same_query(&current.query, &query) {
            endpoint.current_version += 1;
            new_version = Some(Version {
                id: Uuid::now_v7(),
                version: endpoint.current_version,
                query: query.clone(),
                created_at: now,
                updated_at: now,
                ..current.clone()
            });
        }
        Ok(Change {
            endpoint,
            new_version,
            changed_versions: Vec::new(),
        })
    }
}

fn materialization(endpoint: &Endpoint, version: u32) -> Materialization {
    let now = Utc::now();
    Materialization {
        endpoint_id: endpoint.id,
        endpoint_name: endpoint.name.clone(),
        version,
        status: MaterializationStatus::Pending,
        sync_frequency: SyncFrequency::default(),
        last_materialized_at: None,
        next_run_at: now,
        error: String::new(),
        object: None,
        variable: None,
        rows: 0,
        updated_at: now,
    }
}

#[tokio::test]
async fn endpoints_versions_and_deletes_on_every_backend() {
    for backend in TestState::all().await {
        let store = backend.state.store.as_ref();
        let label = format!("{:?}", backend.backend);
        let actor = Actor::system();

        // One name, one endpoint.
        let daily = create(store, "daily", hogql("select 1")).await;
        let (taken, version) = new_endpoint("daily", hogql("select 2"));
        let error = repository::create(store, &taken, &version, &actor)
            .await
            .unwrap_err();
        assert!(matches!(error, CreateError::NameTaken), "{label}");
        let api: common::ApiError = error.into();
        assert_eq!(
            (api.body.attr.as_deref(), api.body.code.as_str()),
            (Some("name"), "unique")
        );
        assert_eq!(
            api.body.detail,
            "An endpoint with this name already exists for this team."
        );
        let weekly = create(store, "a-weekly", hogql("select 3")).await;

        // Materializations, runs and deletions sort beside endpoints but are not listed.
        repository::put_materialization(store, TEAM, &materialization(&daily, 1))
            .await
            .unwrap();
        repository::record_execution(store, TEAM, "daily", Utc::now())
            .await
            .unwrap();
        let gone = create(store, "gone", hogql("select 4")).await;
        repository::delete(store, TEAM, "gone", &actor, backend.state.clock.now())
            .await
            .unwrap()
            .expect("deleted");
        let names: Vec<String> = repository::list(store, TEAM)
            .await
            .unwrap()
            .into_iter()
            .map(|e| e.name)
            .collect();
        assert_eq!(names, ["a-weekly", "daily"], "{label}");
        assert!(repository::list(store, 2).await.unwrap().is_empty());

        // The same query (keys in another order) makes no version and no log line.
        let updated = repository::update(
            store,
            TEAM,
            "daily",
            &actor,
            set_query(json!({"query": "select 1", "kind": "HogQLQuery"})),
        )
        .await
        .unwrap();
        assert!(updated.new_version.is_none(), "{label}");
        assert_eq!(updated.endpoint.current_version, 1);
        let stored = repository::get(store, TEAM, "daily")
            .await
            .unwrap()
            .unwrap();
        assert_eq!(stored.endpoint, updated.endpoint);
        assert_eq!(stored.version, 2, "the endpoint item was written");
        assert_eq!(
            repository::versions(store, TEAM, daily.id)
                .await
                .unwrap()
                .len(),
            1
        );

        // Two concurrent query changes: both succeed, as versions 2 and 3.
        let (a, b) = tokio::join!(
            repository::update(store, TEAM, "daily", &actor, set_query(hogql("select 10"))),
            repository::update(store, TEAM, "daily", &actor, set_query(hogql("select 20"))),
        );
        let (a, b) = (a.expect("first"), b.expect("second"));
        let mut made: Vec<u32> = [&a, &b]
            .iter()
            .map(|u| u.new_version.as_ref().expect("a new version").version)
            .collect();
        made.sort_unstable();
        assert_eq!(made, [2, 3], "{label}");
        let versions = repository::versions(store, TEAM, daily.id).await.unwrap();
        let numbers: Vec<u32> = versions.iter().map(|v| v.version).collect();
        assert_eq!(numbers, [3, 2, 1], "newest first ({label})");
        let stored = repository::get(store, TEAM, "daily")
            .await
            .unwrap()
            .unwrap();
        assert_eq!(stored.endpoint.current_version, 3);
        let current = repository::current(store, TEAM, &stored.endpoint)
            .await
            .unwrap();
        assert_eq!(current, versions[0]);
        let first = repository::version(store, TEAM, daily.id, 1)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(first.query, hogql("select 1"), "versions are snapshots");
        assert!(
            repository::version(store, TEAM, daily.id, 9)
                .await
                .unwrap()
                .is_none()
        );

        // Rewriting an old version (deactivating it) is one transaction with the endpoint.
        let updated = repository::update(store, TEAM, "daily", &actor, |endpoint, _| {
            let mut old = first.clone();
            old.is_active = false;
            Ok(Change {
                endpoint: endpoint.clone(),
                new_version: None,
                changed_versions: vec![old],
            })
        })
        .await
        .unwrap();
        assert_eq!(updated.changed_versions.len(), 1);
        let first = repository::version(store, TEAM, daily.id, 1)
            .await
            .unwrap()
            .unwrap();
        assert!(!first.is_active, "{label}");

        // A refused change and an unknown endpoint.
        let refused = repository::update(store, TEAM, "daily", &actor, |_, _| {
            Err(common::ApiError::validation("is_materialized", "no"))
        })
        .await;
        assert!(matches!(refused, Err(UpdateError::Rejected(_))), "{label}");
        let missing = repository::update(store, TEAM, "nope", &actor, set_query(hogql("1"))).await;
        assert!(matches!(missing, Err(UpdateError::NotFound)));
        assert_eq!(
            common::ApiError::from(UpdateError::NotFound).body.code,
            "not_found"
        );

        // The log: created, two query changes, the version rewrite; not the no-op save.
        let history = activity::list(store, TEAM, repository::SCOPE, Some(&daily.id.to_string()))
            .await
            .unwrap();
        let kinds: Vec<&str> = history.iter().map(|e| e.activity.as_str()).collect();
        assert_eq!(
            kinds,
            ["updated", "updated", "updated", "created"],
            "{label}"
        );
        let fields: Vec<&str> = history[1]
            .detail
            .changes
            .as_ref()
            .unwrap()
            .iter()
            .map(|c| c.field.as_str())
            .collect();
        assert_eq!(fields, ["current_version", "query"], "{label}");
        let fields: Vec<&str> = history[0]
            .detail
            .changes
            .as_ref()
            .unwrap()
            .iter()
            .map(|c| c.field.as_str())
            .collect();
        assert_eq!(fields, ["versions"], "{label}");

        // Deleting frees the name; the new endpoint of that name has versions of its own.
        let deleted = repository::delete(store, TEAM, "daily", &actor, backend.state.clock.now())
            .await
            .unwrap()
            .expect("deleted");
        assert_eq!(deleted.id, daily.id);
        assert!(
            repository::delete(store, TEAM, "daily", &actor, backend.state.clock.now())
                .await
                .unwrap()
                .is_none()
        );
        assert!(
            repository::get(store, TEAM, "daily")
                .await
                .unwrap()
                .is_none()
        );
        let again = create(store, "daily", hogql("select 'again'")).await;
        assert_ne!(again.id, daily.id);
        let versions = repository::versions(store, TEAM, again.id).await.unwrap();
        assert_eq!(versions.len(), 1, "{label}");
        assert_eq!(versions[0].query, hogql("select 'again'"));
        assert_eq!(
            repository::versions(store, TEAM, daily.id)
                .await
                .unwrap()
                .len(),
            3,
            "the deleted endpoint's versions stay"
        );
        let history = activity::list(store, TEAM, repository::SCOPE, Some(&gone.id.to_string()))
            .await
            .unwrap();
        let kinds: Vec<&str> = history.iter().map(|e| e.activity.as_str()).collect();
        assert_eq!(kinds, ["deleted", "created"], "{label}");

        // Materializations: put, get, list (all, and one endpoint's), delete.
        let mut m = materialization(&again, 1);
        repository::put_materialization(store, TEAM, &m)
            .await
            .unwrap();
        m.status = MaterializationStatus::Completed;
        m.last_materialized_at = Some(Utc::now());
        m.next_run_at = Utc::now() + Duration::hours(24);
        m.object = Some("endpoints/1/again/1.parquet".into());
        m.rows = 1;
        repository::put_materialization(store, TEAM, &m)
            .await
            .unwrap();
        assert_eq!(
            repository::get_materialization(store, TEAM, again.id, 1)
                .await
                .unwrap(),
            Some(m.clone())
        );
        assert!(m.is_fresh(Utc::now()));
        let m2 = materialization(&weekly, 1);
        repository::put_materialization(store, TEAM, &m2)
            .await
            .unwrap();
        assert_eq!(
            repository::list_materializations(store, TEAM)
                .await
                .unwrap()
                .len(),
            3,
            "{label}"
        );
        assert_eq!(
            repository::materializations_of(store, TEAM, again.id)
                .await
                .unwrap(),
            [m]
        );
        repository::delete_materialization(store, TEAM, again.id, 1)
            .await
            .unwrap();
        assert!(
            repository::get_materialization(store, TEAM, again.id, 1)
                .await
                .unwrap()
                .is_none()
        );
        assert!(
            repository::materializations_of(store, TEAM, again.id)
                .await
                .unwrap()
                .is_empty()
        );

        // Last executions: the latest run of each name asked for, names never run left out.
        let later = Utc::now() + Duration::seconds(5);
        repository::record_execution(store, TEAM, "daily", later)
            .await
            .unwrap();
        let runs = repository::last_executions(
            store,
            TEAM,
            &["a-weekly".into(), "daily".into(), "unknown".into()],
        )
        .await
        .unwrap();
        assert_eq!(runs.len(), 1, "{label}");
        assert_eq!(runs[0].name, "daily");
        assert_eq!(runs[0].last_executed_at, later);
    }
}

/// Sixteen writers change one endpoint's query at once, none holding to a version it read:
/// every one commits (a race lost to another writer's commit is read again and retried), each
/// change its own version, every change in the log.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_updates_never_fail_for_each_other() {
    const WRITERS: u32 = 16;
    for backend in TestState::all().await {
        let store = backend.state.store.clone();
        let label = format!("{:?}", backend.backend);
        let endpoint = create(store.as_ref(), "contended", hogql("select 0")).await;
        let mut writers = tokio::task::JoinSet::new();
        for i in 1..=WRITERS {
            let store = store.clone();
            writers.spawn(async move {
                let query = hogql(&format!("select {i}"));
                repository::update(store.as_ref(), TEAM, "contended", &Actor::system(), {
                    set_query(query)
                })
                .await
            });
        }
        let mut made = Vec::new();
        while let Some(joined) = writers.join_next().await {
            let updated = joined
                .expect("the writer ran")
                .unwrap_or_else(|error| panic!("{label}: a writer failed: {error:?}"));
            made.push(updated.new_version.expect("a new version").version);
        }
        made.sort_unstable();
        assert_eq!(made, (2..=WRITERS + 1).collect::<Vec<_>>(), "{label}");
        let stored = repository::get(store.as_ref(), TEAM, "contended")
            .await
            .unwrap()
            .unwrap();
        assert_eq!(stored.endpoint.current_version, WRITERS + 1, "{label}");
        let versions = repository::versions(store.as_ref(), TEAM, endpoint.id)
            .await
            .unwrap();
        let mut queries: Vec<String> = versions
            .iter()
            .map(|v| v.query["query"].as_str().unwrap().to_owned())
            .collect();
        queries.sort();
        let mut expected: Vec<String> = (0..=WRITERS).map(|i| format!("select {i}")).collect();
        expected.sort();
        assert_eq!(queries, expected, "{label}: every change is a version");
        let history = activity::list(
            store.as_ref(),
            TEAM,
            repository::SCOPE,
            Some(&endpoint.id.to_string()),
        )
        .await
        .unwrap();
        assert_eq!(history.len(), WRITERS as usize + 1, "{label}");
    }
}
