//! Reading and checking an ActorsQuery node's own fields into a [`Request`].

use serde_json::Value;

use super::{Column, DEFAULT_LIMIT, MAX_LIMIT};
use crate::{Context, Invalid, filters, sql_text};

/// What the node asks of the persons found.
pub(super) struct Request {
    /// The columns as sent (the response's `columns`) and as read.
    pub names: Vec<String>,
    pub columns: Vec<Column>,
    /// `ORDER BY` terms of the dialect.
    pub order: Vec<String>,
    /// Conditions on the `persons` row (`properties`, `fixedProperties`, `search`).
    pub conditions: Vec<String>,
    pub limit: u64,
    pub offset: u64,
}

impl Request {
    pub(super) fn parse(node: &Value, ctx: &Context) -> Result<Request, Invalid> {
        let names: Vec<String> = match node.get("select") {
            None | Some(Value::Null) => ["person", "id", "person.$delete"]
                .map(String::from)
                .to_vec(),
            Some(Value::Array(items)) if !items.is_empty() => items
                .iter()
                .enumerate()
                .map(|(index, item)| match item {
                    Value::String(text) => Ok(text.clone()),
                    _ => Err(Invalid::new(
                        format!("select[{index}]"),
                        "A column must be a string.",
                    )),
                })
                .collect::<Result<_, _>>()?,
            Some(_) => {
                return Err(Invalid::new("select", "select must be a non-empty list."));
            }
        };
        let has_source = !matches!(node.get("source"), None | Some(Value::Null));
        let columns = names
            .iter()
            .enumerate()
            .map(|(index, name)| column(name, has_source, &format!("select[{index}]")))
            .collect::<Result<Vec<_>, _>>()?;
        let order = order(node.get("orderBy"), &names, &columns, has_source)?;

        let mut conditions = Vec::new();
        for key in ["properties", "fixedProperties"] {
            conditions.extend(person_filters(node.get(key), ctx, key)?);
        }
        match node.get("search") {
            None | Some(Value::Null) => {}
            Some(Value::String(text)) if text.is_empty() => {}
            Some(Value::String(text)) => {
                let pattern = sql_text::string(&format!("%{text}%"));
                conditions.push(format!(
                    "(toString(properties['email']) ILIKE {pattern} OR toString(properties['name']) ILIKE {pattern} \
                     OR toString(id) ILIKE {pattern} \
                     OR id IN (SELECT toString(person_id) FROM events WHERE distinct_id ILIKE {pattern}))"
                ));
            }
            Some(_) => return Err(Invalid::new("search", "search must be a string.")),
        }
        let number = |key: &str, default: u64| match node.get(key) {
            None | Some(Value::Null) => Ok(default),
            Some(value) => value
                .as_u64()
                .ok_or_else(|| Invalid::new(key, format!("{key} must be a whole number."))),
        };
        let limit = number("limit", DEFAULT_LIMIT)?;
        if limit == 0 || limit > MAX_LIMIT {
            return Err(Invalid::new(
                "limit",
                format!("limit must be from 1 to {MAX_LIMIT}."),
            ));
        }
        Ok(Request {
            names,
            columns,
            order,
            conditions,
            limit,
            offset: number("offset", 0)?,
        })
    }
}

/// A column of `select` (a trailing ` -- label` is ignored, as PostHog does).
fn column(name: &str, has_source: bool, attr: &str) -> Result<Column, Invalid> {
    let bare = name.split(" -- ").next().unwrap_or(name).trim();
    Ok(match bare {
        "person" | "actor" => Column::Person,
        "id" => Column::Id,
        "person.$delete" => Column::Delete,
        "created_at" => Column::CreatedAt,
        "is_identified" => Column::IsIdentified,
        "event_count" if has_source => Column::EventCount,
        "event_count" => {
            return Err(Invalid::new(
                attr,
                "event_count needs a source: the events behind an insight's point.",
            ));
        }
        other => match other
            .strip_prefix("person.properties.")
            .or_else(|| other.strip_prefix("properties."))
        {
            Some(key) if !key.is_empty() => Column::Property(key.to_string()),
            _ => {
                return Err(Invalid::new(
                    attr,
                    format!(
                        "Column '{other}' is not supported: use person, id, person.$delete, \
                         created_at, is_identified, event_count or properties.<key>."
                    ),
                ));
            }
        },
    })
}

