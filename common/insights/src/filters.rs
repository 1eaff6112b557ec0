//! Property filters (`properties`, `fixedProperties`: a list, or an AND/OR group) as a boolean
//! expression of the dialect. Cohort filters are compiled by [`crate::cohorts`].
//!
//! Semantics follow PostHog's `property_to_expr`: a list is an AND, a group `{type, values}` is an
//! AND or an OR of filters and nested groups, an empty filter (`{}`) or an empty value list is a
//! no-op. There are no property definitions here, so the value decides how to compare: a number
//! compares `toFloat(prop)` numerically, anything else compares the property's text.

use serde_json::Value;

use crate::sql_text;
use crate::{Context, Invalid};

/// Columns an `event_metadata` filter may name (the `events` table's own columns).
const EVENT_COLUMNS: &[&str] = &[
    "event",
    "distinct_id",
    "person_id",
    "timestamp",
    "created_at",
    "uuid",
    "$session_id",
    "elements_chain",
];

/// Filter types PostHog has that need data this engine does not keep (sessions, groups, the
/// parsed element chain).
const UNSUPPORTED_TYPES: &[&str] = &[
    "element",
    "session",
    "group",
    "behavioral",
    "feature",
    "flag",
    "recording",
    "log_entry",
    "data_warehouse",
    "data_warehouse_person_property",
    "error_tracking_issue",
    "revenue_analytics",
];

/// The filters as one boolean dialect expression (`true` when there are none); `attr` names the
/// field in errors (`properties`, `series[0].properties`, ...).
pub fn expression(filters: Option<&Value>, ctx: &Context, attr: &str) -> Result<String, Invalid> {
    // Parenthesized, so callers can put it beside their own conditions as it is.
    let condition = tree(filters, ctx, attr)?;
    Ok(if condition == "true" {
        condition
    } else {
        format!("({condition})")
    })
}

/// A node's own `properties`, and the project's test-account filters when the node says
/// `filterTestAccounts: true` (a 400 on `filterTestAccounts` when it is not a boolean).
pub fn node_properties(node: &Value, ctx: &Context) -> Result<String, Invalid> {
    let properties = expression(node.get("properties"), ctx, "properties")?;
    let test_accounts = match node.get("filterTestAccounts") {
        None | Some(Value::Null) | Some(Value::Bool(false)) => "true".to_owned(),
        Some(Value::Bool(true)) => test_accounts(ctx)?,
        Some(_) => {
            return Err(Invalid::new(
                "filterTestAccounts",
                "filterTestAccounts must be true or false.",
            ));
        }
    };
    Ok(combine(vec![properties, test_accounts], "AND"))
}

/// The project's test-account filters as one condition (`true` when it has none).
pub fn test_accounts(ctx: &Context) -> Result<String, Invalid> {
    let filters = Value::Array(ctx.test_account_filters.as_ref().clone());
    expression(Some(&filters), ctx, "test_account_filters")
}

fn tree(filters: Option<&Value>, ctx: &Context, attr: &str) -> Result<String, Invalid> {
    match filters {
        None | Some(Value::Null) => Ok("true".into()),
        Some(Value::Array(items)) => {
            let parts = items
                .iter()
                .enumerate()
                .map(|(index, item)| node(item, ctx, &format!("{attr}[{index}]")))
                .collect::<Result<Vec<_>, _>>()?;
            Ok(combine(parts, "AND"))
        }
        Some(value @ Value::Object(_)) => node(value, ctx, attr),
        Some(_) => Err(Invalid::new(
            attr,
            "Property filters must be a list of filters or a group {\"type\": \"AND\"|\"OR\", \"values\": [...]}.",
        )),
    }
}

/// Joins boolean expressions; no parts is `true`.
fn combine(parts: Vec<String>, joiner: &str) -> String {
    let parts: Vec<String> = parts.into_iter().filter(|p| p != "true").collect();
    match parts.len() {
        0 => "true".into(),
        1 => parts.into_iter().next().unwrap_or_default(),
        _ => parts
            .iter()
            .map(|p| format!("({p})"))
            .collect::<Vec<_>>()
            .join(&format!(" {joiner} ")),
    }
}

fn is_group(object: &serde_json::Map<String, Value>) -> bool {
    matches!(
        object.get("type").and_then(Value::as_str),
        Some("AND" | "OR")
    ) || (object.contains_key("values") && !object.contains_key("key"))
}

