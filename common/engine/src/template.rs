//! DataFusion SQL built from text with `__arg_N` slots, the slots then filled with expressions
//! as AST nodes: user input is never spliced into text.

use std::ops::ControlFlow;

use datafusion::sql::sqlparser::ast::{Expr, Query, VisitMut, VisitorMut};
use datafusion::sql::sqlparser::dialect::GenericDialect;
use datafusion::sql::sqlparser::parser::Parser;

use crate::{Context, QueryError};

pub const SLOT: &str = "__arg_";

/// An expression from `text`, its slots filled.
pub fn expr(text: &str, args: &[Expr]) -> Result<Expr, QueryError> {
    let mut parsed = Parser::new(&GenericDialect {})
        .try_with_sql(text)
        .and_then(|mut parser| parser.parse_expr())
        .map_err(|e| QueryError::internal(Context::new(format!("template {text}"), e)))?;
    fill(&mut parsed, args);
    Ok(parsed)
}

/// A query from `text`, its slots filled.
pub fn query(text: &str, args: &[Expr]) -> Result<Query, QueryError> {
    let mut parsed = Parser::new(&GenericDialect {})
        .try_with_sql(text)
        .and_then(|mut parser| parser.parse_query())
        .map_err(|e| QueryError::internal(Context::new(format!("template {text}"), e)))?;
    fill(parsed.as_mut(), args);
    Ok(*parsed)
}

/// `name(__arg_0, __arg_1, ...)` over `args`.
pub fn call(name: &str, args: &[Expr]) -> Result<Expr, QueryError> {
    let slots: Vec<String> = (0..args.len()).map(|i| format!("{SLOT}{i}")).collect();
    expr(&format!("{name}({})", slots.join(", ")), args)
}

/// Replaces every `__arg_N` identifier in `node` with `args[N]`, parenthesized so templates
/// keep their own precedence.
pub fn fill<T: VisitMut + ?Sized>(node: &mut T, args: &[Expr]) {
    let _ = node.visit(&mut Fill { args });
}

struct Fill<'a> {
    args: &'a [Expr],
}

impl VisitorMut for Fill<'_> {
    type Break = ();

    fn post_visit_expr(&mut self, expr: &mut Expr) -> ControlFlow<()> {
        if let Expr::Identifier(ident) = expr
            && let Some(index) = ident.value.strip_prefix(SLOT)
            && let Ok(index) = index.parse::<usize>()
            && let Some(arg) = self.args.get(index)
        {
            *expr = Expr::Nested(Box::new(arg.clone()));
        }
        ControlFlow::Continue(())
    }
}
