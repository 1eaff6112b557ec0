//! Helpers for the black-box API tests: a world of organizations, users and keys on a backend,
//! and a way to send requests through the same app `analytics serve` runs.

use aws_lambda_events::event::sqs::SqsEvent;
use axum::body::Body;
use axum::http::{Method, Request, StatusCode};
use common::AppState;
use common::http::App;
use common::models::{MembershipLevel, NewUser, User};
use common::provisioning::{self, Bootstrap};
use common::testing::TestState;
use http_body_util::BodyExt;
use serde_json::Value;
use tower::ServiceExt;

/// A bootstrapped store plus a second organization the bootstrap user does not belong to.
pub struct World {
    pub backend: TestState,
    pub app: App,
    pub bootstrap: Bootstrap,
    /// A project in another organization, and that organization.
    pub foreign_project: i64,
    pub foreign_organization: uuid::Uuid,
    /// A non-staff member of the bootstrap organization, and their full-scope key.
    pub member: User,
    pub member_key: String,
}

impl World {
    pub async fn on(backend: TestState) -> Self {
        let store = backend.state.store.clone();
        let bootstrap = provisioning::bootstrap_if_empty(store.as_ref())
            .await
            .unwrap()
            .expect("fresh store");
        let other = provisioning::create_organization(store.as_ref(), "Other org")
            .await
            .unwrap();
        let foreign = provisioning::create_project(store.as_ref(), other.id, "Foreign", "UTC")
            .await
            .unwrap();
        let member = provisioning::create_user(
            store.as_ref(),
            NewUser {
                email: "member@example.com",
                first_name: "Mem",
                last_name: "Ber",
                password: Some("hunter22"),
                is_staff: false,
            },
            bootstrap.organization.id,
            MembershipLevel::Member,
        )
        .await
        .unwrap();
        let (_, member_key) = provisioning::create_key(
            store.as_ref(),
            member.uuid,
            "member",
            vec!["*".into()],
            None,
            None,
        )
        .await
        .unwrap();
        let app = local::app(backend.state.clone());
        Self {
            backend,
            app,
            bootstrap,
            foreign_project: foreign.id,
            foreign_organization: other.id,
            member,
            member_key,
        }
    }

    /// One world per backend under test.
    pub async fn all() -> Vec<Self> {
        let mut worlds = Vec::new();
        for backend in TestState::all().await {
            worlds.push(Self::on(backend).await);
        }
        worlds
    }

    pub fn name(&self) -> String {
        format!("{:?}", self.backend.backend)
    }

    pub fn admin_key(&self) -> &str {
        &self.bootstrap.key_secret
    }

    /// A new key for the bootstrap user.
    pub async fn key(&self, scopes: &[&str], projects: Option<Vec<i64>>) -> String {
        self.key_for_organizations(scopes, projects, None).await
    }

    pub async fn key_for_organizations(
        &self,
        scopes: &[&str],
        projects: Option<Vec<i64>>,
        organizations: Option<Vec<uuid::Uuid>>,
    ) -> String {
        provisioning::create_key(
            self.backend.state.store.as_ref(),
            self.bootstrap.user.uuid,
            "test",
            scopes.iter().map(|s| s.to_string()).collect(),
            projects,
            organizations,
        )
        .await
        .unwrap()
        .1
    }

    /// Sends one `/batch/` request with the bootstrap project's token; it must be accepted.
    pub async fn capture(&self, events: Vec<Value>) {
        let token = self.bootstrap.project.api_token.clone();
        let body = serde_json::json!({"api_key": token, "batch": events}).to_string();
        let request = Request::post("/batch/")
            .header("content-type", "application/json")
            .body(Body::from(body))
            .unwrap();
        let (status, answer) = respond(self.app.clone(), request).await;
        assert_eq!(status, StatusCode::OK, "{} {answer}", self.name());
    }

