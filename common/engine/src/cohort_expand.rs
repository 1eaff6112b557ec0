//! `IN COHORT`, expanded: each test the parser marked (see `cohort_syntax`) is replaced by the
//! cohort's membership condition from the bindings, with the tested expression as its subject.

use std::ops::ControlFlow;

use datafusion::sql::sqlparser::ast::{
    Expr, FunctionArg, FunctionArgExpr, FunctionArguments, ObjectNamePart, Query, Value, VisitMut,
    VisitorMut,
};

use crate::cohort_syntax::{CohortRef, MARKER, SUBJECT};
use crate::{Bindings, QueryError};

/// Puts each marked cohort's membership (from `bindings`) in place of its `IN` test.
pub fn expand(query: &mut Query, bindings: &Bindings) -> Result<(), QueryError> {
    match VisitMut::visit(query, &mut Expand { bindings }) {
        ControlFlow::Break(error) => Err(error),
        ControlFlow::Continue(()) => Ok(()),
    }
}

struct Expand<'a> {
    bindings: &'a Bindings,
}

impl VisitorMut for Expand<'_> {
    type Break = QueryError;

    fn post_visit_expr(&mut self, expr: &mut Expr) -> ControlFlow<QueryError> {
        let Expr::InList {
            expr: subject,
            list,
            negated,
        } = expr
        else {
            return ControlFlow::Continue(());
        };
        let [Expr::Function(function)] = list.as_slice() else {
            return ControlFlow::Continue(());
        };
        if !matches!(function.name.0.as_slice(), [ObjectNamePart::Identifier(i)] if i.value == MARKER)
        {
            return ControlFlow::Continue(());
        }
        let operand = match &function.args {
            FunctionArguments::List(list) => match list.args.as_slice() {
                [FunctionArg::Unnamed(FunctionArgExpr::Expr(Expr::Value(value)))] => {
                    match &value.value {
                        Value::Number(text, _) => text.parse().ok().map(CohortRef::Id),
                        Value::SingleQuotedString(name) => Some(CohortRef::Name(name.clone())),
                        _ => None,
                    }
                }
                _ => None,
            },
            _ => None,
        };
        let Some(operand) = operand else {
            return ControlFlow::Break(QueryError::Query(
                "IN COHORT takes a cohort id or a cohort name in quotes".into(),
            ));
        };
        let Some(condition) = self.bindings.cohorts.get(&operand.key()) else {
            return ControlFlow::Break(QueryError::Query(operand.describe()));
        };
        let mut membership = match crate::parse::parse(&format!("SELECT ({condition})")) {
            Ok(parsed) => match *parsed.query.body {
                datafusion::sql::sqlparser::ast::SetExpr::Select(select) => {
                    match select.projection.into_iter().next() {
                        Some(datafusion::sql::sqlparser::ast::SelectItem::UnnamedExpr(expr)) => {
                            expr
                        }
                        _ => return ControlFlow::Break(QueryError::internal("cohort membership")),
                    }
                }
                _ => return ControlFlow::Break(QueryError::internal("cohort membership")),
            },
            Err(error) => return ControlFlow::Break(error),
        };
        let _ = VisitMut::visit(
            &mut membership,
            &mut Subject {
                subject: subject.as_ref().clone(),
            },
        );
        let membership = Expr::Nested(Box::new(membership));
        *expr = if *negated {
            Expr::UnaryOp {
                op: datafusion::sql::sqlparser::ast::UnaryOperator::Not,
                expr: Box::new(membership),
            }
        } else {
            membership
        };
        ControlFlow::Continue(())
    }
}

/// Replaces [`SUBJECT`] with the tested expression.
struct Subject {
    subject: Expr,
}

impl VisitorMut for Subject {
    type Break = ();

    fn post_visit_expr(&mut self, expr: &mut Expr) -> ControlFlow<()> {
        if matches!(expr, Expr::Identifier(ident) if ident.value == SUBJECT) {
            *expr = Expr::Nested(Box::new(self.subject.clone()));
        }
        ControlFlow::Continue(())
    }
}
