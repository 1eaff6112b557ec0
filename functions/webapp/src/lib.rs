//! The web console (`console/`): its build, `console/dist/` (committed, and checked against its
//! sources by `scripts/test`), embedded in the binary and served by `analytics serve` (beside the
//! API) and by this crate's own Lambda function (behind the API's domain in AWS):
//! `index.html` at the console's pages (revalidated on every load), the content-hashed files of
//! `/assets/` cached for a year, and a Content-Security-Policy that lets a page load and call
//! nothing but this origin. Everything else keeps answering as the API does (a JSON 404). See
//! docs/console.md.

use std::borrow::Cow;
use std::path::PathBuf;
use std::sync::LazyLock;

use axum::extract::Path;
use axum::http::{HeaderMap, HeaderName, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use common::error::ApiError;
use common::routes::Routes;
use include_dir::{Dir, include_dir};
use tower_http::compression::CompressionLayer;

static DIST: Dir<'static> = include_dir!("$CARGO_MANIFEST_DIR/../../console/dist");

/// For working on the console: `ANALYTICS_CONSOLE_DIR` names a build folder (`node build.mjs
/// --out <folder>`) served instead of the embedded build and read on every request, so a new
/// build shows on reload without rebuilding the binary.
static FOLDER: LazyLock<Option<PathBuf>> =
    LazyLock::new(|| std::env::var_os("ANALYTICS_CONSOLE_DIR").map(PathBuf::from));

/// A file of the build (`index.html`, `assets/main-<hash>.js`): from the folder when one is set,
/// else embedded.
fn build_file(path: &str) -> Option<Cow<'static, [u8]>> {
    match &*FOLDER {
        Some(folder) => {
            let safe = path
                .split('/')
                .all(|part| !part.is_empty() && !part.starts_with('.'));
            safe.then(|| std::fs::read(folder.join(path)).ok())
                .flatten()
                .map(Cow::Owned)
        }
        None => DIST
            .get_file(path)
            .map(|file| Cow::Borrowed(file.contents())),
    }
}

/// The console's pages other than `/`, each with the paths under it (`/insights/12`): a browser
/// navigating to one (a reload, a bookmark) gets `index.html`, whose script shows the page; any
/// other client gets the API's JSON 404. None may be a path the API or capture answers (so not
/// `/flags`, the SDKs' route; the console's flags are at `/feature_flags`).
pub const PAGES: [&str; 11] = [
    "/login",
    "/sql",
    "/insights",
    "/dashboards",
    "/persons",
    "/events",
    "/feature_flags",
    "/experiments",
    "/surveys",
    "/endpoints",
    "/settings",
];

/// Only this origin: no inline script or style, no other host for scripts, styles, images,
/// fonts or requests, no framing.
pub const CONTENT_SECURITY_POLICY: &str = "default-src 'self'; script-src 'self'; \
     style-src 'self'; img-src 'self'; font-src 'self'; connect-src 'self'; object-src 'none'; \
     base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

/// `index.html` names the assets of its build, so it is revalidated on every load.
pub const INDEX_CACHE: &str = "no-cache";
/// An asset's name carries the hash of its content: it never changes under that name.
pub const ASSET_CACHE: &str = "public, max-age=31536000, immutable";

/// The console's routes, mounted beside the API's by `analytics serve`.
pub fn router() -> Routes {
    // Compressed (brotli or gzip, as the browser accepts): the script is a few hundred KB as
    // built and under a quarter of that compressed.
    let page = || get(page_navigation).layer(CompressionLayer::new());
    let routes = Routes::new()
        .route("/", get(home).layer(CompressionLayer::new()))
        .route("/assets/{name}", get(asset).layer(CompressionLayer::new()));
    PAGES.iter().fold(routes, |routes, path| {
        routes
            .route(path, page())
            .route(&format!("{path}/{{*rest}}"), page())
    })
}

/// `GET /`: the console, whatever the client asks for (it is the front door of the README).
async fn home(headers: HeaderMap) -> Response {
    index(&headers)
}

/// A console page: `index.html` for a browser's navigation (`Accept: text/html`), else a 404.
async fn page_navigation(headers: HeaderMap) -> Response {
    if accepts_html(&headers) {
        index(&headers)
    } else {
        ApiError::not_found().into_response()
    }
}

/// `GET /assets/{name}`: an embedded file with its content type, cached for good.
async fn asset(Path(name): Path<String>) -> Response {
    let Some(file) = build_file(&format!("assets/{name}")) else {
        return ApiError::not_found().into_response();
    };
    let headers = [
        (header::CONTENT_TYPE, content_type(&name)),
        (header::CACHE_CONTROL, ASSET_CACHE),
    ];
    (secured(), headers, file).into_response()
}

fn accepts_html(request: &HeaderMap) -> bool {
    request
        .get_all(header::ACCEPT)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(','))
        .any(|kind| {
            let essence = kind.split(';').next().unwrap_or("").trim();
            essence.eq_ignore_ascii_case("text/html")
        })
}

