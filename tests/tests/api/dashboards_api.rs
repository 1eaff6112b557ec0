//! Dashboards (`/api/projects/:id/dashboards/`) on both backends: CRUD with PostHog's shapes,
//! insight tiles placed through the insight's `dashboards` and removed through the dashboard's
//! `tiles`, text tiles, filters checked on save, soft delete (with its insights) and restore,
//! the activity log, scopes and tenancy, an insight on more dashboards than one Store
//! transaction holds (placed, deleted and restored), and a dashboard's filters laid over every
//! tile when it refreshes (concurrently): each tile's numbers equal the same node sent to
//! `/query/` with the narrowed date range (and the added property filter).

use api_tests::{World, error_shape};
use axum::http::{Method, StatusCode};
use serde_json::{Value, json};

fn dashboards_uri(world: &World) -> String {
    format!("/api/projects/{}/dashboards/", world.bootstrap.project.id)
}

fn insights_uri(world: &World) -> String {
    format!("/api/projects/{}/insights/", world.bootstrap.project.id)
}

fn uri_of(collection: &str, item: &Value) -> String {
    format!("{collection}{}/", item["id"])
}

async fn created(world: &World, uri: &str, body: Value) -> Value {
    let (status, answer) = world.send_json(Method::POST, uri, body.clone()).await;
    assert_eq!(
        status,
        StatusCode::CREATED,
        "{} {body} {answer}",
        world.name()
    );
    answer
}

async fn ok(world: &World, method: Method, uri: &str, body: Value) -> Value {
    let (status, answer) = world.send_json(method, uri, body.clone()).await;
    assert_eq!(
        status,
        StatusCode::OK,
        "{} {uri} {body} {answer}",
        world.name()
    );
    answer
}

async fn read(world: &World, uri: &str) -> (StatusCode, Value) {
    world.get(uri, Some(world.admin_key())).await
}

/// A daily trend of `event`; an empty `to` leaves the range open (until now).
fn trend(event: &str, from: &str, to: &str) -> Value {
    let mut range = json!({"date_from": from});
    if !to.is_empty() {
        range["date_to"] = json!(to);
    }
    json!({
        "kind": "TrendsQuery",
        "interval": "day",
        "dateRange": range,
        "series": [{"kind": "EventsNode", "event": event}],
    })
}

fn tile_insights(dashboard: &Value) -> Vec<i64> {
    dashboard["tiles"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|tile| tile["insight"]["id"].as_i64())
        .collect()
}

