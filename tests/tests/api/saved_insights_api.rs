//! Saved insights (`/api/projects/:id/insights/`) on both backends: CRUD with PostHog's shapes,
//! the query node upgraded and checked on save (400s naming the field, wrappers included),
//! lookups by id and short id, list filters and pages, soft delete and restore, the activity
//! log, scopes and tenancy, and `?refresh=` computing `result` from captured events through
//! the same pipeline as `/query/`.

use api_tests::{World, error_shape};
use axum::http::{Method, StatusCode};
use serde_json::{Value, json};

fn insights_uri(world: &World) -> String {
    format!("/api/projects/{}/insights/", world.bootstrap.project.id)
}

fn insight_uri(world: &World, id: &Value) -> String {
    format!("{}{}/", insights_uri(world), id)
}

fn trend(event: &str) -> Value {
    json!({
        "kind": "TrendsQuery",
        "interval": "day",
        "dateRange": {"date_from": "2026-11-01", "date_to": "2026-11-03"},
        "series": [{"kind": "EventsNode", "event": event}],
    })
}

async fn create(world: &World, key: &str, body: Value) -> Value {
    let (status, created) = world
        .send(
            Method::POST,
            &insights_uri(world),
            Some(key),
            Some(&body.to_string()),
        )
        .await;
    assert_eq!(
        status,
        StatusCode::CREATED,
        "{} {body} {created}",
        world.name()
    );
    created
}

async fn refused(
    world: &World,
    method: Method,
    uri: &str,
    body: Value,
) -> (StatusCode, Option<String>) {
    let (status, answer) = world.send_json(method, uri, body.clone()).await;
    assert!(status.is_client_error(), "{} {body} {answer}", world.name());
    (status, error_shape(&answer).1)
}

