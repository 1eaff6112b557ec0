//! The allow-list of ClickHouse-named functions and how each becomes DataFusion SQL.
//! Most are templates over DataFusion's own functions (arguments substituted as AST, never as
//! text); a few need our own UDFs (`udfs.rs`) for ClickHouse semantics.

use std::collections::HashMap;
use std::ops::ControlFlow;
use std::sync::LazyLock;

use datafusion::sql::sqlparser::ast::{
    CastKind, DataType, DuplicateTreatment, Expr, Function, FunctionArg, FunctionArgExpr,
    FunctionArguments, Ident, LambdaFunction, LambdaFunctionParameter, LambdaSyntax, ObjectName,
    ObjectNamePart, OneOrManyWithParens, UnaryOperator, Value, VisitMut, VisitorMut,
};

use crate::{QueryError, template};

mod allow_list;
mod special;

use allow_list::Mapping::{Rename, Special, Template};
use allow_list::{ANY, FUNCTIONS, Meta, lookup};
pub(crate) use special::{date_arithmetic, property, tuple};

/// Every name of the allow-list (the generated reference lists each once).
#[cfg(test)]
pub(super) fn names() -> impl Iterator<Item = &'static str> {
    FUNCTIONS.keys().copied()
}

pub fn is_aggregate(name: &str) -> bool {
    lookup(name).is_some_and(|(_, meta)| meta.aggregate)
}

/// Rewrites a HogQL function call into DataFusion SQL, or refuses it.
pub fn rewrite_call(function: &mut Function) -> Result<Option<Expr>, QueryError> {
    let name = match function.name.0.as_slice() {
        [ObjectNamePart::Identifier(ident)] => ident.value.clone(),
        _ => {
            return Err(QueryError::Query(format!(
                "Unsupported function call '{}(...)'",
                function.name
            )));
        }
    };
    let Some((canonical, meta)) = lookup(&name) else {
        return Err(QueryError::Query(unknown_function_message(&name)));
    };
    let args = plain_args(function, &name)?;
    let count = args.len();
    if count < meta.min || (meta.max != ANY && count > meta.max) {
        return Err(QueryError::Query(arity_message(canonical, meta, count)));
    }
    let parameters = match &function.parameters {
        FunctionArguments::None => Vec::new(),
        FunctionArguments::List(list) => list
            .args
            .iter()
            .map(|arg| match arg {
                FunctionArg::Unnamed(FunctionArgExpr::Expr(expr)) => Ok(expr.clone()),
                _ => Err(QueryError::Query(format!(
                    "Function '{canonical}' takes plain parameters"
                ))),
            })
            .collect::<Result<_, _>>()?,
        FunctionArguments::Subquery(_) => {
            return Err(QueryError::Query(format!(
                "Function '{canonical}' takes plain parameters"
            )));
        }
    };
    if !parameters.is_empty() && !matches!(meta.mapping, Special(_)) {
        return Err(QueryError::Query(format!(
            "Function '{canonical}' does not take parameters"
        )));
    }
    // `count(DISTINCT x)` counts keys as `uniqExact` does (not in a window: DataFusion's own).
    if canonical == "count" && count > 0 && function.over.is_none() && is_distinct(function) {
        return special::uniq_exact(args, &parameters).map(Some);
    }
    match &meta.mapping {
        Rename(target) => {
            function.name = ObjectName(vec![ObjectNamePart::Identifier(Ident::new(*target))]);
            Ok(None)
        }
        Template(variants) => {
            let template = variants
                .iter()
                .find(|(arity, _)| *arity == count)
                .map(|(_, text)| *text)
                .ok_or_else(|| QueryError::Query(arity_message(canonical, meta, count)))?;
            let mut expr = instantiate(template, args)?;
            carry_clauses(function, &mut expr);
            Ok(Some(expr))
        }
        Special(build) => {
            let mut expr = build(args, &parameters)?;
            carry_clauses(function, &mut expr);
            Ok(Some(expr))
        }
    }
}

/// Plain positional arguments (`count(*)` keeps its wildcard through `count`'s own rule).
fn plain_args(function: &Function, name: &str) -> Result<Vec<Expr>, QueryError> {
    match &function.args {
        FunctionArguments::None => Ok(Vec::new()),
        FunctionArguments::Subquery(_) => Err(QueryError::Query(format!(
            "Function '{name}' does not take a subquery"
        ))),
        FunctionArguments::List(list) => {
            if list.duplicate_treatment.is_some() && !is_aggregate(name) {
                return Err(QueryError::Query(format!(
                    "DISTINCT is only allowed in aggregations, not in '{name}'"
                )));
            }
            let mut out = Vec::with_capacity(list.args.len());
            for arg in &list.args {
                match arg {
                    FunctionArg::Unnamed(FunctionArgExpr::Expr(expr)) => out.push(expr.clone()),
                    FunctionArg::Unnamed(FunctionArgExpr::Wildcard)
                        if name.eq_ignore_ascii_case("count") => {}
                    _ => {
                        return Err(QueryError::Query(format!(
                            "Function '{name}' takes plain arguments"
                        )));
                    }
                }
            }
            Ok(out)
        }
    }
}