/// One list item: a filter or a nested group.
fn node(value: &Value, ctx: &Context, attr: &str) -> Result<String, Invalid> {
    let Value::Object(object) = value else {
        return Err(Invalid::new(attr, "A property filter must be an object."));
    };
    if !is_group(object) {
        return filter(object, ctx, attr);
    }
    let joiner = match object.get("type") {
        Some(Value::String(kind)) if kind == "AND" => "AND",
        Some(Value::String(kind)) if kind == "OR" => "OR",
        Some(other) => {
            return Err(Invalid::new(
                format!("{attr}.type"),
                format!("A property group's type must be \"AND\" or \"OR\", not {other}."),
            ));
        }
        None => "AND",
    };
    let values = match object.get("values") {
        None | Some(Value::Null) => return Ok("true".into()),
        Some(Value::Array(values)) => values,
        Some(_) => {
            return Err(Invalid::new(
                format!("{attr}.values"),
                "A property group's values must be a list.",
            ));
        }
    };
    let parts = values
        .iter()
        .enumerate()
        .map(|(index, item)| node(item, ctx, &format!("{attr}.values[{index}]")))
        .collect::<Result<Vec<_>, _>>()?;
    // An OR with a no-op member is a no-op as a whole.
    if joiner == "OR" && parts.iter().any(|p| p == "true") {
        return Ok("true".into());
    }
    Ok(combine(parts, joiner))
}

/// What a filter compares: a JSON property (nullable text) or a bare column.
struct Target {
    expr: String,
    /// A DateTime column: string values are read as instants.
    datetime: bool,
}

fn filter(
    object: &serde_json::Map<String, Value>,
    ctx: &Context,
    attr: &str,
) -> Result<String, Invalid> {
    // `{}` is PostHog's EmptyPropertyFilter.
    if object.is_empty() {
        return Ok("true".into());
    }
    let kind = match object.get("type") {
        None | Some(Value::Null) => "event",
        Some(Value::String(kind)) => kind.as_str(),
        Some(_) => {
            return Err(Invalid::new(
                format!("{attr}.type"),
                "A property filter's type must be a string.",
            ));
        }
    };
    if crate::cohorts::FILTER_TYPES.contains(&kind) {
        return crate::cohorts::filter(object, ctx, attr);
    }
    let key = match object.get("key") {
        Some(Value::String(key)) => key.as_str(),
        None | Some(Value::Null) => {
            return Err(Invalid::new(
                format!("{attr}.key"),
                "A property filter needs a key.",
            ));
        }
        Some(_) => {
            return Err(Invalid::new(
                format!("{attr}.key"),
                "A property filter's key must be a string.",
            ));
        }
    };
    let target = match kind {
        "hogql" => {
            (ctx.check_expression)(key).map_err(|e| Invalid::new(format!("{attr}.key"), e))?;
            return Ok(format!("({key})"));
        }
        "event" if key == "$elements_chain" => Target {
            expr: "elements_chain".into(),
            datetime: false,
        },
        "event" => Target {
            expr: sql_text::property(key, false),
            datetime: false,
        },
        "person" => Target {
            expr: sql_text::property(key, true),
            datetime: false,
        },
        "event_metadata" => {
            if !EVENT_COLUMNS.contains(&key) {
                return Err(Invalid::new(
                    format!("{attr}.key"),
                    format!(
                        "'{key}' is not an event column; event_metadata filters can use: {}.",
                        EVENT_COLUMNS.join(", ")
                    ),
                ));
            }
            Target {
                expr: key.to_string(),
                datetime: matches!(key, "timestamp" | "created_at"),
            }
        }
        other if UNSUPPORTED_TYPES.contains(&other) => {
            return Err(Invalid::new(
                format!("{attr}.type"),
                format!("Property filters of type '{other}' are not supported here."),
            ));
        }
        other => {
            return Err(Invalid::new(
                format!("{attr}.type"),
                format!("Unknown property filter type '{other}'."),
            ));
        }
    };
    let operator = match object.get("operator") {
        None | Some(Value::Null) => Operator::Exact,
        Some(Value::String(name)) => Operator::parse(name).ok_or_else(|| {
            Invalid::new(
                format!("{attr}.operator"),
                format!("Unknown property filter operator '{name}'."),
            )
        })?,
        Some(_) => {
            return Err(Invalid::new(
                format!("{attr}.operator"),
                "A property filter's operator must be a string.",
            ));
        }
    };
    let value = object.get("value").unwrap_or(&Value::Null);
    compare(&target, operator, value, ctx, attr)
}

