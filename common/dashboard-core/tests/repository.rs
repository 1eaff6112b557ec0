//! The repository on the in-memory Store: an insight placed on dashboards and moved (tiles
//! added, reused and deleted in the same transaction as the insight), its activity naming the
//! dashboards, short ids claimed, and a dashboard's delete and restore with its insights, in
//! parts when they are more than one transaction holds.

use chrono::{TimeZone, Utc};
use common::activity::{self, Actor};
use common::repository::{WriteError, try_commit};
use dashboard_core::repository::{Retiling, dashboards, insights};
use dashboard_core::{Dashboard, Insight};

const TEAM: i64 = 7;

fn at(hour: u32) -> chrono::DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 11, 1, hour, 0, 0).unwrap()
}

fn dashboard(name: &str) -> Dashboard {
    Dashboard {
        id: 0,
        team_id: TEAM,
        name: Some(name.into()),
        description: String::new(),
        pinned: false,
        tags: Vec::new(),
        filters: Default::default(),
        tiles: Vec::new(),
        deleted: false,
        created_at: at(0),
        created_by: None,
        updated_at: None,
        version: 0,
    }
}

fn insight(name: &str) -> Insight {
    Insight {
        id: 0,
        team_id: TEAM,
        short_id: dashboard_core::model::new_short_id(),
        name: Some(name.into()),
        derived_name: None,
        description: None,
        query: None,
        favorited: false,
        saved: false,
        tags: Vec::new(),
        deleted: false,
        created_at: at(0),
        created_by: None,
        updated_at: None,
        last_modified_at: at(0),
        last_modified_by: None,
        version: 0,
    }
}

#[tokio::test]
async fn tiles_follow_an_insights_dashboards() {
    let store = common::testing::memory_store();
    let actor = Actor::system();
    let mut ids = Vec::new();
    for name in ["a", "b"] {
        let mut board = dashboard(name);
        let ops = dashboards::plan_create(&store, &mut board, &actor, at(1))
            .await
            .unwrap();
        try_commit(&store, ops).await.unwrap();
        ids.push(board.id);
    }
    assert_eq!(ids, [1, 2]);

    let live = dashboards::list_live_stored(&store, TEAM).await.unwrap();
    let mut chart = insight("chart");
    let ops = insights::plan_create(&store, &mut chart, &ids, &live, &actor, at(2))
        .await
        .unwrap();
    try_commit(&store, ops).await.unwrap();
    assert_eq!((chart.id, chart.version), (1, 1));
    assert_eq!(
        insights::id_of_short(&store, TEAM, &chart.short_id)
            .await
            .unwrap(),
        Some(1)
    );
    let live = dashboards::list_live_stored(&store, TEAM).await.unwrap();
    let tiles: Vec<i64> = live.iter().map(|s| s.dashboard.tiles[0].id).collect();
    assert_eq!(
        tiles,
        [1, 2],
        "one tile each, numbered by the project's counter"
    );

    // Moved to the second only: the first's tile is deleted, then reused when it comes back.
    let stored = insights::get(&store, TEAM, 1).await.unwrap().unwrap();
    let retiling = Retiling::plan(&store, TEAM, 1, Some(&[2]), &live)
        .await
        .unwrap();
    assert_eq!(
        (retiling.before.clone(), retiling.after.clone()),
        (vec![1, 2], vec![2])
    );
    let mut next = stored.insight.clone();
    let writes = insights::plan_save(&stored, &mut next, &retiling, &actor, at(3)).unwrap();
    assert!(!writes.is_split());
    writes.clone().commit(&store).await.unwrap();
    // The same writes again find newer versions.
    assert!(writes.commit(&store).await.is_err());
    let live = dashboards::list_live_stored(&store, TEAM).await.unwrap();
    assert!(!live[0].dashboard.shows(1) && live[1].dashboard.shows(1));
    let retiling = Retiling::plan(&store, TEAM, 1, Some(&[1, 2]), &live)
        .await
        .unwrap();
    assert!(retiling.counter.is_none(), "the deleted tile comes back");
    assert_eq!(retiling.changed.len(), 1);

    let history = activity::list(&store, TEAM, insights::SCOPE, Some("1"))
        .await
        .unwrap();
    assert_eq!(history[0].activity, "updated");
    assert_eq!(
        history[0].detail.short_id.as_deref(),
        Some(chart.short_id.as_str())
    );
    let changes = history[0].detail.changes.clone().unwrap_or_default();
    assert_eq!(changes.len(), 1);
    assert_eq!(changes[0].field, "dashboards");
}

