//! `EventsQuery`: a list of select expressions over `events` (grouped when some aggregate),
//! filtered by `where`, property filters, event names and a time window, ordered and paginated
//! like PostHog's `EventsQueryRunner`.

use chrono::Duration;
use serde_json::{Map, Value, json};

use crate::date_range::parse_instant;
use crate::filters;
use crate::sql_text;
use crate::{Compiled, Context, Invalid, Table};

const DEFAULT_LIMIT: u64 = 100;
const MAX_LIMIT: u64 = 50_000;

/// Aggregate functions of the dialect (PostHog's HOGQL_AGGREGATIONS that the engine allows, and a
/// few more it may allow later): a select item calling one is an aggregation, a `where` item
/// calling one goes to HAVING.
const AGGREGATES: &[&str] = &[
    "count",
    "countIf",
    "countDistinct",
    "countDistinctIf",
    "uniq",
    "uniqIf",
    "uniqExact",
    "uniqExactIf",
    "uniqHLL12",
    "uniqTheta",
    "sum",
    "sumIf",
    "avg",
    "avgIf",
    "min",
    "minIf",
    "max",
    "maxIf",
    "any",
    "anyIf",
    "anyLast",
    "anyHeavy",
    "argMax",
    "argMaxIf",
    "argMin",
    "argMinIf",
    "median",
    "medianIf",
    "medianExact",
    "quantile",
    "quantileIf",
    "quantiles",
    "quantileExact",
    "groupArray",
    "groupArrayIf",
    "groupUniqArray",
    "groupArraySample",
    "topK",
    "stddevPop",
    "stddevSamp",
    "varPop",
    "varSamp",
    "covarPop",
    "covarSamp",
    "stddev_pop",
    "stddev_samp",
    "var_pop",
    "var_samp",
    "covar_pop",
    "covar_samp",
    "corr",
    "avgWeighted",
    "array_agg",
    "json_agg",
    "string_agg",
    "every",
];

/// Aggregates whose name is matched in any case (PostHog: count, min, max, sum, avg).
const CASE_INSENSITIVE_AGGREGATES: &[&str] = &["count", "min", "max", "sum", "avg"];

/// `*` in PostHog's shape: these columns, turned into one object per row.
const STAR_FIELDS: &[&str] = &[
    "uuid",
    "event",
    "properties",
    "timestamp",
    "team_id",
    "distinct_id",
    "elements_chain",
    "created_at",
];

/// Person properties PostHog tries, in order, for `person_display_name`.
const DISPLAY_NAME_PROPERTIES: &[&str] = &[
    "email", "Email", "name", "Name", "username", "Username", "UserName",
];

/// What one item of `select` becomes.
enum Column {
    /// An expression: one query column.
    Expression {
        expr: String,
        aggregate: bool,
        /// The user's `AS alias`, which names the response column.
        alias: Option<String>,
    },
    /// `*`: the star fields, assembled into an object.
    Star,
    /// `person`: distinct_id, person_id and person_properties, assembled into an object.
    Person,
    /// `person_display_name`: display name, person id, distinct_id, assembled into an object.
    PersonDisplayName,
}

impl Column {
    /// The query columns it needs (expressions).
    fn parts(&self) -> Vec<String> {
        match self {
            Column::Expression { expr, .. } => vec![expr.clone()],
            Column::Star => STAR_FIELDS.iter().map(|f| (*f).to_string()).collect(),
            Column::Person => vec![
                "distinct_id".into(),
                "person_id".into(),
                "person_properties".into(),
            ],
            Column::PersonDisplayName => vec![
                display_name_expression(),
                "toString(person_id)".into(),
                "distinct_id".into(),
            ],
        }
    }

    fn aggregate(&self) -> bool {
        matches!(
            self,
            Column::Expression {
                aggregate: true,
                ..
            }
        )
    }
}

fn display_name_expression() -> String {
    let mut candidates: Vec<String> = DISPLAY_NAME_PROPERTIES
        .iter()
        .map(|key| sql_text::property(key, true))
        .collect();
    candidates.push("distinct_id".into());
    format!("coalesce({})", candidates.join(", "))
}