    /// The bootstrap project's feature-flag collection.
    pub fn flags_uri(&self) -> String {
        format!("/api/projects/{}/feature_flags/", self.bootstrap.project.id)
    }

    /// Creates a feature flag with the admin key; it must be accepted (201). Returns the flag.
    pub async fn create_flag(&self, body: Value) -> Value {
        let (status, answer) = self
            .send(
                Method::POST,
                &self.flags_uri(),
                Some(self.admin_key()),
                Some(&body.to_string()),
            )
            .await;
        assert_eq!(
            status,
            StatusCode::CREATED,
            "{} {body} {answer}",
            self.name()
        );
        answer
    }

    /// The bootstrap project's survey collection.
    pub fn surveys_uri(&self) -> String {
        format!("/api/projects/{}/surveys/", self.bootstrap.project.id)
    }

    /// One survey (as answered by the API) of the bootstrap project.
    pub fn survey_uri(&self, survey: &Value) -> String {
        format!(
            "{}{}/",
            self.surveys_uri(),
            survey["id"].as_str().unwrap_or("")
        )
    }

    /// A JSON body sent with the admin key.
    pub async fn send_json(&self, method: Method, uri: &str, body: Value) -> (StatusCode, Value) {
        self.send(method, uri, Some(self.admin_key()), Some(&body.to_string()))
            .await
    }

    /// Creates a survey in the bootstrap project with the admin key; it must be accepted (201).
    pub async fn create_survey(&self, body: Value) -> Value {
        let (status, created) = self
            .send_json(Method::POST, &self.surveys_uri(), body.clone())
            .await;
        assert_eq!(
            status,
            StatusCode::CREATED,
            "{} {body} {created}",
            self.name()
        );
        created
    }

    /// The bootstrap project's endpoint collection under `prefix` (`projects` or
    /// `environments`).
    pub fn endpoints_uri(&self, prefix: &str) -> String {
        format!("/api/{prefix}/{}/endpoints/", self.bootstrap.project.id)
    }

    /// Creates an endpoint under `prefix` with the admin key; it must be accepted (201).
    pub async fn create_endpoint(&self, prefix: &str, body: Value) -> Value {
        let (status, created) = self
            .send_json(Method::POST, &self.endpoints_uri(prefix), body.clone())
            .await;
        assert_eq!(
            status,
            StatusCode::CREATED,
            "{} {body} {created}",
            self.name()
        );
        created
    }

    /// The bootstrap project's experiment collection.
    pub fn experiments_uri(&self) -> String {
        format!("/api/projects/{}/experiments/", self.bootstrap.project.id)
    }

    /// Creates an experiment with the admin key; it must be accepted (201). Returns it.
    pub async fn create_experiment(&self, body: Value) -> Value {
        let (status, answer) = self
            .send(
                Method::POST,
                &self.experiments_uri(),
                Some(self.admin_key()),
                Some(&body.to_string()),
            )
            .await;
        assert_eq!(
            status,
            StatusCode::CREATED,
            "{} {body} {answer}",
            self.name()
        );
        answer
    }

    pub async fn get(&self, uri: &str, key: Option<&str>) -> (StatusCode, Value) {
        self.send(Method::GET, uri, key, None).await
    }

    pub async fn send(
        &self,
        method: Method,
        uri: &str,
        key: Option<&str>,
        json: Option<&str>,
    ) -> (StatusCode, Value) {
        let mut request = Request::builder()
            .method(method)
            .uri(uri)
            .header("host", "testserver");
        if let Some(key) = key {
            request = request.header("authorization", format!("Bearer {key}"));
        }
        let body = match json {
            Some(text) => {
                request = request.header("content-type", "application/json");
                Body::from(text.to_owned())
            }
            None => Body::empty(),
        };
        respond(self.app.clone(), request.body(body).unwrap()).await
    }
}

