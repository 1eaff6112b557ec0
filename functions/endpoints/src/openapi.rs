//! `GET endpoints/:name/openapi.json`: an OpenAPI 3.0 document for one endpoint, so a client can
//! be generated for it: its run path (GET and POST), its variables as the body's `variables`,
//! and its result columns as the rows' schema.

use axum::extract::{Path, State};
use axum::response::{IntoResponse, Response};
use common::error::ApiResult;
use common::{AppState, Authenticated};
use endpoint_core::{Column, Version, render, repository};
use serde_json::{Map, Value, json};

use crate::shared::{READ, Site, load, project};
use crate::variables;

pub async fn document(
    State(state): State<AppState>,
    auth: Authenticated,
    site: Site,
    Path((project_id, name)): Path<(String, String)>,
) -> ApiResult<Response> {
    let project = project(&state, &auth, &project_id, READ).await?;
    let store = state.store.as_ref();
    let endpoint = load(store, project.id, &name).await?;
    let current = repository::current(store, project.id, &endpoint).await?;
    let path = format!(
        "{}/",
        render::endpoint_path(site.prefix, project.id, &endpoint.name)
    );
    Ok(axum::Json(spec(&endpoint.name, &current, &site.base_url, &path)).into_response())
}

/// The document for `version` served at `path` of `base_url`.
fn spec(name: &str, version: &Version, base_url: &str, path: &str) -> Value {
    let operation = |method: &str| {
        let mut operation = json!({
            "operationId": format!("{method}_{}", name.replace('-', "_")),
            "summary": format!("Run the endpoint {name}"),
            "description": version.description,
            "security": [{"PersonalAPIKey": []}],
            "responses": responses(&version.columns),
        });
        if method == "get" {
            operation["parameters"] = json!([{
                "name": "version", "in": "query", "required": false,
                "description": "The version to run (default: the current one).",
                "schema": {"type": "integer", "minimum": 1},
            }]);
        } else {
            operation["requestBody"] = json!({
                "required": false,
                "content": {"application/json": {"schema": run_body(version)}},
            });
        }
        operation
    };
    json!({
        "openapi": "3.0.3",
        "info": {
            "title": name,
            "version": version.version.to_string(),
            "description": version.description,
        },
        "servers": [{"url": base_url}],
        "paths": {path: {"get": operation("get"), "post": operation("post")}},
        "components": {
            "securitySchemes": {
                "PersonalAPIKey": {"type": "http", "scheme": "bearer", "description": "A personal API key (phx_...) with endpoint:read."},
            },
            "schemas": {
                "Error": {
                    "type": "object",
                    "properties": {
                        "type": {"type": "string"}, "code": {"type": "string"},
                        "detail": {"type": "string"}, "attr": {"type": "string", "nullable": true},
                    },
                },
            },
        },
    })
}

/// `EndpointRunRequest`, with this endpoint's variables.
fn run_body(version: &Version) -> Value {
    let mut properties = Map::new();
    if variables::is_sql(&version.query) {
        let used = variables::used(&version.query);
        if let Some(defined) = version.query["variables"].as_object() {
            for variable in defined.values() {
                let Some(code_name) = variable["code_name"].as_str() else {
                    continue;
                };
                if used.iter().any(|u| u == code_name) {
                    let mut schema = value_schema(&variable["value"]);
                    schema["default"] = variable["value"].clone();
                    properties.insert(code_name.to_owned(), schema);
                }
            }
        }
    } else {
        for key in ["date_from", "date_to"] {
            properties.insert(key.into(), json!({"type": "string"}));
        }
        if let Some(breakdown) = version.query["breakdownFilter"]["breakdown"].as_str() {
            properties.insert(breakdown.into(), json!({"type": "string"}));
        }
    }
    json!({
        "type": "object",
        "additionalProperties": false,
        "properties": {
            "variables": {"type": "object", "additionalProperties": false, "properties": properties},
            "version": {"type": "integer", "minimum": 1},
            "refresh": {"type": "string", "enum": ["cache", "force", "direct"], "default": "cache"},
            "limit": {"type": "integer", "minimum": 1},
            "offset": {"type": "integer", "minimum": 0},
            "client_query_id": {"type": "string"},
            "debug": {"type": "boolean"},
        },
    })
}