pub fn compile(node: &Value, ctx: &Context) -> Result<Compiled, Invalid> {
    for unsupported in ["actionId", "actionSteps", "source"] {
        if node.get(unsupported).is_some_and(|v| !v.is_null()) {
            return Err(Invalid::new(
                unsupported,
                format!("EventsQuery {unsupported} is not supported here."),
            ));
        }
    }

    // select
    let mut raw_select = list_of_strings(node.get("select"), "select")?;
    if raw_select.is_empty() {
        raw_select.push("*".into());
    }
    let columns = raw_select
        .iter()
        .enumerate()
        .map(|(index, raw)| select_column(raw, ctx, &format!("select[{index}]")))
        .collect::<Result<Vec<_>, _>>()?;
    let has_aggregate = columns.iter().any(Column::aggregate);

    // where, filters, event names, person, time window
    let mut conditions: Vec<String> = Vec::new();
    let mut having: Vec<String> = Vec::new();
    for (index, item) in list_of_strings(node.get("where"), "where")?
        .iter()
        .enumerate()
    {
        let attr = format!("where[{index}]");
        let text = strip_comment(item);
        let expr = checked(text, ctx, &attr)?;
        if has_aggregation(text) {
            having.push(expr);
        } else {
            conditions.push(expr);
        }
    }
    for condition in [
        filters::node_properties(node, ctx)?,
        filters::expression(node.get("fixedProperties"), ctx, "fixedProperties")?,
    ] {
        if condition != "true" {
            conditions.push(condition);
        }
    }
    let mut event_names: Vec<String> = Vec::new();
    match node.get("event") {
        None | Some(Value::Null) => {}
        Some(Value::String(name)) if name.is_empty() => {}
        Some(Value::String(name)) => event_names.push(name.clone()),
        Some(_) => return Err(Invalid::new("event", "event must be a string or null.")),
    }
    event_names.extend(list_of_strings(node.get("events"), "events")?);
    event_names.retain(|name| !name.is_empty());
    match event_names.as_slice() {
        [] => {}
        [one] => conditions.push(format!("event = {}", sql_text::string(one))),
        many => conditions.push(format!(
            "event IN ({})",
            many.iter()
                .map(|name| sql_text::string(name))
                .collect::<Vec<_>>()
                .join(", ")
        )),
    }
    match node.get("personId") {
        None | Some(Value::Null) => {}
        Some(Value::String(id)) => {
            conditions.push(format!("person_id = {}", sql_text::string(id)));
        }
        Some(_) => return Err(Invalid::new("personId", "personId must be a string.")),
    }
    let before = match optional_string(node.get("before"), "before")? {
        Some(text) => parse_instant(text, ctx).ok_or_else(|| not_a_date("before", text))?,
        // Events from slightly in the future (clock skew) stay visible.
        None => ctx.now + Duration::seconds(5),
    };
    conditions.push(format!(
        "timestamp < {}",
        crate::date_range::sql_datetime(before)
    ));
    let after = optional_string(node.get("after"), "after")?.unwrap_or("-24h");
    if after != "all" {
        let from = parse_instant(after, ctx).ok_or_else(|| not_a_date("after", after))?;
        conditions.push(format!(
            "timestamp > {}",
            crate::date_range::sql_datetime(from)
        ));
    }

    // order
    let order_by: Vec<String> = match node.get("orderBy") {
        None | Some(Value::Null) => default_order(&raw_select, &columns),
        Some(_) => list_of_strings(node.get("orderBy"), "orderBy")?
            .iter()
            .enumerate()
            .map(|(index, item)| order_item(item, ctx, &format!("orderBy[{index}]")))
            .collect::<Result<_, _>>()?,
    };

    // pagination
    let limit = match non_negative(node.get("limit"), "limit")? {
        None | Some(0) => DEFAULT_LIMIT,
        Some(n) => n.min(MAX_LIMIT),
    };
    let offset = non_negative(node.get("offset"), "offset")?.unwrap_or(0);
    // One more row tells whether there are more (the engine serves at most MAX_LIMIT rows).
    let fetch = (limit + 1).min(MAX_LIMIT);

    // The query. Every output column gets a name of ours, so repeated expressions stay distinct.
    let mut outputs: Vec<String> = Vec::new();
    let mut group_by: Vec<String> = Vec::new();
    for column in &columns {
        for part in column.parts() {
            let name = match column {
                Column::Expression {
                    alias: Some(alias), ..
                } => quote_identifier(alias),
                _ => format!("column_{}", outputs.len()),
            };
            outputs.push(format!("{part} AS {name}"));
            if has_aggregate && !column.aggregate() {
                group_by.push(part);
            }
        }
    }
    let mut text = format!("SELECT {} FROM events", outputs.join(", "));
    text.push_str(&format!(" WHERE {}", join_and(&conditions)));
    if !group_by.is_empty() {
        text.push_str(&format!(" GROUP BY {}", group_by.join(", ")));
    }
    if !having.is_empty() {
        text.push_str(&format!(" HAVING {}", join_and(&having)));
    }
    if !order_by.is_empty() {
        text.push_str(&format!(" ORDER BY {}", order_by.join(", ")));
    }
    text.push_str(&format!(" LIMIT {fetch}"));
    if offset > 0 {
        text.push_str(&format!(" OFFSET {offset}"));
    }

    let shapes: Vec<Shape> = columns
        .iter()
        .zip(&raw_select)
        .map(|(column, raw)| Shape {
            name: match column {
                Column::Expression {
                    alias: Some(alias), ..
                } => alias.clone(),
                _ => raw.clone(),
            },
            kind: match column {
                Column::Expression { .. } => ShapeKind::Plain,
                Column::Star => ShapeKind::Star,
                Column::Person => ShapeKind::Person,
                Column::PersonDisplayName => ShapeKind::DisplayName,
            },
        })
        .collect();
    Ok(Compiled::new(vec![text], move |tables| {
        assemble(&shapes, tables, limit, offset)
    }))
}

