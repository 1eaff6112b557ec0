//! The SDK side of feature flags on both backends: `/flags` and `/decide` in every shape the
//! SDKs ask for, tokens, encodings and malformed bodies, person properties from the request and
//! from the stored person, groups, the local-evaluation definitions with scopes and ETags, and
//! the per-process cache dropping a project's flags when the CRUD routes change them.

use std::io::Write;

use api_tests::{World, error_shape, respond};
use axum::body::Body;
use axum::http::{Method, Request, StatusCode};
use base64::Engine;
use flate2::Compression;
use flate2::write::GzEncoder;
use serde_json::{Value, json};

fn token(world: &World) -> String {
    world.bootstrap.project.api_token.clone()
}

async fn patch(world: &World, id: &Value, body: Value) {
    let (status, answer) = world
        .send(
            Method::PATCH,
            &format!("{}{id}/", world.flags_uri()),
            Some(world.admin_key()),
            Some(&body.to_string()),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{} {answer}", world.name());
}

/// Posts raw bytes with the given headers.
async fn post(
    world: &World,
    uri: &str,
    headers: &[(&str, &str)],
    body: Vec<u8>,
) -> (StatusCode, Value) {
    let mut request = Request::post(uri);
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    respond(world.app.clone(), request.body(Body::from(body)).unwrap()).await
}

/// Posts a JSON body as posthog-python does.
async fn post_json(world: &World, uri: &str, body: Value) -> (StatusCode, Value) {
    post(
        world,
        uri,
        &[("content-type", "application/json")],
        body.to_string().into_bytes(),
    )
    .await
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut encoder = GzEncoder::new(Vec::new(), Compression::default());
    encoder.write_all(bytes).unwrap();
    encoder.finish().unwrap()
}

/// A boolean flag at `rollout` %, a multivariate one at 100 %, payloads on both.
async fn standard_flags(world: &World) -> (Value, Value) {
    let on = world.create_flag(json!({"key": "on", "filters": {"groups": [{"properties": [], "rollout_percentage": 100}],
            "payloads": {"true": "{\"a\": 1}"}}}))
    .await;
    let mv = world.create_flag(json!({"key": "mv", "filters": {"groups": [{"properties": [], "rollout_percentage": 100}],
            "multivariate": {"variants": [
                {"key": "control", "rollout_percentage": 50}, {"key": "test", "rollout_percentage": 50}]},
            "payloads": {"control": "\"c\"", "test": "\"t\""}}}))
    .await;
    world.create_flag(json!({"key": "off", "filters": {"groups": [{"properties": [], "rollout_percentage": 0}]}}))
    .await;
    world
        .create_flag(json!({"key": "inactive", "active": false,
            "filters": {"groups": [{"properties": [], "rollout_percentage": 100}]}}))
        .await;
    let gone = world.create_flag(json!({"key": "gone", "filters": {"groups": [{"properties": [], "rollout_percentage": 100}]}}))
    .await;
    patch(world, &gone["id"], json!({"deleted": true})).await;
    (on, mv)
}

fn keys(map: &Value) -> Vec<String> {
    let mut keys: Vec<String> = map
        .as_object()
        .unwrap_or_else(|| panic!("not an object: {map}"))
        .keys()
        .cloned()
        .collect();
    keys.sort();
    keys
}

#[tokio::test]
async fn every_route_and_version_answers_in_its_shape() {
    for world in World::all().await {
        let name = world.name();
        let (on, mv) = standard_flags(&world).await;
        let body = json!({"api_key": token(&world), "distinct_id": "user-1"});

        // posthog-python: /flags/?v=4.
        let (status, answer) = post_json(&world, "/flags/?v=4", body.clone()).await;
        assert_eq!(status, StatusCode::OK, "{name} {answer}");
        assert_eq!(
            keys(&answer["flags"]),
            ["mv", "off", "on"],
            "{name}: inactive and deleted are absent"
        );
        assert_eq!(answer["errorsWhileComputingFlags"], false, "{name}");
        assert!(
            answer["requestId"]
                .as_str()
                .unwrap()
                .parse::<uuid::Uuid>()
                .is_ok(),
            "{name}"
        );
        assert!(answer["evaluatedAt"].is_i64(), "{name}");
        assert!(
            answer.get("supportedCompression").is_none(),
            "{name}: no config unless asked"
        );
        let detail = &answer["flags"]["on"];
        assert_eq!(
            detail,
            &json!({"key": "on", "enabled": true, "variant": null,
                "reason": {"code": "condition_match", "condition_index": 0,
                    "description": detail["reason"]["description"]},
                "metadata": {"id": on["id"], "version": on["version"], "description": null,
                    "payload": "{\"a\": 1}"}}),
            "{name}"
        );
        let variant = answer["flags"]["mv"]["variant"]
            .as_str()
            .unwrap()
            .to_owned();
        assert!(["control", "test"].contains(&variant.as_str()), "{name}");
        assert_eq!(answer["flags"]["mv"]["metadata"]["id"], mv["id"], "{name}");
        assert_eq!(answer["flags"]["off"]["enabled"], false, "{name}");
        assert_eq!(
            answer["flags"]["off"]["reason"]["code"], "out_of_rollout_bound",
            "{name}"
        );
        assert_eq!(
            answer["flags"]["off"]["metadata"]["payload"],
            Value::Null,
            "{name}"
        );

        // No `v` and no `config`: v2 with the config.
        let (_, answer) = post_json(&world, "/flags", body.clone()).await;
        assert_eq!(keys(&answer["flags"]), ["mv", "off", "on"], "{name}");
        assert_eq!(
            answer["supportedCompression"],
            json!(["gzip", "gzip-js"]),
            "{name}"
        );
        assert_eq!(answer["hasFeatureFlags"], true, "{name}");

        // v1: the legacy maps, payloads as stored text.
        let legacy = json!({"mv": variant, "off": false, "on": true});
        let payloads = json!({"mv": format!("\"{}\"", &variant[..1]), "on": "{\"a\": 1}"});
        let (_, answer) = post_json(&world, "/flags/?v=1", body.clone()).await;
        assert_eq!(answer["featureFlags"], legacy, "{name} {answer}");
        assert_eq!(answer["featureFlagPayloads"], payloads, "{name}");
        assert!(answer.get("flags").is_none(), "{name}");

        // /decide: v3 legacy maps with the config, v2 enabled values, v1 enabled keys, v4 flags.
        let (status, answer) = post_json(&world, "/decide/?v=3", body.clone()).await;
        assert_eq!(status, StatusCode::OK, "{name} {answer}");
        assert_eq!(answer["featureFlags"], legacy, "{name}");
        assert_eq!(answer["featureFlagPayloads"], payloads, "{name}");
        assert_eq!(answer["errorsWhileComputingFlags"], false, "{name}");
        assert_eq!(answer["sessionRecording"], false, "{name}");
        assert_eq!(
            answer["config"],
            json!({"enable_collect_everything": false}),
            "{name}"
        );
        assert_eq!(
            answer["supportedCompression"],
            json!(["gzip", "gzip-js"]),
            "{name}"
        );
        let (_, answer) = post_json(&world, "/decide?v=2", body.clone()).await;
        assert_eq!(
            answer["featureFlags"],
            json!({"mv": variant, "on": true}),
            "{name}"
        );
        let (_, answer) = post_json(&world, "/decide/", body.clone()).await;
        let mut enabled: Vec<String> =
            serde_json::from_value(answer["featureFlags"].clone()).unwrap();
        enabled.sort();
        assert_eq!(enabled, ["mv", "on"], "{name}");
        let (_, answer) = post_json(&world, "/decide/?v=4", body.clone()).await;
        assert_eq!(keys(&answer["flags"]), ["mv", "off", "on"], "{name}");

        // GET evaluates nothing.
        let (status, answer) = world.get("/flags/?v=2", None).await;
        assert_eq!(status, StatusCode::OK, "{name}");
        assert_eq!(answer["flags"], json!({}), "{name}");

        // flag_keys_to_evaluate (python) and flag_keys (js) limit the answer.
        let mut limited = body.clone();
        limited["flag_keys_to_evaluate"] = json!(["on", "nope"]);
        let (_, answer) = post_json(&world, "/flags/?v=4", limited).await;
        assert_eq!(keys(&answer["flags"]), ["on"], "{name}");
        let mut limited = body.clone();
        limited["flag_keys"] = json!(["mv"]);
        let (_, answer) = post_json(&world, "/flags/?v=2", limited).await;
        assert_eq!(keys(&answer["flags"]), ["mv"], "{name}");

        // disable_flags: no flag is evaluated.
        let mut disabled = body.clone();
        disabled["disable_flags"] = json!(true);
        let (_, answer) = post_json(&world, "/flags/?v=2", disabled).await;
        assert_eq!(answer["flags"], json!({}), "{name}");
    }
}

#[tokio::test]
async fn tokens_encodings_and_malformed_bodies() {
    for world in World::all().await {
        let name = world.name();
        standard_flags(&world).await;
        let token = token(&world);
        let document = json!({"token": token, "distinct_id": "user-1", "unknown_sdk_field": [1]});
        let text = document.to_string();

        // The token in the body (`token`, `api_key`, `$token`) or in the query.
        for body in [
            json!({"token": token, "distinct_id": "u"}),
            json!({"api_key": token, "distinct_id": "u"}),
            json!({"$token": token, "distinct_id": 7}),
        ] {
            let (status, answer) = post_json(&world, "/flags/?v=4", body.clone()).await;
            assert_eq!(status, StatusCode::OK, "{name} {body} {answer}");
            assert_eq!(answer["flags"]["on"]["enabled"], true, "{name}");
        }
        let (status, _) = post_json(
            &world,
            &format!("/flags/?v=4&token={token}"),
            json!({"distinct_id": "u"}),
        )
        .await;
        assert_eq!(status, StatusCode::OK, "{name}");

        // Encodings: python's gzip, posthog-js's gzip as text/plain and its base64 form.
        let encoded = [
            (
                vec![
                    ("content-type", "application/json"),
                    ("content-encoding", "gzip"),
                ],
                gzip(text.as_bytes()),
                "/flags/?v=4",
            ),
            (
                vec![("content-type", "text/plain")],
                gzip(text.as_bytes()),
                "/flags/?v=2",
            ),
            (
                vec![("content-type", "text/plain")],
                gzip(text.as_bytes()),
                "/flags/?v=2&compression=gzip-js",
            ),
            (
                vec![("content-type", "application/x-www-form-urlencoded")],
                format!(
                    "data={}",
                    form_urlencoded::byte_serialize(
                        base64::engine::general_purpose::STANDARD
                            .encode(&text)
                            .as_bytes()
                    )
                    .collect::<String>()
                )
                .into_bytes(),
                "/flags/?v=2&compression=base64",
            ),
        ];
        for (headers, body, uri) in encoded {
            let (status, answer) = post(&world, uri, &headers, body).await;
            assert_eq!(status, StatusCode::OK, "{name} {uri} {headers:?} {answer}");
            assert_eq!(answer["flags"]["on"]["enabled"], true, "{name} {uri}");
        }

        // Tokens: missing or unknown is a 401 in PostHog's words.
        let (status, answer) = post_json(&world, "/flags/?v=4", json!({"distinct_id": "u"})).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED, "{name}");
        assert_eq!(
            error_shape(&answer),
            ("invalid_api_key".into(), None),
            "{name}"
        );
        assert!(
            answer["detail"]
                .as_str()
                .unwrap()
                .starts_with("No API token provided"),
            "{name}"
        );
        let (status, answer) = post_json(
            &world,
            "/flags/?v=4",
            json!({"token": "phc_nope", "distinct_id": "u"}),
        )
        .await;
        assert_eq!(status, StatusCode::UNAUTHORIZED, "{name}");
        assert_eq!(error_shape(&answer).0, "invalid_api_key", "{name}");
        assert!(
            answer["detail"]
                .as_str()
                .unwrap()
                .contains("invalid or has expired"),
            "{name}"
        );

        // No distinct id.
        let (status, answer) = post_json(&world, "/flags/?v=4", json!({"token": token})).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{name}");
        assert_eq!(
            error_shape(&answer),
            ("required".into(), Some("distinct_id".into())),
            "{name}"
        );

        // Malformed JSON, gzip and base64.
        let malformed = [
            (
                vec![("content-type", "application/json")],
                b"{\"token\": ".to_vec(),
                "invalid JSON",
            ),
            (
                vec![
                    ("content-type", "application/json"),
                    ("content-encoding", "gzip"),
                ],
                b"not gzip".to_vec(),
                "gzip decompression failed",
            ),
            (
                vec![("content-type", "text/plain")],
                gzip(b"{nope")[..12].to_vec(),
                "gzip decompression failed",
            ),
            (
                vec![("content-type", "application/x-www-form-urlencoded")],
                b"data=%%%%".to_vec(),
                "Base64 decoding error",
            ),
            (
                vec![("content-type", "application/x-www-form-urlencoded")],
                b"data=bm90IGpzb24".to_vec(),
                "invalid JSON",
            ),
            (
                vec![("content-type", "application/json")],
                Vec::new(),
                "invalid JSON",
            ),
        ];
        for (headers, body, words) in malformed {
            let (status, answer) = post(&world, "/flags/?v=4", &headers, body).await;
            assert_eq!(
                status,
                StatusCode::BAD_REQUEST,
                "{name} {headers:?} {answer}"
            );
            let detail = answer["detail"].as_str().unwrap();
            assert!(
                detail.starts_with("Failed to decode request: "),
                "{name} {detail}"
            );
            assert!(detail.contains(words), "{name} {detail}");
            error_shape(&answer);
        }
        // A field of the wrong type is named.
        let (status, answer) = post_json(
            &world,
            "/flags/?v=4",
            json!({"token": token, "distinct_id": "u", "person_properties": [1]}),
        )
        .await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{name}");
        assert_eq!(
            error_shape(&answer).1.as_deref(),
            Some("person_properties"),
            "{name}"
        );
    }
}