fn is_distinct(function: &Function) -> bool {
    matches!(&function.args, FunctionArguments::List(list)
        if matches!(list.duplicate_treatment, Some(DuplicateTreatment::Distinct)))
}

/// What the call said around its arguments (`DISTINCT`, `OVER`) goes on the call it became.
fn carry_clauses(original: &Function, expr: &mut Expr) {
    let Expr::Function(function) = expr else {
        return;
    };
    if let Some(over) = &original.over {
        function.over = Some(over.clone());
    }
    if let (FunctionArguments::List(from), FunctionArguments::List(to)) =
        (&original.args, &mut function.args)
        && from.duplicate_treatment.is_some()
    {
        to.duplicate_treatment = from.duplicate_treatment;
    }
}

fn arity_message(name: &str, meta: &Meta, found: usize) -> String {
    if meta.min == meta.max {
        format!(
            "Function '{name}' expects {} arguments, found {found}",
            meta.min
        )
    } else if found < meta.min {
        format!(
            "Function '{name}' expects at least {} arguments, found {found}",
            meta.min
        )
    } else {
        format!(
            "Function '{name}' expects at most {} arguments, found {found}",
            meta.max
        )
    }
}

fn unknown_function_message(name: &str) -> String {
    let close = FUNCTIONS
        .keys()
        .filter(|known| known.eq_ignore_ascii_case(name) || similar(known, name))
        .min();
    match close {
        Some(known) => {
            format!("Unsupported function call '{name}(...)'. Perhaps you meant '{known}(...)'?")
        }
        None => format!("Unsupported function call '{name}(...)'"),
    }
}

/// Close enough to suggest: same length within one and at most two differing characters.
fn similar(a: &str, b: &str) -> bool {
    let (a, b) = (a.to_lowercase(), b.to_lowercase());
    if a.len().abs_diff(b.len()) > 1 || a.len() < 4 {
        return false;
    }
    let differing =
        a.chars().zip(b.chars()).filter(|(x, y)| x != y).count() + a.len().abs_diff(b.len());
    differing <= 2
}

static TEMPLATES: LazyLock<std::sync::Mutex<HashMap<&'static str, Expr>>> =
    LazyLock::new(Default::default);

/// Parses a template (`$n` slots) once, then fills it with the arguments.
fn instantiate(template: &'static str, args: Vec<Expr>) -> Result<Expr, QueryError> {
    let mut expr = {
        let mut cache = TEMPLATES
            .lock()
            .map_err(|_| QueryError::Internal("template cache poisoned".into()))?;
        match cache.get(template) {
            Some(expr) => expr.clone(),
            None => {
                let parsed = template::expr(&template.replace('$', template::SLOT), &[])?;
                cache.insert(template, parsed.clone());
                parsed
            }
        }
    };
    template::fill(&mut expr, &args);
    Ok(expr)
}

pub fn string_literal(value: &str) -> Expr {
    Expr::Value(Value::SingleQuotedString(value.to_owned()).into())
}

fn string_argument(expr: &Expr, function: &str) -> Result<String, QueryError> {
    match expr {
        Expr::Value(value) => match &value.value {
            Value::SingleQuotedString(text) | Value::DoubleQuotedString(text) => Ok(text.clone()),
            _ => Err(QueryError::Query(format!(
                "Function '{function}' expects a string constant here"
            ))),
        },
        Expr::Nested(inner) => string_argument(inner, function),
        _ => Err(QueryError::Query(format!(
            "Function '{function}' expects a string constant here"
        ))),
    }
}

fn number_argument(expr: &Expr, function: &str) -> Result<f64, QueryError> {
    match expr {
        Expr::Value(value) => match &value.value {
            Value::Number(text, _) => text.parse().map_err(|_| {
                QueryError::Query(format!("Function '{function}' expects a number here"))
            }),
            _ => Err(QueryError::Query(format!(
                "Function '{function}' expects a number here"
            ))),
        },
        Expr::Nested(inner) => number_argument(inner, function),
        _ => Err(QueryError::Query(format!(
            "Function '{function}' expects a constant number here"
        ))),
    }
}