#[tokio::test]
async fn insights_are_saved_checked_and_read_back() {
    for world in World::all().await {
        let name = world.name();
        let key = world.admin_key().to_owned();
        let created = create(
            &world,
            &key,
            json!({"name": "Pageviews", "description": "daily", "tags": ["Growth", "growth"],
                   "query": {"kind": "InsightVizNode", "source": trend("$pageview")}}),
        )
        .await;
        assert!(created["id"].is_i64(), "{name} {created}");
        let short_id = created["short_id"].as_str().unwrap().to_owned();
        assert_eq!(short_id.len(), 8, "{name}");
        assert!(short_id.chars().all(|c| c.is_ascii_alphanumeric()));
        assert_eq!(created["name"], "Pageviews");
        assert_eq!(created["query"]["kind"], "InsightVizNode");
        assert_eq!(
            created["query"]["source"]["series"][0]["event"],
            "$pageview"
        );
        assert_eq!(created["tags"], json!(["growth"]));
        assert_eq!(created["dashboards"], json!([]));
        assert_eq!(created["deleted"], json!(false));
        assert_eq!(created["saved"], json!(false));
        assert_eq!(created["favorited"], json!(false));
        assert_eq!(created["created_by"]["email"], world.bootstrap.user.email);
        assert_eq!(
            created["last_modified_by"]["email"],
            world.bootstrap.user.email
        );
        assert!(created["created_at"].is_string() && created["last_modified_at"].is_string());
        // Nothing computed yet: the default read is cache only.
        assert_eq!(created["result"], Value::Null, "{name}");
        assert_eq!(created["is_cached"], json!(false), "{name}");
        assert_eq!(created["last_refresh"], Value::Null, "{name}");

        // By id and by short id.
        for path in [created["id"].clone(), json!(short_id)] {
            let uri = format!(
                "{}{}/",
                insights_uri(&world),
                path.as_str().map_or(path.to_string(), str::to_owned)
            );
            let (status, read) = world.get(&uri, Some(&key)).await;
            assert_eq!(status, StatusCode::OK, "{name} {read}");
            assert_eq!(read["id"], created["id"], "{name}");
        }
        let (status, _) = world
            .get(&format!("{}nope1234/", insights_uri(&world)), Some(&key))
            .await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{name}");

        // Old nodes are upgraded before they are checked and stored (v3 series had no kind).
        let mut old = trend("$pageview");
        old["version"] = json!(3);
        old["series"][0]
            .as_object_mut()
            .map(|item| item.remove("kind"));
        let upgraded = create(&world, &key, json!({"query": old})).await;
        assert_eq!(
            upgraded["query"]["series"][0]["kind"], "EventsNode",
            "{name} {upgraded}"
        );

        // PostHog's stored shapes of SQL insights.
        let table = create(
            &world,
            &key,
            json!({"name": "Raw", "query": {"kind": "DataTableNode",
                "source": {"kind": "EventsQuery", "select": ["event"], "after": "2026-11-01"}}}),
        )
        .await;
        assert_eq!(table["query"]["source"]["kind"], "EventsQuery");
        create(
            &world,
            &key,
            json!({"query": {"kind": "DataVisualizationNode",
                "source": {"kind": "HogQLQuery", "query": "select count() from events"}}}),
        )
        .await;

        // 400s name the field, where the node sits.
        let uri = insights_uri(&world);
        let mut bad_math = trend("$pageview");
        bad_math["series"][0]["math"] = json!("nonsense");
        for (body, attr) in [
            (json!({"query": bad_math.clone()}), "query.series[0].math"),
            (
                json!({"query": {"kind": "InsightVizNode", "source": bad_math}}),
                "query.source.series[0].math",
            ),
            (
                json!({"query": {"kind": "DataVisualizationNode", "source": {"kind": "HogQLQuery", "query": " "}}}),
                "query.source.query",
            ),
            (json!({"query": {"kind": "InsightVizNode"}}), "query.source"),
            (json!({"query": {"series": []}}), "query.kind"),
            (json!({"query": "select 1"}), "query"),
            (
                json!({"query": {"kind": "TrendsQuery", "series": [], "version": "x"}}),
                "query.version",
            ),
            (json!({"name": "x".repeat(401)}), "name"),
            (json!({"tags": "growth"}), "tags"),
            (json!({"favorited": "yes"}), "favorited"),
            (json!({"dashboards": [987654]}), "dashboards"),
            (json!({"filters": {"insight": "TRENDS"}}), "filters"),
        ] {
            let (status, got) = refused(&world, Method::POST, &uri, body.clone()).await;
            assert_eq!(status, StatusCode::BAD_REQUEST, "{name} {body}");
            assert_eq!(got.as_deref(), Some(attr), "{name} {body}");
        }
        let (status, answer) = world
            .send_json(Method::POST, &uri, json!({"bogus": 1}))
            .await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{name} {answer}");
        assert!(
            answer["detail"].as_str().unwrap().contains("bogus"),
            "{name} {answer}"
        );

        // A partial update; read-only fields sent back are ignored.
        let one = insight_uri(&world, &created["id"]);
        let mut echoed = created.clone();
        echoed["name"] = json!("Pageviews (all)");
        echoed["favorited"] = json!(true);
        echoed.as_object_mut().map(|fields| fields.remove("saved"));
        let (status, updated) = world.send_json(Method::PATCH, &one, echoed).await;
        assert_eq!(status, StatusCode::OK, "{name} {updated}");
        assert_eq!(updated["name"], "Pageviews (all)");
        assert_eq!(updated["favorited"], json!(true));
        assert_eq!(updated["saved"], json!(true), "PostHog saves on update");
        assert_eq!(updated["short_id"], created["short_id"]);
        assert!(updated["last_modified_at"].as_str() >= created["last_modified_at"].as_str());
        let mut bad = trend("$pageview");
        bad["series"][0]["math"] = json!("nonsense");
        let (status, attr) = refused(&world, Method::PATCH, &one, json!({"query": bad})).await;
        assert_eq!(
            (status, attr.as_deref()),
            (StatusCode::BAD_REQUEST, Some("query.series[0].math")),
            "{name}"
        );
        let (status, put) = world
            .send_json(Method::PUT, &one, json!({"description": "every day"}))
            .await;
        assert_eq!(status, StatusCode::OK, "{name} {put}");
        assert_eq!(put["description"], "every day");
        assert_eq!(put["name"], "Pageviews (all)");

        // Soft delete: PATCH `deleted`; DELETE is refused as PostHog does.
        let (status, answer) = world.send(Method::DELETE, &one, Some(&key), None).await;
        assert_eq!(status, StatusCode::METHOD_NOT_ALLOWED, "{name} {answer}");
        error_shape(&answer);
        let (status, gone) = world
            .send_json(Method::PATCH, &one, json!({"deleted": true}))
            .await;
        assert_eq!(status, StatusCode::OK, "{name} {gone}");
        assert_eq!(gone["deleted"], json!(true));
        let (status, _) = world.get(&one, Some(&key)).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{name}");
        let (status, _) = world
            .send_json(Method::PATCH, &one, json!({"name": "again"}))
            .await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{name}");
        let (_, listed) = world.get(&uri, Some(&key)).await;
        let ids: Vec<&Value> = listed["results"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| &i["id"])
            .collect();
        assert!(!ids.contains(&&created["id"]), "{name}");
        let (status, back) = world
            .send_json(Method::PATCH, &one, json!({"deleted": false}))
            .await;
        assert_eq!(status, StatusCode::OK, "{name} {back}");
        assert_eq!(back["deleted"], json!(false));

        // The activity log, newest first.
        let (status, log) = world.get(&format!("{one}activity/"), Some(&key)).await;
        assert_eq!(status, StatusCode::OK, "{name} {log}");
        let kinds: Vec<&str> = log["results"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["activity"].as_str().unwrap())
            .collect();
        assert_eq!(
            kinds,
            ["restored", "deleted", "updated", "updated", "created"],
            "{name}"
        );
        assert_eq!(log["results"][0]["scope"], "Insight");
        assert_eq!(log["results"][0]["detail"]["short_id"], created["short_id"]);
        let (status, all) = world.get(&format!("{uri}activity/"), Some(&key)).await;
        assert_eq!(status, StatusCode::OK, "{name}");
        assert!(all["results"].as_array().unwrap().len() >= 5, "{name}");

        // Under /api/environments/ too.
        let twin = format!(
            "/api/environments/{}/insights/{}/",
            world.bootstrap.project.id, created["id"]
        );
        let (status, _) = world.get(&twin, Some(&key)).await;
        assert_eq!(status, StatusCode::OK, "{name}");
        println!("insights_are_saved_checked_and_read_back passed on {name}");
    }
}

