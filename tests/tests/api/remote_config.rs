//! posthog-js's remote config on both backends: `/array/:token/config.js` sets the global the SDK
//! reads, `/array/:token/config` is the same config as JSON, and both follow the project's flags
//! and surveys as they change. An unknown token is a 404 in the error shape.

use api_tests::{World, error_shape};
use axum::body::Body;
use axum::http::{Request, StatusCode, header};
use http_body_util::BodyExt;
use serde_json::{Value, json};
use tower::ServiceExt;

/// `(status, content type, cache-control, body)` of a GET with no credentials.
async fn get(world: &World, uri: &str) -> (StatusCode, String, String, String) {
    let request = Request::get(uri)
        .header("origin", "https://shop.example")
        .body(Body::empty())
        .unwrap();
    let response = world.app.clone().oneshot(request).await.unwrap();
    let header = |name| {
        response
            .headers()
            .get(name)
            .map(|value| value.to_str().unwrap().to_owned())
            .unwrap_or_default()
    };
    let (status, content_type, cache) = (
        response.status(),
        header(header::CONTENT_TYPE),
        header(header::CACHE_CONTROL),
    );
    let bytes = response.into_body().collect().await.unwrap().to_bytes();
    (
        status,
        content_type,
        cache,
        String::from_utf8(bytes.to_vec()).unwrap(),
    )
}

/// The config object inside the script, as the browser would assign it.
fn config_in_script(token: &str, script: &str) -> Value {
    let assignment = format!("window._POSTHOG_REMOTE_CONFIG[\"{token}\"] = ");
    let start = script.find(&assignment).expect("assigns the token's entry") + assignment.len();
    let end = script.rfind("};").unwrap() + 1;
    // `{ config: {...}, siteApps: [] }` with bare keys: quote them to read it as JSON.
    let object = script[start..end]
        .replacen("config:", "\"config\":", 1)
        .replacen("siteApps:", "\"siteApps\":", 1);
    serde_json::from_str(&object).unwrap_or_else(|_| panic!("not an object: {object}"))
}

#[tokio::test]
async fn the_sdk_gets_its_config_as_a_script_and_as_json() {
    for world in World::all().await {
        let name = world.name();
        let token = world.bootstrap.project.api_token.clone();

        let (status, content_type, cache, body) =
            get(&world, &format!("/array/{token}/config")).await;
        assert_eq!(status, StatusCode::OK, "{name} {body}");
        assert_eq!(content_type, "application/json", "{name}");
        assert!(cache.contains("max-age="), "{name} {cache}");
        let config: Value = serde_json::from_str(&body).unwrap();
        assert_eq!(config["token"], token.as_str(), "{name}");
        assert_eq!(config["hasFeatureFlags"], false, "{name} {config}");
        assert_eq!(config["surveys"], false, "{name}");
        assert_eq!(config["sessionRecording"], false, "{name}");
        assert_eq!(config["heatmaps"], false, "{name}");
        assert_eq!(config["supportedCompression"], json!(["gzip", "gzip-js"]));
        assert_eq!(config["analytics"]["endpoint"], "/i/v0/e/");
        assert_eq!(config["siteApps"], json!([]));

        let (status, content_type, _, script) =
            get(&world, &format!("/array/{token}/config.js")).await;
        assert_eq!(status, StatusCode::OK, "{name} {script}");
        assert_eq!(content_type, "application/javascript", "{name}");
        assert!(
            script.contains("window._POSTHOG_REMOTE_CONFIG = window._POSTHOG_REMOTE_CONFIG || {}"),
            "{script}"
        );
        let entry = config_in_script(&token, &script);
        assert_eq!(entry["config"], config, "{name}");
        assert_eq!(entry["siteApps"], json!([]), "{name}");

        // A flag turns `hasFeatureFlags` on at once (the flags cache drops on the change).
        world
            .create_flag(json!({"key": "beta", "filters": {"groups": [{"properties": [], "rollout_percentage": 100}]}}))
            .await;
        let (_, _, _, body) = get(&world, &format!("/array/{token}/config")).await;
        let config: Value = serde_json::from_str(&body).unwrap();
        assert_eq!(config["hasFeatureFlags"], true, "{name} {config}");

        // A running survey turns `surveys` on, so posthog-js fetches them.
        world
            .create_survey(
                json!({"name": "nps", "type": "popover", "start_date": "2026-01-01T00:00:00Z",
                "questions": [{"type": "open", "question": "Why?"}],
                "conditions": {"url": "/pricing"}}),
            )
            .await;
        let (_, _, _, body) = get(&world, &format!("/array/{token}/config")).await;
        let config: Value = serde_json::from_str(&body).unwrap();
        assert_eq!(config["surveys"], true, "{name} {config}");

        for path in ["/array/phc_nobody/config", "/array/phc_nobody/config.js"] {
            let (status, _, _, body) = get(&world, path).await;
            assert_eq!(status, StatusCode::NOT_FOUND, "{name} {path} {body}");
            let (code, _) = error_shape(&serde_json::from_str(&body).unwrap());
            assert_eq!(code, "not_found", "{name}");
        }
    }
}