fn not_a_date(attr: &str, text: &str) -> Invalid {
    Invalid::new(
        attr,
        format!("'{text}' is not a date: use ISO 8601, a relative date like -24h or -7d, or all."),
    )
}

fn optional_string<'a>(value: Option<&'a Value>, attr: &str) -> Result<Option<&'a str>, Invalid> {
    match value {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(text)) => Ok(Some(text.as_str())),
        Some(_) => Err(Invalid::new(attr, format!("{attr} must be a string."))),
    }
}

fn list_of_strings(value: Option<&Value>, attr: &str) -> Result<Vec<String>, Invalid> {
    match value {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(items)) => items
            .iter()
            .enumerate()
            .map(|(index, item)| match item {
                Value::String(text) => Ok(text.clone()),
                _ => Err(Invalid::new(
                    format!("{attr}[{index}]"),
                    format!("{attr} items must be strings."),
                )),
            })
            .collect(),
        Some(_) => Err(Invalid::new(
            attr,
            format!("{attr} must be a list of strings."),
        )),
    }
}

fn non_negative(value: Option<&Value>, attr: &str) -> Result<Option<u64>, Invalid> {
    match value {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(number)) => number
            .as_u64()
            .map(Some)
            .ok_or_else(|| Invalid::new(attr, format!("{attr} must be a non-negative integer."))),
        Some(_) => Err(Invalid::new(
            attr,
            format!("{attr} must be a non-negative integer."),
        )),
    }
}

fn join_and(parts: &[String]) -> String {
    parts
        .iter()
        .map(|p| format!("({p})"))
        .collect::<Vec<_>>()
        .join(" AND ")
}

/// A user expression, checked to be exactly one expression, in parentheses.
fn checked(text: &str, ctx: &Context, attr: &str) -> Result<String, Invalid> {
    if text.is_empty() {
        return Err(Invalid::new(attr, "The expression is empty."));
    }
    (ctx.check_expression)(text).map_err(|detail| Invalid::new(attr, detail))?;
    Ok(format!("({text})"))
}

fn select_column(raw: &str, ctx: &Context, attr: &str) -> Result<Column, Invalid> {
    let text = strip_comment(raw);
    match text {
        "*" => return Ok(Column::Star),
        "person" => return Ok(Column::Person),
        "person_display_name" => return Ok(Column::PersonDisplayName),
        _ => {}
    }
    let (expr, alias) = split_alias(text);
    if let Some(alias) = alias
        && !is_identifier(alias)
    {
        return Err(Invalid::new(
            attr,
            format!("'{alias}' is not a valid column alias."),
        ));
    }
    Ok(Column::Expression {
        expr: checked(expr, ctx, attr)?,
        aggregate: has_aggregation(expr),
        alias: alias.map(|a| a.trim_matches(['`', '"']).to_string()),
    })
}

/// PostHog's default order: `count()` DESC if selected, else the first aggregation DESC, else
/// `timestamp` DESC if selected, else the first column ASC.
fn default_order(raw_select: &[String], columns: &[Column]) -> Vec<String> {
    if raw_select.iter().any(|raw| raw == "count()") {
        return vec!["count() DESC".into()];
    }
    if let Some(Column::Expression { expr, .. }) = columns.iter().find(|c| c.aggregate()) {
        return vec![format!("{expr} DESC")];
    }
    if raw_select.iter().any(|raw| raw == "timestamp") {
        return vec!["timestamp DESC".into()];
    }
    match columns.first() {
        Some(first) => first
            .parts()
            .into_iter()
            .take(1)
            .map(|part| format!("{part} ASC"))
            .collect(),
        None => Vec::new(),
    }
}