#[tokio::test]
async fn person_properties_come_from_the_request_then_the_stored_person() {
    for world in World::all().await {
        let name = world.name();
        world.create_flag(json!({"key": "pro-only", "filters": {"groups": [{"rollout_percentage": 100,
                "properties": [{"key": "plan", "value": ["pro"], "operator": "exact", "type": "person"}]}]}}))
        .await;
        let ask = |distinct_id: &str, properties: Option<Value>| {
            let mut body = json!({"api_key": token(&world), "distinct_id": distinct_id});
            if let Some(properties) = properties {
                body["person_properties"] = properties;
            }
            body
        };
        let enabled = |answer: &Value| answer["flags"]["pro-only"]["enabled"].clone();

        let (_, answer) = post_json(&world, "/flags/?v=4", ask("stranger", None)).await;
        assert_eq!(enabled(&answer), false, "{name} {answer}");
        assert_eq!(
            answer["flags"]["pro-only"]["reason"]["code"], "no_condition_match",
            "{name}"
        );
        let (_, answer) = post_json(
            &world,
            "/flags/?v=4",
            ask("stranger", Some(json!({"plan": "pro"}))),
        )
        .await;
        assert_eq!(enabled(&answer), true, "{name} {answer}");

        // A person the lake keeps: $identify with $set, committed.
        world
            .capture(vec![json!({"event": "$identify", "distinct_id": "ada",
                "properties": {"$anon_distinct_id": "anon-ada", "$set": {"plan": "pro"}},
                "timestamp": "2026-11-22T10:00:00Z"})])
            .await;
        lake::commit_all(&world.backend.state).await.unwrap();
        for distinct_id in ["ada", "anon-ada"] {
            let (_, answer) = post_json(&world, "/flags/?v=4", ask(distinct_id, None)).await;
            assert_eq!(enabled(&answer), true, "{name} {distinct_id} {answer}");
        }
        // The request's values win over the stored ones.
        let (_, answer) = post_json(
            &world,
            "/flags/?v=4",
            ask("ada", Some(json!({"plan": "free"}))),
        )
        .await;
        assert_eq!(enabled(&answer), false, "{name} {answer}");
    }
}