/// The dialect expression of a column in the final query.
pub(super) fn column_sql(column: &Column) -> String {
    match column {
        Column::Person | Column::Id => "id".to_string(),
        Column::Delete => "1".to_string(),
        Column::CreatedAt => "created_at".to_string(),
        Column::IsIdentified => "is_identified".to_string(),
        Column::EventCount => "event_count".to_string(),
        Column::Property(key) => format!("properties[{}]", sql_text::string(key)),
    }
}

fn order(
    order_by: Option<&Value>,
    names: &[String],
    columns: &[Column],
    has_source: bool,
) -> Result<Vec<String>, Invalid> {
    let items = match order_by {
        None | Some(Value::Null) => {
            // PostHog: created_at DESC when selected, else the first column ascending.
            let first = match columns.contains(&Column::CreatedAt) {
                true => "created_at DESC".to_string(),
                false => format!("{} ASC", column_sql(&columns[0])),
            };
            return Ok(with_tie_break(vec![first]));
        }
        Some(Value::Array(items)) => items,
        Some(_) => return Err(Invalid::new("orderBy", "orderBy must be a list.")),
    };
    let mut terms = Vec::new();
    for (index, item) in items.iter().enumerate() {
        let attr = format!("orderBy[{index}]");
        let Value::String(text) = item else {
            return Err(Invalid::new(attr, "An order must be a string."));
        };
        let (name, direction) = match text.trim().rsplit_once(' ') {
            Some((name, way)) if way.eq_ignore_ascii_case("desc") => (name.trim(), "DESC"),
            Some((name, way)) if way.eq_ignore_ascii_case("asc") => (name.trim(), "ASC"),
            _ => (text.trim(), "ASC"),
        };
        // PostHog orders `person` by the display property (email).
        let expression = match name {
            "person" | "actor" => "properties['email']".to_string(),
            "actor_id" => "id".to_string(),
            _ => {
                let position = names.iter().position(|known| known == name);
                let column = match position {
                    Some(position) => columns[position].clone(),
                    None => column(name, has_source, &attr)?,
                };
                column_sql(&column)
            }
        };
        terms.push(format!("{expression} {direction}"));
    }
    Ok(with_tie_break(terms))
}

/// The terms, then the person id so pages never overlap (a constant term is dropped).
fn with_tie_break(terms: Vec<String>) -> Vec<String> {
    let mut terms: Vec<String> = terms.into_iter().filter(|term| term != "1 ASC").collect();
    if !terms
        .iter()
        .any(|term| term == "id ASC" || term == "id DESC")
    {
        terms.push("id ASC".into());
    }
    terms
}

/// Person property filters, read from the `persons` row.
fn person_filters(
    filters: Option<&Value>,
    ctx: &Context,
    attr: &str,
) -> Result<Vec<String>, Invalid> {
    let items = match filters {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::Array(items)) => items,
        Some(_) => return Err(Invalid::new(attr, format!("{attr} must be a list."))),
    };
    let mut conditions = Vec::new();
    for (index, item) in items.iter().enumerate() {
        let attr = format!("{attr}[{index}]");
        let kind = item.get("type").and_then(Value::as_str).unwrap_or("person");
        let Some(Value::String(key)) = item.get("key") else {
            return Err(Invalid::new(
                format!("{attr}.key"),
                "A property filter needs a key.",
            ));
        };
        if kind != "person" {
            return Err(Invalid::new(
                format!("{attr}.type"),
                "Only person property filters narrow an actors list.",
            ));
        }
        let operator = item.get("operator").and_then(Value::as_str);
        let value = item.get("value").unwrap_or(&Value::Null);
        conditions.push(filters::persons_table_condition(
            key, operator, value, ctx, &attr,
        )?);
    }
    Ok(conditions)
}
