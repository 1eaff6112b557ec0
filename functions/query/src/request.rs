//! The body of `POST /query/`: PostHog's QueryRequest, validated, and the SQL node inside it.

use common::ApiError;
use engine::sql::Bindings;
use serde::Deserialize;
use serde_json::{Map, Value};

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct QueryRequest {
    pub query: Value,
    #[serde(default)]
    pub refresh: Option<Value>,
    #[serde(default, rename = "async")]
    pub run_async: Option<bool>,
    #[serde(default)]
    pub client_query_id: Option<String>,
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub filters_override: Option<Value>,
    #[serde(default)]
    pub variables_override: Option<Map<String, Value>>,
    #[serde(default)]
    pub limit_context: Option<String>,
}

/// `refresh`, as PostHog's execution modes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// A fresh cached result, else compute now.
    Blocking,
    /// Compute now.
    ForceBlocking,
    /// A fresh cached result, else enqueue.
    Async,
    /// Always enqueue.
    ForceAsync,
}

impl Mode {
    pub fn is_async(self) -> bool {
        matches!(self, Mode::Async | Mode::ForceAsync)
    }
    pub fn forced(self) -> bool {
        matches!(self, Mode::ForceBlocking | Mode::ForceAsync)
    }
}

const MAX_NAME_CHARS: usize = 128;
const MAX_CLIENT_QUERY_ID_CHARS: usize = 200;

/// A validated node ready for the engine: SQL text, or a structured node compiled at run time.
#[derive(Debug, Clone, Default)]
pub struct SqlNode {
    /// The SQL text (for a structured node: the node as JSON, for the query log).
    pub text: String,
    pub name: Option<String>,
    pub bindings: Bindings,
    /// An EventsQuery, TrendsQuery, FunnelsQuery or RetentionQuery (see `insights`).
    pub structured: Option<Value>,
    /// HogQLFilters for `{filters}` (the node's, with `filters_override` laid over them).
    pub filters: Option<Value>,
}

impl QueryRequest {
    pub fn mode(&self) -> Result<Mode, ApiError> {
        if self.run_async == Some(true) {
            return Ok(Mode::Async);
        }
        Ok(match &self.refresh {
            None | Some(Value::Null) | Some(Value::Bool(false)) => Mode::Blocking,
            Some(Value::Bool(true)) => Mode::ForceBlocking,
            Some(Value::String(mode)) => match mode.as_str() {
                "blocking" | "force_cache" => Mode::Blocking,
                "force_blocking" => Mode::ForceBlocking,
                "async" | "lazy_async" | "async_except_on_cache_miss" => Mode::Async,
                "force_async" => Mode::ForceAsync,
                other => {
                    return Err(ApiError::field(
                        "refresh",
                        "invalid_choice",
                        format!("\"{other}\" is not a valid choice."),
                    ));
                }
            },
            Some(_) => {
                return Err(ApiError::field(
                    "refresh",
                    "invalid_choice",
                    "refresh must be one of blocking, async, lazy_async, force_blocking, force_async, force_cache, async_except_on_cache_miss.",
                ));
            }
        })
    }

