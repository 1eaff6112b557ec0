//! Every project route under both prefixes, `/api/projects/:id/...` and `/api/environments/:id/...`,
//! walked from the route tables themselves (`local::FAMILIES`, what `analytics serve` mounts and each
//! Lambda binary serves), so a family added later is walked too: each path is routed (a method no
//! route has answers the 405 of a matched path, never the unknown-route 404) by the combined app
//! and by the family's own app, and a GET answers the same status through either prefix. Also:
//! links keep the prefix they were asked through, writes work through `/api/environments`, every
//! Lambda entry serves its family's table, and the SAM template sends every path of a family's
//! table (both prefixes) to that family's function.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use api_tests::{World, error_shape, respond};
use axum::body::Body;
use axum::http::{Method, Request, StatusCode};
use common::routes::{ENVIRONMENTS, PROJECTS, environments_twin};
use serde_json::{Value, json};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// A method no route is mounted for: a matched path answers it 405, an unknown path 404.
fn probe() -> Method {
    Method::from_bytes(b"PROBE").unwrap()
}

/// The ids the walked paths name, so reads reach real items.
struct Fixtures {
    project: i64,
    flag: String,
    experiment: String,
    cohort: String,
    survey: String,
    endpoint: String,
}

impl Fixtures {
    async fn create(world: &World) -> Self {
        let flag = world
            .create_flag(json!({"key": "prefixes", "filters": {"groups": [{"properties": [], "rollout_percentage": 50}]}}))
            .await;
        let experiment = world
            .create_experiment(json!({"name": "Prefixes", "feature_flag_key": "prefixes-exp"}))
            .await;
        let cohorts = format!("/api/projects/{}/cohorts/", world.bootstrap.project.id);
        let (status, cohort) = world
            .send_json(
                Method::POST,
                &cohorts,
                json!({"name": "Prefixes", "is_static": true}),
            )
            .await;
        assert_eq!(status, StatusCode::CREATED, "{cohort}");
        let survey = world
            .create_survey(json!({"name": "Prefixes", "type": "popover",
                "questions": [{"type": "open", "question": "Why?"}]}))
            .await;
        let endpoint = world
            .create_endpoint(
                "projects",
                json!({"name": "prefixes", "query": {"kind": "HogQLQuery", "query": "select 1 as one"}}),
            )
            .await;
        let id = |value: &Value| match value {
            Value::String(text) => text.clone(),
            other => other.to_string(),
        };
        Self {
            project: world.bootstrap.project.id,
            flag: id(&flag["id"]),
            experiment: id(&experiment["id"]),
            cohort: id(&cohort["id"]),
            survey: id(&survey["id"]),
            endpoint: id(&endpoint["name"]),
        }
    }

    /// `path` (an axum route) with each parameter filled: the fixture of the collection it names
    /// where there is one, else a value that parses.
    fn fill(&self, path: &str) -> String {
        let mut previous = "";
        let mut filled = Vec::new();
        for segment in path.split('/') {
            let value = match segment {
                "{project_id}" => self.project.to_string(),
                "{id}" => match previous {
                    "feature_flags" => self.flag.clone(),
                    "experiments" => self.experiment.clone(),
                    "cohorts" => self.cohort.clone(),
                    "surveys" => self.survey.clone(),
                    _ => "1".to_owned(),
                },
                "{name}" => self.endpoint.clone(),
                "{uuid}" => "@me".to_owned(),
                "{response}" => "018f0000-0000-7000-8000-000000000000".to_owned(),
                param if param.starts_with('{') => "1".to_owned(),
                literal => literal.to_owned(),
            };
            filled.push(value);
            previous = segment;
        }
        filled.join("/")
    }
}

async fn send(
    world: &World,
    app: &common::http::App,
    method: Method,
    uri: &str,
) -> (StatusCode, Value) {
    let request = Request::builder()
        .method(method)
        .uri(uri)
        .header("host", "testserver")
        .header("authorization", format!("Bearer {}", world.admin_key()))
        .body(Body::empty())
        .unwrap();
    respond(app.clone(), request).await
}