#[tokio::test]
async fn deleting_a_dashboard_takes_the_insights_only_it_shows() {
    let store = common::testing::memory_store();
    let actor = Actor::system();
    let mut boards = Vec::new();
    for name in ["a", "b"] {
        let mut board = dashboard(name);
        let ops = dashboards::plan_create(&store, &mut board, &actor, at(1))
            .await
            .unwrap();
        try_commit(&store, ops).await.unwrap();
        boards.push(board.id);
    }
    for (name, on) in [("alone", vec![boards[0]]), ("shared", boards.clone())] {
        let live = dashboards::list_live_stored(&store, TEAM).await.unwrap();
        let mut chart = insight(name);
        let ops = insights::plan_create(&store, &mut chart, &on, &live, &actor, at(2))
            .await
            .unwrap();
        try_commit(&store, ops).await.unwrap();
    }
    let first = dashboards::get(&store, TEAM, boards[0])
        .await
        .unwrap()
        .unwrap();
    let others = vec![
        dashboards::get_live(&store, TEAM, boards[1])
            .await
            .unwrap()
            .unwrap(),
    ];
    let mut shown_now = Vec::new();
    for id in [1, 2] {
        shown_now.push(insights::get(&store, TEAM, id).await.unwrap().unwrap());
    }
    let mut gone = first.dashboard.clone();
    gone.deleted = true;
    let cascaded = dashboards::delete(&gone, true, &shown_now, &others);
    assert_eq!(cascaded.len(), 1);
    assert_eq!(cascaded[0].1.name.as_deref(), Some("alone"));
    let writes = dashboards::plan_save(&first, &mut gone, &cascaded, None, &actor, at(3)).unwrap();
    writes.commit(&store).await.unwrap();
    assert!(insights::get_live(&store, TEAM, 1).await.unwrap().is_none());
    assert!(insights::get_live(&store, TEAM, 2).await.unwrap().is_some());

    let deleted = dashboards::get(&store, TEAM, boards[0])
        .await
        .unwrap()
        .unwrap();
    let shown = vec![
        insights::get(&store, TEAM, 1).await.unwrap().unwrap(),
        insights::get(&store, TEAM, 2).await.unwrap().unwrap(),
    ];
    let mut back = deleted.dashboard.clone();
    back.deleted = false;
    let restored = dashboards::restore(&back, &shown);
    assert_eq!(restored.len(), 1);
    let writes =
        dashboards::plan_save(&deleted, &mut back, &restored, None, &actor, at(4)).unwrap();
    writes.commit(&store).await.unwrap();
    assert!(insights::get_live(&store, TEAM, 1).await.unwrap().is_some());
    let history = activity::list(&store, TEAM, dashboards::SCOPE, Some("1"))
        .await
        .unwrap();
    let kinds: Vec<&str> = history.iter().map(|e| e.activity.as_str()).collect();
    assert_eq!(kinds, ["restored", "deleted", "created"]);
}

/// Every insight of the project as read, deleted ones included.
async fn every_insight(store: &dyn common::store::Store) -> Vec<insights::Stored> {
    let mut found = Vec::new();
    for insight in insights::list_all(store, TEAM).await.unwrap() {
        found.push(
            insights::get(store, TEAM, insight.id)
                .await
                .unwrap()
                .unwrap(),
        );
    }
    found
}