fn value_schema(value: &Value) -> Value {
    match value {
        Value::Bool(_) => json!({"type": "boolean"}),
        Value::Number(n) if n.is_i64() || n.is_u64() => json!({"type": "integer"}),
        Value::Number(_) => json!({"type": "number"}),
        Value::Array(_) => json!({"type": "array", "items": {}}),
        _ => json!({"type": "string"}),
    }
}

/// The JSON schema of a ClickHouse type name (`Nullable(String)`, `DateTime64(6, 'UTC')`...).
fn column_schema(kind: &str) -> Value {
    if let Some(inner) = kind
        .strip_prefix("Nullable(")
        .and_then(|k| k.strip_suffix(')'))
    {
        let mut schema = column_schema(inner);
        schema["nullable"] = Value::Bool(true);
        return schema;
    }
    if let Some(inner) = kind
        .strip_prefix("Array(")
        .and_then(|k| k.strip_suffix(')'))
    {
        return json!({"type": "array", "items": column_schema(inner)});
    }
    let base = kind.split('(').next().unwrap_or(kind);
    match base {
        "UInt8" | "UInt16" | "UInt32" | "UInt64" | "Int8" | "Int16" | "Int32" | "Int64" => {
            json!({"type": "integer"})
        }
        "Float32" | "Float64" | "Decimal" => json!({"type": "number"}),
        "Bool" | "Boolean" => json!({"type": "boolean"}),
        "Date" | "Date32" => json!({"type": "string", "format": "date"}),
        "DateTime" | "DateTime64" => json!({"type": "string", "format": "date-time"}),
        _ => json!({"type": "string"}),
    }
}

fn responses(columns: &[Column]) -> Value {
    let mut kinds: Vec<Value> = Vec::new();
    for schema in columns.iter().map(|c| column_schema(&c.kind)) {
        if !kinds.contains(&schema) {
            kinds.push(schema);
        }
    }
    let row = match columns.is_empty() {
        true => json!({"type": "array", "items": {}}),
        false => json!({
            "type": "array",
            "description": format!(
                "One value per column, in order: {}",
                columns.iter().map(|c| format!("{} ({})", c.name, c.kind)).collect::<Vec<_>>().join(", ")
            ),
            "minItems": columns.len(),
            "maxItems": columns.len(),
            "items": {"oneOf": kinds},
        }),
    };
    let error = json!({"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}});
    json!({
        "200": {
            "description": "The query's results.",
            "content": {"application/json": {"schema": {
                "type": "object",
                "properties": {
                    "results": {"type": "array", "items": row},
                    "columns": {"type": "array", "items": {"type": "string"}, "example": columns.iter().map(|c| &c.name).collect::<Vec<_>>()},
                    "types": {"type": "array", "items": {"type": "array", "items": {"type": "string"}}},
                    "hasMore": {"type": "boolean", "nullable": true},
                    "endpoint_version": {"type": "integer"},
                    "endpoint_version_created_at": {"type": "string", "format": "date-time"},
                    "endpoint_materialized": {"type": "boolean"},
                    "execution_id": {"type": "string"},
                    "is_cached": {"type": "boolean"},
                },
            }}},
        },
        "400": {"description": "Bad variables, version or query.", "content": error},
        "404": {"description": "No such active endpoint, or version.", "content": error},
        "429": {"description": "Too many concurrent requests.", "content": error},
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clickhouse_types_map_to_json_schemas() {
        assert_eq!(column_schema("UInt64"), json!({"type": "integer"}));
        assert_eq!(
            column_schema("Nullable(String)"),
            json!({"type": "string", "nullable": true})
        );
        assert_eq!(
            column_schema("DateTime64(6, 'UTC')"),
            json!({"type": "string", "format": "date-time"})
        );
        assert_eq!(
            column_schema("Array(Float64)"),
            json!({"type": "array", "items": {"type": "number"}})
        );
    }
}