#[tokio::test]
async fn groups_aggregate_by_their_key_and_errors_leave_the_flag_out() {
    for world in World::all().await {
        let name = world.name();
        let project = world.bootstrap.project.id;
        // The project's group types, as the committer records them.
        common::models::GroupTypes::ensure(
            world.backend.state.store.as_ref(),
            project,
            &["company"],
        )
        .await
        .unwrap();
        world.create_flag(json!({"key": "companies", "filters": {"aggregation_group_type_index": 0,
                "groups": [{"rollout_percentage": 100, "properties": [
                    {"key": "size", "value": "10", "operator": "gt", "type": "group", "group_type_index": 0}]}]}}))
        .await;
        // A cohort condition cannot be evaluated here (the API refuses to store one; older data
        // or another writer may hold one).
        feature_flags::repository::create(
            world.backend.state.store.as_ref(),
            project,
            feature_flags::repository::NewFlag {
                key: "cohorted".into(),
                name: String::new(),
                filters: serde_json::from_value(json!({"groups": [{"rollout_percentage": 100,
                    "properties": [{"key": "id", "value": 3, "operator": "in", "type": "cohort"}]}]}))
                .unwrap(),
                active: true,
                ensure_experience_continuity: false,
                evaluation_runtime: Default::default(),
                evaluation_tags: Vec::new(),
                created_by: None,
            },
            &common::activity::Actor::system(),
            chrono::Utc::now())
        .await
        .unwrap();
        feature_flags::cache::definitions_changed(&world.backend.state, project);

        let body = json!({"token": token(&world), "distinct_id": "u"});
        let (_, answer) = post_json(&world, "/flags/?v=4", body.clone()).await;
        assert_eq!(
            answer["flags"]["companies"]["enabled"], false,
            "{name} {answer}"
        );
        assert_eq!(
            answer["flags"]["companies"]["reason"]["code"], "no_group_type",
            "{name}"
        );
        assert!(
            answer["flags"].get("cohorted").is_none(),
            "{name}: an erring flag is left out"
        );
        assert_eq!(answer["errorsWhileComputingFlags"], true, "{name}");

        let mut grouped = body.clone();
        grouped["groups"] = json!({"company": "acme"});
        grouped["group_properties"] = json!({"company": {"size": 50}});
        let (_, answer) = post_json(&world, "/flags/?v=4", grouped.clone()).await;
        assert_eq!(
            answer["flags"]["companies"]["enabled"], true,
            "{name} {answer}"
        );
        grouped["group_properties"] = json!({"company": {"size": 5}});
        let (_, answer) = post_json(&world, "/flags/?v=4", grouped).await;
        assert_eq!(
            answer["flags"]["companies"]["enabled"], false,
            "{name} {answer}"
        );

        // The legacy shape leaves it out too.
        let (_, answer) = post_json(&world, "/decide/?v=3", body).await;
        assert!(
            answer["featureFlags"].get("cohorted").is_none(),
            "{name} {answer}"
        );
        assert_eq!(answer["errorsWhileComputingFlags"], true, "{name}");
    }
}