/// `index.html` and its validator (a hash of its bytes, so a new build is a new tag).
fn index_file() -> (Cow<'static, [u8]>, String) {
    let contents = build_file("index.html").unwrap_or_default();
    let etag = format!("\"{:016x}\"", fnv1a(&contents));
    (contents, etag)
}

/// The embedded `index.html`, hashed once.
static INDEX: LazyLock<(Cow<'static, [u8]>, String)> = LazyLock::new(index_file);

fn index(request: &HeaderMap) -> Response {
    let fresh;
    let (contents, etag) = if FOLDER.is_some() {
        fresh = index_file();
        (&fresh.0, &fresh.1)
    } else {
        (&INDEX.0, &INDEX.1)
    };
    let headers = [
        (header::CONTENT_TYPE, "text/html; charset=utf-8"),
        (header::CACHE_CONTROL, INDEX_CACHE),
        (header::ETAG, etag.as_str()),
    ];
    let unchanged = request
        .get_all(header::IF_NONE_MATCH)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(','))
        .any(|tag| tag.trim() == etag || tag.trim() == "*");
    if unchanged {
        return (StatusCode::NOT_MODIFIED, secured(), headers).into_response();
    }
    (secured(), headers, contents.clone()).into_response()
}

/// The headers every console response carries.
fn secured() -> [(HeaderName, HeaderValue); 4] {
    [
        (
            header::CONTENT_SECURITY_POLICY,
            HeaderValue::from_static(CONTENT_SECURITY_POLICY),
        ),
        (
            header::X_CONTENT_TYPE_OPTIONS,
            HeaderValue::from_static("nosniff"),
        ),
        (
            header::REFERRER_POLICY,
            HeaderValue::from_static("same-origin"),
        ),
        (header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY")),
    ]
}

/// The content type of an asset, by its extension.
pub fn content_type(name: &str) -> &'static str {
    match name.rsplit_once('.').map(|(_, extension)| extension) {
        Some("html") => "text/html; charset=utf-8",
        Some("js" | "mjs") => "text/javascript; charset=utf-8",
        Some("css") => "text/css; charset=utf-8",
        Some("svg") => "image/svg+xml",
        Some("json" | "map") => "application/json",
        Some("png") => "image/png",
        Some("ico") => "image/x-icon",
        Some("woff2") => "font/woff2",
        Some("txt") => "text/plain; charset=utf-8",
        _ => "application/octet-stream",
    }
}

