//! The body of `POST /query/`: PostHog's QueryRequest, validated; the node inside it becomes the
//! service's [`SqlNode`].

use common::ApiError;
use query_service::{Mode, Overrides, SqlNode};
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

const MAX_NAME_CHARS: usize = 128;
const MAX_CLIENT_QUERY_ID_CHARS: usize = 200;

impl QueryRequest {
    pub fn mode(&self) -> Result<Mode, ApiError> {
        Mode::parse(self.refresh.as_ref(), self.run_async)
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

    /// The node (`SqlDialectQuery` / `HogQLQuery`, or a structured kind) with the overrides.
    pub fn sql_node(&self) -> Result<SqlNode, ApiError> {
        SqlNode::from_query(
            &self.query,
            Overrides {
                name: self.name.as_deref(),
                variables: self.variables_override.as_ref(),
                filters: self.filters_override.as_ref(),
            },
        )
    }
}