/// 405 with the error shape: the path was routed, the method is not one of its.
fn assert_routed(world: &World, what: &str, uri: &str, (status, body): &(StatusCode, Value)) {
    assert_eq!(
        *status,
        StatusCode::METHOD_NOT_ALLOWED,
        "{} {what}: {uri} is not routed: {body}",
        world.name()
    );
    assert_eq!(error_shape(body).0, "method_not_allowed", "{uri}");
}

#[tokio::test]
async fn every_project_route_answers_alike_under_both_prefixes() {
    for world in World::all().await {
        let name = world.name();
        let fixtures = Fixtures::create(&world).await;

        // The probe tells routed from unrouted: an unknown path under either prefix is the 404.
        for prefix in [PROJECTS, ENVIRONMENTS] {
            let uri = format!("{prefix}/{}/no_such_family", fixtures.project);
            let (status, body) = send(&world, &world.app, probe(), &uri).await;
            assert_eq!(status, StatusCode::NOT_FOUND, "{name} {uri}: {body}");
        }

        let mut walked = 0;
        let mut project_routes = 0;
        for (family, router) in local::FAMILIES {
            let table = router();
            // The family's app alone, as its Lambda binary serves it.
            let own = common::http::finish(router(), world.backend.state.clone());
            let paths = table.paths();
            for path in paths {
                if let Some(twin) = environments_twin(path) {
                    assert!(paths.contains(&twin), "{family}: {path} without {twin}");
                    project_routes += 1;
                }
                if let Some(rest) = path.strip_prefix(ENVIRONMENTS) {
                    let projects = format!("{PROJECTS}{rest}");
                    assert!(paths.contains(&projects), "{family}: {path} alone");
                }
                let uri = fixtures.fill(path);
                for (what, app) in [("the combined app", &world.app), (family, &own)] {
                    let answer = send(&world, app, probe(), &uri).await;
                    assert_routed(&world, what, &uri, &answer);
                }
                walked += 1;
            }
        }
        assert!(project_routes >= 60, "only {project_routes} project routes");

        // The same request through either prefix: the same handler, the same answer.
        for path in local::routes().paths() {
            let Some(twin) = environments_twin(path) else {
                continue;
            };
            let (projects, environments) = (fixtures.fill(path), fixtures.fill(&twin));
            let (status, body) = send(&world, &world.app, Method::GET, &projects).await;
            let (twin_status, twin_body) =
                send(&world, &world.app, Method::GET, &environments).await;
            assert_eq!(
                status, twin_status,
                "{name} GET {projects}: {body}\nGET {environments}: {twin_body}"
            );
        }
        assert!(walked > project_routes, "{name}: {walked} routes walked");
    }
}