/// FNV-1a, 64 bits: enough to tell one build's `index.html` from another's.
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |hash, byte| {
        (hash ^ u64::from(*byte)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::body::Body;
    use axum::http::{Method, Request};
    use common::http::App;
    use common::testing::TestState;
    use tower::ServiceExt;

    struct Answer {
        status: StatusCode,
        headers: HeaderMap,
        body: Vec<u8>,
    }

    impl Answer {
        fn header(&self, name: HeaderName) -> &str {
            self.headers
                .get(name)
                .and_then(|value| value.to_str().ok())
                .unwrap_or("")
        }

        fn json_code(&self) -> String {
            let body: serde_json::Value =
                serde_json::from_slice(&self.body).expect("a JSON error body");
            body["code"].as_str().unwrap_or("").to_owned()
        }
    }

    /// `analytics serve`'s app on an empty embedded backend (kept as long as the app is used).
    struct Server {
        app: App,
        _backend: TestState,
    }

    async fn server() -> Server {
        let backend = TestState::embedded().await;
        Server {
            app: common::http::finish(router(), backend.state.clone()),
            _backend: backend,
        }
    }

    async fn send(server: &Server, method: Method, path: &str, headers: &[(&str, &str)]) -> Answer {
        let app = server.app.clone();
        let mut request = Request::builder().method(method).uri(path);
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        let response = app
            .oneshot(request.body(Body::empty()).expect("request"))
            .await
            .expect("response");
        let (parts, body) = response.into_parts();
        let body = axum::body::to_bytes(body, usize::MAX)
            .await
            .expect("body")
            .to_vec();
        Answer {
            status: parts.status,
            headers: parts.headers,
            body,
        }
    }

    const BROWSER: (&str, &str) = ("accept", "text/html,application/xhtml+xml,*/*;q=0.8");

    /// The `/assets/...` paths `index.html` names in `src` and `href` attributes.
    fn referenced_assets(html: &str) -> Vec<String> {
        html.split(['"', '\''])
            .filter(|part| part.starts_with("/assets/"))
            .map(str::to_owned)
            .collect()
    }

    #[tokio::test]
    async fn the_console_is_served_at_the_root_with_its_policy() {
        let server = server().await;
        let answer = send(&server, Method::GET, "/", &[]).await;
        assert_eq!(answer.status, StatusCode::OK);
        assert_eq!(
            answer.header(header::CONTENT_TYPE),
            "text/html; charset=utf-8"
        );
        assert_eq!(answer.header(header::CACHE_CONTROL), "no-cache");
        assert_eq!(
            answer.header(header::CONTENT_SECURITY_POLICY),
            CONTENT_SECURITY_POLICY
        );
        assert_eq!(answer.header(header::X_CONTENT_TYPE_OPTIONS), "nosniff");
        let html = String::from_utf8_lossy(&answer.body);
        assert!(html.contains(r#"<div id="app">"#), "{html}");
        // The policy allows no inline script: every script is a file of the build.
        for script in html.split("<script").skip(1) {
            let tag = &script[..script.find('>').expect("a closed tag")];
            assert!(tag.contains("src=\"/assets/"), "an inline script: {script}");
            assert!(script[tag.len() + 1..].starts_with("</script>"), "{script}");
        }
        assert!(!html.contains("style="), "an inline style: {html}");

        let revalidated = send(
            &server,
            Method::GET,
            "/",
            &[("if-none-match", answer.header(header::ETAG))],
        )
        .await;
        assert_eq!(revalidated.status, StatusCode::NOT_MODIFIED);
        assert!(revalidated.body.is_empty());
    }

    #[tokio::test]
    async fn assets_have_their_type_and_are_cached_for_good() {
        let server = server().await;
        let html =
            String::from_utf8(send(&server, Method::GET, "/", &[]).await.body).expect("utf-8");
        let assets = referenced_assets(&html);
        let kinds: Vec<&str> = assets.iter().map(|path| content_type(path)).collect();
        for kind in [
            "text/javascript; charset=utf-8",
            "text/css; charset=utf-8",
            "image/svg+xml",
        ] {
            assert!(
                kinds.contains(&kind),
                "index.html names no {kind}: {assets:?}"
            );
        }
        for path in &assets {
            let compressed = send(
                &server,
                Method::GET,
                path,
                &[("accept-encoding", "br, gzip")],
            )
            .await;
            assert_eq!(compressed.header(header::CONTENT_ENCODING), "br", "{path}");
            assert_eq!(
                compressed.header(header::CACHE_CONTROL),
                ASSET_CACHE,
                "{path}"
            );
            let answer = send(&server, Method::GET, path, &[]).await;
            assert_eq!(answer.status, StatusCode::OK, "{path}");
            assert_eq!(answer.header(header::CONTENT_TYPE), content_type(path));
            assert_eq!(answer.header(header::CACHE_CONTROL), ASSET_CACHE, "{path}");
            assert_eq!(answer.header(header::X_CONTENT_TYPE_OPTIONS), "nosniff");
            let name = path.trim_start_matches("/assets/");
            let file = DIST.get_file(format!("assets/{name}")).expect("embedded");
            assert_eq!(answer.body, file.contents(), "{path}");
        }
        // Every embedded asset is named by its content's hash (a `-` before it).
        for file in DIST.get_dir("assets").expect("assets").files() {
            let name = file.path().file_name().and_then(|name| name.to_str());
            assert!(name.is_some_and(|name| name.contains('-')), "{name:?}");
        }
    }

    #[tokio::test]
    async fn console_pages_answer_browsers_only() {
        let server = server().await;
        let answer = send(&server, Method::GET, "/login", &[BROWSER]).await;
        assert_eq!(answer.status, StatusCode::OK);
        assert_eq!(answer.header(header::CACHE_CONTROL), "no-cache");
        assert!(String::from_utf8_lossy(&answer.body).contains(r#"<div id="app">"#));
        for path in ["/login/", "/insights/12", "/feature_flags/new", "/settings"] {
            let answer = send(&server, Method::GET, path, &[BROWSER]).await;
            assert_eq!(answer.status, StatusCode::OK, "{path}");
        }

        // An API client asking for a console page gets the API's 404.
        let answer = send(
            &server,
            Method::GET,
            "/login",
            &[("accept", "application/json")],
        )
        .await;
        assert_eq!(answer.status, StatusCode::NOT_FOUND);
        assert_eq!(answer.json_code(), "not_found");
    }

    #[tokio::test]
    async fn api_404s_stay_json_for_browsers_too() {
        let server = server().await;
        for path in [
            "/api/nothing/here/",
            "/assets/missing-0000.js",
            "/assets/",
            "/elsewhere",
            "/index.html",
        ] {
            let answer = send(&server, Method::GET, path, &[BROWSER]).await;
            assert_eq!(answer.status, StatusCode::NOT_FOUND, "{path}");
            assert!(
                answer
                    .header(header::CONTENT_TYPE)
                    .starts_with("application/json"),
                "{path}"
            );
            assert_eq!(answer.json_code(), "not_found", "{path}");
            assert_ne!(answer.header(header::CACHE_CONTROL), ASSET_CACHE, "{path}");
        }
        let answer = send(&server, Method::POST, "/", &[BROWSER]).await;
        assert_eq!(answer.status, StatusCode::METHOD_NOT_ALLOWED);
        assert_eq!(answer.json_code(), "method_not_allowed");
    }

    #[test]
    fn content_types_by_extension() {
        assert_eq!(
            content_type("main-ABC.js"),
            "text/javascript; charset=utf-8"
        );
        assert_eq!(content_type("main-ABC.css"), "text/css; charset=utf-8");
        assert_eq!(content_type("favicon-1.svg"), "image/svg+xml");
        assert_eq!(content_type("README"), "application/octet-stream");
    }
}
