//! Who may call what: 401 without a valid key, 403 for missing scopes or foreign projects,
//! 404 for what does not exist, on both backends.

use api_tests::{World, error_shape};
use axum::http::{Method, StatusCode};
use common::models::{MembershipLevel, NewUser, Project, User};
use common::provisioning;
use serde_json::{Value, json};

#[tokio::test]
async fn the_bootstrap_key_reads_the_caller() {
    for world in World::all().await {
        let name = world.name();
        let (status, me) = world.get("/api/users/@me/", Some(world.admin_key())).await;
        assert_eq!(status, StatusCode::OK, "{name} {me}");
        assert_eq!(me["uuid"], world.bootstrap.user.uuid.to_string(), "{name}");
        assert_eq!(me["email"], "admin@localhost", "{name}");
        assert_eq!(me["team"]["id"], world.bootstrap.project.id, "{name}");
        assert_eq!(
            me["team"]["api_token"], world.bootstrap.project.api_token,
            "{name}"
        );
        assert_eq!(
            me["organization"]["id"],
            world.bootstrap.organization.id.to_string(),
            "{name}"
        );
        assert!(
            me.get("password_hash").is_none(),
            "{name}: secrets never leave"
        );
        // Without a trailing slash too (PostHog routes end in `/?`).
        let (status, _) = world.get("/api/users/@me", Some(world.admin_key())).await;
        assert_eq!(status, StatusCode::OK, "{name}");
        // The key may also come in the query string.
        let uri = format!("/api/users/@me/?personal_api_key={}", world.admin_key());
        assert_eq!(world.get(&uri, None).await.0, StatusCode::OK, "{name}");
    }
}

#[tokio::test]
async fn missing_and_invalid_keys_are_401() {
    for world in World::all().await {
        let name = world.name();
        let (status, body) = world.get("/api/users/@me/", None).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED, "{name}");
        assert_eq!(error_shape(&body).0, "not_authenticated", "{name}");
        assert_eq!(body["type"], "authentication_error", "{name}");

        for wrong in ["phx_wrong", &format!("{}x", world.admin_key()), "pha_oauth"] {
            let (status, body) = world.get("/api/users/@me/", Some(wrong)).await;
            assert_eq!(status, StatusCode::UNAUTHORIZED, "{name} {wrong}");
            let code = error_shape(&body).0;
            assert!(
                code == "authentication_failed" || code == "not_authenticated",
                "{name} {code}"
            );
        }
        let (status, body) = world
            .get("/api/users/@me/?personal_api_key=phx_nope", None)
            .await;
        assert_eq!(status, StatusCode::UNAUTHORIZED, "{name}");
        assert!(
            body["detail"].as_str().unwrap().contains("query string"),
            "{name}"
        );
    }
}