#[tokio::test]
async fn links_writes_and_the_project_itself_under_environments() {
    for world in World::all().await {
        let name = world.name();
        let project = world.bootstrap.project.id;
        for key in ["first", "second"] {
            world
                .create_flag(json!({"key": key, "filters": {"groups": [{"properties": [], "rollout_percentage": 10}]}}))
                .await;
        }
        // A page's links keep the prefix it was asked through.
        for prefix in [PROJECTS, ENVIRONMENTS] {
            let uri = format!("{prefix}/{project}/feature_flags/?limit=1");
            let (status, page) = world.get(&uri, Some(world.admin_key())).await;
            assert_eq!(status, StatusCode::OK, "{name} {uri}: {page}");
            let next = page["next"].as_str().unwrap_or_default();
            assert!(
                next.starts_with(&format!(
                    "http://testserver{prefix}/{project}/feature_flags"
                )),
                "{name} {uri}: next {next}"
            );
        }

        // The project itself, and the list, as PostHog serves its team under environments.
        let key = Some(world.admin_key());
        let (status, by_project) = world.get(&format!("/api/projects/{project}/"), key).await;
        assert_eq!(status, StatusCode::OK, "{name} {by_project}");
        let (status, by_environment) = world
            .get(&format!("/api/environments/{project}/"), key)
            .await;
        assert_eq!(status, StatusCode::OK, "{name} {by_environment}");
        assert_eq!(by_environment, by_project, "{name}");
        let (status, current) = world.get("/api/environments/@current/", key).await;
        assert_eq!((status, &current["id"]), (StatusCode::OK, &json!(project)));
        let (status, list) = world.get("/api/environments/", key).await;
        assert_eq!(status, StatusCode::OK, "{name} {list}");
        assert!(
            list["results"]
                .as_array()
                .is_some_and(|all| all.iter().any(|p| p["id"] == project)),
            "{name} {list}"
        );

        // Writes go through as well, to the same project and the same items.
        let (status, renamed) = world
            .send_json(
                Method::PATCH,
                &format!("/api/environments/{project}/"),
                json!({"name": "Renamed through environments"}),
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{name} {renamed}");
        let (_, again) = world.get(&format!("/api/projects/{project}/"), key).await;
        assert_eq!(again["name"], "Renamed through environments", "{name}");
        let (status, cohort) = world
            .send_json(
                Method::POST,
                &format!("/api/environments/{project}/cohorts/"),
                json!({"name": "Made through environments", "is_static": true}),
            )
            .await;
        assert_eq!(status, StatusCode::CREATED, "{name} {cohort}");
        let (status, read) = world
            .get(
                &format!("/api/projects/{project}/cohorts/{}/", cohort["id"]),
                key,
            )
            .await;
        assert_eq!(
            (status, &read["name"]),
            (StatusCode::OK, &json!("Made through environments")),
            "{name}"
        );
        // Another organization's project stays out of reach through either prefix.
        for prefix in [PROJECTS, ENVIRONMENTS] {
            let uri = format!("{prefix}/{}/feature_flags/", world.foreign_project);
            let (status, body) = world.get(&uri, key).await;
            assert!(status.is_client_error(), "{name} {uri}: {status} {body}");
        }
    }
}

#[test]
fn every_lambda_entry_serves_its_route_table() {
    let families: Vec<&str> = local::FAMILIES.iter().map(|(name, _)| *name).collect();
    let mut entries = Vec::new();
    for dir in std::fs::read_dir(root().join("functions")).unwrap() {
        let dir = dir.unwrap().path();
        let Ok(main) = std::fs::read_to_string(dir.join("src/main.rs")) else {
            continue;
        };
        if !main.contains("common::lambda::run(") {
            continue;
        }
        let name = dir.file_name().unwrap().to_string_lossy().into_owned();
        let manifest = std::fs::read_to_string(dir.join("Cargo.toml")).unwrap();
        assert!(
            manifest.contains(&format!("name = \"{name}\"")),
            "functions/{name}: the crate is named as its folder"
        );
        assert!(
            main.contains(&format!("common::lambda::run({name}::router)")),
            "functions/{name}/src/main.rs serves another table than {name}::router"
        );
        entries.push(name);
    }
    entries.sort();
    let mut expected = families.clone();
    expected.sort();
    assert_eq!(
        entries, expected,
        "every HTTP Lambda entry is a family of local::FAMILIES, and every family has one"
    );
}

/// A route of the SAM template: the function (by binary) and its path.
struct GatewayRoute {
    binary: String,
    segments: Vec<String>,
}

/// Every HTTP API event path of every function in `infra/template.yaml`.
fn gateway_routes() -> Vec<GatewayRoute> {
    let template = std::fs::read_to_string(root().join("infra/template.yaml")).unwrap();
    let mut binaries: BTreeMap<String, String> = BTreeMap::new();
    let mut paths: Vec<(String, String)> = Vec::new();
    let mut function = String::new();
    for line in template.lines() {
        if let Some(name) = line
            .strip_prefix("  ")
            .filter(|rest| !rest.starts_with(' ') && !rest.starts_with('#'))
            .and_then(|rest| rest.strip_suffix(':'))
        {
            function = name.to_owned();
        }
        let trimmed = line.trim();
        if let Some(binary) = trimmed.strip_prefix("Binary: ") {
            binaries.insert(function.clone(), binary.to_owned());
        }
        if let Some(path) = trimmed.strip_prefix("Path: ") {
            paths.push((function.clone(), path.to_owned()));
        }
    }
    paths
        .into_iter()
        .map(|(function, path)| GatewayRoute {
            binary: binaries.get(&function).cloned().unwrap_or(function),
            segments: path
                .split('/')
                .filter(|s| !s.is_empty())
                .map(str::to_owned)
                .collect(),
        })
        .collect()
}

impl GatewayRoute {
    /// How specific a match of `path` is (higher wins, as HTTP API picks the most specific route:
    /// a full match over a greedy `{proxy+}`, a literal segment over a variable, a longer greedy
    /// prefix over a shorter one, `$default` last); `None` when it does not match.
    fn rank(&self, path: &[&str]) -> Option<(u8, Vec<u8>)> {
        if self.segments == ["$default"] {
            return Some((0, Vec::new()));
        }
        let mut ranks = Vec::new();
        for (i, segment) in self.segments.iter().enumerate() {
            if segment.ends_with("+}") {
                return (path.len() > i).then_some((1, ranks));
            }
            let given = path.get(i)?;
            if segment.starts_with('{') && !given.is_empty() {
                ranks.push(1);
            } else if segment == given {
                ranks.push(2);
            } else {
                return None;
            }
        }
        (path.len() == self.segments.len()).then_some((2, ranks))
    }
}

/// The routes `cargo lambda watch` serves (`[workspace.metadata.lambda.watch.router]` of the
/// workspace manifest): one segment per variable, a trailing slash its own route.
fn watch_routes() -> Vec<GatewayRoute> {
    let manifest = std::fs::read_to_string(root().join("Cargo.toml")).unwrap();
    let section = manifest
        .split("[workspace.metadata.lambda.watch.router]")
        .nth(1)
        .expect("the watch router");
    section
        .lines()
        .take_while(|line| !line.starts_with('['))
        .filter_map(|line| {
            let (path, binary) = line.split_once(" = ")?;
            let path = path.trim_matches('"');
            Some(GatewayRoute {
                binary: binary.trim_matches('"').to_owned(),
                segments: path.split('/').skip(1).map(str::to_owned).collect(),
            })
        })
        .collect()
}

/// The family the most specific of `routes` sends `segments` to.
fn destination<'a>(routes: &'a [GatewayRoute], segments: &[&str]) -> Option<&'a str> {
    routes
        .iter()
        .filter_map(|route| route.rank(segments).map(|rank| (rank, route)))
        .max_by(|a, b| a.0.cmp(&b.0))
        .map(|(_, route)| route.binary.as_str())
}