/// `expr [ASC|DESC]`, where expr may carry a ` -- Label` comment (the direction may follow it).
fn order_item(raw: &str, ctx: &Context, attr: &str) -> Result<String, Invalid> {
    let (before_comment, comment) = split_comment(raw);
    let mut text = before_comment.trim();
    let mut direction = None;
    // "person_display_name -- Person DESC": the direction is the comment's last word.
    if let Some(comment) = comment
        && let Some(last) = comment.split_whitespace().last()
        && (last.eq_ignore_ascii_case("ASC") || last.eq_ignore_ascii_case("DESC"))
    {
        direction = Some(last.to_ascii_uppercase());
    }
    if let Some((head, last)) = text.rsplit_once(char::is_whitespace)
        && (last.eq_ignore_ascii_case("ASC") || last.eq_ignore_ascii_case("DESC"))
    {
        direction = Some(last.to_ascii_uppercase());
        text = head.trim_end();
    }
    let expr = if text == "person_display_name" {
        display_name_expression()
    } else {
        checked(text, ctx, attr)?
    };
    Ok(match direction {
        Some(direction) => format!("{expr} {direction}"),
        None => expr,
    })
}

/// The text before a `--` comment that is outside string literals and quoted names, trimmed.
fn strip_comment(text: &str) -> &str {
    split_comment(text).0.trim()
}

fn split_comment(text: &str) -> (&str, Option<&str>) {
    let mut scanner = Scanner::default();
    let bytes = text.as_bytes();
    for (index, &byte) in bytes.iter().enumerate() {
        if scanner.outside() && byte == b'-' && bytes.get(index + 1) == Some(&b'-') {
            return (&text[..index], Some(&text[index + 2..]));
        }
        scanner.step(byte);
    }
    (text, None)
}

/// `expr AS alias` at the top level (outside parentheses, brackets and quotes).
fn split_alias(text: &str) -> (&str, Option<&str>) {
    let mut scanner = Scanner::default();
    let bytes = text.as_bytes();
    let mut found = None;
    for (index, &byte) in bytes.iter().enumerate() {
        if scanner.outside()
            && scanner.depth == 0
            && byte.is_ascii_whitespace()
            && bytes.len() > index + 3
            && bytes[index + 1..index + 3].eq_ignore_ascii_case(b"as")
            && bytes[index + 3].is_ascii_whitespace()
        {
            found = Some(index);
        }
        scanner.step(byte);
    }
    match found {
        Some(index) => (text[..index].trim(), Some(text[index + 4..].trim())),
        None => (text, None),
    }
}

fn is_identifier(text: &str) -> bool {
    let inner = if (text.starts_with('`') && text.ends_with('`'))
        || (text.starts_with('"') && text.ends_with('"'))
    {
        &text[1..text.len().saturating_sub(1)]
    } else {
        text
    };
    let mut chars = inner.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_' || c == '$')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$')
}

fn quote_identifier(name: &str) -> String {
    format!("\"{name}\"")
}

/// Tracks string literals ('...'), quoted names ("..." and `...`) and bracket depth.
#[derive(Default)]
struct Scanner {
    quote: Option<u8>,
    escaped: bool,
    depth: i32,
}

impl Scanner {
    fn outside(&self) -> bool {
        self.quote.is_none()
    }

    fn step(&mut self, byte: u8) {
        match self.quote {
            Some(quote) => {
                if self.escaped {
                    self.escaped = false;
                } else if byte == b'\\' {
                    self.escaped = true;
                } else if byte == quote {
                    self.quote = None;
                }
            }
            None => match byte {
                b'\'' | b'"' | b'`' => self.quote = Some(byte),
                b'(' | b'[' => self.depth += 1,
                b')' | b']' => self.depth -= 1,
                _ => {}
            },
        }
    }
}

/// Whether the expression calls an aggregate function: `name(` at a word boundary, outside
/// string literals and quoted names (`properties.count(` is not a call of `count`).
pub fn has_aggregation(text: &str) -> bool {
    let bytes = text.as_bytes();
    let mut scanner = Scanner::default();
    let mut index = 0;
    while index < bytes.len() {
        let byte = bytes[index];
        let starts_word = scanner.outside()
            && (byte.is_ascii_alphabetic() || byte == b'_')
            && (index == 0 || !is_word_byte(bytes[index - 1]));
        if !starts_word {
            scanner.step(byte);
            index += 1;
            continue;
        }
        let start = index;
        while index < bytes.len() && is_word_byte(bytes[index]) {
            index += 1;
        }
        let word = &text[start..index];
        let after_dot = text[..start].trim_end().ends_with('.');
        let called = text[index..].trim_start().starts_with('(');
        if called && !after_dot && is_aggregate(word) {
            return true;
        }
    }
    false
}