#[tokio::test]
async fn scopes_and_tenancy() {
    for world in World::all().await {
        let name = world.name();
        let store = world.backend.state.store.clone();
        let created = create(
            &world,
            world.admin_key(),
            json!({"name": "Mine", "query": trend("$pageview")}),
        )
        .await;
        let one = insight_uri(&world, &created["id"]);
        let reader = world.key(&["insight:read"], None).await;
        let (status, _) = world.get(&one, Some(&reader)).await;
        assert_eq!(status, StatusCode::OK, "{name}");
        for (method, uri) in [
            (Method::POST, insights_uri(&world)),
            (Method::PATCH, one.clone()),
        ] {
            let (status, answer) = world
                .send(
                    method,
                    &uri,
                    Some(&reader),
                    Some(&json!({"name": "x"}).to_string()),
                )
                .await;
            assert_eq!(status, StatusCode::FORBIDDEN, "{name} {answer}");
            error_shape(&answer);
        }
        let writer = world.key(&["insight:write"], None).await;
        let (status, _) = world
            .send(
                Method::PATCH,
                &one,
                Some(&writer),
                Some("{\"name\": \"y\"}"),
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{name}");
        let other_scope = world.key(&["dashboard:read"], None).await;
        let (status, _) = world.get(&insights_uri(&world), Some(&other_scope)).await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{name}");
        let (status, _) = world.get(&insights_uri(&world), None).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED, "{name}");

        // Another project of the organization does not see it; another organization is closed.
        let sibling = common::provisioning::create_project(
            store.as_ref(),
            world.bootstrap.organization.id,
            "Sibling",
            "UTC",
        )
        .await
        .unwrap();
        let elsewhere = format!("/api/projects/{}/insights/{}/", sibling.id, created["id"]);
        let (status, answer) = world.get(&elsewhere, Some(world.admin_key())).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{name} {answer}");
        let by_short = format!(
            "/api/projects/{}/insights/{}/",
            sibling.id,
            created["short_id"].as_str().unwrap()
        );
        let (status, _) = world.get(&by_short, Some(world.admin_key())).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{name}");
        let foreign = format!("/api/projects/{}/insights/", world.foreign_project);
        let (status, _) = world.get(&foreign, Some(world.admin_key())).await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{name}");
        // A member of the organization may use the project's insights.
        let (status, _) = world.get(&one, Some(&world.member_key)).await;
        assert_eq!(status, StatusCode::OK, "{name}");
        println!("scopes_and_tenancy passed on {name}");
    }
}