/// GETs with a personal key and optional headers, the body and headers back.
async fn get_with(
    world: &World,
    uri: &str,
    key: Option<&str>,
    headers: &[(&str, &str)],
) -> (StatusCode, Option<String>, Value) {
    use http_body_util::BodyExt;
    use tower::ServiceExt;
    let mut request = Request::get(uri);
    if let Some(key) = key {
        request = request.header("authorization", format!("Bearer {key}"));
    }
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let response = world
        .app
        .clone()
        .oneshot(request.body(Body::empty()).unwrap())
        .await
        .unwrap();
    let status = response.status();
    let etag = response
        .headers()
        .get("etag")
        .map(|value| value.to_str().unwrap().to_owned());
    let bytes = response.into_body().collect().await.unwrap().to_bytes();
    let body = if bytes.is_empty() {
        Value::Null
    } else {
        serde_json::from_slice(&bytes).unwrap()
    };
    (status, etag, body)
}

#[tokio::test]
async fn definitions_for_local_evaluation_with_scopes_and_etags() {
    for world in World::all().await {
        let name = world.name();
        let (on, _) = standard_flags(&world).await;
        let token = token(&world);
        let admin = Some(world.admin_key());
        let python = format!("/flags/definitions?token={token}&send_cohorts");

        let (status, etag, answer) = get_with(&world, &python, admin, &[]).await;
        assert_eq!(status, StatusCode::OK, "{name} {answer}");
        let loaded: Vec<&str> = answer["flags"]
            .as_array()
            .unwrap()
            .iter()
            .map(|flag| flag["key"].as_str().unwrap())
            .collect();
        assert_eq!(
            loaded,
            ["on", "mv", "off", "inactive"],
            "{name}: every non-deleted flag"
        );
        let first = &answer["flags"][0];
        assert_eq!(
            (
                &first["id"],
                &first["team_id"],
                &first["active"],
                &first["deleted"],
                &first["version"]
            ),
            (
                &on["id"],
                &json!(world.bootstrap.project.id),
                &json!(true),
                &json!(false),
                &on["version"]
            ),
            "{name}"
        );
        assert_eq!(
            first["filters"]["payloads"],
            json!({"true": "{\"a\": 1}"}),
            "{name}"
        );
        assert_eq!(first["ensure_experience_continuity"], false, "{name}");
        assert_eq!(first["evaluation_runtime"], "all", "{name}");
        assert_eq!(answer["flags"][3]["active"], false, "{name}");
        assert_eq!(answer["group_type_mapping"], json!({}), "{name}");
        assert_eq!(answer["cohorts"], json!({}), "{name}");
        assert_eq!(
            answer["property_matching_version"],
            feature_flags::matching::PROPERTY_MATCHING_VERSION,
            "{name}"
        );

        // The same from the older routes.
        for uri in [
            format!("/api/feature_flag/local_evaluation/?token={token}"),
            format!("/api/feature_flag/local_evaluation?token={token}"),
            "/api/feature_flag/local_evaluation/".to_owned(),
            format!(
                "/api/projects/{}/feature_flags/local_evaluation/",
                world.bootstrap.project.id
            ),
            "/api/projects/@current/feature_flags/local_evaluation".to_owned(),
        ] {
            let (status, _, other) = get_with(&world, &uri, admin, &[]).await;
            assert_eq!(status, StatusCode::OK, "{name} {uri} {other}");
            assert_eq!(other, answer, "{name} {uri}");
        }

        // ETag: unchanged definitions are a 304; a change is a new tag.
        let etag = etag.expect("an ETag");
        let (status, same, body) =
            get_with(&world, &python, admin, &[("if-none-match", &etag)]).await;
        assert_eq!(
            (status, body),
            (StatusCode::NOT_MODIFIED, Value::Null),
            "{name}"
        );
        assert_eq!(same.as_deref(), Some(etag.as_str()), "{name}");
        patch(&world, &on["id"], json!({"name": "renamed"})).await;
        let (status, changed, _) =
            get_with(&world, &python, admin, &[("if-none-match", &etag)]).await;
        assert_eq!(status, StatusCode::OK, "{name}");
        assert_ne!(changed, Some(etag), "{name}");

        // Keys: none is a 401, one without feature_flag:read a 403, another organization's
        // project a 403, an unknown token a 401.
        let (status, _, answer) = get_with(&world, &python, None, &[]).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED, "{name}");
        assert_eq!(error_shape(&answer).0, "not_authenticated", "{name}");
        let reader = world.key(&["project:read"], None).await;
        let (status, _, answer) = get_with(&world, &python, Some(&reader), &[]).await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{name} {answer}");
        assert_eq!(error_shape(&answer).0, "permission_denied", "{name}");
        let flag_reader = world.key(&["feature_flag:read"], None).await;
        let (status, _, _) = get_with(&world, &python, Some(&flag_reader), &[]).await;
        assert_eq!(status, StatusCode::OK, "{name}");
        let foreign = common::models::Project::load(
            world.backend.state.store.as_ref(),
            world.foreign_project,
        )
        .await
        .unwrap()
        .unwrap();
        let (status, _, answer) = get_with(
            &world,
            &format!("/flags/definitions?token={}", foreign.api_token),
            admin,
            &[],
        )
        .await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{name} {answer}");
        let (status, _, _) = get_with(
            &world,
            &format!(
                "/api/projects/{}/feature_flags/local_evaluation/",
                world.foreign_project
            ),
            admin,
            &[],
        )
        .await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{name}");
        let (status, _, answer) =
            get_with(&world, "/flags/definitions?token=phc_nope", admin, &[]).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED, "{name} {answer}");
        assert_eq!(error_shape(&answer).0, "invalid_api_key", "{name}");
        // A query string that does not read is a 400 in the error shape.
        let (status, _, answer) =
            get_with(&world, "/flags/definitions?token=a&token=b", admin, &[]).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{name} {answer}");
        error_shape(&answer);
    }
}