    pub fn validate(&self) -> Result<(), ApiError> {
        if !matches!(
            self.filters_override,
            None | Some(Value::Null) | Some(Value::Object(_))
        ) {
            return Err(ApiError::field(
                "filters_override",
                "invalid",
                "filters_override must be an object.",
            ));
        }
        if let Some(name) = &self.name
            && name.chars().count() > MAX_NAME_CHARS
        {
            return Err(ApiError::field(
                "name",
                "max_length",
                format!("Ensure this field has no more than {MAX_NAME_CHARS} characters."),
            ));
        }
        if let Some(id) = &self.client_query_id
            && (id.is_empty()
                || id.chars().count() > MAX_CLIENT_QUERY_ID_CHARS
                || !id
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_'))
        {
            return Err(ApiError::field(
                "client_query_id",
                "invalid",
                "client_query_id must be 1-200 letters, digits, '-' or '_'.",
            ));
        }
        if let Some(context) = &self.limit_context
            && context != "posthog_ai"
        {
            return Err(ApiError::field(
                "limit_context",
                "invalid_choice",
                format!("\"{context}\" is not a valid choice."),
            ));
        }
        Ok(())
    }

    /// The SQL node (`SqlDialectQuery`, alias `HogQLQuery`) with overrides applied.
    pub fn sql_node(&self) -> Result<SqlNode, ApiError> {
        let Value::Object(node) = &self.query else {
            return Err(ApiError::field(
                "query",
                "invalid",
                "query must be an object.",
            ));
        };
        let kind = match node.get("kind") {
            Some(Value::String(kind)) => kind.as_str(),
            _ => {
                return Err(ApiError::field(
                    "query.kind",
                    "required",
                    "query.kind is required.",
                ));
            }
        };
        check_version(node)?;
        if insights::KINDS.contains(&kind) {
            return Ok(SqlNode {
                text: Value::Object(node.clone()).to_string(),
                name: self.name.clone(),
                bindings: Bindings::default(),
                structured: Some(Value::Object(node.clone())),
                filters: None,
            });
        }
        if kind != "HogQLQuery" && kind != "SqlDialectQuery" {
            return Err(ApiError::field(
                "query.kind",
                "invalid",
                format!(
                    "Query kind {kind} is not supported; use SqlDialectQuery (or HogQLQuery), {}.",
                    insights::KINDS.join(", ")
                ),
            ));
        }
        const KNOWN: &[&str] = &[
            "kind",
            "query",
            "values",
            "variables",
            "filters",
            "modifiers",
            "name",
            "explain",
            "tags",
            "version",
            "response",
            "connectionId",
            "sendRawQuery",
        ];
        if let Some(unknown) = node.keys().find(|key| !KNOWN.contains(&key.as_str())) {
            return Err(ApiError::field(
                format!("query.{unknown}"),
                "invalid",
                format!("Unknown field: {unknown}."),
            ));
        }
        let text = match node.get("query") {
            Some(Value::String(text)) if !text.trim().is_empty() => text.clone(),
            Some(Value::String(_)) | None | Some(Value::Null) => {
                return Err(ApiError::field(
                    "query.query",
                    "required",
                    "query.query is required.",
                ));
            }
            Some(_) => {
                return Err(ApiError::field(
                    "query.query",
                    "invalid",
                    "query.query must be a string.",
                ));
            }
        };
        let values = match node.get("values") {
            None | Some(Value::Null) => Map::new(),
            Some(Value::Object(values)) => values.clone(),
            Some(_) => {
                return Err(ApiError::field(
                    "query.values",
                    "invalid",
                    "query.values must be an object.",
                ));
            }
        };
        let mut variables = match node.get("variables") {
            None | Some(Value::Null) => Map::new(),
            Some(Value::Object(variables)) => variables.clone(),
            Some(_) => {
                return Err(ApiError::field(
                    "query.variables",
                    "invalid",
                    "query.variables must be an object.",
                ));
            }
        };
        if let Some(overrides) = &self.variables_override {
            for (id, value) in overrides {
                variables.insert(id.clone(), value.clone());
            }
        }
        let mut by_code_name = Map::new();
        for (id, variable) in &variables {
            let Value::Object(variable) = variable else {
                return Err(ApiError::field(
                    format!("query.variables.{id}"),
                    "invalid",
                    "A variable is an object with code_name and value.",
                ));
            };
            let Some(Value::String(code_name)) = variable.get("code_name") else {
                return Err(ApiError::field(
                    format!("query.variables.{id}.code_name"),
                    "required",
                    "code_name is required.",
                ));
            };
            let value = if variable.get("isNull") == Some(&Value::Bool(true)) {
                Value::Null
            } else {
                variable.get("value").cloned().unwrap_or(Value::Null)
            };
            by_code_name.insert(code_name.clone(), value);
        }
        let name = match node.get("name") {
            Some(Value::String(name)) => Some(name.clone()),
            _ => None,
        };
        Ok(SqlNode {
            text,
            name: self.name.clone().or(name),
            bindings: Bindings {
                values,
                variables: by_code_name,
                ..Default::default()
            },
            structured: None,
            filters: Some(self.hogql_filters(node)?),
        })
    }

    fn hogql_filters(&self, node: &Map<String, Value>) -> Result<Value, ApiError> {
        insights::hogql_filters::merge(node.get("filters"), self.filters_override.as_ref()).map_err(
            |invalid| {
                let attr = match invalid.attr.starts_with("filters_override") {
                    true => invalid.attr,
                    false => format!("query.{}", invalid.attr),
                };
                ApiError::field(attr, "invalid_input", invalid.detail)
            },
        )
    }
}

fn check_version(node: &Map<String, Value>) -> Result<(), ApiError> {
    match node.get("version") {
        None | Some(Value::Null) => Ok(()),
        Some(Value::Number(n)) if n.as_u64().is_some_and(|v| v >= 1) => Ok(()),
        Some(_) => Err(ApiError::field(
            "query.version",
            "invalid",
            "version must be a positive integer.",
        )),
    }
}