#[tokio::test]
async fn scopes_are_enforced() {
    for world in World::all().await {
        let name = world.name();
        let project_only = world.key(&["project:read"], None).await;
        let (status, body) = world.get("/api/users/@me/", Some(&project_only)).await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{name}");
        assert_eq!(error_shape(&body).0, "permission_denied", "{name}");
        assert_eq!(
            body["detail"], "API key missing required scope 'user:read'",
            "{name}"
        );

        let uri = format!("/api/projects/{}/", world.bootstrap.project.id);
        assert_eq!(
            world.get(&uri, Some(&project_only)).await.0,
            StatusCode::OK,
            "{name}"
        );
        // Read does not imply write.
        let (status, body) = world
            .send(
                axum::http::Method::PATCH,
                &uri,
                Some(&project_only),
                Some(r#"{"name":"x"}"#),
            )
            .await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{name}");
        assert_eq!(
            body["detail"], "API key missing required scope 'project:write'",
            "{name}"
        );
        // Write implies read.
        let writer = world.key(&["project:write", "user:read"], None).await;
        assert_eq!(
            world.get(&uri, Some(&writer)).await.0,
            StatusCode::OK,
            "{name}"
        );
        assert_eq!(
            world.get("/api/users/@me/", Some(&writer)).await.0,
            StatusCode::OK,
            "{name}"
        );
    }
}

#[tokio::test]
async fn project_access_follows_membership_and_key_scoping() {
    for world in World::all().await {
        let name = world.name();
        let own = world.bootstrap.project.id;

        // A key scoped to another project is refused here.
        let scoped_elsewhere = world.key(&["*"], Some(vec![world.foreign_project])).await;
        let (status, body) = world
            .get(&format!("/api/projects/{own}/"), Some(&scoped_elsewhere))
            .await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{name}");
        assert_eq!(
            body["detail"],
            format!("API key does not have access to the requested project: ID {own}."),
            "{name}"
        );
        let scoped_here = world.key(&["*"], Some(vec![own])).await;
        assert_eq!(
            world
                .get(&format!("/api/projects/{own}/"), Some(&scoped_here))
                .await
                .0,
            StatusCode::OK,
            "{name}"
        );

        // A key scoped to another organization is refused on this organization's projects.
        let other_org = world
            .key_for_organizations(&["*"], None, Some(vec![world.foreign_organization]))
            .await;
        let (status, body) = world
            .get(&format!("/api/projects/{own}/"), Some(&other_org))
            .await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{name}");
        assert!(
            body["detail"]
                .as_str()
                .unwrap()
                .starts_with("API key does not have access to the requested organization"),
            "{name} {body}"
        );

        // A project of an organization the caller does not belong to.
        let (status, body) = world
            .get(
                &format!("/api/projects/{}/", world.foreign_project),
                Some(&world.member_key),
            )
            .await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{name}");
        assert_eq!(
            body["detail"], "You don't have access to the project.",
            "{name}"
        );

        // Unknown and malformed ids.
        for missing in ["999999", "abc", "1.5", "-"] {
            let (status, body) = world
                .get(
                    &format!("/api/projects/{missing}/"),
                    Some(world.admin_key()),
                )
                .await;
            assert_eq!(status, StatusCode::NOT_FOUND, "{name} {missing}");
            assert_eq!(body["detail"], "Project not found.", "{name}");
        }

        // `@current` is the user's current project.
        let (status, body) = world
            .get("/api/projects/@current/", Some(&world.member_key))
            .await;
        assert_eq!(status, StatusCode::OK, "{name}");
        assert_eq!(body["id"], own, "{name}");
    }
}

#[tokio::test]
async fn only_staff_read_other_users() {
    for world in World::all().await {
        let name = world.name();
        let admin_uuid = world.bootstrap.user.uuid;
        let (status, body) = world
            .get(
                &format!("/api/users/{admin_uuid}/"),
                Some(&world.member_key),
            )
            .await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{name}");
        assert_eq!(
            body["detail"],
            "As a non-staff user you're only allowed to access the `@me` user instance.",
            "{name}"
        );
        // Their own uuid is fine.
        let own = format!("/api/users/{}/", world.member.uuid);
        assert_eq!(
            world.get(&own, Some(&world.member_key)).await.0,
            StatusCode::OK,
            "{name}"
        );
        // Staff may read the member; an unknown uuid is 404.
        let (status, body) = world.get(&own, Some(world.admin_key())).await;
        assert_eq!(status, StatusCode::OK, "{name}");
        assert_eq!(body["email"], "member@example.com", "{name}");
        let unknown = format!("/api/users/{}/", uuid::Uuid::new_v4());
        assert_eq!(
            world.get(&unknown, Some(world.admin_key())).await.0,
            StatusCode::NOT_FOUND,
            "{name}"
        );
        assert_eq!(
            world
                .get("/api/users/not-a-uuid/", Some(world.admin_key()))
                .await
                .0,
            StatusCode::NOT_FOUND,
            "{name}"
        );
    }
}

/// Every project-scoped route of the app today (the routers of `functions/users/src/lib.rs`,
/// with the job runs of `common::jobs::http`, and `functions/query/src/lib.rs`): method, path
/// after `/api/projects/:id`, body.
const PROJECT_ROUTES: &[(&str, &str, Option<&str>)] = &[
    ("GET", "/", None),
    ("PATCH", "/", Some(r#"{"name": "Renamed"}"#)),
    ("GET", "/jobs/", None),
    ("GET", "/jobs/?job=compact", None),
    (
        "GET",
        "/jobs/compact/01960000-0000-7000-8000-000000000000/",
        None,
    ),
    (
        "POST",
        "/query/",
        Some(r#"{"query": {"kind": "HogQLQuery", "query": "select 1"}}"#),
    ),
    (
        "POST",
        "/query/HogQLQuery/",
        Some(r#"{"query": {"kind": "HogQLQuery", "query": "select 1"}}"#),
    ),
    ("GET", "/query/some-query-id/", None),
    ("DELETE", "/query/some-query-id/", None),
    ("GET", "/query/some-query-id/log/", None),
    (
        "POST",
        "/query/upgrade/",
        Some(r#"{"query": {"kind": "HogQLQuery", "query": "select 1"}}"#),
    ),
    ("POST", "/query/check_auth_for_async/", None),
    ("GET", "/query/draft_sql/?prompt=count%20pageviews", None),
];

/// Sends every project route to `project` with `key`; `(route, status, body)` for each.
async fn every_project_route(
    world: &World,
    project: i64,
    key: &str,
) -> Vec<(String, StatusCode, Value)> {
    let mut answers = Vec::new();
    for (method, suffix, body) in PROJECT_ROUTES {
        let method = Method::from_bytes(method.as_bytes()).expect("a method");
        let uri = format!("/api/projects/{project}{suffix}");
        let (status, answer) = world.send(method.clone(), &uri, Some(key), *body).await;
        answers.push((format!("{method} {uri}"), status, answer));
    }
    answers
}

#[tokio::test]
async fn staff_reach_only_the_projects_of_their_organizations() {
    for world in World::all().await {
        let name = world.name();
        let store = world.backend.state.store.clone();
        let staff_key = world.admin_key();
        assert!(
            world.bootstrap.user.is_staff,
            "{name}: the bootstrap user is staff"
        );
        // Someone who does belong to the foreign organization, so the routes are known to work
        // there and the refusals below come from membership alone.
        let insider = provisioning::create_user(
            store.as_ref(),
            NewUser {
                email: "insider@example.com",
                first_name: "In",
                last_name: "Sider",
                password: None,
                is_staff: false,
            },
            world.foreign_organization,
            MembershipLevel::Member,
        )
        .await
        .unwrap();
        let (_, insider_key) = provisioning::create_key(
            store.as_ref(),
            insider.uuid,
            "insider",
            vec!["*".into()],
            None,
            None,
        )
        .await
        .unwrap();

        for (route, status, body) in
            every_project_route(&world, world.foreign_project, staff_key).await
        {
            assert_eq!(
                status,
                StatusCode::FORBIDDEN,
                "{name} staff {route}: {body}"
            );
            assert_eq!(error_shape(&body).0, "permission_denied", "{name} {route}");
            assert_eq!(
                body["detail"], "You don't have access to the project.",
                "{name} {route}"
            );
        }
        let foreign_name = || async {
            Project::load(store.as_ref(), world.foreign_project)
                .await
                .unwrap()
                .map(|project| project.name)
        };
        assert_eq!(
            foreign_name().await.as_deref(),
            Some("Foreign"),
            "{name}: staff renamed it"
        );
        for (route, status, body) in
            every_project_route(&world, world.foreign_project, &insider_key).await
        {
            assert!(
                status != StatusCode::FORBIDDEN && status != StatusCode::UNAUTHORIZED,
                "{name} member {route}: {status} {body}"
            );
        }
        assert_eq!(
            foreign_name().await.as_deref(),
            Some("Renamed"),
            "{name}: the member renames it"
        );
        // The same staff key works where it is a member.
        for (route, status, body) in
            every_project_route(&world, world.bootstrap.project.id, staff_key).await
        {
            assert!(
                status != StatusCode::FORBIDDEN && status != StatusCode::UNAUTHORIZED,
                "{name} staff at home {route}: {status} {body}"
            );
        }
        // Staff cannot make a foreign organization or project their current one...
        for (field, value) in [
            (
                "set_current_organization",
                json!(world.foreign_organization),
            ),
            ("set_current_team", json!(world.foreign_project)),
        ] {
            let (status, body) = world
                .send(
                    Method::PATCH,
                    "/api/users/@me/",
                    Some(staff_key),
                    Some(&json!({ field: value }).to_string()),
                )
                .await;
            assert_eq!(status, StatusCode::BAD_REQUEST, "{name} {field}: {body}");
            assert_eq!(
                error_shape(&body),
                ("does_not_exist".into(), Some(field.into())),
                "{name}"
            );
        }
        // ...and a current context pointing there (a membership since lost) opens nothing.
        User::update(store.as_ref(), world.bootstrap.user.uuid, |user| {
            user.current_organization_id = Some(world.foreign_organization);
            user.current_team_id = Some(world.foreign_project);
            Ok(())
        })
        .await
        .unwrap();
        let (status, list) = world.get("/api/projects/", Some(staff_key)).await;
        assert_eq!(status, StatusCode::OK, "{name} {list}");
        assert_eq!(list["count"], 0, "{name}: {list}");
        assert_eq!(list["results"], json!([]), "{name}");
        let (status, body) = world.get("/api/projects/@current/", Some(staff_key)).await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{name} {body}");
        assert_eq!(error_shape(&body).0, "permission_denied", "{name}");
        let (status, me) = world.get("/api/users/@me/", Some(staff_key)).await;
        assert_eq!(status, StatusCode::OK, "{name} {me}");
        assert_eq!(me["team"], Value::Null, "{name}: {me}");
        assert_eq!(me["organization"], Value::Null, "{name}: {me}");
        // The member still lists the project.
        let (status, list) = world.get("/api/projects/", Some(&insider_key)).await;
        assert_eq!(status, StatusCode::OK, "{name} {list}");
        assert_eq!(
            list["results"][0]["id"], world.foreign_project,
            "{name}: {list}"
        );
    }
}