fn is_word_byte(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || byte == b'_' || byte == b'$'
}

fn is_aggregate(name: &str) -> bool {
    AGGREGATES.contains(&name)
        || CASE_INSENSITIVE_AGGREGATES
            .iter()
            .any(|known| known.eq_ignore_ascii_case(name))
}

/// How one response column is made from the query's columns.
struct Shape {
    name: String,
    kind: ShapeKind,
}

enum ShapeKind {
    Plain,
    Star,
    Person,
    DisplayName,
}

impl ShapeKind {
    fn width(&self) -> usize {
        match self {
            ShapeKind::Plain => 1,
            ShapeKind::Star => STAR_FIELDS.len(),
            ShapeKind::Person | ShapeKind::DisplayName => 3,
        }
    }
}

/// JSON text as a value (PostHog parses `properties`); anything else stays as it is.
fn parsed_json(value: &Value) -> Value {
    match value {
        Value::String(text) => serde_json::from_str(text).unwrap_or_else(|_| value.clone()),
        Value::Null => json!({}),
        other => other.clone(),
    }
}

fn assemble(
    shapes: &[Shape],
    tables: Vec<Table>,
    limit: u64,
    offset: u64,
) -> Result<Value, Invalid> {
    let table = tables.into_iter().next().unwrap_or_default();
    let width: usize = shapes.iter().map(|s| s.kind.width()).sum();
    let limit_rows = usize::try_from(limit).unwrap_or(usize::MAX);
    let has_more = table.rows.len() > limit_rows;
    let mut results = Vec::with_capacity(table.rows.len().min(limit_rows));
    for row in table.rows.into_iter().take(limit_rows) {
        if row.len() != width {
            return Err(Invalid::new(
                "select",
                format!(
                    "The query returned {} columns, {width} were expected.",
                    row.len()
                ),
            ));
        }
        let mut cells = row.into_iter();
        let mut out = Vec::with_capacity(shapes.len());
        for shape in shapes {
            let values: Vec<Value> = cells.by_ref().take(shape.kind.width()).collect();
            out.push(match shape.kind {
                ShapeKind::Plain => values.into_iter().next().unwrap_or(Value::Null),
                ShapeKind::Star => {
                    let mut object: Map<String, Value> = STAR_FIELDS
                        .iter()
                        .zip(values)
                        .map(|(field, value)| ((*field).to_string(), value))
                        .collect();
                    if let Some(properties) = object.get_mut("properties") {
                        *properties = parsed_json(properties);
                    }
                    if let Some(chain) = object.get_mut("elements_chain")
                        && chain.is_null()
                    {
                        *chain = Value::String(String::new());
                    }
                    object.insert("person_mode".into(), json!("full"));
                    Value::Object(object)
                }
                ShapeKind::Person => {
                    let [distinct_id, person_id, properties] =
                        <[Value; 3]>::try_from(values).unwrap_or_default();
                    json!({
                        "uuid": person_id,
                        "properties": parsed_json(&properties),
                        "distinct_id": distinct_id,
                    })
                }
                ShapeKind::DisplayName => {
                    let [display_name, id, distinct_id] =
                        <[Value; 3]>::try_from(values).unwrap_or_default();
                    json!({"display_name": display_name, "id": id, "distinct_id": distinct_id})
                }
            });
        }
        results.push(Value::Array(out));
    }
    // Flat type names; a composite column lists its parts' types in a Tuple.
    let mut types_iter = table.types.into_iter().map(|(_, kind)| kind);
    let types: Vec<Value> = shapes
        .iter()
        .map(|shape| {
            let parts: Vec<String> = types_iter.by_ref().take(shape.kind.width()).collect();
            Value::String(match shape.kind {
                ShapeKind::Plain => parts.into_iter().next().unwrap_or_default(),
                _ => format!("Tuple({})", parts.join(", ")),
            })
        })
        .collect();
    Ok(json!({
        "results": results,
        "columns": shapes.iter().map(|s| s.name.clone()).collect::<Vec<_>>(),
        "types": types,
        "hasMore": has_more,
        "limit": limit,
        "offset": offset,
    }))
}

#[cfg(test)]
#[path = "events_query_tests.rs"]
mod tests;