#[tokio::test]
async fn dashboards_hold_tiles_and_soft_delete() {
    for world in World::all().await {
        let name = world.name();
        let boards = dashboards_uri(&world);
        let first = created(
            &world,
            &boards,
            json!({"name": "Growth", "description": "weekly", "pinned": true, "tags": ["KPI"],
                   "filters": {"date_from": "-7d"}}),
        )
        .await;
        assert!(first["id"].is_i64(), "{name} {first}");
        assert_eq!(first["name"], "Growth");
        assert_eq!(first["pinned"], json!(true));
        assert_eq!(first["tags"], json!(["kpi"]));
        assert_eq!(first["filters"], json!({"date_from": "-7d"}));
        assert_eq!(first["persisted_filters"], json!({"date_from": "-7d"}));
        assert_eq!(first["tiles"], json!([]));
        assert_eq!(first["deleted"], json!(false));
        assert_eq!(first["created_by"]["email"], world.bootstrap.user.email);
        let cleared = ok(
            &world,
            Method::PATCH,
            &uri_of(&boards, &first),
            json!({"filters": {}}),
        )
        .await;
        assert_eq!(cleared["filters"], json!({}), "{name}");
        assert_eq!(cleared["persisted_filters"], Value::Null, "{name}");
        ok(
            &world,
            Method::PATCH,
            &uri_of(&boards, &first),
            json!({"filters": {"date_from": "-7d"}, "description": null}),
        )
        .await;
        let second = created(&world, &boards, json!({"name": "Alpha"})).await;
        let third = created(&world, &boards, json!({"name": "Beta"})).await;

        // Pinned first, then by name; no tiles in the list.
        let (status, list) = read(&world, &boards).await;
        assert_eq!(status, StatusCode::OK, "{name} {list}");
        let names: Vec<&str> = list["results"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| d["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["Growth", "Alpha", "Beta"], "{name}");
        assert_eq!(list["count"], json!(3));
        assert!(list["results"][0].get("tiles").is_none());

        // An insight placed on two dashboards; tiles follow its `dashboards`.
        let insights = insights_uri(&world);
        let insight = created(
            &world,
            &insights,
            json!({"name": "Views", "dashboards": [first["id"], second["id"]],
                   "query": {"kind": "InsightVizNode", "source": trend("$pageview", "-30d", "")}}),
        )
        .await;
        assert_eq!(
            insight["dashboards"],
            json!([first["id"], second["id"]]),
            "{name}"
        );
        assert_eq!(insight["dashboard_tiles"].as_array().unwrap().len(), 2);
        let (_, board) = read(&world, &uri_of(&boards, &first)).await;
        assert_eq!(
            tile_insights(&board),
            [insight["id"].as_i64().unwrap()],
            "{name} {board}"
        );
        assert_eq!(board["tiles"][0]["insight"]["name"], "Views");
        let moved = ok(
            &world,
            Method::PATCH,
            &uri_of(&insights, &insight),
            json!({"dashboards": [third["id"]]}),
        )
        .await;
        assert_eq!(moved["dashboards"], json!([third["id"]]), "{name}");
        let (_, board) = read(&world, &uri_of(&boards, &first)).await;
        assert!(tile_insights(&board).is_empty(), "{name} {board}");
        let (_, board) = read(&world, &uri_of(&boards, &third)).await;
        assert_eq!(tile_insights(&board), [insight["id"].as_i64().unwrap()]);
        let insight_tile = board["tiles"][0]["id"].clone();

        // Tile edits: a text tile added, a tile moved and coloured, then removed.
        let edited = ok(
            &world,
            Method::PATCH,
            &uri_of(&boards, &third),
            json!({"tiles": [
                {"text": {"body": "Read me"}, "layouts": {"sm": {"x": 0, "y": 0, "w": 6, "h": 2}}},
                {"id": insight_tile, "color": "blue", "layouts": {"sm": {"x": 0, "y": 5, "w": 6, "h": 5}}},
            ]}),
        )
        .await;
        let tiles = edited["tiles"].as_array().unwrap();
        assert_eq!(tiles.len(), 2, "{name} {edited}");
        // In layout order: the text (row 0) above the insight (row 5).
        assert_eq!(tiles[0]["text"]["body"], "Read me", "{name}");
        assert_eq!(tiles[0]["insight"], Value::Null);
        assert_eq!(tiles[1]["id"], insight_tile);
        assert_eq!(tiles[1]["color"], "blue");
        assert_eq!(tiles[1]["layouts"]["sm"]["y"], json!(5));
        let text_tile = tiles[0]["id"].clone();
        assert_ne!(text_tile, insight_tile);
        let edited = ok(
            &world,
            Method::PATCH,
            &uri_of(&boards, &third),
            json!({"tiles": [{"id": text_tile, "text": {"body": "Changed"}}, {"id": insight_tile, "deleted": true}]}),
        )
        .await;
        assert_eq!(
            edited["tiles"].as_array().unwrap().len(),
            1,
            "{name} {edited}"
        );
        assert_eq!(edited["tiles"][0]["text"]["body"], "Changed");
        let (_, insight_now) = read(&world, &uri_of(&insights, &insight)).await;
        assert_eq!(insight_now["dashboards"], json!([]), "{name}");

        // 400s name the field.
        let one = uri_of(&boards, &first);
        for (method, uri, body, attr) in [
            (
                Method::POST,
                boards.clone(),
                json!({"filters": {"date_from": "sometime"}}),
                "filters.date_from",
            ),
            (
                Method::POST,
                boards.clone(),
                json!({"filters": {"properties": [{"key": "a", "type": "nonsense", "value": 1}]}}),
                "filters.properties[0].type",
            ),
            (
                Method::POST,
                boards.clone(),
                json!({"filters": {"colour": "red"}}),
                "filters__colour",
            ),
            (
                Method::POST,
                boards.clone(),
                json!({"name": "x".repeat(401)}),
                "name",
            ),
            (
                Method::POST,
                boards.clone(),
                json!({"pinned": "yes"}),
                "pinned",
            ),
            (
                Method::POST,
                boards.clone(),
                json!({"use_dashboard": 1}),
                "use_dashboard",
            ),
            (
                Method::PATCH,
                one.clone(),
                json!({"tiles": [{"id": 99999, "color": "red"}]}),
                "tiles[0].id",
            ),
            (
                Method::PATCH,
                one.clone(),
                json!({"tiles": [{"color": "red"}]}),
                "tiles[0].text",
            ),
            (
                Method::PATCH,
                one.clone(),
                json!({"tiles": [{"text": {}}]}),
                "tiles[0].text.body",
            ),
        ] {
            let (status, answer) = world.send_json(method, &uri, body.clone()).await;
            assert_eq!(status, StatusCode::BAD_REQUEST, "{name} {body} {answer}");
            assert_eq!(
                error_shape(&answer).1.as_deref(),
                Some(attr),
                "{name} {body} {answer}"
            );
        }

        // Soft delete with its insights: the insight only it shows goes too, and comes back.
        let only_here = created(
            &world,
            &insights,
            json!({"name": "Only here", "dashboards": [second["id"]], "query": trend("$pageview", "-7d", "")}),
        )
        .await;
        let (status, answer) = world
            .send(
                Method::DELETE,
                &uri_of(&boards, &second),
                Some(world.admin_key()),
                None,
            )
            .await;
        assert_eq!(status, StatusCode::METHOD_NOT_ALLOWED, "{name} {answer}");
        let gone = ok(
            &world,
            Method::PATCH,
            &uri_of(&boards, &second),
            json!({"deleted": true, "delete_insights": true}),
        )
        .await;
        assert_eq!(gone["deleted"], json!(true));
        let (status, _) = read(&world, &uri_of(&boards, &second)).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{name}");
        let (status, _) = read(&world, &uri_of(&insights, &only_here)).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{name}");
        let (_, list) = read(&world, &boards).await;
        assert_eq!(list["count"], json!(2), "{name}");
        let back = ok(
            &world,
            Method::PATCH,
            &uri_of(&boards, &second),
            json!({"deleted": false}),
        )
        .await;
        assert_eq!(
            tile_insights(&back),
            [only_here["id"].as_i64().unwrap()],
            "{name} {back}"
        );
        let (status, _) = read(&world, &uri_of(&insights, &only_here)).await;
        assert_eq!(status, StatusCode::OK, "{name}");
        // An insight soft-deleted leaves its dashboards.
        ok(
            &world,
            Method::PATCH,
            &uri_of(&insights, &only_here),
            json!({"deleted": true}),
        )
        .await;
        let (_, board) = read(&world, &uri_of(&boards, &second)).await;
        assert!(tile_insights(&board).is_empty(), "{name} {board}");

        // The activity log.
        let (status, log) = read(&world, &format!("{}activity/", uri_of(&boards, &second))).await;
        assert_eq!(status, StatusCode::OK, "{name} {log}");
        let kinds: Vec<&str> = log["results"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["activity"].as_str().unwrap())
            .collect();
        assert_eq!(kinds, ["restored", "deleted", "created"], "{name}");
        assert_eq!(log["results"][0]["scope"], "Dashboard");
        let (status, _) = read(&world, &format!("{boards}activity/")).await;
        assert_eq!(status, StatusCode::OK, "{name}");
        println!("dashboards_hold_tiles_and_soft_delete passed on {name}");
    }
}

#[tokio::test]
async fn scopes_and_tenancy() {
    for world in World::all().await {
        let name = world.name();
        let boards = dashboards_uri(&world);
        let board = created(&world, &boards, json!({"name": "Mine"})).await;
        let one = uri_of(&boards, &board);
        let reader = world.key(&["dashboard:read"], None).await;
        let (status, _) = world.get(&one, Some(&reader)).await;
        assert_eq!(status, StatusCode::OK, "{name}");
        for (method, uri) in [(Method::POST, boards.clone()), (Method::PATCH, one.clone())] {
            let (status, answer) = world
                .send(method, &uri, Some(&reader), Some("{\"name\": \"x\"}"))
                .await;
            assert_eq!(status, StatusCode::FORBIDDEN, "{name} {answer}");
            error_shape(&answer);
        }
        let insight_only = world.key(&["insight:write"], None).await;
        let (status, _) = world.get(&boards, Some(&insight_only)).await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{name}");
        // Placing an insight is an insight write; a dashboard of another project is unknown.
        let sibling = common::provisioning::create_project(
            world.backend.state.store.as_ref(),
            world.bootstrap.organization.id,
            "Sibling",
            "UTC",
        )
        .await
        .unwrap();
        let (status, answer) = world
            .send(
                Method::POST,
                &format!("/api/projects/{}/insights/", sibling.id),
                Some(&insight_only),
                Some(&json!({"dashboards": [board["id"]]}).to_string()),
            )
            .await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{name} {answer}");
        assert_eq!(error_shape(&answer).1.as_deref(), Some("dashboards"));
        let (status, _) = world
            .get(
                &format!("/api/projects/{}/dashboards/{}/", sibling.id, board["id"]),
                Some(world.admin_key()),
            )
            .await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{name}");
        let (status, _) = world
            .get(
                &format!("/api/projects/{}/dashboards/", world.foreign_project),
                Some(world.admin_key()),
            )
            .await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{name}");
        let (status, _) = world
            .get(&format!("{boards}abc/"), Some(world.admin_key()))
            .await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{name}");
        let twin = format!(
            "/api/environments/{}/dashboards/{}/",
            world.bootstrap.project.id, board["id"]
        );
        let (status, _) = world.get(&twin, Some(&world.member_key)).await;
        assert_eq!(status, StatusCode::OK, "{name}");
        println!("scopes_and_tenancy passed on {name}");
    }
}

/// Five days of events: pageviews on each day (two on Nov 2), signups on Nov 1, 3 and 5;
/// half of them from the `pro` plan.
fn events() -> Vec<Value> {
    let mut events = Vec::new();
    for (event, day, who, plan) in [
        ("$pageview", 1, "a", "pro"),
        ("$pageview", 2, "a", "free"),
        ("$pageview", 2, "b", "pro"),
        ("$pageview", 3, "c", "pro"),
        ("$pageview", 4, "a", "free"),
        ("$pageview", 5, "b", "pro"),
        ("signed_up", 1, "a", "free"),
        ("signed_up", 3, "b", "pro"),
        ("signed_up", 5, "c", "pro"),
    ] {
        events.push(json!({"event": event, "distinct_id": who,
            "timestamp": format!("2026-11-0{day}T12:00:00Z"), "properties": {"plan": plan}}));
    }
    events
}

async fn query(world: &World, node: &Value) -> Value {
    let uri = format!("/api/projects/{}/query/", world.bootstrap.project.id);
    let body = json!({"query": node, "refresh": "force_blocking"});
    let (status, answer) = world.send_json(Method::POST, &uri, body).await;
    assert_eq!(status, StatusCode::OK, "{} {answer}", world.name());
    answer
}

/// The result of each insight tile of a dashboard, by insight name.
fn results_by_name(dashboard: &Value) -> Vec<(String, Value)> {
    dashboard["tiles"]
        .as_array()
        .unwrap()
        .iter()
        .map(|tile| {
            (
                tile["insight"]["name"].as_str().unwrap().to_owned(),
                tile["insight"]["result"].clone(),
            )
        })
        .collect()
}

#[tokio::test]
async fn a_dashboards_filters_refresh_every_tile() {
    for world in World::all().await {
        let name = world.name();
        world.capture(events()).await;
        lake::commit_all(&world.backend.state).await.unwrap();
        let views = trend("$pageview", "2026-11-01", "2026-11-05");
        let signups = json!({"kind": "TrendsQuery", "interval": "day",
            "dateRange": {"date_from": "2026-11-01", "date_to": "2026-11-05"},
            "series": [{"kind": "EventsNode", "event": "signed_up", "math": "dau"}],
            "trendsFilter": {"display": "BoldNumber"}});
        let boards = dashboards_uri(&world);
        let board = created(
            &world,
            &boards,
            json!({"name": "Narrow", "filters": {"date_from": "2026-11-02", "date_to": "2026-11-03"}}),
        )
        .await;
        let insights = insights_uri(&world);
        for (title, node) in [("Views", &views), ("Signups", &signups)] {
            created(
                &world,
                &insights,
                json!({"name": title, "dashboards": [board["id"]], "query": {"kind": "InsightVizNode", "source": node}}),
            )
            .await;
        }

        // Cache only first: nothing was computed with these filters.
        let (status, cold) = read(&world, &uri_of(&boards, &board)).await;
        assert_eq!(status, StatusCode::OK, "{name} {cold}");
        assert!(
            results_by_name(&cold)
                .iter()
                .all(|(_, result)| result.is_null()),
            "{name} {cold}"
        );

        let (status, fresh) = read(
            &world,
            &format!("{}?refresh=blocking", uri_of(&boards, &board)),
        )
        .await;
        assert_eq!(status, StatusCode::OK, "{name} {fresh}");
        let narrowed = |node: &Value, extra: Option<Value>| {
            let mut node = node.clone();
            node["dateRange"] = json!({"date_from": "2026-11-02", "date_to": "2026-11-03"});
            if let Some(properties) = extra {
                node["properties"] = properties;
            }
            node
        };
        for (title, node) in [("Views", &views), ("Signups", &signups)] {
            let (_, result) = results_by_name(&fresh)
                .into_iter()
                .find(|(n, _)| n == title)
                .unwrap();
            let expected = query(&world, &narrowed(node, None)).await["results"].clone();
            let whole = query(&world, node).await["results"].clone();
            assert_eq!(result, expected, "{name} {title} {fresh}");
            assert_ne!(
                result, whole,
                "{name} {title}: the filter changes the answer"
            );
        }
        let (_, views_tile) = results_by_name(&fresh)
            .into_iter()
            .find(|(n, _)| n == "Views")
            .unwrap();
        assert_eq!(views_tile[0]["data"], json!([2, 1]), "{name}");
        assert_eq!(views_tile[0]["count"], json!(3.0), "{name}");
        let (_, signups_tile) = results_by_name(&fresh)
            .into_iter()
            .find(|(n, _)| n == "Signups")
            .unwrap();
        assert_eq!(
            signups_tile[0]["aggregated_value"]
                .as_f64()
                .or(signups_tile[0]["count"].as_f64()),
            Some(1.0),
            "{name} {signups_tile}"
        );
        // The refreshed answers are now what a cache-only read shows.
        let (_, warm) = read(&world, &uri_of(&boards, &board)).await;
        assert_eq!(results_by_name(&warm), results_by_name(&fresh), "{name}");
        assert!(warm["tiles"][0]["is_cached"].as_bool().unwrap(), "{name}");
        // The insight read alone has no dashboard filters; `from_dashboard` lays them over it.
        let views_insight = &fresh["tiles"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["insight"]["name"] == "Views")
            .unwrap()["insight"];
        let alone = format!("{}?refresh=blocking", uri_of(&insights, views_insight));
        let (_, plain) = read(&world, &alone).await;
        assert_eq!(plain["result"][0]["count"], json!(6.0), "{name} {plain}");
        let (_, framed) = read(&world, &format!("{alone}&from_dashboard={}", board["id"])).await;
        assert_eq!(framed["result"], views_tile, "{name}");

        // Property filters are ANDed with each tile's own.
        let pro = json!([{"key": "plan", "value": "pro", "operator": "exact", "type": "event"}]);
        ok(&world, Method::PATCH, &uri_of(&boards, &board), json!({"filters": {"date_from": "2026-11-02", "date_to": "2026-11-03", "properties": pro}})).await;
        let (_, filtered) = read(
            &world,
            &format!("{}?refresh=blocking", uri_of(&boards, &board)),
        )
        .await;
        for (title, node) in [("Views", &views), ("Signups", &signups)] {
            let (_, result) = results_by_name(&filtered)
                .into_iter()
                .find(|(n, _)| n == title)
                .unwrap();
            let expected =
                query(&world, &narrowed(node, Some(pro.clone()))).await["results"].clone();
            assert_eq!(result, expected, "{name} {title} {filtered}");
        }
        let (_, views_pro) = results_by_name(&filtered)
            .into_iter()
            .find(|(n, _)| n == "Views")
            .unwrap();
        assert_eq!(views_pro[0]["data"], json!([1, 1]), "{name}");

        let (status, answer) = read(
            &world,
            &format!("{}?refresh=later", uri_of(&boards, &board)),
        )
        .await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{name}");
        assert_eq!(error_shape(&answer).1.as_deref(), Some("refresh"));
        println!("a_dashboards_filters_refresh_every_tile passed on {name}");
    }
}

/// More dashboards than one Store transaction (100 items) holds with the insight and its entry.
const MANY: usize = 130;

#[tokio::test]
async fn an_insight_on_more_dashboards_than_one_transaction_holds() {
    for world in World::all().await {
        let name = world.name();
        let boards = dashboards_uri(&world);
        let insights = insights_uri(&world);
        let mut ids = Vec::with_capacity(MANY);
        for index in 0..MANY {
            let board = created(&world, &boards, json!({"name": format!("Board {index}")})).await;
            ids.push(board["id"].as_i64().unwrap());
        }
        // A new insight is one transaction: bounded, with a 400 that says what to do.
        let (status, refused) = world
            .send_json(
                Method::POST,
                &insights,
                json!({"name": "Everywhere", "dashboards": ids}),
            )
            .await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{name} {refused}");
        assert_eq!(error_shape(&refused).1.as_deref(), Some("dashboards"));
        let chart = created(&world, &insights, json!({"name": "Everywhere"})).await;
        let chart_uri = uri_of(&insights, &chart);

        // Placed on all of them by a PATCH (new tiles on each: several transactions).
        let placed = ok(
            &world,
            Method::PATCH,
            &chart_uri,
            json!({"dashboards": ids}),
        )
        .await;
        assert_eq!(placed["dashboards"], json!(ids), "{name}");
        for id in [ids[0], ids[MANY / 2], ids[MANY - 1]] {
            let (_, board) = read(&world, &format!("{boards}{id}/")).await;
            assert_eq!(
                tile_insights(&board),
                [chart["id"].as_i64().unwrap()],
                "{name}"
            );
        }
        // Deleted: it leaves every dashboard, no 500.
        let (status, gone) = world
            .send_json(Method::PATCH, &chart_uri, json!({"deleted": true}))
            .await;
        assert_eq!(status, StatusCode::OK, "{name} {gone}");
        assert_eq!(gone["deleted"], true, "{name}");
        assert_eq!(gone["dashboards"], json!([]), "{name}");
        for id in &ids {
            let (_, board) = read(&world, &format!("{boards}{id}/")).await;
            assert!(tile_insights(&board).is_empty(), "{name} {id} {board}");
        }
        // (A deleted insight's own history is a 404: the scope's holds it.)
        let chart_id = chart["id"].to_string();
        let (_, log) = read(&world, &format!("{insights}activity/")).await;
        let entries: Vec<&Value> = log["results"]
            .as_array()
            .unwrap_or_else(|| panic!("{name} {log}"))
            .iter()
            .filter(|entry| entry["item_id"] == chart_id.as_str())
            .collect();
        let kinds: Vec<&str> = entries
            .iter()
            .map(|e| e["activity"].as_str().unwrap())
            .collect();
        assert_eq!(
            kinds,
            ["deleted", "updated", "created"],
            "{name}: logged once each"
        );
        let moved = entries[0]["detail"]["changes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|change| change["field"] == "dashboards")
            .unwrap_or_else(|| panic!("{name}: {log}"));
        assert_eq!(moved["before"], json!(ids), "{name}");
        assert_eq!(moved["after"], json!([]), "{name}");

        // Restored, then put back everywhere: its deleted tiles come back, no new ones.
        ok(&world, Method::PATCH, &chart_uri, json!({"deleted": false})).await;
        let back = ok(
            &world,
            Method::PATCH,
            &chart_uri,
            json!({"dashboards": ids}),
        )
        .await;
        assert_eq!(back["dashboards"], json!(ids), "{name}");
        assert_eq!(
            back["dashboard_tiles"], placed["dashboard_tiles"],
            "{name}: the same tile on each dashboard"
        );
        println!("an_insight_on_more_dashboards_than_one_transaction_holds passed on {name}");
    }
}
