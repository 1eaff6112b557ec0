//! Every message of the write validation, and what create / update derive.

use chrono::{DateTime, TimeZone, Utc};
use common::activity::Actor;
use common::error::ApiError;
use common::store::SqliteStore;
use feature_flags::repository::{self as flag_repository, NewFlag};
use serde_json::{Value, json};

use super::*;
use crate::SurveyType;

const TEAM: i64 = 1;

fn now() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2025, 1, 10, 12, 0, 0).unwrap()
}

fn store() -> SqliteStore {
    SqliteStore::in_memory().unwrap()
}

fn body(value: Value) -> SurveyBody {
    serde_json::from_value(value).unwrap()
}

/// A minimal valid body with `extra` merged in.
fn with(extra: Value) -> Value {
    let mut base = json!({"name": "Feedback", "type": "popover"});
    if let (Value::Object(base), Value::Object(extra)) = (&mut base, extra) {
        base.extend(extra);
    }
    base
}

async fn flag(store: &SqliteStore, key: &str, variants: &[&str]) -> i64 {
    let mut filters = json!({"groups": [{"properties": [], "rollout_percentage": 100}]});
    if !variants.is_empty() {
        let share = 100.0 / variants.len() as f64;
        filters["multivariate"] = json!({"variants": variants.iter()
            .map(|k| json!({"key": k, "rollout_percentage": share})).collect::<Vec<_>>()});
    }
    let new = NewFlag {
        key: key.into(),
        name: String::new(),
        filters: serde_json::from_value(filters).unwrap(),
        active: true,
        ensure_experience_continuity: false,
        evaluation_runtime: Default::default(),
        evaluation_tags: Vec::new(),
        created_by: None,
    };
    flag_repository::create(store, TEAM, new, &Actor::system(), now())
        .await
        .unwrap()
        .id
}

async fn created(store: &SqliteStore, value: Value) -> Result<Checked, ApiError> {
    create(store, TEAM, body(value), now()).await
}

/// (attr, code, detail) of a create that must fail.
async fn refused(store: &SqliteStore, value: Value) -> (Option<String>, String, String) {
    let error = created(store, value.clone())
        .await
        .expect_err(&value.to_string());
    assert_eq!(error.status.as_u16(), 400, "{value}");
    (error.body.attr, error.body.code, error.body.detail)
}

async fn detail_of(store: &SqliteStore, value: Value) -> String {
    refused(store, value).await.2
}

fn question(extra: Value) -> Value {
    let mut q = json!({"type": "open", "question": "Why?"});
    if let (Value::Object(q), Value::Object(extra)) = (&mut q, extra) {
        q.extend(extra);
    }
    q
}

fn questions(list: Value) -> Value {
    with(json!({ "questions": list }))
}

mod derived;
mod fields;
mod html;
mod questions;
mod references;