/// More items than one transaction holds: a dashboard deleted with 120 insights only it shows,
/// then restored with them, each write committed in parts and logged once.
#[tokio::test]
async fn a_dashboard_with_more_insights_than_one_transaction_holds() {
    const MANY: usize = 120;
    let store = common::testing::memory_store();
    let actor = Actor::system();
    let mut board = dashboard("big");
    let ops = dashboards::plan_create(&store, &mut board, &actor, at(1))
        .await
        .unwrap();
    try_commit(&store, ops).await.unwrap();
    for index in 0..MANY {
        let live = dashboards::list_live_stored(&store, TEAM).await.unwrap();
        let mut chart = insight(&format!("chart {index}"));
        let ops = insights::plan_create(&store, &mut chart, &[board.id], &live, &actor, at(2))
            .await
            .unwrap();
        try_commit(&store, ops).await.unwrap();
    }

    let first = dashboards::get(&store, TEAM, board.id)
        .await
        .unwrap()
        .unwrap();
    let mut gone = first.dashboard.clone();
    gone.deleted = true;
    let cascaded = dashboards::delete(&gone, true, &every_insight(&store).await, &[]);
    assert_eq!(cascaded.len(), MANY);
    let writes = dashboards::plan_save(&first, &mut gone, &cascaded, None, &actor, at(3)).unwrap();
    assert!(writes.is_split());
    writes.commit(&store).await.unwrap();
    assert!(insights::list_live(&store, TEAM).await.unwrap().is_empty());

    let deleted = dashboards::get(&store, TEAM, board.id)
        .await
        .unwrap()
        .unwrap();
    let mut back = deleted.dashboard.clone();
    back.deleted = false;
    let restored = dashboards::restore(&back, &every_insight(&store).await);
    let writes =
        dashboards::plan_save(&deleted, &mut back, &restored, None, &actor, at(4)).unwrap();
    writes.commit(&store).await.unwrap();
    assert_eq!(insights::list_live(&store, TEAM).await.unwrap().len(), MANY);
    let history = activity::list(&store, TEAM, dashboards::SCOPE, Some(&board.id.to_string()))
        .await
        .unwrap();
    let kinds: Vec<&str> = history.iter().map(|e| e.activity.as_str()).collect();
    assert_eq!(kinds, ["restored", "deleted", "created"]);

    // A part that loses a race answers `Raced` with the parts before it committed, and planning
    // again finds only what is left to move.
    let stale = dashboards::get(&store, TEAM, board.id)
        .await
        .unwrap()
        .unwrap();
    let mut again = stale.dashboard.clone();
    again.deleted = true;
    let cascaded = dashboards::delete(&again, true, &every_insight(&store).await, &[]);
    let writes = dashboards::plan_save(&stale, &mut again, &cascaded, None, &actor, at(5)).unwrap();
    // Someone renames the dashboard meanwhile: the last part (the dashboard) loses.
    let mut renamed = stale.dashboard.clone();
    renamed.name = Some("renamed".into());
    let ops = dashboards::plan_save(&stale, &mut renamed, &[], None, &actor, at(5)).unwrap();
    ops.commit(&store).await.unwrap();
    assert!(matches!(
        writes.commit(&store).await,
        Err(WriteError::Raced)
    ));
    let left = insights::list_live(&store, TEAM).await.unwrap().len();
    assert!(left < MANY, "the parts ahead committed: {left} left");
    let current = dashboards::get(&store, TEAM, board.id)
        .await
        .unwrap()
        .unwrap();
    let mut retry = current.dashboard.clone();
    retry.deleted = true;
    let cascaded = dashboards::delete(&retry, true, &every_insight(&store).await, &[]);
    assert_eq!(cascaded.len(), left);
    let writes =
        dashboards::plan_save(&current, &mut retry, &cascaded, None, &actor, at(6)).unwrap();
    writes.commit(&store).await.unwrap();
    assert!(insights::list_live(&store, TEAM).await.unwrap().is_empty());
}
