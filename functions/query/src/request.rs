//! The body of `POST /query/`: PostHog's QueryRequest. The body is read once into [`Body`] (a
//! bad field is a 400 naming it); its node is brought to the latest schema by the node
//! migrations, then read into a typed [`QueryNode`]. The handler runs the [`QueryRequest`].

use common::{ApiError, ApiResult};
use insights::nodes::QueryNode;
use query_service::node::node_error;
use query_service::{Mode, Overrides, SqlNode};
use serde::{Deserialize, Deserializer};
use serde_json::{Map, Value};

/// The body as sent, its node not upgraded yet.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Body {
    /// `None` when absent (`null` is a node, and not an object).
    #[serde(default, deserialize_with = "present")]
    pub query: Option<Value>,
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

fn present<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<Value>, D::Error> {
    Value::deserialize(deserializer).map(Some)
}

/// A valid request: its typed node, how to run it, and what to lay over the node.
#[derive(Debug, Clone)]
pub struct QueryRequest {
    pub query: QueryNode,
    pub mode: Mode,
    pub client_query_id: Option<String>,
    pub name: Option<String>,
    pub filters_override: Option<Value>,
    pub variables_override: Option<Map<String, Value>>,
}

const MAX_NAME_CHARS: usize = 128;
const MAX_CLIENT_QUERY_ID_CHARS: usize = 200;

/// A body's `query` node, migrated to the latest versions (errors name `query...`).
pub fn upgraded_query(query: Option<Value>) -> ApiResult<Value> {
    match query {
        Some(query @ Value::Object(_)) => insights::nodes::upgrade(query).map_err(|error| {
            let attr = error
                .attr()
                .map_or("query".into(), |a| format!("query.{a}"));
            ApiError::field(attr, "invalid", error.to_string())
        }),
        Some(_) => Err(ApiError::field(
            "query",
            "invalid",
            "query must be an object.",
        )),
        None => Err(ApiError::required("query")),
    }
}

impl QueryRequest {
    /// Migrations first (old nodes are accepted), then the request's fields, its mode and its
    /// node, in that order.
    pub fn from_body(mut body: Body) -> ApiResult<Self> {
        let upgraded = upgraded_query(body.query.take())?;
        body.validate()?;
        let mode = Mode::parse(body.refresh.as_ref(), body.run_async)?;
        let query = QueryNode::from_value(upgraded).map_err(node_error)?;
        Ok(QueryRequest {
            query,
            mode,
            client_query_id: body.client_query_id,
            name: body.name,
            filters_override: body.filters_override,
            variables_override: body.variables_override,
        })
    }

    /// The node with the overrides, as the service runs it.
    pub fn sql_node(self) -> Result<SqlNode, ApiError> {
        SqlNode::from_node(
            self.query,
            Overrides {
                name: self.name.as_deref(),
                variables: self.variables_override.as_ref(),
                filters: self.filters_override.as_ref(),
            },
        )
    }
}

impl Body {
    fn validate(&self) -> Result<(), ApiError> {
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
}