#[tokio::test]
async fn a_change_through_the_api_is_served_at_once() {
    for world in World::all().await {
        let name = world.name();
        let (on, _) = standard_flags(&world).await;
        let body = json!({"token": token(&world), "distinct_id": "user-1"});
        // Warm the cache, then change the flag three ways.
        let (_, answer) = post_json(&world, "/flags/?v=4", body.clone()).await;
        assert_eq!(answer["flags"]["on"]["enabled"], true, "{name}");

        patch(
            &world,
            &on["id"],
            json!({"filters": {"groups": [{"properties": [], "rollout_percentage": 0}]}}),
        )
        .await;
        let (_, answer) = post_json(&world, "/flags/?v=4", body.clone()).await;
        assert_eq!(answer["flags"]["on"]["enabled"], false, "{name} {answer}");
        assert_eq!(answer["flags"]["on"]["metadata"]["version"], 2, "{name}");

        patch(&world, &on["id"], json!({"active": false})).await;
        let (_, answer) = post_json(&world, "/flags/?v=4", body.clone()).await;
        assert!(answer["flags"].get("on").is_none(), "{name} {answer}");

        let created = world.create_flag(json!({"key": "fresh", "filters": {"groups": [{"properties": [], "rollout_percentage": 100}]}}))
        .await;
        let (_, answer) = post_json(&world, "/flags/?v=4", body.clone()).await;
        assert_eq!(
            answer["flags"]["fresh"]["metadata"]["id"], created["id"],
            "{name} {answer}"
        );

        patch(&world, &created["id"], json!({"deleted": true})).await;
        let (_, answer) = post_json(&world, "/flags/?v=4", body).await;
        assert!(answer["flags"].get("fresh").is_none(), "{name} {answer}");
    }
}

