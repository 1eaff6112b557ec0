//! `draft_sql`: asks an OpenAI-compatible chat endpoint for a query, with the project's schema
//! (tables, columns, top events and properties) in the prompt, and checks the draft parses.

use common::models::Project;
use common::{ApiError, AppState};
use engine::Bindings;
use serde_json::{Value, json};

use query_service::runner::{self, Run};
use query_service::{Caller, SqlNode};

pub const MAX_PROMPT_CHARS: usize = 400;

const TABLES: &str = "\
events(uuid String, event String, properties JSON text (read keys as properties.$browser or properties['key']), \
timestamp DateTime, distinct_id String, elements_chain String, created_at DateTime, `$session_id` String, \
person_id String, person.properties.<key> (person properties at the time of the event))
persons(id String, created_at DateTime, properties JSON text, is_identified Bool)
query_log(event_date Date, query_id String, query String, query_start_time DateTime, query_duration_ms Float, \
name String, read_rows UInt64, result_rows UInt64, status String, exception String)";

async fn top(state: &AppState, project: &Project, text: &str) -> Vec<String> {
    let node = SqlNode::sql(text, Bindings::default());
    let caller = Caller::default();
    let run = Run {
        state,
        project,
        query_id: "draft_sql_schema",
        node: &node,
        caller: &caller,
        force: false,
        endpoint: "",
        log: false,
    };
    match runner::run(run, std::future::pending()).await {
        Ok(response) => response["results"]
            .as_array()
            .map(|rows| {
                rows.iter()
                    .filter_map(|row| row.get(0).and_then(Value::as_str).map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default(),
        Err(_) => Vec::new(),
    }
}

fn extract_sql(content: &str) -> String {
    let trimmed = content.trim();
    if let Some(start) = trimmed.find("```") {
        let after = &trimmed[start + 3..];
        let after = after.strip_prefix("sql").unwrap_or(after);
        if let Some(end) = after.find("```") {
            return after[..end].trim().trim_end_matches(';').to_owned();
        }
    }
    trimmed.trim_end_matches(';').to_owned()
}

pub async fn draft(
    state: &AppState,
    project: &Project,
    prompt: &str,
    current: Option<&str>,
) -> Result<String, ApiError> {
    let settings = &state.config.query;
    let Some(base) = &settings.llm_url else {
        return Err(ApiError::bad_request(
            "llm_not_configured",
            "No language model is configured for drafting SQL: set ANALYTICS_LLM_URL (an OpenAI-compatible API) and ANALYTICS_LLM_API_KEY.",
        ));
    };
    let events = top(
        state,
        project,
        "SELECT event, count() AS c FROM events GROUP BY event ORDER BY c DESC LIMIT 20",
    )
    .await;
    let properties = top(
        state,
        project,
        "SELECT key, count() AS c FROM (SELECT arrayJoin(JSONExtractKeys(properties)) AS key FROM events) GROUP BY key ORDER BY c DESC LIMIT 30",
    )
    .await;
    let system = format!(
        "You write one read-only SQL query in PostHog's HogQL dialect (ClickHouse functions) for a product-analytics project. \
Answer with the query only, no explanation.\nTables:\n{TABLES}\nTop events: {}\nTop event properties: {}\n{}",
        events.join(", "),
        properties.join(", "),
        current
            .map(|q| format!("The user's current query: {q}"))
            .unwrap_or_default()
    );
    let body = json!({
        "model": settings.llm_model,
        "messages": [
            {"role": "system", "content": system},
            {"role": "user", "content": prompt},
        ],
        "temperature": 0,
    });
    let url = format!("{}/chat/completions", base.trim_end_matches('/'));
    let mut request = state
        .http
        .post(url)
        .header("content-type", "application/json")
        .body(body.to_string())
        .timeout(std::time::Duration::from_secs(60));
    if let Some(key) = &settings.llm_api_key {
        request = request.bearer_auth(key);
    }
    let unavailable = |detail: String| {
        tracing::warn!(%detail, "draft_sql provider failed");
        ApiError::new(
            axum::http::StatusCode::SERVICE_UNAVAILABLE,
            common::error::ErrorType::ServerError,
            "llm_unavailable",
            "The language model did not answer. Try again later.",
        )
    };
    let response = request
        .send()
        .await
        .map_err(|e| unavailable(e.to_string()))?;
    if !response.status().is_success() {
        return Err(unavailable(format!("status {}", response.status())));
    }
    let text = response
        .text()
        .await
        .map_err(|e| unavailable(e.to_string()))?;
    let answer: Value = serde_json::from_str(&text).map_err(|e| unavailable(e.to_string()))?;
    let content = answer["choices"][0]["message"]["content"]
        .as_str()
        .ok_or_else(|| unavailable("no choices[0].message.content".into()))?;
    let sql = extract_sql(content);
    if let Err(error) = engine::prepare(&sql, &Bindings::default()) {
        return Err(ApiError::field(
            "prompt",
            "unclear",
            format!("The drafted query is not valid ({error}). Try rephrasing the prompt."),
        ));
    }
    Ok(sql)
}