/// Sends a request through an app; the body is parsed as JSON (`Null` when empty).
pub async fn respond(app: App, request: Request<Body>) -> (StatusCode, Value) {
    let response = app.oneshot(request).await.unwrap();
    let status = response.status();
    let bytes = response.into_body().collect().await.unwrap().to_bytes();
    let value = if bytes.is_empty() {
        Value::Null
    } else {
        serde_json::from_slice(&bytes)
            .unwrap_or_else(|_| panic!("not JSON: {}", String::from_utf8_lossy(&bytes)))
    };
    (status, value)
}

/// Asserts the PostHog error shape and returns `(code, attr)`.
pub fn error_shape(body: &Value) -> (String, Option<String>) {
    let object = body
        .as_object()
        .unwrap_or_else(|| panic!("error body is not an object: {body}"));
    let mut keys: Vec<&str> = object.keys().map(String::as_str).collect();
    keys.sort();
    assert_eq!(keys, ["attr", "code", "detail", "type"], "{body}");
    assert!(
        body["detail"].is_string() && body["type"].is_string(),
        "{body}"
    );
    (
        body["code"].as_str().unwrap().to_owned(),
        body["attr"].as_str().map(str::to_owned),
    )
}

/// A fresh SQS queue on the emulator, made `state`'s job queue as `AppState::from_config` does
/// when `ANALYTICS_QUEUE_URL` names one.
pub async fn sqs_job_queue(state: &mut AppState, endpoint: &str) -> (aws_sdk_sqs::Client, String) {
    let sqs = aws_sdk_sqs::Client::new(&common::testing::emulator_aws(endpoint).await);
    let url = sqs
        .create_queue()
        .queue_name(format!("jobs-{}", uuid::Uuid::new_v4().simple()))
        .send()
        .await
        .unwrap()
        .queue_url
        .unwrap();
    let mut config = (*state.config).clone();
    config.query.job_queue_url = Some(url.clone());
    config.aws_endpoint_url = Some(endpoint.to_owned());
    state.config = std::sync::Arc::new(config);
    state.sqs = Some(sqs.clone());
    (sqs, url)
}

/// The batch Lambda's SQS poller would hand the worker from the queue at `url`.
pub async fn receive_batch(sqs: &aws_sdk_sqs::Client, url: &str) -> SqsEvent {
    let received = sqs
        .receive_message()
        .queue_url(url)
        .max_number_of_messages(10)
        .send()
        .await
        .unwrap();
    let records: Vec<Value> = received
        .messages()
        .iter()
        .map(|message| {
            serde_json::json!({"messageId": message.message_id(), "eventSource": "aws:sqs",
                "body": message.body().unwrap_or("")})
        })
        .collect();
    serde_json::from_value(serde_json::json!({ "Records": records })).unwrap()
}

/// Each row's (event code, distinct id, timestamp in µs) in one of the project's files (`path`
/// relative to its table), in file order: what the importer and compaction sort files by. Every
/// row must have a code.
pub async fn event_time_keys(state: &AppState, team: i64, path: &str) -> Vec<(i64, String, i64)> {
    use deltalake_core::arrow::array::{Array, AsArray};
    use deltalake_core::arrow::datatypes::{Int64Type, TimestampMicrosecondType};

    let root = lake::table::table_path(team);
    let mut keys = Vec::new();
    for batch in lake::rewrite::read_file(state, &root, path).await.unwrap() {
        let batch = batch.unwrap();
        let codes = batch.column_by_name("event_code").expect("event codes");
        let codes = codes.as_primitive::<Int64Type>();
        assert_eq!(codes.null_count(), 0, "{path}: every event has a code");
        let ids = batch
            .column_by_name("distinct_id")
            .unwrap()
            .as_string::<i32>();
        let times = batch.column_by_name("timestamp").unwrap();
        let times = times.as_primitive::<TimestampMicrosecondType>();
        for row in 0..batch.num_rows() {
            keys.push((
                codes.value(row),
                ids.value(row).to_owned(),
                times.value(row),
            ));
        }
    }
    keys
}