#[tokio::test]
async fn the_list_filters_and_pages() {
    for world in World::all().await {
        let name = world.name();
        let admin = world.admin_key().to_owned();
        let signups = create(
            &world,
            &admin,
            json!({"name": "Weekly signups", "saved": true, "favorited": true, "query": trend("signed_up")}),
        )
        .await;
        let views = create(
            &world,
            &admin,
            json!({"name": "Views", "description": "all the Signup pages", "query": trend("$pageview")}),
        )
        .await;
        let members = create(
            &world,
            &world.member_key,
            json!({"name": "Member's", "saved": true, "query": trend("x")}),
        )
        .await;
        let uri = insights_uri(&world);
        let ids_of = |page: &Value| -> Vec<i64> {
            page["results"]
                .as_array()
                .unwrap()
                .iter()
                .map(|i| i["id"].as_i64().unwrap())
                .collect()
        };
        let id = |insight: &Value| insight["id"].as_i64().unwrap();

        let (status, all) = world.get(&uri, Some(&admin)).await;
        assert_eq!(status, StatusCode::OK, "{name} {all}");
        assert_eq!(all["count"], json!(3));
        // Last modified first.
        assert_eq!(
            ids_of(&all),
            [id(&members), id(&views), id(&signups)],
            "{name}"
        );
        for (query, expected) in [
            ("saved=true", vec![id(&members), id(&signups)]),
            ("saved=false", vec![id(&views)]),
            ("favorited=true", vec![id(&signups)]),
            ("search=signup", vec![id(&views), id(&signups)]),
            ("search=WEEKLY", vec![id(&signups)]),
            (
                &format!("short_id={}", views["short_id"].as_str().unwrap()),
                vec![id(&views)],
            ),
            (
                &format!("created_by=%5B{}%5D", world.member.id()),
                vec![id(&members)],
            ),
            ("order=name", vec![id(&members), id(&views), id(&signups)]),
            (
                "order=created_at",
                vec![id(&signups), id(&views), id(&members)],
            ),
        ] {
            let (status, page) = world.get(&format!("{uri}?{query}"), Some(&admin)).await;
            assert_eq!(status, StatusCode::OK, "{name} {query} {page}");
            assert_eq!(ids_of(&page), expected, "{name} {query}");
        }
        // `dashboards`: on every listed dashboard.
        let dashboards = format!("/api/projects/{}/dashboards/", world.bootstrap.project.id);
        let (status, board) = world
            .send_json(Method::POST, &dashboards, json!({"name": "Board"}))
            .await;
        assert_eq!(status, StatusCode::CREATED, "{name} {board}");
        let (status, _) = world
            .send_json(
                Method::PATCH,
                &insight_uri(&world, &views["id"]),
                json!({"dashboards": [board["id"]]}),
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{name}");
        let (_, page) = world
            .get(
                &format!("{uri}?dashboards=%5B{}%5D", board["id"]),
                Some(&admin),
            )
            .await;
        assert_eq!(ids_of(&page), [id(&views)], "{name}");
        // On a dashboard counts as saved; the update saved it anyway, as PostHog does.
        let (_, page) = world.get(&format!("{uri}?saved=true"), Some(&admin)).await;
        assert_eq!(page["count"], json!(3), "{name}");

        let (status, first) = world.get(&format!("{uri}?limit=2"), Some(&admin)).await;
        assert_eq!(status, StatusCode::OK, "{name}");
        assert_eq!(
            (first["count"].as_i64(), ids_of(&first).len()),
            (Some(3), 2)
        );
        assert!(
            first["next"].as_str().unwrap().contains("offset=2"),
            "{name} {first}"
        );
        assert_eq!(first["previous"], Value::Null);
        let (_, second) = world
            .get(&format!("{uri}?limit=2&offset=2"), Some(&admin))
            .await;
        assert_eq!(ids_of(&second).len(), 1, "{name}");
        assert!(second["previous"].is_string());

        for (query, attr) in [
            ("created_by=me", "created_by"),
            ("dashboards=%5B%22a%22%5D", "dashboards"),
            ("order=colour", "order"),
            ("refresh=sometimes", "refresh"),
            ("limit=0", "limit"),
        ] {
            let (status, answer) = world.get(&format!("{uri}?{query}"), Some(&admin)).await;
            assert_eq!(status, StatusCode::BAD_REQUEST, "{name} {query} {answer}");
            assert_eq!(
                error_shape(&answer).1.as_deref(),
                Some(attr),
                "{name} {query}"
            );
        }
        println!("the_list_filters_and_pages passed on {name}");
    }
}

const EVENTS: &[(&str, &str, &str)] = &[
    ("$pageview", "a", "2026-11-01T10:00:00Z"),
    ("$pageview", "b", "2026-11-01T11:00:00Z"),
    ("$pageview", "a", "2026-11-03T09:00:00Z"),
    ("signed_up", "a", "2026-11-01T10:05:00Z"),
];

async fn post_query(world: &World, node: Value) -> Value {
    let uri = format!("/api/projects/{}/query/", world.bootstrap.project.id);
    let (status, answer) = world
        .send_json(
            Method::POST,
            &uri,
            json!({"query": node, "refresh": "force_blocking"}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{} {answer}", world.name());
    answer
}

#[tokio::test]
async fn refresh_computes_the_result_through_the_query_service() {
    for world in World::all().await {
        let name = world.name();
        let batch = EVENTS
            .iter()
            .map(|(event, who, at)| json!({"event": event, "distinct_id": who, "timestamp": at}))
            .collect();
        world.capture(batch).await;
        lake::commit_all(&world.backend.state).await.unwrap();
        let admin = world.admin_key().to_owned();
        let created = create(
            &world,
            &admin,
            json!({"name": "Views", "query": {"kind": "InsightVizNode", "source": trend("$pageview")}}),
        )
        .await;
        let one = insight_uri(&world, &created["id"]);

        // Cache only by default: nothing computed yet.
        let (status, cold) = world.get(&one, Some(&admin)).await;
        assert_eq!(status, StatusCode::OK, "{name} {cold}");
        assert_eq!(cold["result"], Value::Null, "{name}");
        // `blocking` computes it.
        let (status, fresh) = world
            .get(&format!("{one}?refresh=blocking"), Some(&admin))
            .await;
        assert_eq!(status, StatusCode::OK, "{name} {fresh}");
        assert_eq!(
            fresh["result"][0]["data"],
            json!([2, 0, 1]),
            "{name} {fresh}"
        );
        assert_eq!(fresh["result"][0]["count"], json!(3.0), "{name}");
        assert_eq!(fresh["is_cached"], json!(false), "{name}");
        assert!(fresh["last_refresh"].is_string(), "{name}");
        assert_eq!(fresh["timezone"], "UTC");
        // The same numbers as the node sent to /query/.
        let direct = post_query(&world, trend("$pageview")).await;
        assert_eq!(fresh["result"], direct["results"], "{name}");
        // Now the default read answers the cached result; `force_blocking` computes again.
        let (_, warm) = world.get(&one, Some(&admin)).await;
        assert_eq!(warm["result"], fresh["result"], "{name}");
        assert_eq!(warm["is_cached"], json!(true), "{name}");
        let (_, forced) = world
            .get(&format!("{one}?refresh=force_blocking"), Some(&admin))
            .await;
        assert_eq!(forced["is_cached"], json!(false), "{name}");
        assert_eq!(forced["result"], fresh["result"], "{name}");
        // `async` answers a fresh cached result at once.
        let (status, at_once) = world
            .get(&format!("{one}?refresh=async"), Some(&admin))
            .await;
        assert_eq!(status, StatusCode::OK, "{name} {at_once}");
        assert_eq!(at_once["result"], fresh["result"], "{name}");
        // The list answers cached results too.
        let (_, listed) = world.get(&insights_uri(&world), Some(&admin)).await;
        assert_eq!(listed["results"][0]["result"], fresh["result"], "{name}");
        let (_, basic) = world
            .get(
                &format!("{}?basic=true", insights_uri(&world)),
                Some(&admin),
            )
            .await;
        assert_eq!(basic["results"][0]["result"], Value::Null, "{name}");

        // A SQL insight: rows with their columns, types and hasMore.
        let sql = create(
            &world,
            &admin,
            json!({"query": {"kind": "DataVisualizationNode", "source": {"kind": "HogQLQuery",
                "query": "select event, count() as n from events group by event order by event"}}}),
        )
        .await;
        let (status, rows) = world
            .get(
                &format!("{}?refresh=force_blocking", insight_uri(&world, &sql["id"])),
                Some(&admin),
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{name} {rows}");
        assert_eq!(
            rows["result"],
            json!([["$pageview", 3], ["signed_up", 1]]),
            "{name} {rows}"
        );
        assert_eq!(rows["columns"], json!(["event", "n"]), "{name}");
        assert_eq!(rows["hasMore"], json!(false), "{name}");
        assert_eq!(rows["types"].as_array().map(Vec::len), Some(2), "{name}");
        // `force_async` queues a run: 202 with the status to follow (at /query/:id/).
        let (status, queued) = world
            .get(
                &format!("{}?refresh=force_async", insight_uri(&world, &sql["id"])),
                Some(&admin),
            )
            .await;
        assert_eq!(status, StatusCode::ACCEPTED, "{name} {queued}");
        assert_eq!(queued["result"], Value::Null, "{name}");
        assert_eq!(
            queued["query_status"]["complete"],
            json!(false),
            "{name} {queued}"
        );
        assert!(queued["query_status"]["id"].is_string(), "{name} {queued}");
        println!("refresh_computes_the_result_through_the_query_service passed on {name}");
    }
}
