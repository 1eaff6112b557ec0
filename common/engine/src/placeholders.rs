//! Placeholders bound before the rewrite: `{filters}` becomes the caller's filters expression
//! (so it gets the query's own treatment), `{variables.x}` and friends become literals.

use std::collections::HashSet;
use std::ops::ControlFlow;

use datafusion::sql::sqlparser::ast::{
    Expr, Query, SelectItem, SetExpr, Value, VisitMut, VisitorMut,
};
use serde_json::Value as Json;

use crate::QueryError;
use crate::bindings::Bindings;
use crate::functions::string_literal;
use crate::parse::PLACEHOLDER_PREFIX;

pub(crate) const FILTERS: &str = "filters";

/// Puts the filters expression where `{filters}` stands, before the rewrite, so it gets the same
/// treatment (property access, null-safe comparisons) as the query's own text.
pub(crate) fn expand_filters(
    query: &mut Query,
    placeholders: &[String],
    filters: Option<&str>,
) -> Result<(), QueryError> {
    let text = filters.unwrap_or("true");
    let parsed = crate::parse::parse(&format!("SELECT ({text})"))?;
    let expression = match *parsed.query.body {
        SetExpr::Select(select) if parsed.placeholders.is_empty() => {
            match select.projection.into_iter().next() {
                Some(SelectItem::UnnamedExpr(expr)) => expr,
                _ => return Err(QueryError::Query("Invalid filters".into())),
            }
        }
        _ => return Err(QueryError::Query("Invalid filters".into())),
    };
    let slots: HashSet<String> = placeholders
        .iter()
        .enumerate()
        .filter(|(_, path)| *path == FILTERS)
        .map(|(index, _)| format!("{PLACEHOLDER_PREFIX}{index}"))
        .collect();
    let _ = VisitMut::visit(
        query,
        &mut ReplaceSlots {
            slots,
            with: expression,
        },
    );
    Ok(())
}

struct ReplaceSlots {
    slots: HashSet<String>,
    with: Expr,
}

impl VisitorMut for ReplaceSlots {
    type Break = ();

    fn post_visit_expr(&mut self, expr: &mut Expr) -> ControlFlow<()> {
        if let Expr::Identifier(ident) = expr
            && ident.quote_style.is_none()
            && self.slots.contains(&ident.value)
        {
            *expr = Expr::Nested(Box::new(self.with.clone()));
        }
        ControlFlow::Continue(())
    }
}

pub(crate) fn bind(path: &str, bindings: &Bindings) -> Result<Expr, QueryError> {
    let value = if let Some(code_name) = path.strip_prefix("variables.") {
        bindings.variables.get(code_name).ok_or_else(|| {
            QueryError::Query(format!("Variable {code_name} is missing from query"))
        })?
    } else if path.contains('.') {
        return Err(QueryError::Query(format!(
            "Placeholder {{{path}}} is not available in this context"
        )));
    } else {
        match bindings.values.get(path) {
            Some(value) => value,
            None if bindings.values.is_empty() => {
                return Err(QueryError::Query(format!(
                    "Unresolved placeholder: {{{path}}}"
                )));
            }
            None => {
                let mut known: Vec<&str> = bindings.values.keys().map(String::as_str).collect();
                known.sort();
                return Err(QueryError::Query(format!(
                    "Placeholder {{{path}}} is not available in this context. You can use the following: {}",
                    known.join(", ")
                )));
            }
        }
    };
    literal(value, path)
}

fn literal(value: &Json, path: &str) -> Result<Expr, QueryError> {
    Ok(match value {
        Json::Null => Expr::Value(Value::Null.into()),
        Json::Bool(flag) => Expr::Value(Value::Boolean(*flag).into()),
        Json::Number(number) => Expr::Value(Value::Number(number.to_string(), false).into()),
        Json::String(text) => string_literal(text),
        Json::Array(items) => Expr::Array(datafusion::sql::sqlparser::ast::Array {
            elem: items
                .iter()
                .map(|item| literal(item, path))
                .collect::<Result<_, _>>()?,
            named: false,
        }),
        Json::Object(_) => {
            return Err(QueryError::Query(format!(
                "Placeholder {{{path}}} is an object; only constants and lists of constants can be bound"
            )));
        }
    })
}