/// Every path of every family's table, with its parameters filled.
fn every_route() -> Vec<(&'static str, String, String)> {
    let fixtures = Fixtures {
        project: 1,
        flag: "1".into(),
        experiment: "1".into(),
        cohort: "1".into(),
        survey: "1".into(),
        endpoint: "daily".into(),
    };
    let mut all = Vec::new();
    for (family, table) in local::FAMILIES {
        for path in table().paths() {
            all.push((family, path.clone(), fixtures.fill(path)));
        }
    }
    assert!(all.len() > 100, "only {} routes", all.len());
    all
}

#[test]
fn cargo_lambda_watch_sends_every_route_to_its_family() {
    let routes = watch_routes();
    let mut astray = Vec::new();
    for (family, path, concrete) in every_route() {
        // Each path and its trailing-slash twin (the root is its own).
        let twins = if concrete.ends_with('/') {
            vec![concrete.clone()]
        } else {
            vec![concrete.clone(), format!("{concrete}/")]
        };
        for concrete in twins {
            let segments: Vec<&str> = concrete.split('/').skip(1).collect();
            let to = destination(&routes, &segments);
            if to != Some(family) {
                astray.push(format!("{concrete} ({path}): {to:?}, not {family}"));
            }
        }
    }
    assert!(
        astray.is_empty(),
        "the watch router of Cargo.toml sends these elsewhere:\n{}",
        astray.join("\n")
    );
}

#[test]
fn the_template_sends_every_route_to_its_family() {
    let routes = gateway_routes();
    let mut astray = Vec::new();
    for (family, path, concrete) in every_route() {
        let segments: Vec<&str> = concrete.split('/').filter(|s| !s.is_empty()).collect();
        let to = destination(&routes, &segments);
        if to != Some(family) {
            astray.push(format!("{concrete} ({path}): {to:?}, not {family}"));
        }
    }
    assert!(
        astray.is_empty(),
        "infra/template.yaml sends these elsewhere than their family's function:\n{}",
        astray.join("\n")
    );
}