/// A person property compared as a `person` filter compares it, read from the `persons` table's
/// own `properties` (a cohort's person filter: `id IN (SELECT id FROM persons WHERE ...)`).
pub(crate) fn persons_table_condition(
    key: &str,
    operator: Option<&str>,
    value: &Value,
    ctx: &Context,
    attr: &str,
) -> Result<String, Invalid> {
    let operator = match operator {
        None => Operator::Exact,
        Some(name) => Operator::parse(name).ok_or_else(|| {
            Invalid::new(
                format!("{attr}.operator"),
                format!("Unknown property filter operator '{name}'."),
            )
        })?,
    };
    let target = Target {
        expr: format!("properties[{}]", sql_text::string(key)),
        datetime: false,
    };
    compare(&target, operator, value, ctx, attr)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Operator {
    Exact,
    IsNot,
    Icontains,
    NotIcontains,
    Regex,
    NotRegex,
    Gt,
    Gte,
    Lt,
    Lte,
    IsSet,
    IsNotSet,
    IsDateExact,
    IsDateBefore,
    IsDateAfter,
    Between,
    NotBetween,
    In,
    NotIn,
}

impl Operator {
    fn parse(name: &str) -> Option<Self> {
        Some(match name {
            "exact" => Self::Exact,
            "is_not" => Self::IsNot,
            "icontains" => Self::Icontains,
            "not_icontains" => Self::NotIcontains,
            "regex" => Self::Regex,
            "not_regex" => Self::NotRegex,
            "gt" => Self::Gt,
            "gte" | "min" => Self::Gte,
            "lt" => Self::Lt,
            "lte" | "max" => Self::Lte,
            "is_set" => Self::IsSet,
            "is_not_set" => Self::IsNotSet,
            "is_date_exact" => Self::IsDateExact,
            "is_date_before" => Self::IsDateBefore,
            "is_date_after" => Self::IsDateAfter,
            "between" => Self::Between,
            "not_between" => Self::NotBetween,
            "in" => Self::In,
            "not_in" => Self::NotIn,
            _ => return None,
        })
    }

    /// Several values of a negative operator must all hold (AND); of a positive one, any (OR).
    fn negative(self) -> bool {
        matches!(
            self,
            Self::IsNot | Self::NotIcontains | Self::NotRegex | Self::NotIn
        )
    }
}

fn compare(
    target: &Target,
    operator: Operator,
    value: &Value,
    ctx: &Context,
    attr: &str,
) -> Result<String, Invalid> {
    let e = &target.expr;
    let value_attr = format!("{attr}.value");
    match operator {
        // The value does not matter for these.
        Operator::IsSet => return Ok(format!("{e} IS NOT NULL")),
        Operator::IsNotSet => return Ok(format!("{e} IS NULL")),
        Operator::Between | Operator::NotBetween => {
            return between(e, operator, value, &value_attr);
        }
        _ => {}
    }
    let values = match value {
        Value::Array(items) => items.as_slice(),
        other => std::slice::from_ref(other),
    };
    if values.is_empty() {
        return Ok("true".into());
    }
    if values.len() == 1 {
        let attr = if value.is_array() {
            format!("{value_attr}[0]")
        } else {
            value_attr
        };
        return scalar(target, operator, &values[0], ctx, &attr);
    }
    if matches!(
        operator,
        Operator::Exact | Operator::In | Operator::IsNot | Operator::NotIn
    ) {
        let negated = matches!(operator, Operator::IsNot | Operator::NotIn);
        return in_list(target, negated, values, ctx, &value_attr);
    }
    let parts = values
        .iter()
        .enumerate()
        .map(|(index, item)| {
            scalar(
                target,
                operator,
                item,
                ctx,
                &format!("{value_attr}[{index}]"),
            )
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(combine(
        parts,
        if operator.negative() { "AND" } else { "OR" },
    ))
}

/// A filter value as a dialect constant.
enum Constant {
    Number(String),
    Text(String),
    Null,
}

fn constant(value: &Value, attr: &str) -> Result<Constant, Invalid> {
    Ok(match value {
        Value::Null => Constant::Null,
        Value::Bool(flag) => Constant::Text(flag.to_string()),
        Value::Number(number) => Constant::Number(number.to_string()),
        Value::String(text) => Constant::Text(text.clone()),
        Value::Array(_) | Value::Object(_) => {
            return Err(Invalid::new(
                attr,
                "A property filter value must be a string, a number, a boolean or a list of those.",
            ));
        }
    })
}

/// The value as text (numbers and booleans as their JSON spelling), for text-only operators.
fn text_of(value: &Value, operator: Operator, attr: &str) -> Result<String, Invalid> {
    match constant(value, attr)? {
        Constant::Number(text) | Constant::Text(text) => Ok(text),
        Constant::Null => Err(value_required(operator, attr)),
    }
}

fn value_required(operator: Operator, attr: &str) -> Invalid {
    Invalid::new(
        attr,
        format!("The {} operator needs a value.", operator_name(operator)),
    )
}

fn operator_name(operator: Operator) -> &'static str {
    match operator {
        Operator::Exact => "exact",
        Operator::IsNot => "is_not",
        Operator::Icontains => "icontains",
        Operator::NotIcontains => "not_icontains",
        Operator::Regex => "regex",
        Operator::NotRegex => "not_regex",
        Operator::Gt => "gt",
        Operator::Gte => "gte",
        Operator::Lt => "lt",
        Operator::Lte => "lte",
        Operator::IsSet => "is_set",
        Operator::IsNotSet => "is_not_set",
        Operator::IsDateExact => "is_date_exact",
        Operator::IsDateBefore => "is_date_before",
        Operator::IsDateAfter => "is_date_after",
        Operator::Between => "between",
        Operator::NotBetween => "not_between",
        Operator::In => "in",
        Operator::NotIn => "not_in",
    }
}

/// The left side and the constant of an ordinary comparison: numeric when the value is a number,
/// an instant for DateTime columns, text otherwise.
fn sides(
    target: &Target,
    constant: Constant,
    ctx: &Context,
    attr: &str,
) -> Result<(String, String), Invalid> {
    let e = &target.expr;
    Ok(match constant {
        Constant::Number(number) if !target.datetime => (format!("toFloat({e})"), number),
        Constant::Number(number) => (format!("toFloat(toUnixTimestamp({e}))"), number),
        Constant::Text(text) if target.datetime => {
            (e.clone(), datetime_constant(&text, ctx, attr)?)
        }
        Constant::Text(text) => (e.clone(), sql_text::string(&text)),
        Constant::Null => (e.clone(), "NULL".into()),
    })
}

/// A date value compared with a DateTime column: read like PostHog reads dates (naive times in
/// the project's time zone, relative dates), as an instant.
fn datetime_constant(text: &str, ctx: &Context, attr: &str) -> Result<String, Invalid> {
    crate::date_range::parse_instant(text, ctx)
        .map(crate::date_range::sql_datetime)
        .ok_or_else(|| {
            Invalid::new(
                attr,
                format!("'{text}' is not a date (ISO 8601 or relative like -7d)."),
            )
        })
}

fn scalar(
    target: &Target,
    operator: Operator,
    value: &Value,
    ctx: &Context,
    attr: &str,
) -> Result<String, Invalid> {
    let e = &target.expr;
    let text_e = if target.datetime {
        format!("toString({e})")
    } else {
        e.clone()
    };
    Ok(match operator {
        Operator::Exact | Operator::In | Operator::IsNot | Operator::NotIn => {
            let equal = matches!(operator, Operator::Exact | Operator::In);
            match constant(value, attr)? {
                Constant::Null if equal => format!("{e} IS NULL"),
                Constant::Null => format!("{e} IS NOT NULL"),
                other => {
                    let (left, right) = sides(target, other, ctx, attr)?;
                    // The dialect's `=`/`!=` are null-safe: a missing property is "not equal".
                    format!("{left} {} {right}", if equal { "=" } else { "!=" })
                }
            }
        }
        Operator::Icontains | Operator::NotIcontains => {
            let pattern = format!("%{}%", text_of(value, operator, attr)?);
            let not = if operator == Operator::NotIcontains {
                "NOT "
            } else {
                ""
            };
            format!("toString({e}) {not}ILIKE {}", sql_text::string(&pattern))
        }
        Operator::Regex | Operator::NotRegex => {
            // `match` of NULL is NULL (as in ClickHouse): a missing property does not match, and
            // `not_regex` keeps it, as PostHog's `ifNull(not(match(...)), 1)`.
            let pattern = sql_text::string(&text_of(value, operator, attr)?);
            let not = if operator == Operator::NotRegex {
                "NOT "
            } else {
                ""
            };
            format!("{not}coalesce(match(toString({text_e}), {pattern}), false)")
        }
        Operator::Gt | Operator::Gte | Operator::Lt | Operator::Lte => {
            let symbol = match operator {
                Operator::Gt => ">",
                Operator::Gte => ">=",
                Operator::Lt => "<",
                _ => "<=",
            };
            match constant(value, attr)? {
                Constant::Null => return Err(value_required(operator, attr)),
                other => {
                    let (left, right) = sides(target, other, ctx, attr)?;
                    format!("{left} {symbol} {right}")
                }
            }
        }
        Operator::IsDateExact | Operator::IsDateBefore | Operator::IsDateAfter => {
            let text = match value {
                Value::String(text) => text,
                Value::Null => return Err(value_required(operator, attr)),
                _ => {
                    return Err(Invalid::new(
                        attr,
                        format!(
                            "The {} operator needs a date string.",
                            operator_name(operator)
                        ),
                    ));
                }
            };
            let instant = crate::date_range::parse_instant(text, ctx).ok_or_else(|| {
                Invalid::new(
                    attr,
                    format!("'{text}' is not a date (ISO 8601 or relative like -7d)."),
                )
            })?;
            let symbol = match operator {
                Operator::IsDateExact => "=",
                Operator::IsDateBefore => "<",
                _ => ">",
            };
            format!(
                "toDateTime(toString({e})) {symbol} {}",
                crate::date_range::sql_datetime(instant)
            )
        }
        Operator::IsSet | Operator::IsNotSet | Operator::Between | Operator::NotBetween => {
            // Handled before values are split.
            return Err(Invalid::new(attr, "unexpected operator"));
        }
    })
}

/// `e IN (...)` / `e NOT IN (...)`: numerically when every value is a number.
fn in_list(
    target: &Target,
    negated: bool,
    values: &[Value],
    ctx: &Context,
    attr: &str,
) -> Result<String, Invalid> {
    let constants = values
        .iter()
        .enumerate()
        .map(|(index, value)| constant(value, &format!("{attr}[{index}]")))
        .collect::<Result<Vec<_>, _>>()?;
    if let Some(index) = constants.iter().position(|c| matches!(c, Constant::Null)) {
        return Err(Invalid::new(
            format!("{attr}[{index}]"),
            "A list of values cannot contain null.",
        ));
    }
    let numeric = !target.datetime && constants.iter().all(|c| matches!(c, Constant::Number(_)));
    let left = if numeric {
        format!("toFloat({})", target.expr)
    } else {
        target.expr.clone()
    };
    let items: Vec<String> = constants
        .into_iter()
        .enumerate()
        .map(|(index, c)| match c {
            Constant::Number(number) if numeric => Ok(number),
            Constant::Number(text) | Constant::Text(text) if target.datetime => {
                datetime_constant(&text, ctx, &format!("{attr}[{index}]"))
            }
            Constant::Number(text) | Constant::Text(text) => Ok(sql_text::string(&text)),
            Constant::Null => Ok("NULL".into()),
        })
        .collect::<Result<_, _>>()?;
    let list = items.join(", ");
    Ok(if negated {
        // NULL NOT IN (...) is NULL; PostHog counts a missing value as "not in".
        format!("coalesce({left} NOT IN ({list}), true)")
    } else {
        format!("{left} IN ({list})")
    })
}

/// `between` / `not_between` with `[min, max]`, compared numerically.
fn between(e: &str, operator: Operator, value: &Value, attr: &str) -> Result<String, Invalid> {
    let name = operator_name(operator);
    let bounds = match value {
        Value::Array(items) if items.len() == 2 => items,
        _ => {
            return Err(Invalid::new(
                attr,
                format!("The {name} operator needs a two-element list [min, max]."),
            ));
        }
    };
    let number = |item: &Value| -> Option<f64> {
        match item {
            Value::Number(n) => n.as_f64(),
            Value::String(text) => text.trim().parse::<f64>().ok().filter(|n| n.is_finite()),
            _ => None,
        }
    };
    let (Some(low), Some(high)) = (number(&bounds[0]), number(&bounds[1])) else {
        return Err(Invalid::new(
            attr,
            format!("The {name} operator needs numeric values."),
        ));
    };
    if low > high {
        return Err(Invalid::new(
            attr,
            format!("The {name} operator needs min to be less than or equal to max."),
        ));
    }
    let (low, high) = (float_literal(low), float_literal(high));
    Ok(if operator == Operator::Between {
        format!("toFloat({e}) >= {low} AND toFloat({e}) <= {high}")
    } else {
        format!("toFloat({e}) < {low} OR toFloat({e}) > {high}")
    })
}

fn float_literal(value: f64) -> String {
    // Debug keeps a decimal point or an exponent, so the literal is always a float.
    format!("{value:?}")
}

#[cfg(test)]
#[path = "filters_tests.rs"]
mod tests;