#[tokio::test]
async fn experience_continuity_keeps_the_anonymous_answer() {
    for world in World::all().await {
        let name = world.name();
        world
            .create_flag(
                json!({"key": "sticky", "ensure_experience_continuity": true,
                "filters": {"groups": [{"properties": [], "rollout_percentage": 50}]}}),
            )
            .await;
        let ask = |distinct_id: &str, anon: Option<&str>| {
            let mut body = json!({"token": token(&world), "distinct_id": distinct_id});
            if let Some(anon) = anon {
                body["$anon_distinct_id"] = json!(anon);
            }
            post_json(&world, "/flags/?v=4", body)
        };
        let value = |answer: &Value| answer["flags"]["sticky"]["enabled"].as_bool().unwrap();
        let anonymous = value(&ask("anon-1", None).await.1);
        // An identified id the rollout answers the other way.
        let mut identified = None;
        for i in 0..64 {
            let candidate = format!("user-{i}");
            if value(&ask(&candidate, None).await.1) != anonymous {
                identified = Some(candidate);
                break;
            }
        }
        let identified = identified.expect("some id on the other side of 50 %");
        let (_, answer) = ask(&identified, Some("anon-1")).await;
        assert_eq!(value(&answer), anonymous, "{name} {answer}");
        // Recorded: later requests without the anonymous id, or with another one, keep it.
        assert_eq!(value(&ask(&identified, None).await.1), anonymous, "{name}");
        let other = (0..64)
            .map(|i| format!("anon-other-{i}"))
            .find(|id| reference_rollout("sticky", id, 50.0) != anonymous)
            .unwrap();
        assert_eq!(
            value(&ask(&identified, Some(&other)).await.1),
            anonymous,
            "{name}"
        );
    }
}

/// Reference section 3.2's rollout hash: whether `id` is within `percentage` of `flag`.
fn reference_rollout(flag: &str, id: &str, percentage: f64) -> bool {
    use feature_flags::hash::{flag_prefix, rollout_hash};
    rollout_hash(&flag_prefix(flag), id) <= percentage / 100.0
}
